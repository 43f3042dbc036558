use pi_runtime::tool;

#[derive(pi_runtime::__private::schemars::JsonSchema)]
#[schemars(crate = "pi_runtime::__private::schemars")]
struct Point {
    x: f64,
}

/// Not deserializable.
#[tool]
async fn plot(point: Point) -> String {
    point.x.to_string()
}

fn main() {}
