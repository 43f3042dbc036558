//! The `partial_json` and `partial_json_stream` ops: the partial arguments of a text, whole
//! or fed in chunks (PROTOCOL.md; pi-ref D3).

use pi_runtime::json::{PartialJsonParser, parse_partial};
use serde_json::{Map, Value};

use crate::protocol::{Answer, Prepared, str_field};
use crate::seed::parse_streaming_json;

/// Which parser a request names.
#[derive(Debug, Clone, Copy)]
enum Parser {
    /// The one providers use (SPEC §6.2).
    Incremental,
    /// The seed's re-parsing helper (SPEC §6.3).
    Seed,
}

fn parser(request: &Map<String, Value>) -> Result<Parser, String> {
    match request.get("parser") {
        None => Ok(Parser::Incremental),
        Some(Value::String(name)) if name == "incremental" => Ok(Parser::Incremental),
        Some(Value::String(name)) if name == "parseStreamingJson" => Ok(Parser::Seed),
        Some(other) => Err(format!("bad request: unknown `parser` {other}")),
    }
}

pub(crate) fn prepare(request: &Map<String, Value>) -> Result<Prepared, String> {
    let parser = parser(request)?;
    let text = str_field(request, "text")?.to_owned();
    Ok(Box::new(move || {
        Answer::Ok(match parser {
            Parser::Incremental => parse_partial(&text),
            Parser::Seed => parse_streaming_json(&text),
        })
    }))
}

pub(crate) fn prepare_stream(request: &Map<String, Value>) -> Result<Prepared, String> {
    let parser = parser(request)?;
    let chunks = match request.get("chunks") {
        Some(Value::Array(chunks)) => chunks
            .iter()
            .map(|chunk| chunk.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>(),
        _ => None,
    }
    .ok_or("bad request: `chunks` must be an array of strings")?;
    Ok(Box::new(move || match parser {
        Parser::Incremental => Answer::Ok(incremental(&chunks)),
        Parser::Seed => {
            let mut text = String::new();
            Answer::Ok(Value::Array(
                chunks
                    .iter()
                    .map(|chunk| {
                        text.push_str(chunk);
                        parse_streaming_json(&text)
                    })
                    .collect(),
            ))
        }
    }))
}

/// What providers run: one value updated in place by every chunk. Like pi, which answers with
/// a snapshot after every chunk, the answer holds a copy of the value after each chunk; after
/// the last one it holds the value itself.
fn incremental(chunks: &[String]) -> Value {
    let Some((last, before)) = chunks.split_last() else {
        return Value::Array(Vec::new());
    };
    let mut parser = PartialJsonParser::new();
    let mut arguments = Value::Object(Map::new());
    let mut versions = Vec::with_capacity(chunks.len());
    for chunk in before {
        parser.push(chunk, &mut arguments);
        versions.push(arguments.clone());
    }
    parser.push(last, &mut arguments);
    versions.push(arguments);
    Value::Array(versions)
}
