//! A provider stream parsed from bytes, end to end: SSE decoding, the wire API's stream
//! parser and the message writer, through the public `replay`. The bodies have the shape of
//! the user-path benchmark (`conformance/bench/generate.py`): one tool call whose arguments
//! (1, 10 or 100 KiB of code) arrive in 1–8 byte deltas, and one event of many megabytes.
//! Throughput is reported per byte of SSE body.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use pi_runtime::AssistantMessageEvent;
use pi_runtime::provider::http::{HttpModel, HttpOptions};
use pi_runtime::provider::{Api, Model};
use serde_json::json;

/// A small deterministic generator (the bodies must not change between runs).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// ASCII code of exactly `size` bytes, with quotes, backslashes and newlines.
fn code_text(size: usize, rng: &mut Lcg) -> String {
    let mut out = String::with_capacity(size + 80);
    while out.len() < size {
        let i = rng.next(1000);
        let line = match rng.next(4) {
            0 => format!("export function f{i}(x: number): number {{ return x * {i}; }}\n"),
            1 => format!("  const s{i} = \"line {i}\\n\" + `tab\\t{i}`;\n"),
            2 => format!("  if (a{i} && b{i}) {{ log(\"ok {i}\", {{ id: {i} }}); }}\n"),
            _ => format!("  // a comment about \"item {i}\" and C:\\\\path\\\\{i}\n"),
        };
        out.push_str(&line);
    }
    out.truncate(size);
    out
}

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    let chunk = json!({"id": "chatcmpl-b", "object": "chat.completion.chunk",
        "created": 1_700_000_000, "model": "bench-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

/// An OpenAI Chat Completions body: one call whose arguments arrive in 1–8 byte deltas.
fn openai_tool_call(kib: usize) -> String {
    let mut rng = Lcg(11);
    let arguments = json!({"path": "src/app.ts",
        "edits": [{"oldText": "x", "newText": code_text(kib * 1024, &mut rng)}]})
    .to_string();
    let mut body = chunk(json!({"role": "assistant", "content": null}), None);
    body.push_str(&chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_b1", "type": "function",
                "function": {"name": "edit", "arguments": ""}}]}),
        None,
    ));
    let mut rest = arguments.as_str();
    while !rest.is_empty() {
        let mut take = (1 + rng.next(8) as usize).min(rest.len());
        while !rest.is_char_boundary(take) {
            take += 1;
        }
        let (piece, tail) = rest.split_at(take);
        body.push_str(&chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            None,
        ));
        rest = tail;
    }
    body.push_str(&chunk(json!({}), Some("tool_calls")));
    body.push_str("data: [DONE]\n\n");
    body
}

/// One text event of `mib` MiB, then the finish.
fn one_big_event(mib: usize) -> String {
    let mut rng = Lcg(7);
    let text = code_text(mib << 20, &mut rng);
    let mut body = chunk(json!({"role": "assistant", "content": text}), None);
    body.push_str(&chunk(json!({}), Some("stop")));
    body.push_str("data: [DONE]\n\n");
    body
}

fn model() -> HttpModel {
    let model: Model = serde_json::from_value(json!({
        "id": "bench-model", "provider": "openai", "api": Api::OpenAiCompletions.as_str(),
        "baseUrl": "http://127.0.0.1:9",
    }))
    .expect("a model");
    let options = HttpOptions::default().with_max_event_bytes(256 << 20);
    HttpModel::new(model, options)
}

fn replay(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let model = model();
    let mut group = c.benchmark_group("provider_replay");
    let bodies = [1, 10, 100]
        .map(|kib| (format!("openai_tool_call_{kib}KiB"), openai_tool_call(kib)))
        .into_iter()
        .chain([("one_event_16MiB".to_owned(), one_big_event(16))]);
    for (name, body) in bodies {
        group.throughput(Throughput::Bytes(body.len() as u64));
        if body.len() > 1 << 20 {
            group.sample_size(10);
        }
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let events: Vec<AssistantMessageEvent> =
                    runtime.block_on(model.replay(body.as_str()).collect());
                assert!(matches!(
                    events.last(),
                    Some(AssistantMessageEvent::Done { .. })
                ));
                black_box(events)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
