//! Code mode: the model writes one JavaScript program that calls three tools and returns a
//! summary, against the same task done one tool call per model turn.
//!
//! Offline, on the scripted faux model. Both runs answer "Which of customer 7's orders are
//! late?"; call by call, every tool result lands in the model's context, while the program
//! keeps them in the sandbox and returns one line. At the end the program prints how many
//! bytes of messages the model's last request carries each way.
//!
//! ```text
//! cargo run --example codemode
//! ```

use std::sync::Arc;

use pi_runtime::agent::Agent;
use pi_runtime::codemode::CodemodeTool;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::{FnTool, ToolDefinition};
use pi_runtime::{Message, ToolResult};
use serde_json::{Value, json};

/// The customer, their orders and the shipments: verbose, as real APIs are.
fn tools() -> Vec<Arc<dyn ToolDefinition>> {
    let customer = FnTool::new(
        "customer",
        "A customer's profile by id",
        json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}),
        |args, _ctx| async move {
            let id = args["id"].as_i64().unwrap_or_default();
            let profile = json!({"id": id, "name": "Ada Lovelace", "email": "ada@example.com",
                "address": {"street": "12 St James's Square", "city": "London", "zip": "SW1Y 4JH"},
                "tier": "gold", "since": "2019-03-02", "notes": "Prefers email. ".repeat(8)});
            Ok(ToolResult::text(profile.to_string()))
        },
    );
    let orders = FnTool::new(
        "orders",
        "The orders of a customer, newest first",
        json!({"type": "object", "properties": {"customer": {"type": "integer"}}, "required": ["customer"]}),
        |_args, _ctx| async move {
            let orders: Vec<Value> = (1..=20)
                .map(|n| {
                    json!({"order": 1000 + n, "items": n % 4 + 1, "total": 19.5 * f64::from(n),
                    "placed": format!("2025-05-{:02}", n), "promised": format!("2025-06-{:02}", n)})
                })
                .collect();
            Ok(ToolResult::text(Value::Array(orders).to_string()))
        },
    );
    let shipments = FnTool::new(
        "shipments",
        "Where each of a customer's orders is",
        json!({"type": "object", "properties": {"customer": {"type": "integer"}}, "required": ["customer"]}),
        |_args, _ctx| async move {
            let shipments: Vec<Value> = (1..=20)
                .map(|n| json!({"order": 1000 + n, "carrier": "Royal Mail", "tracking": format!("RM{n:08}GB"),
                    "status": if n % 7 == 0 { "late" } else { "delivered" }}))
                .collect();
            Ok(ToolResult::text(Value::Array(shipments).to_string()))
        },
    );
    vec![Arc::new(customer), Arc::new(orders), Arc::new(shipments)]
}

const ANSWER: &str = "Ada Lovelace has 2 late orders of 20: 1007, 1014.";

const PROGRAM: &str = "const [who, orders, shipped] = await Promise.all([
  tools.customer({ id: 7 }), tools.orders({ customer: 7 }), tools.shipments({ customer: 7 })]);
const late = JSON.parse(shipped).filter((s) => s.status === \"late\").map((s) => s.order);
return `${JSON.parse(who).name} has ${late.length} late orders of ${JSON.parse(orders).length}: ${late.join(\", \")}.`;";

/// Run the task on `model` with `tools`; the bytes of messages in the model's last request.
async fn run(model: FauxModel, tools: Vec<Arc<dyn ToolDefinition>>) -> usize {
    let agent = Agent::builder()
        .model(model.clone())
        .tools(tools)
        .build()
        .expect("the agent builds");
    let messages = agent
        .prompt("Which of customer 7's orders are late?")
        .await
        .expect("the run completes");
    for message in &messages {
        if let Message::ToolResult(result) = message {
            let text = result.text_content();
            let shown = text.lines().last().unwrap_or_default();
            println!(
                "  [{}] {} bytes: {:.60}",
                result.tool_name,
                text.len(),
                shown
            );
        }
    }
    if let Some(Message::Assistant(answer)) = messages.last() {
        println!("  [assistant] {}", answer.text_content());
    }
    let requests = model.requests();
    let last = requests.last().expect("the model was asked");
    serde_json::to_string(&last.messages)
        .expect("messages serialize")
        .len()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("call by call:");
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "customer", json!({"id": 7})))
        .respond(FauxResponse::tool_call(
            "c2",
            "orders",
            json!({"customer": 7}),
        ))
        .respond(FauxResponse::tool_call(
            "c3",
            "shipments",
            json!({"customer": 7}),
        ))
        .respond(FauxResponse::text(ANSWER));
    let direct = run(model, tools()).await;

    println!("one program:");
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "c1",
            "codemode",
            json!({"code": PROGRAM}),
        ))
        .respond(FauxResponse::text(ANSWER));
    let mut with_codemode = tools();
    with_codemode.push(Arc::new(CodemodeTool::new()));
    let program = run(model, with_codemode).await;

    println!(
        "messages in the last request: {direct} bytes call by call, {program} bytes with one program ({:.1}x smaller)",
        direct as f64 / program as f64
    );
}
