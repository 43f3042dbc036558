//! The provider's tool-call knobs (`tool_choice`, `parallel_tool_calls`, `max_tool_calls`)
//! in each wire API's request body, byte for byte (key order included); an API without a
//! knob sends the body it sends without it.

use std::sync::{Arc, Mutex};

use pi_runtime::agent::Agent;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::provider::{Api, Model, request_body};
use pi_runtime::stream::{AssistantEventStream, CacheRetention};
use pi_runtime::{
    Context, FnTool, LanguageModel, StreamOptions, Tool, ToolChoice, ToolError, ToolResult,
    UserMessage,
};
use serde_json::{Value, json};

fn model(api: Api, provider: &str, id: &str) -> Model {
    let mut model = Model::new(api, provider, id, "http://localhost:8080/v1");
    model.max_tokens = 0;
    model
}

fn context(with_tool: bool) -> Context {
    let tools = if with_tool {
        vec![Tool::new(
            "read",
            "Read",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        )]
    } else {
        Vec::new()
    };
    Context::new("sys", vec![UserMessage::text("hi").into()], tools)
}

/// The knobs every test sets; `CacheRetention::None` keeps cache markers out.
fn knobs() -> StreamOptions {
    StreamOptions::default()
        .with_cache_retention(CacheRetention::None)
        .with_tool_choice(ToolChoice::Required)
        .with_parallel_tool_calls(false)
        .with_max_tool_calls(3)
}

fn body(model: &Model, with_tool: bool, options: &StreamOptions) -> Value {
    request_body(model, &context(with_tool), options).expect("the request builds")
}

fn assert_bytes(actual: &Value, expected: &Value) {
    assert_eq!(actual.to_string(), expected.to_string());
}

#[test]
fn chat_completions_sends_parallel_tool_calls_after_tool_choice() {
    let m = model(Api::OpenAiCompletions, "openai", "gpt-x");
    assert_bytes(
        &body(&m, true, &knobs()),
        &json!({
          "model": "gpt-x",
          "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]}
          ],
          "stream": true,
          "stream_options": {"include_usage": true},
          "store": false,
          "tools": [{"type": "function", "function": {"name": "read", "description": "Read",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}],
          "tool_choice": "required",
          "parallel_tool_calls": false
        }),
    );
}

#[test]
fn responses_sends_parallel_tool_calls_and_max_tool_calls() {
    let m = model(Api::OpenAiResponses, "openai", "gpt-x");
    let options = knobs().with_tool_choice(ToolChoice::Tool("read".into()));
    assert_bytes(
        &body(&m, true, &options),
        &json!({
          "model": "gpt-x",
          "input": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
          ],
          "stream": true,
          "store": false,
          "max_output_tokens": 16,
          "tools": [{"type": "function", "name": "read", "description": "Read",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}],
          "tool_choice": {"type": "function", "name": "read"},
          "parallel_tool_calls": false,
          "max_tool_calls": 3
        }),
    );
}

#[test]
fn anthropic_disables_parallel_tool_use_inside_tool_choice() {
    let mut m = model(Api::AnthropicMessages, "anthropic", "claude-x");
    m.max_tokens = 8000;
    assert_bytes(
        &body(&m, true, &knobs()),
        &json!({
          "model": "claude-x",
          "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
          "max_tokens": 8000,
          "stream": true,
          "system": [{"type": "text", "text": "sys"}],
          "tools": [{"name": "read", "description": "Read", "eager_input_streaming": true,
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}],
          "tool_choice": {"type": "any", "disable_parallel_tool_use": true}
        }),
    );
}

#[test]
fn anthropic_tool_choice_forms_with_parallel_calls_off() {
    let mut m = model(Api::AnthropicMessages, "anthropic", "claude-x");
    m.max_tokens = 8000;
    let choice = |options: StreamOptions| body(&m, true, &options)["tool_choice"].clone();
    let serial = || {
        StreamOptions::default()
            .with_cache_retention(CacheRetention::None)
            .with_parallel_tool_calls(false)
    };
    // No choice of the caller's: `auto` carries the flag.
    assert_eq!(
        choice(serial()),
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    assert_eq!(
        choice(serial().with_tool_choice(ToolChoice::Tool("read".into()))),
        json!({"type": "tool", "name": "read", "disable_parallel_tool_use": true})
    );
    assert_eq!(
        choice(serial().with_tool_choice(ToolChoice::Raw(json!("any")))),
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    // `none` takes no flag, and the caller's object goes as given.
    assert_eq!(
        choice(serial().with_tool_choice(ToolChoice::None)),
        json!({"type": "none"})
    );
    let raw = json!({"type": "auto"});
    assert_eq!(
        choice(serial().with_tool_choice(ToolChoice::Raw(raw.clone()))),
        raw
    );
    // Parallel calls allowed is Anthropic's default: nothing to send.
    let parallel = StreamOptions::default()
        .with_cache_retention(CacheRetention::None)
        .with_parallel_tool_calls(true);
    assert_eq!(body(&m, true, &parallel).get("tool_choice"), None);
}

#[test]
fn google_names_the_chosen_function_and_has_no_parallel_or_count_knob() {
    let m = model(Api::GoogleGenerativeAi, "google", "gemini-2.5-flash");
    let options = knobs().with_tool_choice(ToolChoice::Tool("read".into()));
    assert_bytes(
        &body(&m, true, &options),
        &json!({
          "contents": [{"parts": [{"text": "hi"}], "role": "user"}],
          "systemInstruction": {"parts": [{"text": "sys"}], "role": "user"},
          "tools": [{"functionDeclarations": [{"name": "read", "description": "Read",
            "parametersJsonSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]}],
          "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["read"]}}
        }),
    );
}

#[test]
fn an_api_without_a_knob_sends_the_same_body() {
    let plain = StreamOptions::default().with_cache_retention(CacheRetention::None);
    let parallel_off = plain.clone().with_parallel_tool_calls(false);
    let max_calls = plain.clone().with_max_tool_calls(3);
    let google = model(Api::GoogleGenerativeAi, "google", "gemini-2.5-flash");
    assert_bytes(
        &body(&google, true, &parallel_off),
        &body(&google, true, &plain),
    );
    assert_bytes(
        &body(&google, true, &max_calls),
        &body(&google, true, &plain),
    );
    let chat = model(Api::OpenAiCompletions, "openai", "gpt-x");
    assert_bytes(&body(&chat, true, &max_calls), &body(&chat, true, &plain));
    let mut claude = model(Api::AnthropicMessages, "anthropic", "claude-x");
    claude.max_tokens = 8000;
    assert_bytes(
        &body(&claude, true, &max_calls),
        &body(&claude, true, &plain),
    );
}

#[test]
fn parallel_tool_calls_needs_tools() {
    // OpenAI rejects `parallel_tool_calls` in a request without tools; Anthropic's flag lives
    // in a `tool_choice` that means nothing without them.
    let plain = StreamOptions::default().with_cache_retention(CacheRetention::None);
    let parallel_off = plain.clone().with_parallel_tool_calls(false);
    for api in [Api::OpenAiCompletions, Api::OpenAiResponses] {
        let m = model(api, "openai", "gpt-x");
        assert_bytes(&body(&m, false, &parallel_off), &body(&m, false, &plain));
    }
    let mut claude = model(Api::AnthropicMessages, "anthropic", "claude-x");
    claude.max_tokens = 8000;
    assert_bytes(
        &body(&claude, false, &parallel_off),
        &body(&claude, false, &plain),
    );
}

/// Two tools: the named choice has one to leave out.
fn two_tools() -> Context {
    let tool = |name: &str| {
        Tool::new(
            name,
            name,
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )
    };
    Context::new(
        "sys",
        vec![UserMessage::text("hi").into()],
        vec![tool("read"), tool("list")],
    )
}

#[test]
fn a_named_choice_a_server_ignores_narrows_the_tools_and_requires_a_call() {
    // llama.cpp reads `{"type":"function","function":{"name":...}}` as `auto`.
    let mut m = model(Api::OpenAiCompletions, "llama.cpp", "smollm2");
    m.compat.supports_named_tool_choice = Some(false);
    let options = StreamOptions::default()
        .with_cache_retention(CacheRetention::None)
        .with_tool_choice(ToolChoice::Tool("list".into()));
    let sent = request_body(&m, &two_tools(), &options).expect("the request builds");
    assert_eq!(sent["tool_choice"], "required");
    assert_eq!(sent["parallel_tool_calls"], false);
    let names: Vec<&str> = sent["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    assert_eq!(names, ["list"]);
    // Other choices go as they are, with every tool.
    let required = options.clone().with_tool_choice(ToolChoice::Required);
    let sent = request_body(&m, &two_tools(), &required).expect("the request builds");
    assert_eq!(
        (
            sent["tool_choice"].clone(),
            sent["tools"].as_array().map(Vec::len)
        ),
        (json!("required"), Some(2))
    );
    // A server that honours named choices (the default) gets the named form.
    let honours = model(Api::OpenAiCompletions, "openai", "gpt-x");
    let sent = request_body(&honours, &two_tools(), &options).expect("the request builds");
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "function", "function": {"name": "list"}})
    );
    assert_eq!(sent["tools"].as_array().map(Vec::len), Some(2));
}

#[test]
fn a_named_choice_of_a_tool_not_offered_is_refused_before_sending() {
    let mut m = model(Api::OpenAiCompletions, "llama.cpp", "smollm2");
    m.compat.supports_named_tool_choice = Some(false);
    let options = StreamOptions::default().with_tool_choice(ToolChoice::Tool("write".into()));
    assert_eq!(
        request_body(&m, &two_tools(), &options)
            .expect_err("refused")
            .to_string(),
        "tool_choice names the tool \"write\", which this request does not offer"
    );
}

/// One request's `tool_choice`, `parallel_tool_calls` and `max_tool_calls`.
type Knobs = (Option<ToolChoice>, Option<bool>, Option<u32>);

/// A faux model that keeps the tool-call knobs of each request it gets.
#[derive(Debug, Clone)]
struct Recording {
    inner: FauxModel,
    seen: Arc<Mutex<Vec<Knobs>>>,
}

impl LanguageModel for Recording {
    fn api(&self) -> &str {
        self.inner.api()
    }

    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn id(&self) -> &str {
        self.inner.id()
    }

    fn stream(&self, context: Context, options: StreamOptions) -> AssistantEventStream {
        self.seen.lock().expect("not poisoned").push((
            options.tool_choice.clone(),
            options.parallel_tool_calls,
            options.max_tool_calls,
        ));
        self.inner.stream(context, options)
    }
}

#[tokio::test]
async fn the_builder_sets_every_request_and_a_hook_changes_one() {
    let model = Recording {
        inner: FauxModel::new()
            .respond(FauxResponse::tool_call("c1", "echo", json!({})))
            .respond(FauxResponse::text("done")),
        seen: Arc::default(),
    };
    let seen = Arc::clone(&model.seen);
    let echo = FnTool::new("echo", "Echo.", json!({"type": "object"}), |_, _| async {
        Ok::<_, ToolError>(ToolResult::text("echo"))
    });
    let agent = Agent::builder()
        .model(model)
        .tools((echo,))
        .tool_choice(ToolChoice::Required)
        .parallel_tool_calls(false)
        .max_tool_calls(2)
        // The request after a tool result lets the model answer, with any number of calls.
        .prepare_request(|mut plan| async move {
            if plan.context.messages.len() > 1 {
                plan.tool_choice = Some(ToolChoice::Auto);
                plan.parallel_tool_calls = None;
                plan.max_tool_calls = None;
            }
            plan
        })
        .build()
        .expect("the agent builds");
    agent.prompt("go").await.expect("the run ends");
    assert_eq!(
        *seen.lock().expect("not poisoned"),
        [
            (Some(ToolChoice::Required), Some(false), Some(2)),
            (Some(ToolChoice::Auto), None, None),
        ]
    );
}
