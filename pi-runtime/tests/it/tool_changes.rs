//! Tool changes during a run (pi 1.6): exposure, activation from the handle and from a
//! tool, the system messages that declare each change, and transcripts that replay to the
//! tools of their last request.

use pi_runtime::agent::Agent;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::{Exposure, FnTool, ToolSetExt};
use pi_runtime::transcript::current_tools;
use pi_runtime::{Message, Tool, ToolResult};
use serde_json::json;

fn tool(name: &str) -> FnTool {
    FnTool::new(
        name,
        format!("The {name} tool."),
        json!({"type": "object", "properties": {}}),
        |_, _| async { Ok(ToolResult::text("done")) },
    )
}

/// A tool that activates `target` for the next request, as `tool_search` loads its matches.
fn loader(target: &'static str) -> FnTool {
    FnTool::new(
        "load",
        "Load a tool.",
        json!({"type": "object", "properties": {}}),
        move |_, ctx| async move {
            let tools = ctx
                .tools()
                .expect("a call in a run has its conversation's tools");
            tools.activate(&[target])?;
            Ok(ToolResult::text(format!("loaded {target}")))
        },
    )
}

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|tool| tool.name.as_str()).collect()
}

#[tokio::test]
async fn a_tool_activates_a_deferred_tool_for_the_next_request() {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "load", json!({})))
        .respond(FauxResponse::tool_call("c2", "weather", json!({})))
        .respond(FauxResponse::text("sunny"));
    let requests = model.clone();
    let agent = Agent::builder()
        .model(model)
        .tools((
            loader("weather"),
            tool("weather").with_exposure(Exposure::Deferred),
        ))
        .build()
        .unwrap();
    let outcome = agent.prompt("weather?").await.unwrap();

    // The deferred tool is registered but not declared until `load` activates it.
    let requests = requests.requests();
    assert_eq!(names(&requests[0].current_tools()), ["load"]);
    assert_eq!(names(&requests[1].current_tools()), ["load", "weather"]);
    // The request's own list stays the opening one: the change travels as a system message.
    assert_eq!(names(&requests[1].tools), ["load"]);

    let roles: Vec<&str> = outcome.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "system",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
    let change = outcome[3].as_system().unwrap();
    assert_eq!(names(change.added()), ["weather"]);
    assert!(change.tools_removed.is_none());
    assert_eq!(outcome[5].text_content(), "done");
}

#[tokio::test]
async fn a_whole_tool_set_can_be_deferred_and_activated_from_the_handle() {
    let model = FauxModel::new()
        .respond(FauxResponse::text("one"))
        .respond(FauxResponse::text("two"))
        .respond(FauxResponse::text("three"));
    let requests = model.clone();
    let agent = Agent::builder()
        .model(model)
        .tools(tool("read"))
        .build()
        .unwrap();
    agent
        .register_tools((tool("a"), tool("b"), tool("c")).with_exposure(Exposure::Deferred))
        .unwrap();
    agent.prompt("1").await.unwrap();
    agent.activate_tools(&["c", "a"]).unwrap();
    assert_eq!(
        agent.activate_tools(&["nope"]).unwrap_err().to_string(),
        "unknown tool \"nope\""
    );
    agent.prompt("2").await.unwrap();
    agent.deactivate_tools(&["read"]).unwrap();
    let third = agent.prompt("3").await.unwrap();

    let requests = requests.requests();
    assert_eq!(names(&requests[0].current_tools()), ["read"]);
    assert_eq!(names(&requests[1].current_tools()), ["read", "c", "a"]);
    assert_eq!(names(&requests[2].current_tools()), ["c", "a"]);
    let removal = third[0].as_system().unwrap();
    assert_eq!(removal.removed()[0].name, "read");
    assert!(removal.tools_added.is_none());
}

#[tokio::test]
async fn a_replaced_tool_is_declared_again_as_a_removal_and_an_addition() {
    let model = FauxModel::new()
        .respond(FauxResponse::text("one"))
        .respond(FauxResponse::text("two"));
    let agent = Agent::builder()
        .model(model)
        .tools((tool("read"), tool("grep")))
        .build()
        .unwrap();
    agent.prompt("1").await.unwrap();
    let new_read = FnTool::new(
        "read",
        "Read a file, now with offsets.",
        json!({"type": "object", "properties": {"offset": {"type": "integer"}}}),
        |_, _| async { Ok(ToolResult::text("new")) },
    );
    agent.replace_tool(new_read).unwrap();
    let second = agent.prompt("2").await.unwrap();
    let change = second[0].as_system().unwrap();
    assert_eq!(change.removed()[0].name, "read");
    assert_eq!(
        change.added()[0].description,
        "Read a file, now with offsets."
    );
    // pi's replay: a redefined name is removed, then added again at the end.
    assert_eq!(names(&current_tools(&agent.transcript())), ["grep", "read"]);
}

#[tokio::test]
async fn a_saved_transcript_replays_to_the_tools_of_its_last_request() {
    let model = FauxModel::new()
        .respond(FauxResponse::text("one"))
        .respond(FauxResponse::text("two"));
    let agent = Agent::builder()
        .model(model)
        .tools((tool("read"), tool("web").with_exposure(Exposure::Deferred)))
        .build()
        .unwrap();
    agent.prompt("1").await.unwrap();
    agent.activate_tools(&["web"]).unwrap();
    agent.prompt("2").await.unwrap();

    let saved = serde_json::to_string(&agent.transcript()).unwrap();
    let restored: Vec<Message> = serde_json::from_str(&saved).unwrap();
    assert_eq!(restored, agent.transcript());
    assert_eq!(names(&current_tools(&restored)), ["read", "web"]);
    let opening = restored[0].as_system().unwrap();
    assert_eq!(names(opening.added()), ["read"]);

    // A new process with the same tools, active as the saved run left them, picks the
    // conversation up: the next request declares the same tools and adds no change.
    let model = FauxModel::new().respond(FauxResponse::text("three"));
    let requests = model.clone();
    let resumed = Agent::builder()
        .model(model)
        .tools((tool("read"), tool("web")))
        .messages(restored.clone())
        .build()
        .unwrap();
    let third = resumed.prompt("3").await.unwrap();
    assert_eq!(third[0].role(), "user");
    let request = &requests.requests()[0];
    assert_eq!(names(&request.tools), ["read"]);
    assert_eq!(names(&request.current_tools()), ["read", "web"]);

    // Resumed with fewer tools, the first request declares the difference.
    let model = FauxModel::new().respond(FauxResponse::text("four"));
    let fewer = Agent::builder()
        .model(model)
        .tools(tool("read"))
        .messages(restored)
        .build()
        .unwrap();
    let fourth = fewer.prompt("4").await.unwrap();
    assert_eq!(fourth[0].as_system().unwrap().removed()[0].name, "web");
}

#[tokio::test]
async fn hidden_tools_are_never_declared_and_model_only_tools_are() {
    let model = FauxModel::new().respond(FauxResponse::text("ok"));
    let requests = model.clone();
    let agent = Agent::builder()
        .model(model)
        .tools((
            tool("secret").with_exposure(Exposure::Hidden),
            tool("search").with_exposure(Exposure::ModelOnly),
        ))
        .build()
        .unwrap();
    agent.activate_tools(&["secret"]).unwrap();
    agent.prompt("go").await.unwrap();
    assert_eq!(names(&requests.requests()[0].current_tools()), ["search"]);
}

#[tokio::test]
async fn a_finish_turn_hook_activates_a_tool_for_the_next_turn() {
    use pi_runtime::agent::TurnControl;

    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "read", json!({})))
        .respond(FauxResponse::tool_call("c2", "write", json!({})))
        .respond(FauxResponse::text("written"));
    let requests = model.clone();
    let agent = Agent::builder()
        .model(model)
        .tools((
            tool("read"),
            tool("write").with_exposure(Exposure::Deferred),
        ))
        .finish_turn(|turn| async move {
            // Writing is offered once something was read.
            if turn.turn == 1 {
                turn.tools.activate(&["write"]).expect("registered");
            }
            TurnControl::Proceed
        })
        .build()
        .unwrap();
    let outcome = agent.prompt("copy it").await.unwrap();
    let requests = requests.requests();
    assert_eq!(names(&requests[0].current_tools()), ["read"]);
    assert_eq!(names(&requests[1].current_tools()), ["read", "write"]);
    assert_eq!(
        outcome[3].as_system().map(|s| names(s.added())),
        Some(vec!["write"])
    );
    assert_eq!(outcome[5].text_content(), "done");
}
