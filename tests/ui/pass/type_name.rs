use std::sync::Arc;

use pi_runtime::{State, ToolDefinition, tool};

/// The user's own types, named like the tools' default type names.
#[derive(Debug, Clone)]
pub struct Report {
    pub title: String,
}

pub struct Archive;

/// Write a report.
#[tool(type_name = "ReportTool")]
async fn report(title: String) -> String {
    title
}

/// Archive a report.
#[tool(type_name = "ArchiveTool")]
async fn archive(State(prefix): State<Arc<String>>, title: String) -> String {
    format!("{prefix}{title}")
}

fn assert_tool<T: ToolDefinition>(_: &T) {}

fn main() {
    let _ = (Report { title: String::new() }, Archive);
    let _: ReportToolParams = ReportToolParams { title: String::new() };
    assert_tool(&ReportTool);
    assert_tool(&ArchiveTool::new(Arc::new("old/".to_owned())));
    assert_eq!(ReportTool::NAME, "report");
}
