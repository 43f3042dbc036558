//! What `tools/list` shows: each tool's entry (schema, output schema, title, hints), and the
//! pages of the entries a caller may see.

use std::sync::Arc;

use rmcp::model::{ErrorData, Tool as McpTool, ToolAnnotations};
use serde_json::{Map, Value};

use super::McpServer;
use crate::mcp::auth::Caller;
use crate::tool::Registration;
use crate::tool::ToolHints;

impl McpServer {
    /// One `tools/list` page of the tools `caller` may see (every tool for a caller the
    /// transport did not authenticate), and the cursor of the next; the cursor is the index
    /// of the page's first tool.
    pub(super) fn page(
        &self,
        cursor: Option<&str>,
        caller: Option<&Caller>,
    ) -> Result<(Vec<McpTool>, Option<String>), ErrorData> {
        let listed: Vec<McpTool> = self
            .inner
            .listed
            .iter()
            .filter(|tool| caller.is_none_or(|caller| caller.allows(&tool.name)))
            .cloned()
            .collect();
        let Some(size) = self.inner.page_size else {
            return Ok((listed, None));
        };
        let start = match cursor {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|&start| start <= listed.len())
                .ok_or_else(|| {
                    ErrorData::invalid_params(format!("Invalid cursor: {cursor}"), None)
                })?,
        };
        let end = start.saturating_add(size).min(listed.len());
        let next = (end < listed.len()).then(|| end.to_string());
        Ok((listed[start..end].to_vec(), next))
    }
}

/// One `tools/list` entry.
pub(super) fn listed_tool(registration: &Registration) -> McpTool {
    let tool = registration.tool();
    let definition = tool.definition();
    let schema = match &*definition.parameters {
        Value::Object(schema) => schema.clone(),
        _ => Map::new(),
    };
    let mut listed = McpTool::new(
        definition.name.clone(),
        definition.description.clone(),
        Arc::new(schema),
    );
    if let Some(Value::Object(output)) = tool.output_schema() {
        listed = listed.with_raw_output_schema(Arc::new(output));
    }
    let label = tool.label();
    let title = (label != definition.name).then(|| label.to_owned());
    if let Some(title) = &title {
        listed = listed.with_title(title);
    }
    listed.annotations = annotations(title, registration.settings().hints);
    listed
}

/// List `hints` as the entry's behaviour hints, in place of its own; its title stays.
pub(super) fn set_hints(listed: &mut McpTool, hints: ToolHints) {
    let title = listed.annotations.take().and_then(|a| a.title);
    listed.annotations = annotations(title, hints);
}

/// A listing's annotations: the title (the tool's label) and the behaviour hints; `None`
/// when there is neither.
fn annotations(title: Option<String>, hints: ToolHints) -> Option<ToolAnnotations> {
    if title.is_none() && hints == ToolHints::default() {
        return None;
    }
    let mut annotations = ToolAnnotations::default();
    annotations.title = title;
    annotations.read_only_hint = hints.read_only;
    annotations.destructive_hint = hints.destructive;
    annotations.idempotent_hint = hints.idempotent;
    annotations.open_world_hint = hints.open_world;
    Some(annotations)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Say hello.
    #[crate::tool]
    async fn hello() -> String {
        "hello".into()
    }

    /// Say bye.
    #[crate::tool]
    async fn bye() -> String {
        "bye".into()
    }

    /// Say hello again.
    #[crate::tool(name = "hello2")]
    async fn hello_again() -> String {
        "hello".into()
    }

    #[test]
    fn pages_follow_the_cursor() {
        let server = McpServer::new((Hello, Bye, HelloAgain))
            .expect("tools register")
            .with_page_size(2);
        let names = |tools: Vec<McpTool>| -> Vec<String> {
            tools.into_iter().map(|t| t.name.into_owned()).collect()
        };
        let (first, next) = server.page(None, None).expect("a page");
        assert_eq!(
            (names(first), next.as_deref()),
            (vec!["hello".into(), "bye".into()], Some("2"))
        );
        let (last, next) = server.page(Some("2"), None).expect("a page");
        assert_eq!((names(last), next), (vec!["hello2".to_owned()], None));
        assert!(server.page(Some("9"), None).is_err());
        assert!(server.page(Some("x"), None).is_err());
    }
}
