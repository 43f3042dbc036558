//! Tool changes in the transcript reach each wire API as pi 1.6 sends them, through the real
//! `HttpModel` on loopback.
//!
//! Where an API can carry a change in place (Anthropic's native changes, Responses'
//! `additional_tools` and tool search), the request after a change must repeat the request
//! before it byte for byte up to where the new messages begin: that prefix is what the
//! provider's prompt cache keys on, and a tool change that rewrote it would make every change
//! a full cache miss. Where an API cannot (Chat Completions and Gemini by default), a removal
//! folds into the system prompt and the tool list.
//!
//! Every transcript here is what pi's agent sends: the leading system message carries the
//! prompt and the first tools, and the context has neither `system_prompt` nor `tools`.

use crate::provider_support;

use pi_runtime::message::{SystemMessage, ToolRef, UserContent, UserMessage};
use pi_runtime::provider::http::HttpModel;
use pi_runtime::provider::{Api, Compat, Model};
use pi_runtime::{
    AssistantMessage, ContentBlock, Context, LanguageModel, Message, StopReason, StreamOptions,
    Tool, ToolCall, ToolResultMessage,
};
use provider_support::{
    Recorded, Reply, Server, anthropic_text, collect, final_message, google_text, model,
    openai_text, options, responses_text,
};
use serde_json::{Value, json};

const PROMPT: &str = "You are a coding agent.";

fn tool(name: &str, description: &str, properties: &Value, required: &[&str]) -> Tool {
    Tool::new(
        name,
        description,
        json!({"type": "object", "properties": properties, "required": required}),
    )
}

fn read() -> Tool {
    tool(
        "read",
        "Read a file",
        &json!({"path": {"type": "string"}}),
        &["path"],
    )
}

fn edit() -> Tool {
    tool(
        "edit",
        "Edit a file",
        &json!({"path": {"type": "string"}, "oldText": {"type": "string"},
                "newText": {"type": "string"}}),
        &["path", "oldText", "newText"],
    )
}

fn grep() -> Tool {
    tool(
        "grep",
        "Search file contents",
        &json!({"pattern": {"type": "string"}}),
        &["pattern"],
    )
}

fn system(text: &str, added: Vec<Tool>, removed: &[&str]) -> Message {
    let mut message = SystemMessage::text(text);
    message.tools_added = (!added.is_empty()).then_some(added);
    message.tools_removed = (!removed.is_empty()).then(|| {
        removed
            .iter()
            .map(|name| ToolRef {
                name: (*name).to_owned(),
            })
            .collect()
    });
    message.into()
}

/// A typed prompt: string content, as pi's interactive prompts are.
fn user(text: &str) -> Message {
    UserMessage {
        content: UserContent::Text(text.to_owned()),
        timestamp: 1,
    }
    .into()
}

/// An earlier reply of `model`, so that it replays as its own.
fn assistant(model: &Model, content: Vec<ContentBlock>) -> Message {
    let mut message = AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id);
    message.content = content;
    message.stop_reason = if message.tool_calls().next().is_some() {
        StopReason::ToolUse
    } else {
        StopReason::Stop
    };
    message.into()
}

/// The leading system message with `read` and `edit`, then one turn that reads a file, then
/// a question.
fn transcript(model: &Model) -> Vec<Message> {
    let result = ToolResultMessage {
        tool_call_id: "call_1".into(),
        tool_name: "read".into(),
        content: vec![ContentBlock::text("print('hi')")],
        details: None,
        usage: None,
        is_error: false,
        duration_ms: None,
        timestamp: 4,
    };
    vec![
        system(PROMPT, vec![read(), edit()], &[]),
        user("What does main.py do?"),
        assistant(
            model,
            vec![
                ContentBlock::text("Reading it."),
                ContentBlock::ToolCall(ToolCall::new("call_1", "read", json!({"path": "main.py"}))),
            ],
        ),
        result.into(),
        assistant(model, vec![ContentBlock::text("It prints hi.")]),
        user("Is there anything to fix?"),
    ]
}

fn compat(flags: Value) -> Compat {
    serde_json::from_value(flags).expect("compat flags")
}

/// Request N for `messages`, then request N+1 for the same messages, the model's reply, a
/// system message adding `grep`, and a new question. Returns both recorded requests.
async fn before_and_after_an_addition(
    server: &Server,
    client: &HttpModel,
    messages: Vec<Message>,
) -> (Recorded, Recorded) {
    let first = Context::new("", messages.clone(), vec![]);
    let events = collect(client.stream(first, StreamOptions::default())).await;
    let reply = final_message(&events);
    assert_eq!(
        reply.stop_reason,
        StopReason::Stop,
        "{:?}",
        reply.error_message
    );
    let mut next = messages;
    next.push(reply.clone().into());
    next.push(system("", vec![grep()], &[]));
    next.push(user("Now search for TODO comments."));
    let events =
        collect(client.stream(Context::new("", next, vec![]), StreamOptions::default())).await;
    assert_eq!(final_message(&events).stop_reason, StopReason::Stop);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let mut requests = requests.into_iter();
    let n = requests.next().expect("request N");
    let n1 = requests.next().expect("request N+1");
    (n, n1)
}

/// Where the elements of the array `key` of a compact body begin in its raw text, and where
/// each element ends: the elements' own JSON texts, checked against the raw bytes, so a cut
/// at an element boundary is a cut in what was sent.
fn element_offsets(request: &Recorded, key: &str) -> Vec<usize> {
    let opening = format!("\"{key}\":[");
    let start = request.raw.find(&opening).expect("the array in the body") + opening.len();
    let mut offsets = vec![start];
    let mut at = start;
    for element in request.body[key].as_array().expect("an array") {
        let text = serde_json::to_string(element).expect("serialize");
        assert_eq!(&request.raw[at..at + text.len()], text, "compact body");
        at += text.len();
        offsets.push(at);
        at += 1; // the comma, or the closing bracket
    }
    offsets
}

/// A message as pi compares replayed prefixes (`hashThreadPrefix`): without cache markers,
/// a string content as the one text block it becomes when it carries the marker.
fn without_cache_markers(message: &Value) -> Value {
    match message {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, value)| match (key.as_str(), value) {
                    ("content", Value::String(text)) => {
                        (key.clone(), json!([{"type": "text", "text": text}]))
                    }
                    _ => (key.clone(), without_cache_markers(value)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_cache_markers).collect()),
        other => other.clone(),
    }
}

/// Anthropic with native tool changes: the request after `grep` is added repeats the one
/// before it from its first byte up to the first byte of the earlier request's last message
/// (the model and every message but the last). That last message differs only by its cache
/// marker: Anthropic's marker goes on the newest message, so it moves (and a string content
/// becomes a block to carry it). `tools` and `system`, which come after `messages` in the body
/// but before them in Anthropic's cache order, are byte-identical, markers included: the
/// tool list stays the leading tools plus the deferred placeholder, and `grep` travels in a
/// `tool_addition` block after the new question. The inline-tools beta is on from request N.
#[tokio::test]
async fn anthropic_native_tool_addition_keeps_the_cached_prefix() {
    let server = Server::start(vec![
        Reply::Sse(anthropic_text("Nothing obvious.")),
        Reply::Sse(anthropic_text("One TODO in main.py.")),
    ])
    .await;
    let mut model = model(Api::AnthropicMessages, "test", "claude-test", &server);
    model.compat = compat(json!({"supportsMidConvoSystemMessages": true,
                                 "supportsMidConvoToolChanges": true}));
    let messages = transcript(&model);
    let client = HttpModel::new(model, options());
    let (n, n1) = before_and_after_an_addition(&server, &client, messages).await;

    let offsets = element_offsets(&n, "messages");
    let last_start = offsets[offsets.len() - 2];
    assert_eq!(n1.raw[..last_start], n.raw[..last_start]);
    let last = n.body["messages"].as_array().expect("messages").len() - 1;
    assert_eq!(
        without_cache_markers(&n1.body["messages"][last]),
        without_cache_markers(&n.body["messages"][last])
    );
    for key in ["system", "tools"] {
        assert_eq!(
            serde_json::to_string(&n1.body[key]).expect("serialize"),
            serde_json::to_string(&n.body[key]).expect("serialize"),
            "{key}"
        );
    }
    let tools: Vec<&str> = n.body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(tools, ["read", "edit", "__pi_deferred_placeholder__"]);
    for request in [&n, &n1] {
        assert_eq!(
            request.header("anthropic-beta"),
            Some("inline-tools-2026-09-15")
        );
    }
    // The new messages: the reply, the question, then the change (held until an assistant
    // message or the end), whose last block carries the marker now.
    let new = &n1.body["messages"].as_array().expect("messages")[last + 1..];
    assert_eq!(new.len(), 3);
    assert_eq!(new[0]["role"], "assistant");
    assert_eq!(
        new[1],
        json!({"role": "user", "content": "Now search for TODO comments."})
    );
    assert_eq!(new[2]["role"], "system");
    assert_eq!(new[2]["content"][0]["type"], "tool_addition");
    assert_eq!(new[2]["content"][0]["tool"]["definition"]["name"], "grep");
    assert_eq!(
        new[2]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

/// Responses, with `compat` flags: the request after `grep` is added repeats the one before
/// it byte for byte from its first byte through the last element of its `input` (the whole
/// array but its closing bracket: the API has no cache marker to move), and everything after
/// `input` (`tools`, settings) is identical too. Returns N+1's new input items.
async fn responses_keep_the_previous_input(flags: Value) -> Vec<Value> {
    let server = Server::start(vec![
        Reply::Sse(responses_text("Nothing obvious.")),
        Reply::Sse(responses_text("One TODO in main.py.")),
    ])
    .await;
    let mut model = model(Api::OpenAiResponses, "openai", "gpt-test", &server);
    model.reasoning = true;
    model.compat = compat(flags);
    let messages = transcript(&model);
    let client = HttpModel::new(model, options());
    let (n, n1) = before_and_after_an_addition(&server, &client, messages).await;

    let offsets = element_offsets(&n, "input");
    let end = offsets[offsets.len() - 1];
    assert_eq!(n1.raw[..end], n.raw[..end]);
    assert_eq!(&n1.raw[end..=end], ",", "N+1's input continues N's");
    let n1_end = element_offsets(&n1, "input")
        .last()
        .copied()
        .expect("an end");
    assert_eq!(n1.raw[n1_end..], n.raw[end..], "everything after `input`");
    let count = n.body["input"].as_array().expect("input").len();
    n1.body["input"].as_array().expect("input")[count..].to_vec()
}

/// `additional_tools`: every tool is declared in items, the first at the head of the input;
/// the addition is an item after the incremental notice.
#[tokio::test]
async fn responses_additional_tools_keep_the_previous_input() {
    let new = responses_keep_the_previous_input(json!({
        "supportsMidConvoSystemMessages": true, "supportsAdditionalTools": true}))
    .await;
    let kinds: Vec<&str> = new
        .iter()
        .map(|item| {
            item["type"]
                .as_str()
                .or(item["role"].as_str())
                .unwrap_or("")
        })
        .collect();
    assert_eq!(kinds, ["message", "developer", "additional_tools", "user"]);
    assert_eq!(new[2]["tools"][0]["name"], "grep");
}

/// Tool search: the leading tools stay top-level; the addition is a client
/// `tool_search_call` / `tool_search_output` pair whose id hashes its place and names.
#[tokio::test]
async fn responses_tool_search_keeps_the_previous_input() {
    let new = responses_keep_the_previous_input(json!({
        "supportsMidConvoSystemMessages": true, "supportsToolSearch": true}))
    .await;
    let kinds: Vec<&str> = new
        .iter()
        .map(|item| {
            item["type"]
                .as_str()
                .or(item["role"].as_str())
                .unwrap_or("")
        })
        .collect();
    assert_eq!(
        kinds,
        ["message", "tool_search_call", "tool_search_output", "user"]
    );
    assert_eq!(new[1]["call_id"], new[2]["call_id"]);
    assert!(
        new[1]["call_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("pi_tool_load_"))
    );
    assert_eq!(new[2]["tools"][0]["defer_loading"], true);
}

/// The transcript with `edit` removed before a new question.
fn after_a_removal(model: &Model) -> Vec<Message> {
    let mut messages = transcript(model);
    messages.push(assistant(
        model,
        vec![ContentBlock::text("Nothing obvious.")],
    ));
    messages.push(system("Read-only now.", vec![], &["edit"]));
    messages.push(user("Look again."));
    messages
}

/// The one request a client sends for `messages`.
async fn only_request(server: &Server, client: &HttpModel, messages: Vec<Message>) -> Recorded {
    let events =
        collect(client.stream(Context::new("", messages, vec![]), StreamOptions::default())).await;
    assert_eq!(final_message(&events).stop_reason, StopReason::Stop);
    server.only_request()
}

fn function_names(tools: &Value) -> Vec<&str> {
    tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect()
}

/// Chat Completions without mid-conversation system messages (every host's default): the
/// removal's text joins the system prompt, `edit` leaves the tool list, and no system
/// message is sent after the first.
#[tokio::test]
async fn completions_fold_a_removal_into_the_system_prompt() {
    let server = Server::start(vec![Reply::Sse(openai_text("Nothing."))]).await;
    let model = model(Api::OpenAiCompletions, "openai", "gpt-test", &server);
    let messages = after_a_removal(&model);
    let client = HttpModel::new(model, options());
    let request = only_request(&server, &client, messages).await;
    let sent = request.body["messages"].as_array().expect("messages");
    assert_eq!(
        sent[0],
        json!({"role": "system", "content": "You are a coding agent.\n\nRead-only now."})
    );
    assert!(sent[1..].iter().all(|message| message["role"] != "system"));
    assert_eq!(
        sent.last(),
        Some(&json!({"role": "user", "content": "Look again."}))
    );
    assert_eq!(function_names(&request.body["tools"]), ["read"]);
}

/// Chat Completions with Kimi's tool messages: additions after the last removal stay in
/// place as `{"role":"system","tools"}` messages, but the removal itself cannot be said in
/// place, so the tool list becomes the state after it and the removal sends its text only.
#[tokio::test]
async fn completions_tool_messages_restart_after_a_removal() {
    let server = Server::start(vec![Reply::Sse(openai_text("Found one."))]).await;
    let mut model = model(Api::OpenAiCompletions, "moonshot", "kimi-test", &server);
    model.compat = compat(json!({"supportsMidConvoSystemMessages": true,
                                 "supportsMidConvoToolAdditions": true}));
    let mut messages = after_a_removal(&model);
    messages.push(assistant(
        &model,
        vec![ContentBlock::text("Still nothing.")],
    ));
    let client = HttpModel::new(model, options());
    messages.push(system("", vec![grep()], &[]));
    messages.push(user("Search for TODO."));
    let request = only_request(&server, &client, messages).await;
    assert_eq!(function_names(&request.body["tools"]), ["read"]);
    let sent = request.body["messages"].as_array().expect("messages");
    let systems: Vec<&Value> = sent.iter().filter(|m| m["role"] == "system").collect();
    assert_eq!(systems.len(), 3);
    assert_eq!(systems[0]["content"], PROMPT);
    assert_eq!(
        systems[1],
        &json!({"role": "system", "content": "Read-only now."})
    );
    assert_eq!(function_names(&systems[2]["tools"]), ["grep"]);
    assert_eq!(
        sent.last(),
        Some(&json!({"role": "user", "content": "Search for TODO."}))
    );
}

/// Gemini always folds, whatever the flags: the removal's text joins the system
/// instruction, `edit` leaves the declarations, and no content carries it.
#[tokio::test]
async fn google_folds_a_removal_into_the_system_instruction() {
    let server = Server::start(vec![Reply::Sse(google_text("Nothing."))]).await;
    let mut model = model(
        Api::GoogleGenerativeAi,
        "google",
        "gemini-2.5-flash",
        &server,
    );
    model.compat = compat(json!({"supportsMidConvoSystemMessages": true}));
    let messages = after_a_removal(&model);
    let client = HttpModel::new(model, options());
    let request = only_request(&server, &client, messages).await;
    assert_eq!(
        request.body["systemInstruction"],
        json!({"parts": [{"text": "You are a coding agent.\n\nRead-only now."}], "role": "user"})
    );
    let declarations: Vec<&str> = request.body["tools"][0]["functionDeclarations"]
        .as_array()
        .expect("declarations")
        .iter()
        .filter_map(|declaration| declaration["name"].as_str())
        .collect();
    assert_eq!(declarations, ["read"]);
    let texts: Vec<&str> = request.body["contents"]
        .as_array()
        .expect("contents")
        .iter()
        .flat_map(|content| content["parts"].as_array().into_iter().flatten())
        .filter_map(|part| part["text"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "What does main.py do?",
            "Reading it.",
            "It prints hi.",
            "Is there anything to fix?",
            "Nothing obvious.",
            "Look again."
        ]
    );
}

/// The same property through the agent: a deferred tool activated between two prompts
/// reaches Anthropic as a `tool_addition` after the new prompt, and the request repeats the
/// one before it up to that request's last message.
#[tokio::test]
async fn an_agent_activating_a_tool_keeps_anthropics_cached_prefix() {
    use pi_runtime::agent::Agent;
    use pi_runtime::tool::{Exposure, FnTool};
    use pi_runtime::{ToolResult, ToolSet};

    let server = Server::start(vec![
        Reply::Sse(anthropic_text("It prints hi.")),
        Reply::Sse(anthropic_text("One TODO in main.py.")),
    ])
    .await;
    let mut model = model(Api::AnthropicMessages, "test", "claude-test", &server);
    model.compat = compat(json!({"supportsMidConvoSystemMessages": true,
                                 "supportsMidConvoToolChanges": true}));
    let runnable =
        |tool: Tool| FnTool::from_definition(tool, |_, _| async { Ok(ToolResult::text("ok")) });
    let tools = (
        runnable(read()),
        runnable(grep()).with_exposure(Exposure::Deferred),
    );
    let agent = Agent::builder()
        .model(HttpModel::new(model, options()))
        .system_prompt(PROMPT)
        .tools(tools.into_registrations())
        .build()
        .expect("an agent");
    agent.prompt("What does main.py do?").await.expect("a run");
    agent.activate_tools(&["grep"]).expect("grep is registered");
    agent
        .prompt("Now search for TODO comments.")
        .await
        .expect("a run");

    let requests = server.requests();
    let (n, n1) = (&requests[0], &requests[1]);
    let offsets = element_offsets(n, "messages");
    let last_start = offsets[offsets.len() - 2];
    assert_eq!(n1.raw[..last_start], n.raw[..last_start]);
    for key in ["system", "tools"] {
        assert_eq!(n1.body[key], n.body[key], "{key}");
    }
    let new = &n1.body["messages"].as_array().expect("messages")[offsets.len() - 1..];
    let roles: Vec<&str> = new.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["assistant", "user", "system"]);
    assert_eq!(new[2]["content"][0]["type"], "tool_addition");
    assert_eq!(new[2]["content"][0]["tool"]["definition"]["name"], "grep");
}
