//! The `tool_changes` op: what the agent loop declares before a request when the tools it
//! can execute differ from what the transcript declares (`transcript::declare_tool_changes`).

use pi_runtime::message::now_ms;
use pi_runtime::provider::{Api, Model};
use pi_runtime::transcript::declare_tool_changes;
use pi_runtime::{Message, Tool};
use serde_json::{Map, Value};

use crate::ops::build_request::{parse_message, parse_tool};
use crate::protocol::{Answer, Prepared};

pub(crate) fn prepare(request: &Map<String, Value>) -> Result<Prepared, String> {
    // Only system messages count here; assistant messages just need their fields (D5).
    let model = Model::new(Api::OpenAiCompletions, "", "", "");
    let list = |key: &str| match request.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(_) => Err(format!("bad request: `{key}` must be an array")),
    };
    let (committed, pending) = (list("messages")?, list("pending")?);
    // Timestamps default to the position + 1, counting `messages` first, then `pending`.
    let committed: Vec<Message> = committed
        .iter()
        .enumerate()
        .map(|(index, message)| parse_message(index, message, &model))
        .collect::<Result<_, _>>()?;
    let pending: Vec<Message> = pending
        .iter()
        .enumerate()
        .map(|(index, message)| parse_message(committed.len() + index, message, &model))
        .collect::<Result<_, _>>()?;
    let tools: Vec<Tool> = list("tools")?
        .iter()
        .map(parse_tool)
        .collect::<Result<_, _>>()?;
    for (index, tool) in tools.iter().enumerate() {
        if tools[..index]
            .iter()
            .any(|earlier| earlier.name == tool.name)
        {
            return Err(format!("tools name {:?} twice", tool.name));
        }
    }
    Ok(Box::new(move || {
        let started = now_ms();
        let declared = declare_tool_changes(&committed, pending.clone(), &tools);
        let answer = declared
            .iter()
            .map(|message| with_clock_shown(message, started))
            .collect::<Result<Vec<_>, _>>();
        match answer {
            Ok(messages) => Answer::Ok(Value::Array(messages)),
            Err(error) => Answer::Err(format!("runner: {error}")),
        }
    }))
}

/// The message as JSON, a timestamp read from the clock during the call written `<now>`.
fn with_clock_shown(message: &Message, started: u64) -> Result<Value, serde_json::Error> {
    let mut json = serde_json::to_value(message)?;
    if json["timestamp"]
        .as_u64()
        .is_some_and(|stamp| stamp >= started)
    {
        json["timestamp"] = Value::from("<now>");
    }
    Ok(json)
}
