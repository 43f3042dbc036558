//! Agents as tools: a sub-agent's result, its events on the parent's listeners (in order,
//! across three levels), and what it inherits from the call that runs it: cancellation, the
//! time left, the run context; its usage adds up into the parent's.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pi_runtime::agent::{Agent, AgentDefinition, AgentEvent, RunEnd};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::ToolSet;
use pi_runtime::{Ctx, FnTool, ToolContext, ToolError, ToolResult, Usage, tool, tool_args};
use serde_json::{Value, json};

fn definition(model: FauxModel) -> AgentDefinition {
    Agent::builder().model(model).build_definition().unwrap()
}

/// A parent whose model calls `tool` once, as `c1` with `args`, then answers `answer`.
fn calling(tools: impl ToolSet, tool: &str, args: Value, answer: &str) -> Agent {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", tool, args))
        .respond(FauxResponse::text(answer));
    Agent::builder().model(model).tools(tools).build().unwrap()
}

/// Every event a listener sees, as `kind` for the agent's own and `path:kind` for a
/// sub-agent's; streaming updates left out unless `updates`.
fn record(agent: &Agent, updates: bool) -> Arc<Mutex<Vec<String>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    agent.on_event(move |event| {
        let (path, event) = match event {
            AgentEvent::Nested { path, event, .. } => (format!("{path}:"), &**event),
            event => (String::new(), event),
        };
        if updates || !matches!(event, AgentEvent::MessageUpdate { .. }) {
            sink.lock().unwrap().push(format!("{path}{}", event.kind()));
        }
    });
    seen
}

/// The events of a run of one prompt, tagged with `path`: one text answer, or a call (the
/// events `inner` of the call's sub-agent inside it) and then the answer.
fn expected_run(path: &str, inner: Option<Vec<String>>) -> Vec<String> {
    let tag = |kind: &str| match path {
        "" => kind.to_owned(),
        path => format!("{path}:{kind}"),
    };
    let mut events: Vec<String> = ["agent_start", "turn_start", "message_start", "message_end"]
        .map(tag)
        .into();
    if let Some(inner) = inner {
        events.extend(["message_start", "message_end", "tool_execution_start"].map(tag));
        events.extend(inner);
        events.extend(
            [
                "tool_execution_end",
                "message_start",
                "message_end",
                "turn_end",
                "turn_start",
            ]
            .map(tag),
        );
    }
    events.extend(["message_start", "message_end", "turn_end", "agent_end"].map(tag));
    events
}

#[tokio::test]
async fn a_sub_agent_answers_with_its_final_text_and_its_events_reach_the_parent_in_order() {
    let leaf = definition(FauxModel::new().respond(FauxResponse::text("leaf answer")));
    let middle = Agent::builder()
        .model(
            FauxModel::new()
                .respond(FauxResponse::tool_call(
                    "g1",
                    "leaf",
                    json!({"task": "go deeper"}),
                ))
                .respond(FauxResponse::text("middle answer")),
        )
        .tools(leaf.as_tool("leaf", "The leaf agent."))
        .build_definition()
        .unwrap();
    let top = calling(
        middle.as_tool("middle", "The middle agent."),
        "middle",
        json!({"task": "go down"}),
        "top answer",
    );
    let seen = record(&top, false);
    let agents = Arc::new(Mutex::new(Vec::new()));
    let by_agent = Arc::clone(&agents);
    top.on_event(move |event| {
        if let AgentEvent::Nested { path, agent, .. } = event {
            let pair = (path.clone(), agent.clone());
            let mut agents = by_agent.lock().unwrap();
            if !agents.contains(&pair) {
                agents.push(pair);
            }
        }
    });
    let updates = record(&top, true);

    let run = top.prompt("start").await.unwrap();

    assert_eq!(run.end, RunEnd::Completed);
    assert_eq!(
        run[2].as_tool_result().map(|r| r.text()).as_deref(),
        Some("middle answer")
    );
    assert_eq!(run.final_text().as_deref(), Some("top answer"));
    let leaf_events = expected_run("c1/g1", None);
    let middle_events = expected_run("c1", Some(leaf_events));
    assert_eq!(*seen.lock().unwrap(), expected_run("", Some(middle_events)));
    assert_eq!(
        *agents.lock().unwrap(),
        [
            ("c1".to_owned(), "middle".to_owned()),
            ("c1/g1".to_owned(), "leaf".to_owned())
        ]
    );
    let updates = updates.lock().unwrap();
    let leaf_deltas = updates
        .iter()
        .filter(|kind| *kind == "c1/g1:message_update")
        .count();
    assert!(
        leaf_deltas > 0,
        "the grandchild's streaming deltas reach the top: {updates:?}"
    );
}

#[tokio::test]
async fn the_parents_state_holds_only_its_own_messages() {
    let child = definition(FauxModel::new().respond(FauxResponse::text("child")));
    let parent = calling(
        child.as_tool("child", "A child."),
        "child",
        json!({"task": "t"}),
        "parent",
    );
    parent.prompt("go").await.unwrap();
    let roles: Vec<_> = parent.messages().iter().map(|m| m.role()).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
}

#[tokio::test]
async fn a_sub_agent_that_fails_is_the_calls_error_with_its_reason() {
    let child = definition(FauxModel::new().respond(FauxResponse::error("overloaded")));
    let parent = calling(
        child.as_tool("child", "A child."),
        "child",
        json!({"task": "t"}),
        "sorry",
    );
    let run = parent.prompt("go").await.unwrap();
    let result = run[2].as_tool_result().unwrap();
    assert!(result.is_error);
    assert_eq!(result.text(), "The child agent failed: overloaded");
}

#[tokio::test]
async fn a_task_that_is_not_text_is_refused_as_invalid_arguments() {
    let child = definition(FauxModel::new());
    let parent = calling(
        child.as_tool("child", "A child."),
        "child",
        json!({"task": 7}),
        "sorry",
    );
    let run = parent.prompt("go").await.unwrap();
    let result = run[2].as_tool_result().unwrap();
    assert!(result.is_error);
    assert!(
        result
            .text()
            .starts_with("Validation failed for tool \"child\""),
        "{}",
        result.text()
    );
}

/// What to translate.
#[tool_args]
struct Translation {
    /// The text.
    text: String,
    /// The language to translate into.
    into: String,
}

#[tokio::test]
async fn a_typed_input_is_the_tools_schema_and_becomes_the_sub_agents_prompt() {
    let child_model = FauxModel::new().respond(FauxResponse::text("Bonjour"));
    let translator = definition(child_model.clone())
        .as_tool("translate", "Translate a text.")
        .input(|t: Translation| format!("Translate into {}: {}", t.into, t.text));
    assert_eq!(
        pi_runtime::AgentTool::definition(&translator).parameters["required"],
        json!(["text", "into"])
    );
    let parent = calling(
        translator,
        "translate",
        json!({"text": "Hello", "into": "French"}),
        "done",
    );
    let run = parent.prompt("go").await.unwrap();
    assert_eq!(run[2].as_tool_result().unwrap().text(), "Bonjour");
    let request = &child_model.requests()[0];
    assert_eq!(
        request.messages[0].text_content(),
        "Translate into French: Hello",
        "the child's only message is its task"
    );
}

fn usage(input: u64, output: u64) -> Usage {
    let mut usage = Usage::default();
    usage.input = input;
    usage.output = output;
    usage.total_tokens = input + output;
    usage
}

#[tokio::test]
async fn the_sub_agents_usage_adds_up_into_the_parents() {
    let child =
        definition(FauxModel::new().respond(FauxResponse::text("child").with_usage(usage(10, 1))));
    let parent = Agent::builder()
        .model(
            FauxModel::new()
                .respond(
                    FauxResponse::tool_call("c1", "child", json!({"task": "t"}))
                        .with_usage(usage(100, 20)),
                )
                .respond(FauxResponse::text("parent").with_usage(usage(200, 30))),
        )
        .tools(child.as_tool("child", "A child."))
        .build()
        .unwrap();
    let run = parent.prompt("go").await.unwrap();
    assert_eq!(run[2].as_tool_result().unwrap().usage, Some(usage(10, 1)));
    assert_eq!(run.usage(), usage(310, 51));
}

struct Tenant(&'static str);

/// Name the tenant.
#[tool]
async fn whoami(Ctx(tenant): Ctx<Arc<Tenant>>) -> String {
    tenant.0.to_owned()
}

#[tokio::test]
async fn the_sub_agent_runs_with_the_parents_run_context() {
    let child = Agent::builder()
        .model(
            FauxModel::new()
                .respond(FauxResponse::tool_call("w1", "whoami", json!({})))
                .respond(FauxResponse::text("checked")),
        )
        .tools(Whoami)
        .build_definition()
        .unwrap();
    let parent = calling(
        child.as_tool("child", "A child."),
        "child",
        json!({"task": "who?"}),
        "done",
    );
    let results = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&results);
    parent.on_event(move |event| {
        if let AgentEvent::Nested { event, .. } = event
            && let AgentEvent::ToolExecutionEnd { result, .. } = &**event
        {
            sink.lock().unwrap().push(result.text_content());
        }
    });
    parent
        .prompt_with("go", Arc::new(Tenant("acme")))
        .await
        .unwrap();
    assert_eq!(*results.lock().unwrap(), ["acme"]);
}

/// A tool that records the deadline its context gives.
fn deadline_probe(name: &str, seen: Arc<Mutex<Vec<Option<tokio::time::Instant>>>>) -> FnTool {
    FnTool::new(name, "Probe.", json!({"type": "object"}), move |_, ctx| {
        let seen = Arc::clone(&seen);
        async move {
            seen.lock().unwrap().push(ctx.deadline());
            Ok::<_, ToolError>(ToolResult::text("ok"))
        }
    })
}

#[tokio::test]
async fn a_sub_agents_time_limit_is_what_is_left_of_its_parents() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let child = Agent::builder()
        .model(
            FauxModel::new()
                .respond(FauxResponse::tool_call("p2", "probe", json!({})))
                .respond(FauxResponse::text("child done")),
        )
        .tools(deadline_probe("probe", Arc::clone(&seen)))
        .time_limit(Duration::from_secs(3600))
        .build_definition()
        .unwrap();
    let parent = Agent::builder()
        .model(
            FauxModel::new()
                .respond(
                    FauxResponse::tool_call("p1", "probe", json!({})).and_tool_call(
                        "c1",
                        "child",
                        json!({"task": "t"}),
                    ),
                )
                .respond(FauxResponse::text("done")),
        )
        .tools((
            deadline_probe("probe", Arc::clone(&seen)),
            child.as_tool("child", "A child."),
        ))
        .time_limit(Duration::from_secs(60))
        .build()
        .unwrap();
    let run = parent.prompt("go").await.unwrap();
    assert_eq!(run.end, RunEnd::Completed);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(
        seen[0].is_some(),
        "the parent's call has the run's deadline"
    );
    assert_eq!(
        seen[0], seen[1],
        "the child's call ends when the parent's run does, not an hour later"
    );
}

#[tokio::test]
async fn a_sub_agent_that_outlives_its_parents_time_ends_with_the_remainder() {
    let child = Agent::builder()
        .model(FauxModel::new().respond(FauxResponse::tool_call("s1", "slow", json!({}))))
        .tools(FnTool::new(
            "slow",
            "Slow.",
            json!({"type": "object"}),
            |_, ctx: ToolContext| async move {
                ctx.signal().cancelled().await;
                Ok::<_, ToolError>(ToolResult::text("stopped"))
            },
        ))
        .build_definition()
        .unwrap();
    let ends = Arc::new(Mutex::new(Vec::new()));
    let parent = Agent::builder()
        .model(
            FauxModel::new()
                .respond(FauxResponse::tool_call("c1", "child", json!({"task": "t"})))
                .respond(FauxResponse::text("done")),
        )
        .tools(child.as_tool("child", "A child."))
        .time_limit(Duration::from_millis(300))
        .build()
        .unwrap();
    let sink = Arc::clone(&ends);
    parent.on_event(move |event| {
        if let AgentEvent::ToolExecutionEnd { result, .. } = event {
            sink.lock().unwrap().push(result.text_content());
        }
    });
    let run = parent.prompt("go").await.unwrap();
    // Both limits end at the same instant: the parent may see its own fire, or finish its
    // last (instant) request first.
    assert!(
        matches!(run.end, RunEnd::TimeLimit { limit } if limit == Duration::from_millis(300))
            || run.end == RunEnd::Completed,
        "{:?}",
        run.end
    );
    let ends = ends.lock().unwrap();
    assert_eq!(ends.len(), 1);
    // The child's own limit fired (the remainder of the parent's 300 ms), or the parent's
    // signal stopped it first.
    let stopped = ends[0] == "The child agent was stopped before it answered";
    let limit = (ends[0].strip_prefix("The child agent ran out of time ("))
        .and_then(|rest| rest.strip_suffix(" ms) before it answered"))
        .and_then(|ms| ms.parse::<u64>().ok());
    assert!(stopped || limit.is_some_and(|ms| ms <= 300), "{}", ends[0]);
}

#[tokio::test]
async fn aborting_the_parent_stops_the_sub_agents_stream_and_tools() {
    // The child streams a long answer slowly, then would call a tool that waits for its
    // signal: an abort mid-stream must stop both, long before the stream would end.
    let long = "word ".repeat(2_000);
    let child = Agent::builder()
        .model(
            FauxModel::new()
                .respond(FauxResponse::text(long))
                .with_chunk_chars(5)
                .with_chunk_delay(Duration::from_millis(10)),
        )
        .build_definition()
        .unwrap();
    let parent = calling(
        child.as_tool("child", "A child."),
        "child",
        json!({"task": "t"}),
        "never",
    );
    let aborter = parent.clone();
    parent.on_event(move |event| {
        if let AgentEvent::Nested { event, .. } = event
            && matches!(**event, AgentEvent::MessageUpdate { .. })
        {
            aborter.abort();
        }
    });
    let seen = record(&parent, false);
    let started = Instant::now();
    let run = parent.prompt("go").await.unwrap();
    // 2,000 chunks 10 ms apart would take 20 s.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.end, RunEnd::Aborted);
    let result = run[2].as_tool_result().unwrap();
    assert_eq!(
        result.text(),
        "The child agent was stopped before it answered"
    );
    let seen = seen.lock().unwrap();
    assert!(
        seen.contains(&"c1:agent_end".to_owned()),
        "the child's run ended: {seen:?}"
    );
}

#[tokio::test]
async fn aborting_the_parent_stops_a_tool_of_the_sub_agent() {
    let stopped = Arc::new(Mutex::new(false));
    let flag = Arc::clone(&stopped);
    let child = Agent::builder()
        .model(FauxModel::new().respond(FauxResponse::tool_call("w1", "wait", json!({}))))
        .tools(FnTool::new(
            "wait",
            "Wait.",
            json!({"type": "object"}),
            move |_, ctx: ToolContext| {
                let flag = Arc::clone(&flag);
                async move {
                    ctx.signal().cancelled().await;
                    *flag.lock().unwrap() = true;
                    Ok::<_, ToolError>(ToolResult::text("stopped"))
                }
            },
        ))
        .build_definition()
        .unwrap();
    let parent = Agent::builder()
        .model(FauxModel::new().respond(FauxResponse::tool_call(
            "c1",
            "child",
            json!({"task": "t"}),
        )))
        .tools(child.as_tool("child", "A child."))
        .build()
        .unwrap();
    let aborter = parent.clone();
    parent.on_event(move |event| {
        if let AgentEvent::Nested { event, .. } = event
            && matches!(**event, AgentEvent::ToolExecutionStart { .. })
        {
            aborter.abort();
        }
    });
    let started = Instant::now();
    let run = tokio::time::timeout(Duration::from_secs(30), parent.prompt("go"))
        .await
        .expect("the abort reaches the sub-agent's tool")
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.end, RunEnd::Aborted);
    assert!(*stopped.lock().unwrap(), "the child's tool saw the signal");
}

/// A city and its country.
#[tool_args]
#[derive(serde::Serialize)]
struct Place {
    /// The city.
    city: String,
    /// The country.
    country: String,
}

fn locate(script: FauxModel) -> pi_runtime::agent::Extraction<Place> {
    pi_runtime::agent::Extraction::new("locate", "Find where a landmark is.", move || {
        Agent::builder()
            .model(script.clone())
            .extract::<Place>()
            .build()
    })
}

#[tokio::test]
async fn an_extraction_answers_with_its_typed_value_and_its_events_reach_the_parent() {
    let script = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "s1",
            "submit_result",
            json!({"city": "Paris"}),
        ))
        .respond(FauxResponse::tool_call(
            "s2",
            "submit_result",
            json!({"city": "Paris", "country": "France"}),
        ));
    let parent = calling(
        locate(script),
        "locate",
        json!({"task": "Eiffel Tower"}),
        "Paris, France.",
    );
    let seen = record(&parent, false);
    let run = parent.prompt("Where is it?").await.unwrap();
    let result = run[2].as_tool_result().unwrap();
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(result.text(), r#"{"city":"Paris","country":"France"}"#);
    assert_eq!(
        result.details, None,
        "the value is the text and the structured content"
    );
    let seen = seen.lock().unwrap();
    let nested_ends = seen
        .iter()
        .filter(|kind| *kind == "c1:tool_execution_end")
        .count();
    assert_eq!(
        nested_ends, 2,
        "the rejected and the accepted submission: {seen:?}"
    );
}

#[tokio::test]
async fn an_extraction_without_a_result_is_the_calls_error() {
    let script = FauxModel::new().respond(FauxResponse::text("I do not know."));
    let parent = calling(
        locate(script),
        "locate",
        json!({"task": "Atlantis"}),
        "Unknown.",
    );
    let run = parent.prompt("Where is Atlantis?").await.unwrap();
    let result = run[2].as_tool_result().unwrap();
    assert!(result.is_error);
    assert!(
        result
            .text()
            .starts_with("The locate agent gave no result: no result was accepted"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn a_sub_agent_can_start_from_a_filtered_copy_of_the_parents_history() {
    let child_model = FauxModel::new().respond(FauxResponse::text("reviewed"));
    let reviewer = definition(child_model.clone())
        .as_tool("review", "Review.")
        .history(|messages| {
            (messages.iter())
                .filter(|m| m.role() == "user")
                .cloned()
                .collect()
        });
    let parent = calling(reviewer, "review", json!({"task": "Review it."}), "done");
    parent.prompt("My essay: ...").await.unwrap();
    let shown: Vec<_> = child_model.requests()[0]
        .messages
        .iter()
        .map(|m| (m.role(), m.text_content()))
        .collect();
    assert_eq!(
        shown,
        [
            ("user", "My essay: ...".to_owned()),
            ("user", "Review it.".to_owned())
        ]
    );
    assert_eq!(
        parent.messages().len(),
        4,
        "the parent's transcript is its own"
    );
}
