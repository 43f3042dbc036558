//! The `bench` op: time another request's operation in this process (PROTOCOL.md `bench`,
//! pi-ref D15). Parsing the request is not timed; the inner answers are never serialized.

use std::time::Instant;

use crate::protocol::Runtime;
use serde_json::{Map, Value, json};

use crate::protocol::{self, Answer, Prepared};

pub(crate) fn prepare(request: &Map<String, Value>, runtime: &Runtime) -> Result<Prepared, String> {
    let inner = match request.get("request") {
        Some(Value::Object(inner)) => inner,
        _ => return Err("bad request: `request` must be an object".into()),
    };
    if inner.get("op").and_then(Value::as_str) == Some("bench") {
        return Err("bench of a bench".into());
    }
    let iterations = request
        .get("iterations")
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
        .ok_or("bad request: `iterations` must be a positive integer")?;
    let warmup = request.get("warmup").and_then(Value::as_u64).unwrap_or(0);
    let mut run = protocol::prepare(inner, runtime)?;
    Ok(Box::new(move || {
        for _ in 0..warmup {
            if let Answer::Unsupported(text) = run() {
                return Answer::Unsupported(text);
            }
        }
        let start = Instant::now();
        for _ in 0..iterations {
            let answer = run();
            // Looked at where it lies, not moved: moving a large answer would be timed too.
            if let Answer::Unsupported(text) = std::hint::black_box(&answer) {
                return Answer::Unsupported(text.clone());
            }
        }
        let elapsed = start.elapsed().as_nanos() as f64;
        Answer::Ok(json!({"nsPerIteration": elapsed / iterations as f64, "iterations": iterations}))
    }))
}
