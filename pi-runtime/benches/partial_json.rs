//! Streaming an `edit` call's arguments through the incremental parser: a `newText` of
//! 1 KiB to 1 MiB of code-like text, cut into deltas of 1 to 8 bytes. Linear work shows as a
//! flat time per byte across the sizes. It runs what providers run: one parser updating the
//! call's arguments in place after every delta.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pi_runtime::json::PartialJsonParser;
use serde_json::{Map, Value};

const SIZES: [(usize, &str); 4] = [
    (1 << 10, "1KiB"),
    (10 << 10, "10KiB"),
    (100 << 10, "100KiB"),
    (1 << 20, "1MiB"),
];

/// A small xorshift generator, so that every run sees the same deltas.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The JSON-escaped text of about `size` bytes of Rust-looking source.
fn code(size: usize) -> String {
    const LINES: [&str; 6] = [
        "fn handle(request: &Request) -> Result<Response, Error> {\\n",
        "    let body = request.body().map_err(|e| Error::new(\\\"body\\\", e))?;\\n",
        "\\tif body.len() > LIMIT { return Err(Error::TooLarge); }\\n",
        "    // naïve check: \\u00e9t\\u00e9 \\ud83d\\ude00 \\\\ path\\\\to\\\\file\\n",
        "    Ok(Response::json(&body))\\n",
        "}\\n\\n",
    ];
    let mut text = String::with_capacity(size + 128);
    for line in LINES.iter().cycle() {
        if text.len() >= size {
            break;
        }
        text.push_str(line);
    }
    text
}

/// The arguments text cut into deltas of 1 to 8 bytes (on character boundaries).
fn deltas(new_text_size: usize) -> Vec<String> {
    let text = format!(
        r#"{{"path":"src/main.rs","edits":[{{"oldText":"fn handle(request: &Request)","newText":"{}"}}]}}"#,
        code(new_text_size)
    );
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut deltas = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + 1 + (rng.next() % 8) as usize).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        deltas.push(text[start..end].to_owned());
        start = end;
    }
    deltas
}

fn stream(deltas: &[String]) -> Value {
    let mut parser = PartialJsonParser::new();
    let mut arguments = Value::Object(Map::new());
    for delta in deltas {
        parser.push(delta, &mut arguments);
    }
    arguments
}

fn edit_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("partial_json/edit_call");
    group.measurement_time(Duration::from_secs(4));
    for (size, name) in SIZES {
        let deltas = deltas(size);
        let bytes: usize = deltas.iter().map(String::len).sum();
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &deltas, |b, deltas| {
            b.iter(|| stream(deltas))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = edit_call
}
criterion_main!(benches);
