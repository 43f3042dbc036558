//! Streaming tool-call arguments (SPEC §6): the incremental partial-JSON parser and the
//! final parse of a finished call.
//!
//! While a call streams, a provider feeds each argument delta to a [`PartialJsonParser`] and
//! shows its [`value`](PartialJsonParser::value) (or forwards the [`ArgumentChange`]s) in a
//! `toolcall_delta`. A consumer that keeps the arguments as they were after every delta (a
//! replay, a UI that scrubs through a call) reads them through an [`ArgumentsStream`], whose
//! versions share everything a delta did not change. When the call ends,
//! [`parse_tool_call_arguments`] parses the whole text once, strictly; only that result is
//! validated and executed.
//!
//! | text so far | partial arguments |
//! |---|---|
//! | `{"path": ` | `{}` (a member shows once its value starts) |
//! | `{"path":"REA ` | `{"path":"REA "}` |
//! | `{"a":"x\u00` | `{"a":"x"}` (an unterminated escape is held back) |
//! | `{"a":[1,2` | `{"a":[1,2]}` |
//! | `{"a":1.5E+` | `{"a":1.5}` |
//! | `{"a":tr` | `{"a":true}` |
//! | `{"a" 1 "b":2}` | `{"a":1,"b":2}` (missing colons and commas are tolerated) |
//! | `[1,2` | `{}` (arguments are an object) |

mod changes;
mod finish;
mod parser;
mod scalar;
mod seed;
mod sink;
mod string;
mod tracked;
mod versions;

pub use changes::{ArgumentChange, PathSegment, apply_changes};
pub use finish::{NOT_AN_OBJECT, parse_tool_call_arguments, parse_with_repair, repair};
pub use parser::{MAX_DEPTH, PartialJsonError, PartialJsonParser};
pub use seed::parse_streaming_json;
pub use versions::{ArgumentsStream, ArgumentsVersion, ArgumentsView};

use serde_json::Value;

/// The partial arguments of SPEC §6.2 for a whole text.
///
/// ```
/// use pi_runtime::json::parse_partial;
/// use serde_json::json;
///
/// assert_eq!(parse_partial(r#"{"a":[1,2"#), json!({"a": [1, 2]}));
/// assert_eq!(parse_partial(r#"{"a":1."#), json!({}));
/// ```
pub fn parse_partial(text: &str) -> Value {
    let mut value = Value::Object(serde_json::Map::new());
    PartialJsonParser::new().push(text, &mut value);
    value
}
