//! One agent definition behind a multi-tenant HTTP service:
//!
//! ```text
//! cargo run --example server -- --port 3000
//! curl -s localhost:3000/chat -H 'x-tenant: acme' -d 'note buy milk'
//! curl -s localhost:3000/chat -H 'x-tenant: acme' -d 'list'
//! curl -s localhost:3000/chat -H 'x-tenant: globex' -d 'list'
//! cargo run --example server -- --demo     # the three requests above, in-process, then exit
//! ```
//!
//! The agent is built once ([`AgentDefinition`]); each HTTP request starts a conversation
//! of it with the request's tenant as the run's context (`prompt_with`). The tools read and
//! write that tenant's notes through `Ctx<Arc<TenantCtx>>`, so concurrent requests of
//! different tenants never see each other's data, and the tools carry their execution
//! policy: a timeout, a retry budget and a shared database limit.
//!
//! Offline by default, on a faux model that turns `note <text>` into an `add_note` call and
//! anything else into `list_notes`; with `OPENAI_API_KEY` (or `--base-url`) set, a real model
//! decides.

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::State as HttpState;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use clap::Parser;
use pi_runtime::agent::{Agent, AgentDefinition};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::provider::presets;
use pi_runtime::{Ctx, LanguageModel, Message, tool};
use serde_json::json;

/// Every tenant's notes: the service's database.
#[derive(Debug, Default)]
struct Store {
    notes: Mutex<HashMap<String, Vec<String>>>,
}

/// The context of one request: who it is for, and where their data is.
#[derive(Debug)]
struct TenantCtx {
    tenant: String,
    store: Arc<Store>,
}

/// Save a note for the current tenant.
#[tool(timeout = "5s", retries = 2, concurrency = "db:8")]
async fn add_note(
    /// The note's text.
    text: String,
    Ctx(ctx): Ctx<Arc<TenantCtx>>,
) -> String {
    let mut notes = ctx
        .store
        .notes
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let list = notes.entry(ctx.tenant.clone()).or_default();
    list.push(text.clone());
    format!("saved note {} for {}: {text}", list.len(), ctx.tenant)
}

/// List the current tenant's notes.
#[tool(timeout = "5s", concurrency = "db:8", max_output = "16KiB")]
async fn list_notes(Ctx(ctx): Ctx<Arc<TenantCtx>>) -> String {
    let notes = ctx
        .store
        .notes
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    match notes.get(&ctx.tenant) {
        Some(list) if !list.is_empty() => format!("{}'s notes: {}", ctx.tenant, list.join("; ")),
        _ => format!("{} has no notes", ctx.tenant),
    }
}

#[derive(Parser)]
#[command(about = "An agent behind a multi-tenant HTTP service")]
struct Cli {
    /// The port to listen on.
    #[arg(long, default_value_t = 3000)]
    port: u16,
    /// Send three requests in-process, print the answers and exit.
    #[arg(long)]
    demo: bool,
    /// An OpenAI-compatible server to use instead of the faux model.
    #[arg(long)]
    base_url: Option<String>,
}

/// What every request handler shares: the definition and the database.
#[derive(Clone)]
struct App {
    agent: AgentDefinition,
    store: Arc<Store>,
}

/// `POST /chat` with an `x-tenant` header: one run in a new conversation, with the
/// tenant's context; the answer is the run's final text.
async fn chat(
    HttpState(app): HttpState<App>,
    headers: HeaderMap,
    prompt: String,
) -> (StatusCode, String) {
    let Some(tenant) = headers.get("x-tenant").and_then(|v| v.to_str().ok()) else {
        return (
            StatusCode::BAD_REQUEST,
            "missing x-tenant header\n".to_owned(),
        );
    };
    let context = Arc::new(TenantCtx {
        tenant: tenant.to_owned(),
        store: Arc::clone(&app.store),
    });
    match app.agent.conversation().prompt_with(prompt, context).await {
        Ok(run) => (StatusCode::OK, format!("{}\n", final_text(&run))),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n")),
    }
}

fn final_text(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find_map(Message::as_assistant)
        .map(|message| message.text())
        .unwrap_or_default()
}

/// Offline: `note <text>` saves it, anything else lists; after a tool result, report it.
fn faux_model() -> FauxModel {
    FauxModel::new().respond_always(|request| match request.messages.last() {
        Some(Message::ToolResult(result)) => FauxResponse::text(result.text()),
        Some(Message::User(user)) => {
            let text = user.text_content();
            match text.strip_prefix("note ") {
                Some(note) => FauxResponse::tool_call("c1", "add_note", json!({"text": note})),
                None => FauxResponse::tool_call("c1", "list_notes", json!({})),
            }
        }
        _ => FauxResponse::text("Send `note <text>` or `list`."),
    })
}

fn choose_model(cli: &Cli) -> Arc<dyn LanguageModel> {
    if let Some(url) = &cli.base_url {
        return presets::openai_completions("gpt-4o-mini")
            .base_url(url)
            .no_api_key()
            .build();
    }
    let preset = presets::openai("gpt-4o-mini");
    if preset.options.api_key.is_some() {
        return preset.build();
    }
    Arc::new(faux_model())
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let built = Agent::builder()
        .shared_model(choose_model(&cli))
        .system_prompt("You keep notes for the current tenant. Use the tools.")
        .context_tools::<Arc<TenantCtx>>((AddNote, ListNotes))
        .build_definition();
    let agent = match built {
        Ok(agent) => agent,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let app = App {
        agent,
        store: Arc::default(),
    };
    if cli.demo {
        for (tenant, prompt) in [
            ("acme", "note buy milk"),
            ("acme", "list"),
            ("globex", "list"),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(
                "x-tenant",
                tenant.parse().unwrap_or_else(|_| unreachable!()),
            );
            let (status, body) = chat(HttpState(app.clone()), headers, prompt.to_owned()).await;
            print!("{tenant} {prompt:?} -> {} {body}", status.as_u16());
        }
        return ExitCode::SUCCESS;
    }
    let router = Router::new().route("/chat", post(chat)).with_state(app);
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", cli.port)).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("error: cannot listen on port {}: {error}", cli.port);
            return ExitCode::FAILURE;
        }
    };
    eprintln!("listening on http://127.0.0.1:{}/chat", cli.port);
    match axum::serve(listener, router).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
