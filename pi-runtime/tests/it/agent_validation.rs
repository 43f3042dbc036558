//! The loop with the argument pipeline (SPEC §4, §10.4): the model sees validation errors
//! and corrects itself. These need the real coercion and validation in `args`.

use std::sync::atomic::{AtomicUsize, Ordering};

use pi_runtime::agent::{Agent, TurnControl};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{FnTool, Message, ToolError, ToolResult};
use serde_json::json;

fn add() -> FnTool {
    FnTool::new(
        "add",
        "Add two numbers.",
        json!({"type": "object",
               "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
               "required": ["a", "b"]}),
        |args, _| async move {
            let sum =
                args["a"].as_f64().unwrap_or(f64::NAN) + args["b"].as_f64().unwrap_or(f64::NAN);
            Ok::<_, ToolError>(ToolResult::text(sum.to_string()))
        },
    )
}

fn results(messages: &[Message]) -> Vec<(bool, String)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.is_error, r.text())),
            _ => None,
        })
        .collect()
}

#[tokio::test]

async fn the_model_corrects_itself_after_a_validation_error() {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "c1",
            "add",
            json!({"a": 1, "b": "x"}),
        ))
        .respond(FauxResponse::tool_call(
            "c2",
            "add",
            json!({"a": 1, "b": 2}),
        ))
        .respond(FauxResponse::text("1 + 2 = 3"));
    let agent = Agent::builder()
        .model(model.clone())
        .tools(add())
        .build()
        .unwrap();
    let messages = agent.prompt("What is 1 + 2?").await.unwrap();
    assert_eq!(
        results(&messages),
        [
            (
                true,
                "Validation failed for tool \"add\":\n  - b: expected number, got string\n\nReceived arguments:\n{\n  \"a\": 1,\n  \"b\": \"x\"\n}"
                    .to_owned()
            ),
            (false, "3".to_owned()),
        ]
    );
    assert_eq!(model.request_count(), 3);
    // The second request showed the model its mistake.
    let second = &model.requests()[1];
    assert!(matches!(second.messages.last(), Some(Message::ToolResult(r)) if r.is_error));
}

#[tokio::test]

async fn the_turn_limit_ends_a_model_that_keeps_sending_invalid_arguments() {
    let invalid = FauxResponse::tool_call("c", "add", json!({"a": 1, "b": [2]}));
    let model = FauxModel::new().with_fallback(invalid);
    let turns = AtomicUsize::new(0);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(add())
        .finish_turn(move |_| {
            let done = turns.fetch_add(1, Ordering::SeqCst) + 1;
            std::future::ready(if done >= 4 {
                TurnControl::End
            } else {
                TurnControl::Proceed
            })
        })
        .build()
        .unwrap();
    let messages = agent.prompt("go").await.unwrap();
    let errors = results(&messages);
    assert_eq!(errors.len(), 4);
    assert!(errors.iter().all(|(is_error, text)| *is_error
        && text.starts_with(
            "Validation failed for tool \"add\":\n  - b: expected number, got array"
        )));
    assert_eq!(model.request_count(), 4);
}

#[tokio::test]

async fn coerced_arguments_reach_the_tool_while_the_transcript_keeps_the_raw_call() {
    let model = FauxModel::new().respond(FauxResponse::tool_call(
        "c1",
        "add",
        json!({"a": "1", "b": "2.5"}),
    ));
    let agent = Agent::builder().model(model).tools(add()).build().unwrap();
    let messages = agent.prompt("go").await.unwrap();
    assert_eq!(results(&messages), [(false, "3.5".to_owned())]);
    let Message::Assistant(call) = &messages[1] else {
        panic!("the assistant's call second");
    };
    assert_eq!(
        call.tool_calls().next().map(|c| &c.arguments),
        Some(&json!({"a": "1", "b": "2.5"}))
    );
}
