use pi_runtime::tool;

#[derive(pi_runtime::__private::serde::Deserialize)]
#[serde(crate = "pi_runtime::__private::serde")]
struct Point {
    x: f64,
}

/// No schema.
#[tool]
async fn plot(point: Point) -> String {
    point.x.to_string()
}

fn main() {}
