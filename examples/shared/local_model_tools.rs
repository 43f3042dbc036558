//! The three tools of the local-model example, shared with its tests (`tests/local_model.rs`),
//! so the example and the tests give the model the same tools.

use pi_runtime::tool;

/// Add two numbers.
#[tool(snippet = "Add two numbers")]
pub(crate) async fn add(
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
) -> String {
    (a + b).to_string()
}

/// The current weather of a city.
#[tool(snippet = "Current weather of a city")]
pub(crate) async fn weather(
    /// The city, e.g. "Paris".
    city: String,
) -> String {
    format!("{city}: sunny, 21 C")
}

/// Count the words of a text.
#[tool(snippet = "Count the words of a text")]
pub(crate) async fn word_count(
    /// The text.
    text: String,
) -> String {
    text.split_whitespace().count().to_string()
}
