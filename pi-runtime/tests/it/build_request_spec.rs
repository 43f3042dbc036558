//! The verified request bodies of SPEC §7.1 and §7.3–§7.6, byte for byte (key order
//! included), plus the failures that never reach the network.

use pi_runtime::provider::{Api, Model, RequestError, request_body};
use pi_runtime::stream::CacheRetention;
use pi_runtime::{
    AssistantMessage, ConstrainedSampling, ContentBlock, Context, Message, StopReason,
    StreamOptions, Strictness, ThinkingLevel, Tool, ToolCall, ToolResultMessage, UserMessage,
};
use serde_json::{Value, json};

/// A model without an output limit of its own, so that no token field appears (as in the
/// SPEC's examples).
fn model(api: Api, provider: &str, id: &str) -> Model {
    let mut model = Model::new(api, provider, id, "http://localhost:8080/v1");
    model.max_tokens = 0;
    model
}

fn user(text: &str) -> Message {
    Message::from(UserMessage {
        content: pi_runtime::message::UserContent::Text(text.into()),
        timestamp: 1,
    })
}

fn assistant(model: &Model, content: Vec<ContentBlock>) -> Message {
    let mut message = AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id);
    message.stop_reason = if content.iter().any(|b| b.as_tool_call().is_some()) {
        StopReason::ToolUse
    } else {
        StopReason::Stop
    };
    message.content = content;
    message.into()
}

fn call(id: &str, name: &str, arguments: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall::new(id, name, arguments))
}

fn result(id: &str, name: &str, text: &str) -> Message {
    Message::from(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content: if text.is_empty() {
            vec![]
        } else {
            vec![ContentBlock::text(text)]
        },
        details: None,
        usage: None,
        is_error: false,
        duration_ms: None,
        timestamp: 1,
    })
}

fn thinking(text: &str, signature: &str) -> ContentBlock {
    ContentBlock::Thinking(pi_runtime::message::ThinkingContent {
        thinking: text.into(),
        thinking_signature: Some(signature.into()),
        redacted: None,
    })
}

fn prefer(tool: Tool) -> Tool {
    tool.with_constrained_sampling(ConstrainedSampling::JsonSchema {
        strict: Strictness::Prefer,
    })
}

fn require(tool: Tool) -> Tool {
    tool.with_constrained_sampling(ConstrainedSampling::JsonSchema {
        strict: Strictness::Require,
    })
}

fn assert_bytes(actual: &Value, expected: &Value) {
    assert_eq!(actual.to_string(), expected.to_string());
}

#[test]
fn openai_compatible_host_spec_7_3() {
    let m = model(Api::OpenAiCompletions, "local", "m");
    let read = prefer(Tool::new(
        "read",
        "Read",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    ));
    let context = Context::new(
        "sys",
        vec![
            user("hi"),
            assistant(
                &m,
                vec![
                    ContentBlock::text("I'll read"),
                    call("call_1", "read", json!({"path": "a.txt"})),
                ],
            ),
            result("call_1", "read", "line1\nline2"),
        ],
        vec![read],
    );
    let body = request_body(&m, &context, &StreamOptions::default()).unwrap();
    assert_bytes(
        &body,
        &json!({
          "model": "m",
          "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "I'll read",
             "tool_calls": [{"id": "call_1", "type": "function",
                             "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}}]},
            {"role": "tool", "content": "line1\nline2", "tool_call_id": "call_1"}
          ],
          "stream": true,
          "stream_options": {"include_usage": true},
          "store": false,
          "tools": [{"type": "function", "function": {
            "name": "read", "description": "Read",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"]}}}]
        }),
    );
}

#[test]
fn deepseek_v4_pro_spec_7_4() {
    let mut m = model(Api::OpenAiCompletions, "deepseek", "deepseek-v4-pro");
    m.base_url = "https://api.deepseek.com".into();
    m.reasoning = true;
    m.compat.supports_strict_mode = Some(true);
    m.compat.thinking_level_map =
        json!({"minimal": null, "low": null, "medium": null, "high": "high", "max": "max"})
            .as_object()
            .cloned();
    let read = prefer(Tool::new(
        "read",
        "Read",
        json!({"type": "object", "properties": {"path": {"type": "string"}, "offset": {"type": "number"}},
               "required": ["path"]}),
    ));
    let context = Context::new(
        "sys",
        vec![
            user("hi"),
            assistant(
                &m,
                vec![
                    thinking("let me think", "reasoning_content"),
                    ContentBlock::text("I'll read"),
                    call("call_1", "read", json!({"path": "a.txt"})),
                ],
            ),
            result("call_1", "read", "line1\nline2"),
            assistant(&m, vec![call("call_2", "read", json!({"path": "b.txt"}))]),
            Message::from(UserMessage {
                content: pi_runtime::message::UserContent::Blocks(vec![ContentBlock::text("next")]),
                timestamp: 1,
            }),
        ],
        vec![read],
    );
    // Clamped to `high`: v4-pro offers only high and max.
    let options = StreamOptions::default().with_reasoning(ThinkingLevel::Medium);
    let body = request_body(&m, &context, &options).unwrap();
    assert_bytes(
        &body,
        &json!({
          "model": "deepseek-v4-pro",
          "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "I'll read", "reasoning_content": "let me think",
             "tool_calls": [{"id": "call_1", "type": "function",
                             "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}}]},
            {"role": "tool", "content": "line1\nline2", "tool_call_id": "call_1"},
            {"role": "assistant", "content": null,
             "tool_calls": [{"id": "call_2", "type": "function",
                             "function": {"name": "read", "arguments": "{\"path\":\"b.txt\"}"}}],
             "reasoning_content": ""},
            {"role": "tool", "content": "No result provided", "tool_call_id": "call_2"},
            {"role": "user", "content": [{"type": "text", "text": "next"}]}
          ],
          "stream": true,
          "stream_options": {"include_usage": true},
          "tools": [{"type": "function", "function": {
            "name": "read", "description": "Read",
            "parameters": {"type": "object",
                           "properties": {"path": {"type": "string"},
                                          "offset": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
                           "required": ["path", "offset"], "additionalProperties": false},
            "strict": true}}],
          "thinking": {"type": "enabled"},
          "reasoning_effort": "high"
        }),
    );
}

#[test]
fn anthropic_spec_7_5() {
    let mut m = model(Api::AnthropicMessages, "anthropic", "claude-x");
    m.max_tokens = 8000;
    let read = Tool::new(
        "read",
        "Read",
        json!({"title": "dropped", "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    );
    let context = Context::new(
        "sys",
        vec![
            user("hi"),
            assistant(&m, vec![call("t1", "read", json!({"path": "a"}))]),
            result("t1", "read", "A\nB"),
        ],
        vec![read],
    );
    let options = StreamOptions::default().with_cache_retention(CacheRetention::None);
    let body = request_body(&m, &context, &options).unwrap();
    assert_bytes(
        &body,
        &json!({
          "model": "claude-x",
          "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
              {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}]},
            {"role": "user", "content": [
              {"type": "tool_result", "tool_use_id": "t1", "content": "A\nB", "is_error": false}]}
          ],
          "max_tokens": 8000,
          "stream": true,
          "system": [{"type": "text", "text": "sys"}],
          "tools": [{"name": "read", "description": "Read", "eager_input_streaming": true,
                     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}},
                                      "required": ["path"]}}]
        }),
    );
}

#[test]
fn anthropic_other_model_ids_are_sanitized() {
    let m = model(Api::AnthropicMessages, "anthropic", "claude-x");
    let other = model(Api::OpenAiCompletions, "openai", "gpt-x");
    let context = Context::new(
        String::new(),
        vec![
            assistant(&other, vec![call("call|abc+/=", "read", json!({}))]),
            result("call|abc+/=", "read", "ok"),
        ],
        vec![],
    );
    let options = StreamOptions::default().with_cache_retention(CacheRetention::None);
    let body = request_body(&m, &context, &options).unwrap();
    assert_eq!(body["messages"][0]["content"][0]["id"], "call_abc___");
    assert_eq!(
        body["messages"][1]["content"][0]["tool_use_id"],
        "call_abc___"
    );
}

fn gemini_context(m: &Model) -> Context {
    let read = prefer(Tool::new(
        "read",
        "Read",
        json!({"type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "number"}},
               "required": ["path"]}),
    ));
    Context::new(
        String::new(),
        vec![
            user("hi"),
            assistant(m, vec![call("c1", "read", json!({"path": "p"}))]),
            result("c1", "read", "ok"),
        ],
        vec![read],
    )
}

#[test]
fn gemini_3_strict_spec_7_6() {
    let m = model(Api::GoogleGenerativeAi, "google", "gemini-3-pro-preview");
    let body = request_body(&m, &gemini_context(&m), &StreamOptions::default()).unwrap();
    assert_eq!(
        body["tools"],
        json!([{"functionDeclarations":[{"name":"read","description":"Read",
           "parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string"},
             "n":{"anyOf":[{"type":"number"},{"type":"null"}]}},"required":["path","n"],"additionalProperties":false}}]}])
    );
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig":{"mode":"VALIDATED"}})
    );
    // The REST body orders keys as the API documents them.
    assert_bytes(
        &body["contents"][1],
        &json!({"parts":[{"functionCall":{"args":{"path":"p"},"id":"c1","name":"read"}}],"role":"model"}),
    );
    assert_eq!(body.get("model"), None);
}

#[test]
fn gemini_2_5_sends_the_tool_unchanged_spec_7_6() {
    let m = model(Api::GoogleGenerativeAi, "google", "gemini-2.5-pro");
    let body = request_body(&m, &gemini_context(&m), &StreamOptions::default()).unwrap();
    assert_bytes(
        &body,
        &json!({
          "contents":[{"parts":[{"text":"hi"}],"role":"user"},
                      {"parts":[{"functionCall":{"args":{"path":"p"},"name":"read"}}],"role":"model"},
                      {"parts":[{"functionResponse":{"name":"read","response":{"output":"ok"}}}],"role":"user"}],
          "tools":[{"functionDeclarations":[{"name":"read","description":"Read",
            "parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string"},"n":{"type":"number"}},
                                    "required":["path"]}}]}]
        }),
    );
}

#[test]
fn orphaned_and_empty_results_spec_7_1() {
    let m = model(Api::OpenAiCompletions, "local", "m");
    let context = Context::new(
        String::new(),
        vec![
            user("go"),
            assistant(
                &m,
                vec![
                    call("call_2", "read", json!({})),
                    call("call_3", "read", json!({})),
                ],
            ),
            result("call_2", "read", ""),
            user("next"),
        ],
        vec![],
    );
    let body = request_body(&m, &context, &StreamOptions::default()).unwrap();
    assert_bytes(
        &body["messages"][2],
        &json!({"role":"tool","content":"(no tool output)","tool_call_id":"call_2"}),
    );
    assert_bytes(
        &body["messages"][3],
        &json!({"role":"tool","content":"No result provided","tool_call_id":"call_3"}),
    );
    assert_eq!(body["messages"][4]["role"], "user");
    assert_eq!(body.get("tools"), None);
}

#[test]
fn require_fails_before_the_network_spec_7_2() {
    let tuple = require(Tool::new(
        "t",
        "",
        json!({"type":"object","properties":{"x":{"type":"array","items":[{"type":"string"}]}}}),
    ));
    let mut m = model(Api::OpenAiCompletions, "local", "m");
    let context = Context::new(String::new(), vec![user("go")], vec![tuple]);
    assert_eq!(
        request_body(&m, &context, &StreamOptions::default()),
        Err(RequestError::Invalid("Tool \"t\" requires JSON-schema constrained sampling, but strict tools are unsupported.".into()))
    );
    m.compat.supports_strict_mode = Some(true);
    assert_eq!(
        request_body(&m, &context, &StreamOptions::default()),
        Err(RequestError::Invalid("Tool \"t\" requires JSON-schema constrained sampling, but tuple schemas are unsupported.".into()))
    );
    let gemini = model(Api::GoogleGenerativeAi, "google", "gemini-3-flash");
    assert_eq!(
        request_body(&gemini, &context, &StreamOptions::default()),
        Err(RequestError::Invalid("Tool \"t\" requires JSON-schema constrained sampling, but tuple schemas are unsupported.".into()))
    );
    let mut claude = model(Api::AnthropicMessages, "anthropic", "claude-x");
    claude.compat.supports_strict_tools = Some(true);
    let minimum = require(Tool::new(
        "n",
        "",
        json!({"type":"object","properties":{"n":{"type":"integer","minimum":1.5}}}),
    ));
    let mut context = context;
    context.tools = vec![minimum];
    assert_eq!(
        request_body(&claude, &context, &StreamOptions::default()),
        Err(RequestError::Invalid("Tool \"n\" requires JSON-schema constrained sampling, but minimum: 1.5 is unsupported.".into()))
    );
}

#[test]
fn replayed_arguments_print_numbers_as_serde_json_does() {
    let m = model(Api::OpenAiCompletions, "local", "m");
    let context = Context::new(
        String::new(),
        vec![assistant(
            &m,
            vec![call(
                "c",
                "add",
                json!({"big": 12345678901234567890u64, "x": 1.5e300}),
            )],
        )],
        vec![],
    );
    let body = request_body(&m, &context, &StreamOptions::default()).unwrap();
    assert_eq!(
        body["messages"][0]["tool_calls"][0]["function"]["arguments"],
        "{\"big\":12345678901234567890,\"x\":1.5e+300}"
    );
}
