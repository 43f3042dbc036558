//! The `Agent` wrapper (SPEC §5.13): errors, state, event delivery, queues, running a call
//! outside the loop.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use pi_runtime::agent::{Agent, AgentError, AgentEvent, ToolCallDecision};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{FnTool, Message, ToolCall, ToolError, ToolResult, UserMessage};
use serde_json::json;

fn echo() -> FnTool {
    FnTool::new(
        "echo",
        "Echo.",
        json!({"type": "object"}),
        |args, _| async move { Ok::<_, ToolError>(ToolResult::text(args.to_string())) },
    )
}

fn roles(messages: &[Message]) -> Vec<&'static str> {
    messages.iter().map(Message::role).collect()
}

/// Every event but `message_update` of a run with one tool call, then a text answer.
const ONE_CALL_RUN: [&str; 16] = [
    "agent_start",
    "turn_start",
    "message_start",
    "message_end",
    "message_start",
    "message_end",
    "tool_execution_start",
    "tool_execution_end",
    "message_start",
    "message_end",
    "turn_end",
    "turn_start",
    "message_start",
    "message_end",
    "turn_end",
    "agent_end",
];

// On the paused clock, which stands still while a task is ready to run: the run is still
// streaming while the checks below ask, however loaded the machine.
#[tokio::test(start_paused = true)]
async fn busy_and_empty_states_answer_with_the_exact_errors() {
    let model = FauxModel::new().with_chunk_delay(Duration::from_millis(20));
    let agent = Agent::builder().model(model).build().unwrap();
    assert_eq!(
        agent.continue_run().await.unwrap_err().to_string(),
        "No messages to continue from"
    );

    let running = agent.clone();
    let run = tokio::spawn(async move { running.prompt("go").await });
    while !agent.is_streaming() {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        agent.prompt("again").await.unwrap_err().to_string(),
        "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, or wait for completion."
    );
    assert_eq!(
        agent.continue_run().await.unwrap_err().to_string(),
        "Agent is already processing. Wait for completion before continuing."
    );
    assert_eq!(
        agent.reset().unwrap_err().to_string(),
        "Agent is already processing. Wait for completion before resetting."
    );
    agent.wait_for_idle().await;
    assert_eq!(roles(&run.await.unwrap().unwrap()), ["user", "assistant"]);

    assert_eq!(
        agent.continue_run().await.unwrap_err(),
        AgentError::CannotContinueFrom("assistant")
    );
    assert_eq!(
        AgentError::CannotContinueFrom("assistant").to_string(),
        "Cannot continue from message role: assistant"
    );
    agent.reset().unwrap();
    assert!(agent.messages().is_empty());
}

#[tokio::test]
async fn continue_runs_from_a_user_message_or_delivers_queued_steering() {
    let model = FauxModel::new()
        .respond(FauxResponse::text("first"))
        .respond(FauxResponse::text("second"));
    let agent = Agent::builder()
        .model(model)
        .messages(vec![UserMessage::text("hello").into()])
        .build()
        .unwrap();
    let added = agent.continue_run().await.unwrap();
    assert_eq!(roles(&added), ["assistant"]);

    agent.steer(UserMessage::text("and now?"));
    let added = agent.continue_run().await.unwrap();
    assert_eq!(roles(&added), ["user", "assistant"]);
    assert_eq!(
        roles(&agent.messages()),
        ["user", "assistant", "user", "assistant"]
    );
}

#[tokio::test]
async fn steering_arrives_after_the_turns_tools_and_follow_ups_when_it_would_stop() {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "echo", json!({})))
        .respond(FauxResponse::text("steered"))
        .respond(FauxResponse::text("followed up"));
    let agent = Agent::builder().model(model).tools(echo()).build().unwrap();
    let steerer = agent.clone();
    agent.on_event(move |event| {
        if let AgentEvent::ToolExecutionStart { .. } = event {
            steerer.steer(UserMessage::text("use the other file"));
        }
    });
    agent.follow_up(UserMessage::text("one more thing"));
    let added = agent.prompt("go").await.unwrap();
    assert_eq!(
        roles(&added),
        [
            "user",
            "assistant",
            "toolResult",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    let Message::Assistant(last) = &added[6] else {
        panic!("an assistant message last");
    };
    assert_eq!(last.text(), "followed up");
}

#[tokio::test]
async fn subscribers_are_awaited_in_order_before_the_run_goes_on() {
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "echo", json!({})));
    let agent = Agent::builder().model(model).tools(echo()).build().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let slow_log = Arc::clone(&log);
    agent.subscribe(move |event| {
        let is_assistant_end = matches!(
            &*event,
            AgentEvent::MessageEnd {
                message: Message::Assistant(_)
            }
        );
        let log = Arc::clone(&slow_log);
        async move {
            if is_assistant_end {
                tokio::time::sleep(Duration::from_millis(10)).await;
                log.lock().unwrap().push("slow listener done");
            }
        }
    });
    let fast_log = Arc::clone(&log);
    agent.on_event(move |event| {
        if let AgentEvent::ToolExecutionStart { .. } = event {
            fast_log.lock().unwrap().push("tool start");
        }
    });
    agent.prompt("go").await.unwrap();
    assert_eq!(
        log.lock().unwrap()[..2],
        ["slow listener done", "tool start"]
    );
}

#[tokio::test]
async fn events_are_also_a_stream() {
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "echo", json!({"n": 1})));
    let agent = Agent::builder().model(model).tools(echo()).build().unwrap();
    let events = agent.events();
    agent.prompt("go").await.unwrap();
    drop(agent);
    let kinds: Vec<_> = events
        .filter(|e| std::future::ready(!matches!(e, AgentEvent::MessageUpdate { .. })))
        .map(|e| e.kind())
        .collect()
        .await;
    assert_eq!(kinds, ONE_CALL_RUN);
}

#[tokio::test]
async fn state_tracks_pending_calls_while_they_run() {
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "echo", json!({})));
    let agent = Agent::builder().model(model).tools(echo()).build().unwrap();
    let observed = Arc::new(Mutex::new(Vec::new()));
    let (watcher, sink) = (agent.clone(), Arc::clone(&observed));
    agent.on_event(move |event| {
        if let AgentEvent::ToolExecutionStart { .. } | AgentEvent::ToolExecutionEnd { .. } = event {
            sink.lock()
                .unwrap()
                .push(Vec::from(watcher.state().pending_tool_calls));
        }
    });
    agent.prompt("go").await.unwrap();
    assert_eq!(*observed.lock().unwrap(), [vec!["c1".to_owned()], vec![]]);
    let state = agent.state();
    assert!(!state.is_streaming && state.streaming_message.is_none());
    assert_eq!(
        roles(&state.messages),
        ["user", "assistant", "toolResult", "assistant"]
    );
}

#[tokio::test]
async fn the_system_prompt_is_sent_as_given_without_the_tool_section() {
    let model = FauxModel::new();
    let agent = Agent::builder()
        .model(model.clone())
        .system_prompt("You are careful.")
        .tools(echo())
        .without_tool_section()
        .build()
        .unwrap();
    agent.prompt("go").await.unwrap();
    let request = &model.requests()[0];
    assert_eq!(request.system_prompt, "You are careful.");
    let names: Vec<_> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo"]);
}

#[tokio::test]
async fn run_tool_call_applies_the_hooks_outside_the_loop() {
    let agent = Agent::builder()
        .model(FauxModel::new())
        .tools(echo())
        .before_tool_call(|call| async move {
            Ok(if call.args.get("dangerous").is_some() {
                ToolCallDecision::block("not allowed")
            } else {
                ToolCallDecision::Allow
            })
        })
        .build()
        .unwrap();
    let ok = agent
        .run_tool_call(ToolCall::new("x1", "echo", json!({"safe": true})))
        .await;
    assert_eq!(
        (ok.is_error, ok.text_content()),
        (false, r#"{"safe":true}"#.to_owned())
    );
    let blocked = agent
        .run_tool_call(ToolCall::new("x2", "echo", json!({"dangerous": true})))
        .await;
    assert_eq!(
        (blocked.is_error, blocked.text_content()),
        (true, "not allowed".to_owned())
    );
    let unknown = agent
        .run_tool_call(ToolCall::new("x3", "nope", json!({})))
        .await;
    assert_eq!(unknown.text_content(), "Tool nope not found");
    assert!(agent.messages().is_empty(), "no messages outside the loop");
}

#[tokio::test]
async fn run_tool_call_during_a_run_finds_the_running_turn_s_tools() {
    // `wait` holds the run's first batch until the test has called `echo` from outside.
    let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let gates = Arc::new(Mutex::new(Some((started_tx, released))));
    let wait = FnTool::new("wait", "Waits.", json!({"type": "object"}), move |_, _| {
        let gates = gates.lock().unwrap().take();
        async move {
            if let Some((started, released)) = gates {
                let _ = started.send(());
                let _ = released.await;
            }
            Ok(ToolResult::text("waited"))
        }
    });
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "wait", json!({})))
        .respond(FauxResponse::text("done"));
    let agent = Agent::builder()
        .model(model)
        .tools((echo(), wait))
        .build()
        .unwrap();
    let run = agent.prompt("go");
    let outside = async {
        started.await.unwrap();
        // The agent stops offering `echo`; the running turn still does.
        agent.deactivate_tools(&["echo"]).unwrap();
        let during = agent
            .run_tool_call(ToolCall::new("x1", "echo", json!({"n": 1})))
            .await;
        release.send(()).unwrap();
        during
    };
    let (run, during) = tokio::join!(run, outside);
    run.unwrap();
    assert_eq!(
        (during.is_error, during.text_content()),
        (false, r#"{"n":1}"#.to_owned())
    );
    let after = agent
        .run_tool_call(ToolCall::new("x2", "echo", json!({"n": 2})))
        .await;
    assert_eq!(after.text_content(), "Tool echo not found");
}

#[tokio::test]
async fn building_needs_a_model_and_unique_tool_names() {
    let missing = Agent::builder().build().unwrap_err();
    assert_eq!(
        missing.to_string(),
        "an agent needs a model: call `.model(..)` on the builder"
    );
    let duplicate = Agent::builder()
        .model(FauxModel::new())
        .tools((echo(), echo()))
        .build()
        .unwrap_err();
    assert_eq!(
        duplicate.to_string(),
        "duplicate tool name \"echo\": every tool needs its own name"
    );
}

#[tokio::test]
async fn a_reader_that_falls_behind_skips_only_message_updates() {
    // Seen before the fix: a reader taking 1 ms per event drove this run to a 3.4 GB peak.
    let _alone = crate::memory_support::measured().await;
    // 128 KiB of arguments in 4-character deltas: 32k updates, none read while the run goes.
    let text = "x".repeat(128 << 10);
    let model = FauxModel::new()
        .with_chunk_chars(4)
        .respond(FauxResponse::tool_call("c1", "echo", json!({"text": text})));
    let agent = Agent::builder().model(model).tools(echo()).build().unwrap();
    let mut events = agent.events();
    let peak = crate::memory_support::peak_rss();
    agent.prompt("go").await.unwrap();
    let grown = crate::memory_support::peak_rss().saturating_sub(peak);
    assert!(grown < 64 << 20, "peak memory grew by {grown} bytes");
    drop(agent);
    let mut updates = 0;
    let mut kinds = Vec::new();
    let mut last_live = None;
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::MessageUpdate { message, .. } => {
                updates += 1;
                last_live = Some(message);
            }
            other => kinds.push(other.kind()),
        }
    }
    assert!(
        (1..=pi_runtime::agent::EVENT_STREAM_BACKLOG).contains(&updates),
        "{updates} updates were queued"
    );
    assert_eq!(kinds, ONE_CALL_RUN);
    // The skipped updates' changes are in the live message the delivered ones carry.
    let live = last_live.unwrap().snapshot();
    let call = live.tool_calls().next().unwrap();
    assert_eq!(
        call.arguments["text"].as_str().map(str::len),
        Some(128 << 10)
    );
}

#[tokio::test]
async fn a_tool_hidden_by_prepare_request_is_not_found_and_left_out_of_the_prompt() {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "echo", json!({})))
        .respond(FauxResponse::text("ok"));
    let requests = model.clone();
    let agent = Agent::builder()
        .model(model)
        .tools((
            echo().with_snippet("Echo the arguments"),
            FnTool::new("other", "Other.", json!({"type": "object"}), |_, _| async {
                Ok(ToolResult::text("other"))
            })
            .with_snippet("Do the other thing"),
        ))
        .prepare_request(|mut plan| async move {
            plan.context.tools.retain(|tool| tool.name != "echo");
            plan
        })
        .build()
        .unwrap();
    let messages = agent.prompt("go").await.unwrap();
    let Message::ToolResult(result) = &messages[2] else {
        panic!("a tool result: {messages:?}")
    };
    assert_eq!(
        (result.is_error, result.text()),
        (true, "Tool echo not found".to_owned())
    );
    let request = &requests.requests()[0];
    let offered: Vec<_> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["other"]);
    assert!(
        request
            .system_prompt
            .contains("- other: Do the other thing"),
        "{}",
        request.system_prompt
    );
    assert!(
        !request.system_prompt.contains("echo"),
        "{}",
        request.system_prompt
    );
}

#[tokio::test]
async fn a_refused_continue_keeps_the_last_error() {
    let model = FauxModel::new().respond(FauxResponse::error("the server is down"));
    let agent = Agent::builder().model(model).build().unwrap();
    agent.prompt("go").await.unwrap();
    assert_eq!(agent.error_message().as_deref(), Some("the server is down"));
    assert_eq!(
        agent.continue_run().await.unwrap_err(),
        AgentError::CannotContinueFrom("assistant")
    );
    assert_eq!(agent.error_message().as_deref(), Some("the server is down"));
    assert!(!agent.is_streaming());
}

#[tokio::test]
async fn tools_registered_or_removed_after_build_apply_from_the_next_request() {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "echo", json!({"n": 1})))
        .respond(FauxResponse::text("first"))
        .respond(FauxResponse::tool_call("c2", "echo", json!({"n": 2})))
        .respond(FauxResponse::text("second"));
    let requests = model.clone();
    let agent = Agent::builder().model(model).build().unwrap();
    let first = agent.prompt("go").await.unwrap();
    assert_eq!(
        pi_runtime::Message::text_content(&first[2]),
        "Tool echo not found"
    );

    agent.register_tools(echo()).unwrap();
    assert_eq!(
        agent.register_tools(echo()).unwrap_err().to_string(),
        "duplicate tool name \"echo\": every tool needs its own name"
    );
    // The transcript records the change before the prompt, as pi 1.6 does; the request's
    // own list stays the conversation's opening one (none), and the system message adds.
    let second = agent.prompt("again").await.unwrap();
    let added = second[0].as_system().expect("a tool change");
    assert_eq!(added.added()[0].name, "echo");
    assert_eq!(pi_runtime::Message::text_content(&second[3]), r#"{"n":2}"#);
    let request = &requests.requests()[2];
    assert!(request.tools.is_empty());
    assert_eq!(names(&request.current_tools()), ["echo"]);

    assert!(agent.remove_tool("echo"));
    assert!(!agent.remove_tool("echo"));
    let last = agent.prompt("last").await.unwrap();
    let removed = last[0].as_system().expect("a tool change");
    assert_eq!(removed.removed()[0].name, "echo");
    assert!(
        requests
            .requests()
            .last()
            .unwrap()
            .current_tools()
            .is_empty()
    );
}

fn names(tools: &[pi_runtime::Tool]) -> Vec<&str> {
    tools.iter().map(|tool| tool.name.as_str()).collect()
}

/// One definition, 1,000 conversations at once on a multi-thread runtime: each sees only its
/// own messages, in the model's requests, in its tool calls and in its transcript.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_conversations_of_one_definition_stay_apart() {
    const CONVERSATIONS: usize = 1000;
    let mut model = FauxModel::new().without_fallback();
    for _ in 0..2 * CONVERSATIONS {
        model = model.respond_with(|context| {
            let who = pi_runtime::Message::text_content(&context.messages[0]);
            match context.messages.last() {
                Some(Message::User(_)) => {
                    FauxResponse::tool_call(format!("call-{who}"), "whoami", json!({"who": who}))
                }
                _ => {
                    // Everything this conversation sent is about `who` alone.
                    let seen = serde_json::to_string(&context.messages).unwrap();
                    assert_eq!(seen.matches("tenant-").count(), seen.matches(&who).count());
                    FauxResponse::text(format!("done {who}"))
                }
            }
        });
    }
    let whoami = FnTool::new(
        "whoami",
        "Who.",
        json!({"type": "object"}),
        |args, ctx| async move {
            let who = args["who"].as_str().unwrap_or_default().to_owned();
            assert_eq!(ctx.call_id(), format!("call-{who}"));
            Ok(ToolResult::text(who))
        },
    );
    let definition = Agent::builder()
        .model(model)
        .tools(whoami)
        .build_definition()
        .unwrap();
    let runs: Vec<_> = (0..CONVERSATIONS)
        .map(|i| {
            let agent = definition.conversation();
            tokio::spawn(async move {
                let who = format!("tenant-{i}:");
                let messages = agent.prompt(who.clone()).await.unwrap();
                (who, messages, agent.messages())
            })
        })
        .collect();
    for run in runs {
        let (who, messages, transcript) = run.await.unwrap();
        assert_eq!(
            messages.messages, transcript,
            "the transcript is this run alone"
        );
        let texts: Vec<String> = messages.iter().map(Message::text_content).collect();
        assert_eq!(
            texts,
            [
                who.clone(),
                String::new(),
                who.clone(),
                format!("done {who}")
            ]
        );
    }
}

#[tokio::test]
async fn a_tool_calls_other_tools_through_the_agents_pipeline() {
    // `both` calls `echo` twice from inside the run; the agent's hook blocks one of them.
    let both = FnTool::new(
        "both",
        "Both.",
        json!({"type": "object"}),
        |_, ctx| async move {
            let allowed = ctx
                .call_tool(ToolCall::new("inner-1", "echo", json!({"n": 1})))
                .await;
            let blocked = ctx
                .call_tool(ToolCall::new("inner-2", "echo", json!({"secret": true})))
                .await;
            let missing = ctx
                .call_tool(ToolCall::new("inner-3", "nope", json!({})))
                .await;
            Ok::<_, ToolError>(ToolResult::text(format!(
                "{} | {} {} | {}",
                allowed.text_content(),
                blocked.is_error,
                blocked.text_content(),
                missing.text_content()
            )))
        },
    );
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "both", json!({})))
        .respond(FauxResponse::text("done"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let ids = Arc::clone(&seen);
    let agent = Agent::builder()
        .model(model)
        .tools((both, echo()))
        .before_tool_call(move |call| {
            ids.lock().unwrap().push(call.tool_call.id.clone());
            async move {
                Ok(if call.args.get("secret").is_some() {
                    ToolCallDecision::block("no secrets")
                } else {
                    ToolCallDecision::Allow
                })
            }
        })
        .build()
        .unwrap();
    let messages = agent.prompt("go").await.unwrap();
    assert_eq!(
        pi_runtime::Message::text_content(&messages[2]),
        r#"{"n":1} | true no secrets | Tool nope not found"#
    );
    assert_eq!(*seen.lock().unwrap(), ["c1", "inner-1", "inner-2"]);
    assert_eq!(
        roles(&messages),
        ["user", "assistant", "toolResult", "assistant"]
    );

    let detached = pi_runtime::ToolContext::detached("x")
        .call_tool(ToolCall::new("y", "echo", json!({})))
        .await;
    assert_eq!(
        (detached.is_error, detached.text_content()),
        (
            true,
            "Tool echo not found: this context was not made by an agent, so it has no tools to call"
                .to_owned()
        )
    );
}

/// Every way a run ends, as `prompt()` reports it.
#[tokio::test(start_paused = true)]
async fn prompt_says_how_the_run_ended() {
    use pi_runtime::agent::{RunEnd, TurnControl};

    let ends = |model: FauxModel| async move {
        let agent = Agent::builder().model(model).tools(echo()).build().unwrap();
        agent.prompt("go").await.unwrap()
    };
    let completed = ends(FauxModel::new().respond(FauxResponse::text("hi"))).await;
    assert_eq!(
        (completed.end.clone(), completed.turns),
        (RunEnd::Completed, 1)
    );
    assert!(completed.end.is_success());

    let failed = ends(FauxModel::new().respond(FauxResponse::error("overloaded"))).await;
    assert_eq!(
        failed.end,
        RunEnd::ModelError {
            message: "overloaded".into()
        }
    );
    assert!(!failed.end.is_success());

    let stop = FnTool::new("stop", "Stop.", json!({"type": "object"}), |_, _| async {
        Ok(ToolResult::text("stopped").with_terminate(true))
    });
    let agent = Agent::builder()
        .model(FauxModel::new().respond(FauxResponse::tool_call("c1", "stop", json!({}))))
        .tools(stop)
        .build()
        .unwrap();
    assert_eq!(agent.prompt("go").await.unwrap().end, RunEnd::Terminated);

    // Three calls in a row, two turns allowed, twice on the same agent: each run counts afresh.
    let model = FauxModel::new().with_fallback(FauxResponse::tool_call("c", "echo", json!({})));
    let agent = Agent::builder()
        .model(model)
        .tools(echo())
        .max_turns(2)
        .build()
        .unwrap();
    for _ in 0..2 {
        let limited = agent.prompt("loop").await.unwrap();
        assert_eq!(
            (&limited.end, limited.turns),
            (&RunEnd::TurnLimit { max_turns: 2 }, 2)
        );
        assert_eq!(
            roles(&limited),
            ["user", "assistant", "toolResult", "assistant", "toolResult"]
        );
    }

    let agent = Agent::builder()
        .model(FauxModel::new().respond(FauxResponse::tool_call("c1", "echo", json!({}))))
        .tools(echo())
        .finish_turn(|turn| async move {
            assert_eq!(turn.turn, 1);
            TurnControl::End
        })
        .build()
        .unwrap();
    assert_eq!(agent.prompt("go").await.unwrap().end, RunEnd::EndedByHook);

    let slow = FauxModel::new()
        .respond(FauxResponse::text("a long answer"))
        .with_chunk_chars(1)
        .with_chunk_delay(Duration::from_secs(1));
    let agent = Agent::builder()
        .model(slow.clone())
        .time_limit(Duration::from_secs(3))
        .build()
        .unwrap();
    let timed_out = agent.prompt("go").await.unwrap();
    assert_eq!(
        timed_out.end,
        RunEnd::TimeLimit {
            limit: Duration::from_secs(3)
        }
    );

    let agent = Agent::builder().model(slow).build().unwrap();
    let aborter = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        aborter.abort();
    });
    assert_eq!(agent.prompt("go").await.unwrap().end, RunEnd::Aborted);
}
