//! An agent calling tools on a model that runs on this machine: SmolLM2-135M-Instruct behind
//! llama.cpp's `llama-server` (README, "A local model", has the commands that start it).
//!
//! ```sh
//! cargo run --example local_model -- --base-url http://127.0.0.1:8080/v1 "What is 12 plus 30?"
//! ```
//!
//! Three `#[tool]` functions; the first request of each prompt requires a call (SmolLM2
//! answers in prose otherwise), the one after the result asks for text. Each step is
//! printed: the call, the result, the answer, and the speed the server reports. The exit
//! status is non-zero when a run does not complete.

use std::process::ExitCode;

use clap::Parser;
use pi_runtime::agent::{Agent, RunEnd};
use pi_runtime::provider::http::{HttpModel, RetryPolicy};
use pi_runtime::provider::presets;
use pi_runtime::{ContentBlock, Message, ToolChoice};

#[path = "shared/local_model_tools.rs"]
mod local_model_tools;
use local_model_tools::{Add, Weather, WordCount};

#[derive(Parser)]
#[command(about = "An agent with three tools on a local llama-server")]
struct Args {
    /// The server's OpenAI-compatible API.
    #[arg(long, default_value = "http://127.0.0.1:8080/v1")]
    base_url: String,
    /// The context window the server runs with (`-c`).
    #[arg(long, default_value_t = 8192)]
    context_window: u32,
    /// What to ask; one run per prompt.
    #[arg(default_values_t = [
        "What is 12 plus 30?".to_owned(),
        "What is the weather in Paris?".to_owned(),
        "How many words are in: the cat sat on the mat".to_owned(),
    ])]
    prompts: Vec<String>,
}

/// The model at the server. A local server needs no key; the context window must be the
/// server's (the agent keeps room for the answer within it); llama.cpp reads a named
/// `tool_choice` as `auto`, so a named choice is sent as `required` with that tool alone.
fn model(args: &Args) -> HttpModel {
    let mut preset = presets::openai_completions("smollm2")
        .base_url(&args.base_url)
        .no_api_key()
        .retry(RetryPolicy::none());
    preset.model.context_window = args.context_window;
    preset.model.max_tokens = 256;
    preset.model.compat.supports_named_tool_choice = Some(false);
    HttpModel::new(preset.model, preset.options)
}

fn agent(args: &Args) -> Result<Agent, pi_runtime::agent::BuildError> {
    Agent::builder()
        .model(model(args))
        .system_prompt("You are a helpful assistant.")
        // The server's template lists the tools itself.
        .without_tool_section()
        .tools((Add, Weather, WordCount))
        .parallel_tool_calls(false)
        .max_turns(4)
        .prepare_request(|mut plan| async move {
            // A call when answering the user, text after a result.
            let answering_user = matches!(plan.context.messages.last(), Some(Message::User(_)));
            plan.tool_choice = Some(if answering_user {
                ToolChoice::Required
            } else {
                ToolChoice::None
            });
            plan
        })
        .build()
}

fn print_run(messages: &[Message]) {
    for message in messages {
        match message {
            Message::Assistant(reply) => {
                for block in &reply.content {
                    match block {
                        ContentBlock::ToolCall(call) => {
                            println!("call {} {}", call.name, call.arguments);
                        }
                        ContentBlock::Text(text) if !text.text.trim().is_empty() => {
                            println!("answer: {}", text.text.trim());
                        }
                        _ => {}
                    }
                }
                let speed = reply
                    .timings
                    .and_then(|t| Some((t.predicted_tokens?, t.predicted_per_second?)));
                if let Some((tokens, per_second)) = speed {
                    println!(
                        "  ({tokens} tokens at {per_second:.1} tokens/s, {})",
                        reply.raw_stop_reason.as_deref().unwrap_or("no stop reason")
                    );
                }
            }
            Message::ToolResult(result) => println!("result {}", result.text_content()),
            _ => {}
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut failed = false;
    for prompt in &args.prompts {
        println!("> {prompt}");
        let agent = match agent(&args) {
            Ok(agent) => agent,
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::FAILURE;
            }
        };
        match agent.prompt(prompt.as_str()).await {
            Ok(run) => {
                print_run(&run.messages);
                if run.end != RunEnd::Completed {
                    eprintln!("the run ended with {:?}", run.end);
                    failed = true;
                }
            }
            Err(error) => {
                eprintln!("error: {error}");
                failed = true;
            }
        }
        println!();
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
