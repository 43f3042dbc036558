//! Code mode end to end: an agent on the faux model calls the `codemode` tool, whose script
//! calls the agent's tools through its pipeline; hostile scripts end in bounded time with pi's
//! texts, and the agent keeps going.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pi_runtime::codemode::CodemodeTool;
use pi_runtime::message::join_text;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::Exposure;
use pi_runtime::{Agent, FnTool, Message, ToolDefinition, ToolResult};
use serde_json::{Value, json};

/// The `codemode` result of one script, and the agent's final text.
struct Run {
    text: String,
    is_error: bool,
    details: Value,
    elapsed: Duration,
}

fn lookup_tools() -> Vec<Arc<dyn ToolDefinition>> {
    let user = FnTool::new(
        "get-user",
        "A user by id",
        json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}),
        |args, _ctx| async move {
            let id = args["id"].as_i64().unwrap_or_default();
            Ok(ToolResult::text(format!("user {id}"))
                .with_structured_content(json!({"id": id, "name": format!("Ada {id}")})))
        },
    )
    .with_output_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}}))
    .with_exposure(Exposure::Codemode);
    let orders = FnTool::new(
        "orders",
        "A user's orders",
        json!({"type": "object", "properties": {"user": {"type": "string"}}, "required": ["user"]}),
        |args, _ctx| async move {
            let user = args["user"].as_str().unwrap_or_default().to_owned();
            Ok(ToolResult::text(format!("2 orders for {user}")))
        },
    );
    vec![Arc::new(user), Arc::new(orders)]
}

async fn run(code: &str) -> Run {
    let mut tools = lookup_tools();
    tools.push(Arc::new(CodemodeTool::new()));
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "call_1",
            "codemode",
            json!({"code": code}),
        ))
        .respond(FauxResponse::text("done"));
    let agent = Agent::builder()
        .model(model)
        .tools(tools)
        .build()
        .expect("the agent builds");
    let started = Instant::now();
    let messages = agent.prompt("go").await.expect("the run completes");
    let elapsed = started.elapsed();
    let result = messages
        .iter()
        .find_map(|message| match message {
            Message::ToolResult(result) => Some(Arc::clone(result)),
            _ => None,
        })
        .expect("the codemode call has a result");
    // The agent keeps going after the script, whatever it did.
    assert!(matches!(messages.last(), Some(Message::Assistant(_))));
    Run {
        text: join_text(&result.content),
        is_error: result.is_error,
        details: result.details.clone().unwrap_or(Value::Null),
        elapsed,
    }
}

#[tokio::test]
async fn a_script_calls_two_tools_and_returns_one_joined_answer() {
    let run = run("const user = await tools.get_user({ id: 7 });\n\
         const orders = await tools.orders({ user: user.name });\n\
         return user.name + \": \" + orders;")
    .await;
    assert!(!run.is_error, "{}", run.text);
    assert!(
        run.text.starts_with("Script completed\nWall time "),
        "{}",
        run.text
    );
    assert!(
        run.text.ends_with("Output:\n\nAda 7: 2 orders for Ada 7"),
        "{}",
        run.text
    );
    assert_eq!(
        run.details["calls"],
        json!([
            {"id": "call_1/1", "name": "get-user", "args": "{\"id\":7}", "status": "ok"},
            {"id": "call_1/2", "name": "orders", "args": "{\"user\":\"Ada 7\"}", "status": "ok"},
        ])
    );
}

#[tokio::test]
async fn an_endless_loop_is_stopped_by_the_time_limit() {
    let run = run("// @options: {\"timeout_ms\": 300}\nwhile (true) {}").await;
    assert!(run.is_error);
    assert!(
        run.text.ends_with(
            "Script error:\nScript timed out: Execution timed out after 300 ms\n\nNo tool calls were made."
        ),
        "{}",
        run.text
    );
    assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
}

#[tokio::test]
async fn a_script_that_catches_its_own_timeout_still_ends() {
    let code = "// @options: {\"timeout_ms\": 300}\n\
                for (;;) { try { while (true) {} } catch (e) { text(\"caught\"); } }";
    let run = run(code).await;
    assert!(
        run.text
            .contains("Script timed out: Execution timed out after 300 ms"),
        "{}",
        run.text
    );
    assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
}

#[tokio::test]
async fn scripts_reach_no_modules_timers_or_host() {
    let run = run(
        "const kinds = [typeof require, typeof setTimeout, typeof setInterval, typeof fetch,\n\
                        typeof process, typeof std, typeof os].join();\n\
         let imported;\n\
         try { await import(\"os\"); imported = \"imported\"; } catch (error) { imported = \"refused\"; }\n\
         return kinds + \" \" + imported;",
    )
    .await;
    assert!(
        run.text.ends_with(
            "Output:\n\nundefined,undefined,undefined,undefined,undefined,undefined,undefined refused"
        ),
        "{}",
        run.text
    );
    let run = run_static_import().await;
    assert!(run.is_error);
    assert!(
        run.text.contains("Script error:\nSyntaxError"),
        "{}",
        run.text
    );
}

async fn run_static_import() -> Run {
    run("import fs from \"fs\";\nreturn 1;").await
}

#[tokio::test]
async fn built_ins_and_tools_are_frozen() {
    let run = run(
        "Array.prototype.push = null; JSON.stringify = null; globalThis.text = null;\n\
         tools.x = 1; Object.prototype.polluted = 1;\n\
         class MyError extends Error { constructor() { super(\"m\"); this.name = \"MyError\"; } }\n\
         return [typeof Array.prototype.push, typeof JSON.stringify, typeof text, \"x\" in tools,\n\
                 ({}).polluted, new MyError().name].join();",
    )
    .await;
    assert!(
        run.text
            .ends_with("Output:\n\nfunction,function,function,false,,MyError"),
        "{}",
        run.text
    );
}

#[tokio::test]
async fn a_promise_nothing_settles_fails_at_once() {
    let run = run("await new Promise(() => {});").await;
    assert!(run.text.contains(
        "Error: The script is waiting on a promise that can never settle: no tool call is pending, and timers do not exist here."
    ), "{}", run.text);
    assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
}

#[tokio::test]
async fn recursion_and_allocation_bombs_fail_within_bounds() {
    let run = run("function f() { return f() + 1; }\nreturn f();").await;
    assert!(
        run.text.contains("Script error:\nRangeError"),
        "{}",
        run.text
    );
    let run = run_allocation_bomb().await;
    assert!(run.is_error, "{}", run.text);
    assert!(run.elapsed < Duration::from_secs(60), "{:?}", run.elapsed);
}

async fn run_allocation_bomb() -> Run {
    run("const chunks = [];\nwhile (true) chunks.push(\"x\".repeat(1 << 20) + chunks.length);")
        .await
}
