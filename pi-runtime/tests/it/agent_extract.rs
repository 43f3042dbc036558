//! Structured results in one call (`Agent::builder().extract::<T>()`, seed 2, SPEC §10) on
//! the faux model: every outcome, with the exact messages the model saw in each request.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use pi_runtime::agent::extract::{
    DEFAULT_ACCEPTED_TEXT, DEFAULT_REMINDER, ExtractError, Extractor,
};
use pi_runtime::agent::{Agent, AgentError, AgentEvent, BuildError, TurnControl};
use pi_runtime::message::UserContent;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::RegistryError;
use pi_runtime::{
    AssistantMessageEvent, ConstrainedSampling, ContentBlock, FnTool, Message, StopReason,
    Strictness, ToolResult, tool_args,
};
use serde_json::{Value, json};

pub(crate) const SOURCE: &str =
    "export function first<T>(items: T[]): T | undefined {\n  return items[0]\n}\n";
const SYSTEM: &str = "You analyse source code.";
pub(crate) const PROMPT: &str = "Analyse the function.";
pub(crate) const TOOL: &str = "submit_analysis";

/// The analysis of one function.
#[tool_args]
#[derive(Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FunctionAnalysis {
    /// The function's name.
    pub(crate) name: String,
    /// The parameter names, in order.
    pub(crate) parameters: Vec<String>,
    /// What the function does, in one sentence.
    pub(crate) summary: String,
    /// What it does with an empty input; null when unsure.
    pub(crate) empty_input_behavior: Option<String>,
    /// A verbatim quote from the source.
    pub(crate) evidence: String,
}

pub(crate) fn analysis(evidence: Value) -> Value {
    json!({
        "name": "first",
        "parameters": ["items"],
        "summary": "Returns the first element of the array.",
        "emptyInputBehavior": null,
        "evidence": evidence,
    })
}

pub(crate) fn valid() -> Value {
    analysis(json!("return items[0]"))
}

pub(crate) fn accepted_value() -> FunctionAnalysis {
    FunctionAnalysis {
        name: "first".into(),
        parameters: vec!["items".into()],
        summary: "Returns the first element of the array.".into(),
        empty_input_behavior: None,
        evidence: "return items[0]".into(),
    }
}

fn submit(id: &str, arguments: Value) -> FauxResponse {
    FauxResponse::tool_call(id, TOOL, arguments)
}

/// Seed 2's run: `evidence` must be a string.
pub(crate) const EVIDENCE_42: &str = "Validation failed for tool \"submit_analysis\":\n  - evidence: expected string, got number\n\nReceived arguments:\n{\n  \"name\": \"first\",\n  \"parameters\": [\n    \"items\"\n  ],\n  \"summary\": \"Returns the first element of the array.\",\n  \"emptyInputBehavior\": null,\n  \"evidence\": 42\n}";

/// Seed 2's `validateAnalysis`: the evidence must be a quote of the source.
pub(crate) fn quoted(analysis: &FunctionAnalysis) -> Result<(), String> {
    if SOURCE.contains(analysis.evidence.as_str()) {
        Ok(())
    } else {
        Err(format!(
            "evidence {:?} does not occur in the source: quote it verbatim",
            analysis.evidence
        ))
    }
}

fn extractor(model: &FauxModel) -> Extractor<FunctionAnalysis> {
    Agent::builder()
        .model(model.clone())
        .system_prompt(SYSTEM)
        .extract::<FunctionAnalysis>()
        .tool_name(TOOL)
        .check(quoted)
        .build()
        .expect("extractor")
}

/// One line per message, per block for assistants: what a request showed the model.
fn line(message: &Message) -> Vec<String> {
    match message {
        Message::User(user) => vec![match &user.content {
            UserContent::Text(text) => format!("user: {text}"),
            UserContent::Blocks(blocks) => format!(
                "user: {}",
                blocks
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect::<String>()
            ),
            other => format!("user: unexpected {other:?}"),
        }],
        Message::Assistant(assistant) => assistant
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(text) => format!("assistant: {}", text.text),
                ContentBlock::ToolCall(call) => {
                    format!("call {} {} {}", call.id, call.name, call.arguments)
                }
                other => format!("unexpected {other:?}"),
            })
            .collect(),
        Message::ToolResult(result) => vec![format!(
            "result {} {}: {}",
            result.tool_call_id,
            if result.is_error { "error" } else { "ok" },
            result.text()
        )],
        other => vec![format!("unexpected {}", other.role())],
    }
}

fn lines(messages: &[Message]) -> Vec<String> {
    messages.iter().flat_map(line).collect()
}

/// What the model saw, request by request.
fn seen(model: &FauxModel) -> Vec<Vec<String>> {
    model
        .requests()
        .iter()
        .map(|context| lines(&context.messages))
        .collect()
}

fn user() -> String {
    format!("user: {PROMPT}")
}

fn call(id: &str, arguments: &Value) -> String {
    format!("call {id} {TOOL} {arguments}")
}

fn accepted(id: &str) -> String {
    format!("result {id} ok: {DEFAULT_ACCEPTED_TEXT}")
}

#[tokio::test]
async fn accepted_on_the_first_try_ends_the_run_without_another_request() {
    let model = FauxModel::new().respond(submit("c1", valid()));
    let extractor = extractor(&model);

    let extracted = extractor.extract(PROMPT).await.expect("accepted");

    assert_eq!(extracted.value, accepted_value());
    assert_eq!(extracted.turns, 1);
    assert_eq!(
        lines(&extracted.messages),
        [user(), call("c1", &valid()), accepted("c1")]
    );
    assert_eq!(seen(&model), [vec![user()]]);
    // The last message is the accepted call's result: success is the accepted value, not
    // any final text.
    assert_eq!(extractor.agent().messages(), extracted.messages);

    // What the model was offered: `T`'s schema, strict `prefer`, listed in the prompt.
    let request = &model.requests()[0];
    assert_eq!(
        request.system_prompt,
        "You analyse source code.\n\nAvailable tools:\n- submit_analysis: Submit the final \
         result\n\nGuidelines:\n- Hand in your final result by calling \
         submit_analysis; an answer in text is not accepted"
    );
    let [tool] = &request.tools[..] else {
        panic!("one tool: {:?}", request.tools);
    };
    assert_eq!(tool.name, TOOL);
    assert_eq!(
        tool.description,
        "Submit your final result. Call this once, when you are done: the result is only \
         accepted through this tool, never as text."
    );
    assert_eq!(
        tool.constrained_sampling,
        Some(ConstrainedSampling::JsonSchema {
            strict: Strictness::Prefer
        })
    );
    assert_eq!(
        *tool.parameters,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The function's name."},
                "parameters": {"type": "array", "items": {"type": "string"},
                               "description": "The parameter names, in order."},
                "summary": {"type": "string", "description": "What the function does, in one sentence."},
                "emptyInputBehavior": {"type": "string",
                                       "description": "What it does with an empty input; null when unsure."},
                "evidence": {"type": "string", "description": "A verbatim quote from the source."}
            },
            "required": ["name", "parameters", "summary", "evidence"],
            "additionalProperties": false
        })
    );
}

#[tokio::test]
async fn accepted_after_a_validation_error_the_model_read() {
    let model = FauxModel::new()
        .respond(submit("c1", analysis(json!(42))))
        .respond(submit("c2", valid()));
    let extracted = extractor(&model).extract(PROMPT).await.expect("accepted");

    assert_eq!(extracted.value, accepted_value());
    assert_eq!(extracted.turns, 2);
    let first_round = vec![
        user(),
        call("c1", &analysis(json!(42))),
        format!("result c1 error: {EVIDENCE_42}"),
    ];
    assert_eq!(seen(&model), [vec![user()], first_round.clone()]);
    let mut all = first_round;
    all.extend([call("c2", &valid()), accepted("c2")]);
    assert_eq!(lines(&extracted.messages), all);
}

#[tokio::test]
async fn accepted_after_a_failed_business_check() {
    let misquote = analysis(json!("return items.at(0)"));
    let model = FauxModel::new()
        .respond(submit("c1", misquote.clone()))
        .respond(submit("c2", valid()));
    let extracted = extractor(&model).extract(PROMPT).await.expect("accepted");

    assert_eq!(extracted.value, accepted_value());
    assert_eq!(
        seen(&model),
        [
            vec![user()],
            vec![
                user(),
                call("c1", &misquote),
                "result c1 error: evidence \"return items.at(0)\" does not occur in the \
                 source: quote it verbatim"
                    .to_owned(),
            ],
        ]
    );
}

#[tokio::test]
async fn a_second_submission_in_the_same_batch_is_rejected() {
    let other = analysis(json!("items[0]"));
    let model = FauxModel::new()
        .respond(submit("c1", valid()).and_tool_call("c2", TOOL, other.clone()))
        .respond(FauxResponse::text("Submitted."));
    let extracted = extractor(&model).extract(PROMPT).await.expect("accepted");

    // The first valid submission wins; the refusal keeps the batch from terminating (every
    // result must agree), so the model is asked once more.
    assert_eq!(extracted.value, accepted_value());
    let batch = vec![
        user(),
        call("c1", &valid()),
        call("c2", &other),
        accepted("c1"),
        "result c2 error: already accepted".to_owned(),
    ];
    assert_eq!(seen(&model), [vec![user()], batch.clone()]);
    let mut all = batch;
    all.push("assistant: Submitted.".into());
    assert_eq!(lines(&extracted.messages), all);
    assert_eq!(extracted.turns, 2);
}

#[tokio::test]
async fn a_second_submission_in_a_later_turn_is_rejected_and_other_tools_still_run() {
    let lookup = FnTool::new(
        "read_source",
        "Read the source under analysis.",
        json!({"type": "object", "properties": {}, "required": []}),
        |_, _| async { Ok(ToolResult::text(SOURCE)) },
    );
    let other = analysis(json!("items[0]"));
    let model = FauxModel::new()
        .respond(
            FauxResponse::tool_call("c1", "read_source", json!({})).and_tool_call(
                "c2",
                TOOL,
                valid(),
            ),
        )
        .respond(submit("c3", other.clone()))
        .respond(FauxResponse::text("Done."));
    let extractor = Agent::builder()
        .model(model.clone())
        .system_prompt(SYSTEM)
        .tools(lookup)
        .extract::<FunctionAnalysis>()
        .tool_name(TOOL)
        .check(quoted)
        .build()
        .expect("extractor");

    let extracted = extractor.extract(PROMPT).await.expect("accepted");

    assert_eq!(extracted.value, accepted_value());
    let first = vec![
        user(),
        "call c1 read_source {}".to_owned(),
        call("c2", &valid()),
        format!("result c1 ok: {SOURCE}"),
        accepted("c2"),
    ];
    let mut second = first.clone();
    second.extend([
        call("c3", &other),
        "result c3 error: already accepted".into(),
    ]);
    assert_eq!(seen(&model), [vec![user()], first, second.clone()]);
    second.push("assistant: Done.".into());
    assert_eq!(lines(&extracted.messages), second);
    assert_eq!(extracted.turns, 3);
    let names: Vec<_> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, ["read_source", TOOL]);
}

#[tokio::test]
async fn a_text_answer_is_no_submission() {
    let prose = format!("Here is my analysis: {}", valid());
    let model = FauxModel::new().respond(FauxResponse::text(prose.clone()));
    let error = extractor(&model).extract(PROMPT).await.unwrap_err();

    assert_eq!(
        error,
        ExtractError::NoSubmission {
            tool: TOOL.into(),
            turns: 1
        }
    );
    assert_eq!(
        error.to_string(),
        "no result was accepted: the model stopped after 1 turn without a `submit_analysis` \
         call that passed validation"
    );
    assert_eq!(seen(&model), [vec![user()]]);
}

#[tokio::test]
async fn a_reminder_asks_again_while_turns_remain() {
    let model = FauxModel::new()
        .respond(FauxResponse::text("The function returns the first item."))
        .respond(submit("c1", valid()));
    let extractor = Agent::builder()
        .model(model.clone())
        .extract::<FunctionAnalysis>()
        .tool_name(TOOL)
        .remind()
        .build()
        .expect("extractor");

    let extracted = extractor.extract(PROMPT).await.expect("accepted");

    let reminder = DEFAULT_REMINDER.replace("{tool}", TOOL);
    assert_eq!(
        reminder,
        "You have not called submit_analysis yet. Call it now with your final result: an \
         answer in text is not accepted."
    );
    let first = vec![
        user(),
        "assistant: The function returns the first item.".to_owned(),
        format!("user: {reminder}"),
    ];
    assert_eq!(seen(&model), [vec![user()], first.clone()]);
    let mut all = first;
    all.extend([call("c1", &valid()), accepted("c1")]);
    assert_eq!(lines(&extracted.messages), all);
    assert_eq!(extracted.turns, 2);

    // A model that never submits is reminded until the turn limit.
    let model = FauxModel::new().with_fallback(FauxResponse::text("No."));
    let extractor = Agent::builder()
        .model(model.clone())
        .extract::<FunctionAnalysis>()
        .max_turns(3)
        .remind_with("Use {tool}.")
        .build()
        .expect("extractor");
    assert_eq!(
        extractor.extract(PROMPT).await.unwrap_err(),
        ExtractError::TurnLimit {
            tool: "submit_result".into(),
            max_turns: 3
        }
    );
    assert_eq!(
        seen(&model).last().expect("three requests"),
        &[
            user(),
            "assistant: No.".to_owned(),
            "user: Use submit_result.".to_owned(),
            "assistant: No.".to_owned(),
            "user: Use submit_result.".to_owned(),
        ]
    );
    assert_eq!(model.request_count(), 3);
}

#[tokio::test]
async fn the_turn_limit_ends_a_model_that_keeps_submitting_invalid_data() {
    let model = FauxModel::new().with_fallback(submit("c", analysis(json!(42))));
    let error = extractor(&model).extract(PROMPT).await.unwrap_err();

    assert_eq!(
        error,
        ExtractError::TurnLimit {
            tool: TOOL.into(),
            max_turns: 4
        }
    );
    assert_eq!(
        error.to_string(),
        "no result was accepted within the turn limit of 4 turns: the model made no \
         `submit_analysis` call that passed validation"
    );
    let round = [
        call("c", &analysis(json!(42))),
        format!("result c error: {EVIDENCE_42}"),
    ];
    let mut expected = vec![vec![user()]];
    for turns in 1..4 {
        let mut request = vec![user()];
        for _ in 0..turns {
            request.extend(round.clone());
        }
        expected.push(request);
    }
    assert_eq!(seen(&model), expected);

    // Configurable.
    let model = FauxModel::new().with_fallback(submit("c", analysis(json!(42))));
    let extractor = Agent::builder()
        .model(model.clone())
        .extract::<FunctionAnalysis>()
        .tool_name(TOOL)
        .max_turns(2)
        .build()
        .expect("extractor");
    assert!(matches!(
        extractor.extract(PROMPT).await,
        Err(ExtractError::TurnLimit { max_turns: 2, .. })
    ));
    assert_eq!(model.request_count(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_time_limit_aborts_a_model_that_takes_too_long() {
    // Paused time: the hour-long pauses between chunks advance the clock at once, and the
    // 30 s default limit fires first.
    let model = FauxModel::new()
        .with_chunk_delay(Duration::from_secs(3600))
        .respond(submit("c1", valid()));
    let extractor = extractor(&model);
    let started = tokio::time::Instant::now();

    let error = extractor.extract(PROMPT).await.unwrap_err();

    assert_eq!(
        error,
        ExtractError::TimeLimit {
            limit: Duration::from_secs(30)
        }
    );
    assert_eq!(
        error.to_string(),
        "the run was aborted at the time limit of 30s"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    assert_eq!(seen(&model), [vec![user()]]);
    let messages = extractor.agent().messages();
    let Some(Message::Assistant(last)) = messages.last() else {
        panic!("no response: {messages:?}");
    };
    assert_eq!(
        (last.stop_reason, last.error_message.as_deref()),
        (StopReason::Aborted, Some("Request was aborted"))
    );
    assert!(!extractor.agent().is_streaming());

    // Configurable, and the agent builder's own limit becomes the extraction's.
    let model = FauxModel::new().with_chunk_delay(Duration::from_secs(3600));
    let extractor = Agent::builder()
        .model(model)
        .time_limit(Duration::from_secs(5))
        .extract::<FunctionAnalysis>()
        .build()
        .expect("extractor");
    assert_eq!(
        extractor.extract(PROMPT).await.unwrap_err(),
        ExtractError::TimeLimit {
            limit: Duration::from_secs(5)
        }
    );
}

#[tokio::test(start_paused = true)]
async fn the_time_limit_holds_against_a_tool_that_ignores_its_signal() {
    let stubborn = FnTool::new(
        "read_source",
        "Read the source under analysis.",
        json!({"type": "object", "properties": {}, "required": []}),
        |_, _| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(ToolResult::text(SOURCE))
        },
    );
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "read_source", json!({})));
    let extractor = Agent::builder()
        .model(model.clone())
        .tools(stubborn)
        .extract::<FunctionAnalysis>()
        .tool_name(TOOL)
        .build()
        .expect("extractor");
    let started = tokio::time::Instant::now();

    let error = extractor.extract(PROMPT).await.unwrap_err();

    assert_eq!(
        error,
        ExtractError::TimeLimit {
            limit: Duration::from_secs(30)
        }
    );
    // The limit aborts the run; the loop waits one second for the tool, then gives up on it.
    assert_eq!(started.elapsed(), Duration::from_secs(31));
    assert_eq!(
        lines(&extractor.agent().messages()),
        [
            user(),
            "call c1 read_source {}".to_owned(),
            "result c1 error: Tool \"read_source\" was stopped: the run was aborted, and it did \
             not finish within 1s of being told to stop"
                .to_owned(),
        ]
    );
    // The loop answers the aborted run's next turn itself (an empty `aborted` response).
    let messages = extractor.agent().messages();
    let Some(Message::Assistant(last)) = messages.last() else {
        panic!("no response: {messages:?}");
    };
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(model.request_count(), 1, "no request after the abort");
}

#[tokio::test]
async fn an_abort_while_the_model_streams_is_no_success() {
    let model = FauxModel::new()
        .with_chunk_chars(8)
        .with_chunk_delay(Duration::from_millis(10))
        .respond(submit("c1", valid()));
    let extractor = extractor(&model);
    let mut events = extractor.agent().events();
    let partial = Arc::new(Mutex::new(None));

    let abort_mid_call = async {
        while let Some(event) = events.next().await {
            if let Some(value) = extractor.partial(&event) {
                *partial.lock().unwrap() = Some(value);
                extractor.abort();
                break;
            }
        }
    };
    let (outcome, ()) = tokio::join!(extractor.extract(PROMPT), abort_mid_call);

    assert_eq!(
        outcome.unwrap_err(),
        ExtractError::Aborted {
            reason: "Request was aborted".into()
        }
    );
    // The first delta (`{"name":`) parses to an empty object.
    assert_eq!(*partial.lock().unwrap(), Some(json!({})));
    assert_eq!(seen(&model), [vec![user()]]);
    // The cut-off call never ran: no result.
    let messages = extractor.agent().messages();
    assert_eq!(messages.len(), 2);
    let Message::Assistant(last) = &messages[1] else {
        panic!("no response: {messages:?}");
    };
    assert_eq!(last.stop_reason, StopReason::Aborted);
}

#[tokio::test]
async fn a_model_error_after_an_accepted_submission_is_an_error() {
    let model = FauxModel::new()
        .respond(submit("c1", valid()).and_tool_call("c2", TOOL, valid()))
        .respond(FauxResponse::error("upstream overloaded"));
    let extractor = extractor(&model);

    let error = extractor.extract(PROMPT).await.unwrap_err();

    assert_eq!(
        error,
        ExtractError::Model {
            message: "upstream overloaded".into()
        }
    );
    assert_eq!(
        error.to_string(),
        "the model request failed: upstream overloaded"
    );
    // The submission was accepted before the request failed.
    assert_eq!(
        seen(&model),
        [
            vec![user()],
            vec![
                user(),
                call("c1", &valid()),
                call("c2", &valid()),
                accepted("c1"),
                "result c2 error: already accepted".into(),
            ],
        ]
    );
}

#[tokio::test]
async fn the_partial_submission_streams_through_the_events() {
    let model = FauxModel::new()
        .with_chunk_chars(24)
        .respond(submit("c1", valid()));
    let extractor = extractor(&model);
    let watched = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&watched);
    extractor.watch_partial(move |partial| sink.lock().unwrap().push(partial.clone()));
    // The same from any subscriber: the live message's call arguments after each delta.
    let by_hand = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&by_hand);
    extractor.agent().on_event(move |event| {
        if let AgentEvent::MessageUpdate {
            message,
            assistant_message_event: AssistantMessageEvent::ToolCallDelta { content_index, .. },
        } = event
        {
            let arguments = message.read(|m| match &m.content[*content_index] {
                ContentBlock::ToolCall(call) => call.arguments.clone(),
                other => panic!("not a call: {other:?}"),
            });
            sink.lock().unwrap().push(arguments);
        }
    });

    extractor.extract(PROMPT).await.expect("accepted");

    let watched = watched.lock().unwrap().clone();
    assert_eq!(watched, *by_hand.lock().unwrap());
    // The compact JSON in pieces of 24 characters: `{"name":"first","paramet`,
    // `ers":["items"],"summary"`, `:"Returns the first elem`, `ent of the array.","empt`,
    // `yInputBehavior":null,"ev`, `idence":"return items[0]`, `"}`.
    let summary = "Returns the first element of the array.";
    assert_eq!(
        watched,
        [
            json!({"name": "first"}),
            json!({"name": "first", "parameters": ["items"]}),
            json!({"name": "first", "parameters": ["items"], "summary": "Returns the first elem"}),
            json!({"name": "first", "parameters": ["items"], "summary": summary}),
            json!({"name": "first", "parameters": ["items"], "summary": summary,
                   "emptyInputBehavior": null}),
            valid(),
            valid(),
        ]
    );
}

#[tokio::test]
async fn hooks_set_on_the_agent_builder_keep_running() {
    let turns_seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&turns_seen);
    let model = FauxModel::new()
        .respond(submit("c1", analysis(json!(42))))
        .respond(submit("c2", valid()));
    let extractor = Agent::builder()
        .model(model.clone())
        .finish_turn(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            std::future::ready(TurnControl::Proceed)
        })
        .extract::<FunctionAnalysis>()
        .tool_name(TOOL)
        .build()
        .expect("extractor");
    extractor.extract(PROMPT).await.expect("accepted");
    assert_eq!(turns_seen.load(Ordering::SeqCst), 2);

    // A user hook that ends the run first: nothing accepted, and not the turn limit.
    let model = FauxModel::new().with_fallback(submit("c", analysis(json!(42))));
    let extractor = Agent::builder()
        .model(model.clone())
        .finish_turn(|_| std::future::ready(TurnControl::End))
        .extract::<FunctionAnalysis>()
        .build()
        .expect("extractor");
    assert_eq!(
        extractor.extract(PROMPT).await.unwrap_err(),
        ExtractError::NoSubmission {
            tool: "submit_result".into(),
            turns: 1
        }
    );
}

// On the paused clock, which stands still while a task is ready to run: the first
// extraction is still streaming when the second asks, however loaded the machine.
#[tokio::test(start_paused = true)]
async fn each_extraction_is_a_task_of_its_own() {
    let model = FauxModel::new()
        .with_chunk_delay(Duration::from_millis(5))
        .respond(submit("c1", valid()))
        .respond(submit("c2", analysis(json!("items[0]"))));
    let extractor = extractor(&model);

    let (first, busy) = tokio::join!(extractor.extract(PROMPT), async {
        tokio::task::yield_now().await;
        extractor.extract(PROMPT).await
    });
    assert_eq!(first.expect("accepted").value, accepted_value());
    assert_eq!(
        busy.unwrap_err(),
        ExtractError::Agent(AgentError::BusyPrompting)
    );

    // The next task starts with an empty slot: its submission is accepted, not refused.
    let second = extractor.extract("And again.").await.expect("accepted");
    assert_eq!(second.value.evidence, "items[0]");
    assert_eq!(lines(&second.messages)[0], "user: And again.");
    // Nor does it see the first task's messages: the model got only the new prompt.
    assert_eq!(seen(&model)[1], ["user: And again."]);
    assert_eq!(extractor.agent().messages(), second.messages);
}

#[tokio::test]
async fn keep_transcript_carries_one_task_into_the_next() {
    let model = FauxModel::new()
        .respond(submit("c1", valid()))
        .respond(submit("c2", valid()));
    let extractor = Agent::builder()
        .model(model.clone())
        .extract::<FunctionAnalysis>()
        .tool_name(TOOL)
        .keep_transcript()
        .build()
        .expect("extractor");
    extractor.extract(PROMPT).await.expect("accepted");
    extractor.extract("And again.").await.expect("accepted");
    assert_eq!(
        seen(&model)[1],
        [
            user(),
            call("c1", &valid()),
            accepted("c1"),
            "user: And again.".to_owned()
        ]
    );
}

#[tokio::test]
async fn an_extractor_can_run_on_another_task() {
    let model = FauxModel::new().respond(submit("c1", valid()));
    let extractor = Arc::new(extractor(&model));
    let running = Arc::clone(&extractor);
    let task = tokio::spawn(async move { running.extract(PROMPT).await });
    assert_eq!(
        task.await.expect("joined").expect("accepted").value,
        accepted_value()
    );
    // Aborting an idle extractor does nothing to the next extraction.
    extractor.abort();
    model.push(submit("c2", valid()));
    assert_eq!(extractor.extract(PROMPT).await.expect("accepted").turns, 1);
}

#[test]
fn the_submit_tool_needs_a_free_name_and_an_object_type() {
    let taken = FnTool::new(
        "submit_result",
        "Mine.",
        json!({"type": "object"}),
        |_, _| async { Ok(ToolResult::text("mine")) },
    );
    let error = Agent::builder()
        .model(FauxModel::new())
        .tools(taken)
        .extract::<FunctionAnalysis>()
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        BuildError::Tools(RegistryError::DuplicateName("submit_result".into()))
    );

    let error = Agent::builder()
        .model(FauxModel::new())
        .extract::<String>()
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool \"submit_result\" has an invalid parameter schema: the result type \
         `alloc::string::String` must be a struct or a map: tool arguments are an object"
    );
}
