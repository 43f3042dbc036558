//! The caller's identity reaches the served tools: `McpServer::with_context` makes each
//! call's context from the bearer token's principal, and a `Ctx<T>` tool and the hooks read
//! it; calls nothing authenticates (stdio, HTTP without authentication) get what the
//! function makes of `None`.

use std::sync::{Arc, Mutex, PoisonError};

use pi_runtime::agent::{Hooks, ToolCallDecision};
use pi_runtime::mcp::auth::{Authentication, Principal, StaticTokens};
use pi_runtime::mcp::{HttpServing, McpClient, McpError, McpHttpServer, McpServer};
use pi_runtime::{AgentTool, Ctx, ToolContext, ToolResult, tool};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::mcp_support::{call, initialize};

/// Who calls: the token's subject, or nobody.
#[derive(Debug, Clone, PartialEq)]
struct Caller(Option<String>);

impl Caller {
    fn of(principal: Option<&Principal>) -> Caller {
        Caller(principal.map(|p| p.subject.clone()))
    }

    fn name(&self) -> &str {
        self.0.as_deref().unwrap_or("anonymous")
    }
}

/// Say whom the call comes from.
#[tool]
async fn whoami(Ctx(caller): Ctx<Caller>) -> String {
    caller.name().to_owned()
}

/// Echo a text.
#[tool]
async fn echo(text: String) -> String {
    text
}

const BILLING: &str = "0123456789abcdef-billing";
const REPORTS: &str = "0123456789abcdef-reports";

fn authenticated() -> HttpServing {
    let tokens = StaticTokens::new()
        .with_token(BILLING, Principal::new("billing"))
        .with_token(REPORTS, Principal::new("reports"));
    HttpServing::default().with_authentication(Authentication::new(tokens))
}

async fn serve(server: &McpServer, serving: HttpServing) -> McpHttpServer {
    server
        .serve_http("127.0.0.1:0".parse().expect("an address"), serving)
        .await
        .expect("a loopback port")
}

/// `tool` of a client of `http`, sending `token` if one is given, called with `args`.
async fn call_over_http(
    http: &McpHttpServer,
    token: Option<&str>,
    tool: &str,
    args: Value,
) -> ToolResult {
    let mut builder = McpClient::builder("s");
    if let Some(token) = token {
        builder = builder.bearer_token(token);
    }
    let client = builder.http(http.url()).await.expect("connects");
    let name = format!("mcp__s__{tool}");
    let tool = client
        .tools()
        .into_iter()
        .find(|t| t.definition().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    let result = tool
        .execute("c1".into(), args, ToolContext::detached("c1"))
        .await
        .expect("a result");
    client.close().await;
    result
}

#[tokio::test]
async fn a_ctx_tool_sees_the_subject_of_the_token_of_its_call() {
    let server = McpServer::new((Whoami, Echo))
        .expect("tools register")
        .with_context(Caller::of)
        .expect("the tools read a Caller");
    let http = serve(&server, authenticated()).await;
    for (token, subject) in [(BILLING, "billing"), (REPORTS, "reports")] {
        let result = call_over_http(&http, Some(token), "whoami", json!({})).await;
        assert_eq!(
            (result.is_error, result.text_content()),
            (false, subject.to_owned())
        );
    }
    http.shutdown().await;
}

#[tokio::test]
async fn the_hooks_see_the_context_of_each_call() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let before = Arc::clone(&seen);
    let after = Arc::clone(&seen);
    // Anonymous callers may not call anything; every call's caller is recorded, before and
    // after it runs.
    let hooks = Hooks::new()
        .before_tool_call(move |call| {
            let caller = call
                .context
                .as_ref()
                .and_then(|c| c.get::<Caller>())
                .cloned();
            before
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(format!(
                    "before {}",
                    caller.as_ref().map_or("none", Caller::name)
                ));
            async move {
                Ok(match caller {
                    Some(Caller(Some(_))) => ToolCallDecision::Allow,
                    _ => ToolCallDecision::block("Sign in to call tools"),
                })
            }
        })
        .after_tool_call(move |call| {
            let caller = call
                .context
                .as_ref()
                .and_then(|c| c.get::<Caller>())
                .cloned();
            after
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(format!(
                    "after {}",
                    caller.as_ref().map_or("none", Caller::name)
                ));
            async { Ok(Default::default()) }
        });
    let server = McpServer::new((Echo,))
        .expect("tools register")
        .with_context(Caller::of)
        .expect("no tool reads another context")
        .with_hooks(hooks);

    let http = serve(&server, authenticated()).await;
    let result = call_over_http(&http, Some(BILLING), "echo", json!({"text": "hi"})).await;
    assert_eq!(
        (result.is_error, result.text_content()),
        (false, "hi".into())
    );
    http.shutdown().await;

    let open = serve(&server, HttpServing::default()).await;
    let result = call_over_http(&open, None, "echo", json!({"text": "hi"})).await;
    assert_eq!(
        (result.is_error, result.text_content()),
        (true, "Sign in to call tools".into())
    );
    open.shutdown().await;

    assert_eq!(
        *seen.lock().unwrap_or_else(PoisonError::into_inner),
        ["before billing", "after billing", "before anonymous"]
    );
}

#[tokio::test]
async fn a_call_without_a_principal_gets_what_the_context_function_makes_of_none() {
    let server = McpServer::new((Whoami,))
        .expect("tools register")
        .with_context(Caller::of)
        .expect("the tools read a Caller");

    // Streamable HTTP on loopback, without authentication.
    let http = serve(&server, HttpServing::default()).await;
    let result = call_over_http(&http, None, "whoami", json!({})).await;
    assert_eq!(
        (result.is_error, result.text_content()),
        (false, "anonymous".into())
    );
    http.shutdown().await;

    // A byte stream, as stdio is served.
    let answer = call_over_io(server, call(1, "whoami", json!({}))).await;
    assert_eq!(
        answer["result"],
        json!({"content": [{"type": "text", "text": "anonymous"}], "isError": false})
    );
}

#[tokio::test]
async fn without_a_context_a_ctx_tool_fails_each_call_and_says_why() {
    let server = McpServer::new((Whoami,)).expect("tools register");
    let answer = call_over_io(server, call(1, "whoami", json!({}))).await;
    assert_eq!(answer["result"]["isError"], true);
    assert_eq!(
        answer["result"]["content"][0]["text"],
        format!(
            "Tool \"whoami\" needs a context of type `{}`, and this call has none",
            std::any::type_name::<Caller>()
        )
    );
}

#[test]
fn a_context_of_another_type_than_the_tools_read_is_refused() {
    let error = McpServer::new((Whoami, Echo))
        .expect("tools register")
        .with_context(|principal: Option<&Principal>| principal.map(|p| p.subject.clone()))
        .expect_err("whoami reads a Caller");
    assert!(matches!(error, McpError::ContextType { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "tool \"whoami\" reads a context of type `{}`, and the server's calls supply a `{}`",
            std::any::type_name::<Caller>(),
            std::any::type_name::<Option<String>>()
        )
    );
}

/// Serve one connection over an in-memory byte stream, as stdio is served, and send
/// `request` after the handshake; the answer to it.
async fn call_over_io(server: McpServer, request: Value) -> Value {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(theirs);
    let served = tokio::spawn(server.serve_io(read, write));
    let (read, mut write) = tokio::io::split(ours);
    let mut lines = BufReader::new(read).lines();
    let mut send = async |message: Value| {
        let line = format!("{message}\n");
        write.write_all(line.as_bytes()).await.expect("written");
    };
    send(initialize()).await;
    let initialized = lines.next_line().await.expect("readable").expect("a line");
    assert!(initialized.contains("\"serverInfo\""), "{initialized}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let id = request["id"].clone();
    send(request).await;
    let answer = loop {
        let line = lines.next_line().await.expect("readable").expect("a line");
        let message: Value = serde_json::from_str(&line).expect("JSON");
        if message["id"] == id {
            break message;
        }
    };
    drop(write);
    drop(lines);
    served.await.expect("the server task").expect("served");
    answer
}
