use pi_runtime::tool;

/// The user's own report type, which the tool type `Report` would collide with.
pub struct Report {
    pub title: String,
}

/// Write a report.
#[tool]
async fn report(title: String) -> String {
    title
}

fn main() {
    let _ = Report {
        title: String::new(),
    };
}
