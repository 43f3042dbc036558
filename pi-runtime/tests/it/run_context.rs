//! The per-run context: `Ctx<T>` parameters, supplied per prompt or per conversation of one
//! shared definition, seen by hooks and nested calls; a run whose context does not fit its
//! tools does not start.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pi_runtime::agent::{Agent, AgentError, BuildError, RunEnd, ToolCallDecision};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{Ctx, Message, ToolCall, ToolContext, ToolDefinition, ToolError, tool};
use serde_json::json;

/// One tenant's data.
#[derive(Debug)]
struct Tenant {
    id: usize,
    notes: Mutex<Vec<String>>,
}

impl Tenant {
    fn new(id: usize) -> Arc<Tenant> {
        Arc::new(Tenant {
            id,
            notes: Mutex::new(Vec::new()),
        })
    }
}

/// Calls whose context was not the tenant the model named.
static CROSSED: AtomicUsize = AtomicUsize::new(0);

/// Write a note into the tenant's data.
#[tool]
async fn note(tenant: usize, text: String, Ctx(ctx): Ctx<Arc<Tenant>>) -> String {
    if ctx.id != tenant {
        CROSSED.fetch_add(1, Ordering::SeqCst);
    }
    // Yield so that calls of other conversations interleave with this one.
    tokio::task::yield_now().await;
    ctx.notes.lock().unwrap().push(text.clone());
    format!("tenant {} noted {text}", ctx.id)
}

/// The tenant number in the prompt `tenant N`.
fn tenant_of(messages: &[Message]) -> usize {
    messages
        .iter()
        .find_map(|m| match m {
            Message::User(user) => user.text_content().strip_prefix("tenant ")?.parse().ok(),
            _ => None,
        })
        .unwrap_or(usize::MAX)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_conversations_of_one_definition_each_see_their_own_context() {
    const CONVERSATIONS: usize = 1_000;
    let mut model = FauxModel::new().without_fallback();
    // Two requests per conversation, answered from the request itself, in any order.
    for _ in 0..2 * CONVERSATIONS {
        model = model.respond_with(|request| {
            let tenant = tenant_of(&request.messages);
            match request.messages.last() {
                Some(Message::ToolResult(_)) => FauxResponse::text(format!("done {tenant}")),
                _ => FauxResponse::tool_call(
                    format!("c{tenant}"),
                    "note",
                    json!({"tenant": tenant, "text": format!("from {tenant}")}),
                ),
            }
        });
    }
    let hook_checks = Arc::new(AtomicUsize::new(0));
    let checks = Arc::clone(&hook_checks);
    let definition = Agent::builder()
        .model(model)
        .tools(Note)
        .context_type::<Arc<Tenant>>()
        .before_tool_call(move |call| {
            let checks = Arc::clone(&checks);
            async move {
                // The hook sees the run's context too.
                let tenant = call.context.as_ref().and_then(|c| c.get::<Arc<Tenant>>());
                if tenant.map(|t| t.id) != call.args["tenant"].as_u64().map(|id| id as usize) {
                    return Ok(ToolCallDecision::block("the hook saw another tenant"));
                }
                checks.fetch_add(1, Ordering::SeqCst);
                Ok(ToolCallDecision::Allow)
            }
        })
        .build_definition()
        .unwrap();
    let tenants: Vec<Arc<Tenant>> = (0..CONVERSATIONS).map(Tenant::new).collect();
    let mut runs = tokio::task::JoinSet::new();
    for tenant in &tenants {
        let (conversation, tenant) = (definition.conversation(), Arc::clone(tenant));
        runs.spawn(async move {
            let id = tenant.id;
            let run = conversation
                .prompt_with(format!("tenant {id}"), tenant)
                .await;
            (id, run)
        });
    }
    let mut finished = 0;
    while let Some(joined) = runs.join_next().await {
        let (id, run) = joined.unwrap();
        let run = run.unwrap();
        assert_eq!(run.end, RunEnd::Completed);
        let results: Vec<String> = run
            .iter()
            .filter_map(Message::as_tool_result)
            .map(|r| r.text())
            .collect();
        assert_eq!(results, [format!("tenant {id} noted from {id}")]);
        finished += 1;
    }
    assert_eq!(finished, CONVERSATIONS);
    assert_eq!(
        CROSSED.load(Ordering::SeqCst),
        0,
        "no call saw another tenant's context"
    );
    assert_eq!(hook_checks.load(Ordering::SeqCst), CONVERSATIONS);
    for tenant in &tenants {
        assert_eq!(
            *tenant.notes.lock().unwrap(),
            [format!("from {}", tenant.id)],
            "tenant {} has only its own note",
            tenant.id
        );
    }
}

/// Which tenant is this?
#[tool]
async fn whoami(Ctx(tenant): Ctx<Arc<Tenant>>) -> String {
    format!("tenant {}", tenant.id)
}

/// Ask `whoami` through the dispatcher.
#[tool]
async fn relay(ctx: ToolContext) -> String {
    ctx.call_tool(ToolCall::new("nested", "whoami", json!({})))
        .await
        .text_content()
}

fn tool_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(Message::as_tool_result)
        .map(|r| r.text())
        .collect()
}

#[tokio::test]
async fn nested_calls_see_the_run_context() {
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "relay", json!({})));
    let agent = Agent::builder()
        .model(model)
        .tools((Whoami, Relay))
        .build()
        .unwrap();
    let run = agent.prompt_with("who?", Tenant::new(42)).await.unwrap();
    assert_eq!(tool_texts(&run), ["tenant 42"]);
}

#[tokio::test]
async fn a_conversation_context_serves_every_run_unless_a_prompt_brings_its_own() {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "whoami", json!({})))
        .respond(FauxResponse::text("ok"))
        .respond(FauxResponse::tool_call("c2", "whoami", json!({})))
        .respond(FauxResponse::text("ok"));
    let agent = Agent::builder().model(model).tools(Whoami).build().unwrap();
    agent.set_context(Tenant::new(1));
    let first = agent.prompt("who?").await.unwrap();
    let second = agent.prompt_with("who?", Tenant::new(2)).await.unwrap();
    assert_eq!(tool_texts(&first), ["tenant 1"]);
    assert_eq!(tool_texts(&second), ["tenant 2"]);
}

#[tokio::test]
async fn a_run_without_the_context_a_tool_reads_does_not_start() {
    let model = FauxModel::new();
    let agent = Agent::builder()
        .model(model.clone())
        .tools(Whoami)
        .build()
        .unwrap();
    let missing = agent.prompt("who?").await.unwrap_err();
    assert_eq!(
        missing,
        AgentError::MissingContext {
            tool: "whoami".to_owned(),
            needs: "alloc::sync::Arc<it::run_context::Tenant>",
        }
    );
    assert_eq!(
        missing.to_string(),
        "tool \"whoami\" reads a context of type `alloc::sync::Arc<it::run_context::Tenant>`, and this run supplies none: pass one with prompt_with() or set_context()"
    );
    let other = agent
        .prompt_with("who?", "acme".to_owned())
        .await
        .unwrap_err();
    assert_eq!(
        other.to_string(),
        "tool \"whoami\" reads a context of type `alloc::sync::Arc<it::run_context::Tenant>`, and this run supplies a `alloc::string::String`"
    );
    assert_eq!(model.request_count(), 0);
    assert!(agent.messages().is_empty(), "nothing ran");
}

#[test]
fn a_tool_reading_another_context_type_does_not_build() {
    let error = Agent::builder()
        .model(FauxModel::new())
        .tools(Whoami)
        .context_type::<String>()
        .build()
        .unwrap_err();
    assert!(matches!(error, BuildError::ContextType { .. }));
    assert_eq!(
        error.to_string(),
        "tool \"whoami\" reads a context of type `alloc::sync::Arc<it::run_context::Tenant>`, and the agent's context type is `alloc::string::String`"
    );
}

#[tokio::test]
async fn context_tools_declares_the_context_type_and_registers_the_tools() {
    // `Whoami` reads `Arc<Tenant>` and `Relay` no context: both compile with
    // `context_tools::<Arc<Tenant>>` (a tool reading another type does not: the trybuild case
    // `ctx_mismatched_type`). The declared type then holds for tools registered the dynamic way.
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "relay", json!({})));
    let agent = Agent::builder()
        .model(model)
        .context_tools::<Arc<Tenant>>((Whoami, Arc::new(Relay)))
        .build()
        .unwrap();
    let run = agent.prompt_with("who?", Tenant::new(7)).await.unwrap();
    assert_eq!(tool_texts(&run), ["tenant 7"]);

    let error = Agent::builder()
        .model(FauxModel::new())
        .context_tools::<String>(Relay)
        .tools(Whoami)
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool \"whoami\" reads a context of type `alloc::sync::Arc<it::run_context::Tenant>`, and the agent's context type is `alloc::string::String`"
    );
}

#[tokio::test]
async fn a_call_from_outside_a_run_gets_an_error_naming_the_type() {
    let result = pi_runtime::AgentTool::execute(
        &Whoami,
        "c1".to_owned(),
        json!({}),
        ToolContext::detached("c1"),
    )
    .await;
    assert_eq!(
        result.map_err(ToolError::into_message),
        Err("Tool \"whoami\" needs a context of type `alloc::sync::Arc<it::run_context::Tenant>`, and this call has none".to_owned())
    );
    assert_eq!(
        Whoami.settings().context_type.map(|t| t.name()),
        Some("alloc::sync::Arc<it::run_context::Tenant>")
    );
}

#[test]
fn the_context_value_never_shows_in_debug_output() {
    let context = ToolContext::detached("c1")
        .with_run_context(pi_runtime::tool::RunContext::new("secret-token".to_owned()));
    let debug = format!("{context:?}");
    assert!(!debug.contains("secret-token"), "{debug}");
    assert!(
        debug.contains("RunContext<alloc::string::String>"),
        "{debug}"
    );
}
