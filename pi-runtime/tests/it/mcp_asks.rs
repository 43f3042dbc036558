//! A served tool asks the client that called it (`ConnectedClient`), and our own client
//! answers (`ClientAnswers`): as a request on the connection on 2025-11-25, and as an
//! `InputRequiredResult` round trip on 2026-07-28. A client that declared no answer gets
//! the same clear refusal on both; a tool that needs approval runs only on approval.

// Sampling and roots are deprecated by SEP-2577, a revision after 2026-07-28.
#![allow(deprecated)]

use std::sync::atomic::{AtomicUsize, Ordering};

use pi_runtime::mcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, Root,
};
use pi_runtime::mcp::{ClientAnswers, ConnectedClient, HttpServing, McpClient, McpServer};
use pi_runtime::{AgentTool, ToolContext, ToolError, ToolResult, tool};
use serde_json::json;

/// Ask the user's name, then their roots.
#[tool]
async fn greet(#[tool(extract)] client: ConnectedClient) -> Result<String, ToolError> {
    let schema = ElicitationSchema::builder()
        .required_string("name")
        .build()
        .map_err(ToolError::new)?;
    let form = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "What is your name?".to_owned(),
        requested_schema: schema,
    };
    let answer = client.elicit("name", form).await?;
    let name = answer.content.unwrap_or_default()["name"].clone();
    let roots = client.roots("roots").await?;
    let uris: Vec<String> = roots.roots.into_iter().map(|r| r.uri).collect();
    Ok(format!(
        "Hello, {}! Roots: {}",
        name.as_str().unwrap_or("?"),
        uris.join(", ")
    ))
}

/// How often `launch` ran.
static LAUNCHES: AtomicUsize = AtomicUsize::new(0);

/// Launch something that needs a person's approval.
#[tool(approval = "always")]
async fn launch() -> String {
    LAUNCHES.fetch_add(1, Ordering::SeqCst);
    "launched".to_owned()
}

/// Answers every form: a name for the greeting, `approve` as told for approvals.
fn answers(approve: bool) -> ClientAnswers {
    ClientAnswers::new()
        .elicitation(move |form| async move {
            let ElicitRequestParams::FormElicitationParams { message, .. } = form else {
                return ElicitResult::new(ElicitationAction::Decline);
            };
            let mut answer = ElicitResult::new(ElicitationAction::Accept);
            answer.content = Some(if message.contains("approval") {
                json!({"approve": approve})
            } else {
                json!({"name": "Ada"})
            });
            answer
        })
        .roots(vec![Root::new("file:///work")])
}

async fn call(client: &McpClient, tool: &str) -> ToolResult {
    let name = format!("mcp__asks__{tool}");
    let tool = client
        .tools()
        .into_iter()
        .find(|t| t.definition().name == name)
        .expect("the tool is listed");
    let call = tool.execute("c1".into(), json!({}), ToolContext::detached("c1"));
    call.await.unwrap_or_else(ToolResult::from)
}

#[tokio::test]
async fn a_tool_asks_our_client_on_both_revisions_and_refuses_without_answers() {
    let server = McpServer::new((Greet, Launch)).expect("the tools register");
    let addr = "127.0.0.1:0".parse().expect("an address");
    let http = server
        .serve_http(addr, HttpServing::default())
        .await
        .expect("a loopback port");
    for revision in ["2025-11-25", "2026-07-28"] {
        let connect = |answers: ClientAnswers| {
            McpClient::builder("asks")
                .protocol_version(revision)
                .answers(answers)
                .http(http.url())
        };
        let client = connect(answers(true)).await.expect("connects");
        let greeted = call(&client, "greet").await;
        assert_eq!(
            (greeted.is_error, greeted.text_content()),
            (false, "Hello, Ada! Roots: file:///work".to_owned()),
            "{revision}"
        );

        let before = LAUNCHES.load(Ordering::SeqCst);
        let launched = call(&client, "launch").await;
        assert_eq!(launched.text_content(), "launched", "{revision}");
        assert_eq!(LAUNCHES.load(Ordering::SeqCst), before + 1, "{revision}");
        client.close().await;

        let refusing = connect(answers(false)).await.expect("connects");
        let denied = call(&refusing, "launch").await;
        assert_eq!(
            (denied.is_error, denied.text_content()),
            (
                true,
                "Tool call denied: the user did not approve it".to_owned()
            ),
            "{revision}"
        );
        assert_eq!(
            LAUNCHES.load(Ordering::SeqCst),
            before + 1,
            "{revision}: never on a denial"
        );
        refusing.close().await;

        // A client that answers nothing declares nothing: the tool is refused before it asks.
        let mute = connect(ClientAnswers::new()).await.expect("connects");
        let refused = call(&mute, "greet").await;
        let expected = match revision {
            "2025-11-25" => "the MCP client does not support elicitation",
            _ => {
                "MCP tool asks/greet failed: The client does not support elicitation, \
                 which this request needs"
            }
        };
        assert!(refused.is_error, "{revision}");
        assert_eq!(refused.text_content(), expected, "{revision}");
        mute.close().await;
    }
    http.shutdown().await;
}
