//! Handoffs: a tool call hands the conversation to another agent, whose prompt, tools and
//! model take the run from the next request on; a filter shapes what it is shown; the
//! outcome names who answered; the turn limit bounds agents handing back and forth.

use pi_runtime::agent::{Agent, AgentDefinition, RunEnd};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{FnTool, ToolCall, ToolError, ToolResult};
use serde_json::json;

fn invoice_tool() -> FnTool {
    FnTool::new(
        "find_invoice",
        "Find an invoice.",
        json!({"type": "object"}),
        |_, _| async { Ok::<_, ToolError>(ToolResult::text("invoice 7 is paid")) },
    )
}

fn billing(model: FauxModel) -> AgentDefinition {
    Agent::builder()
        .name("billing")
        .model(model)
        .system_prompt("You handle billing.")
        .tools(invoice_tool())
        .build_definition()
        .unwrap()
}

fn triage(model: FauxModel, billing: &AgentDefinition) -> Agent {
    Agent::builder()
        .name("triage")
        .model(model)
        .system_prompt("You route questions.")
        .tools(billing.handoff("transfer_to_billing", "Billing questions go to billing."))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_handoff_continues_the_conversation_under_the_other_agent() {
    let triage_model = FauxModel::new().respond(FauxResponse::tool_call(
        "h1",
        "transfer_to_billing",
        json!({}),
    ));
    let billing_model = FauxModel::new()
        .respond(FauxResponse::tool_call("f1", "find_invoice", json!({})))
        .respond(FauxResponse::text("Invoice 7 is paid."))
        .respond(FauxResponse::text("You are welcome."));
    let agent = triage(triage_model.clone(), &billing(billing_model.clone()));

    let run = agent.prompt("Is invoice 7 paid?").await.unwrap();
    assert_eq!(run.end, RunEnd::Completed);
    assert_eq!(run.agent.as_deref(), Some("billing"));
    assert_eq!(run.final_text().as_deref(), Some("Invoice 7 is paid."));
    let roles: Vec<_> = run.iter().map(|m| m.role()).collect();
    // The system message records the change of tools (see `tool_changes`).
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
    assert_eq!(run[2].text_content(), "Transferred to billing.");
    assert_eq!(triage_model.request_count(), 1);

    let requests = billing_model.requests();
    assert!(requests[0].system_prompt.starts_with("You handle billing."));
    // Billing's tools: declared to it by the system message (the request's own list stays
    // the conversation's first, as every tool change keeps it), and they run.
    let change = run[3].as_system().unwrap();
    let added: Vec<_> = change.added().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(added, ["find_invoice"]);
    assert_eq!(run[5].text_content(), "invoice 7 is paid");
    assert_eq!(
        requests[0].messages.len(),
        4,
        "billing sees the whole transcript"
    );

    // The conversation stays with billing.
    let next = agent.prompt("Thanks!").await.unwrap();
    assert_eq!(next.agent.as_deref(), Some("billing"));
    assert_eq!(next.final_text().as_deref(), Some("You are welcome."));
    assert_eq!(triage_model.request_count(), 1);
}

#[tokio::test]
async fn a_history_filter_shapes_what_the_next_agent_is_shown() {
    let billing_model = FauxModel::new().respond(FauxResponse::text("On it."));
    let billing = billing(billing_model.clone());
    let handoff = billing
        .handoff("transfer_to_billing", "Billing questions go to billing.")
        .history(|messages| {
            (messages.iter())
                .filter(|m| m.role() == "user")
                .cloned()
                .collect()
        });
    let agent = Agent::builder()
        .name("triage")
        .model(FauxModel::new().respond(FauxResponse::tool_call(
            "h1",
            "transfer_to_billing",
            json!({}),
        )))
        .tools(handoff)
        .build()
        .unwrap();
    let run = agent.prompt("Where is my refund?").await.unwrap();
    assert_eq!(run.final_text().as_deref(), Some("On it."));
    let shown: Vec<_> = billing_model.requests()[0]
        .messages
        .iter()
        .map(|m| (m.role(), m.text_content()))
        .collect();
    assert_eq!(shown, [("user", "Where is my refund?".to_owned())]);
    assert_eq!(run.len(), 5, "the transcript keeps everything");
}

#[tokio::test]
async fn agents_that_keep_handing_over_stop_at_the_turn_limit() {
    // Definitions are values, so a cycle is a chain: ping, pong, ping, pong, ... each
    // handing to the next, the first one's turn limit bounding the run.
    let hands_to =
        |next: &str| FauxModel::new().with_fallback(FauxResponse::tool_call("h", next, json!({})));
    let mut next = Agent::builder()
        .name("last")
        .model(FauxModel::new().with_fallback(FauxResponse::text("never")))
        .build_definition()
        .unwrap();
    for step in (1..=8).rev() {
        let name = if step % 2 == 0 { "pong" } else { "ping" };
        next = Agent::builder()
            .name(name)
            .model(hands_to("hand_over"))
            .tools(next.handoff("hand_over", "Hand over."))
            .max_turns(5)
            .build_definition()
            .unwrap();
    }
    let run = next.conversation().prompt("go").await.unwrap();
    assert_eq!(run.end, RunEnd::TurnLimit { max_turns: 5 });
    assert_eq!(run.turns, 5);
    assert_eq!(
        run.agent.as_deref(),
        Some("pong"),
        "five handoffs from ping"
    );
}

#[tokio::test]
async fn a_handoff_outside_a_run_fails_and_changes_nothing() {
    let agent = triage(FauxModel::new(), &billing(FauxModel::new()));
    let result = agent
        .run_tool_call(ToolCall::new("h1", "transfer_to_billing", json!({})))
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "Cannot transfer to billing here: only a call of the conversation's own run can hand it over"
    );
    let model = FauxModel::new().respond(FauxResponse::text("still triage"));
    let agent = triage(model, &billing(FauxModel::new()));
    agent
        .run_tool_call(ToolCall::new("h1", "transfer_to_billing", json!({})))
        .await;
    let run = agent.prompt("hi").await.unwrap();
    assert_eq!(run.agent.as_deref(), Some("triage"));
    assert_eq!(run.final_text().as_deref(), Some("still triage"));
}
