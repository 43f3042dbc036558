//! The argument pipeline on the built-in `edit` tool's schema (SPEC §9.5) with three
//! replacements: valid arguments, and arguments with two errors (coercion, validation and
//! the error text). The schema is compiled once, outside the timed loop.
//!
//! `validate/deserialize/edit`: the last step of a `#[tool]` call, the validated arguments
//! deserialized into the tool's parameter struct (a clone of the arguments included, as the
//! dispatcher hands the tool its own copy).

use criterion::{Criterion, criterion_group, criterion_main};
use pi_runtime::args::{CompiledSchema, deserialize_arguments};
use pi_runtime::{tool, tool_args};
use serde_json::{Value, json};
use std::hint::black_box;

/// One targeted replacement.
#[tool_args]
struct Replacement {
    /// Exact text for one targeted replacement.
    #[serde(rename = "oldText")]
    old_text: String,
    /// Replacement text for this targeted edit.
    #[serde(rename = "newText")]
    new_text: String,
}

/// Edit a file.
#[tool]
async fn edit(
    /// Path to the file to edit (relative or absolute)
    path: String,
    /// One or more targeted replacements.
    edits: Vec<Replacement>,
    /// Keep a backup.
    backup: Option<bool>,
) -> String {
    let replaced: usize = edits
        .iter()
        .map(|edit| edit.new_text.len() - edit.old_text.len().min(edit.new_text.len()))
        .sum();
    format!("{path} {replaced} {backup:?}")
}

fn edit_schema() -> Value {
    json!({"type":"object","required":["path","edits"],"properties":{
        "path":{"type":"string","description":"Path to the file to edit (relative or absolute)"},
        "edits":{"type":"array","items":{"type":"object","required":["oldText","newText"],"properties":{
            "oldText":{"type":"string","description":"Exact text for one targeted replacement."},
            "newText":{"type":"string","description":"Replacement text for this targeted edit."}}},
            "description":"One or more targeted replacements."}}})
}

fn bench(c: &mut Criterion) {
    let schema = CompiledSchema::compile(&edit_schema()).expect("the edit schema compiles");
    let valid = json!({"path": "src/main.rs", "edits": [
        {"oldText": "fn main() {", "newText": "fn main() -> Result<()> {"},
        {"oldText": "let x = 1;", "newText": "let x = 2;"},
        {"oldText": "println!(\"{x}\");", "newText": "println!(\"x = {x}\");"}
    ]});
    let invalid = json!({"path": "src/main.rs", "edits": [
        {"oldText": "fn main() {", "newText": "fn main() -> Result<()> {"},
        {"oldText": "let x = 1;"},
        {"oldText": {"text": "println!"}, "newText": "x"}
    ]});
    assert!(schema.validate("edit", &valid).is_ok());
    assert!(schema.validate("edit", &invalid).is_err());

    let mut group = c.benchmark_group("validate/edit");
    group.bench_function("valid", |b| {
        b.iter(|| schema.validate(black_box("edit"), black_box(&valid)))
    });
    group.bench_function("two_errors", |b| {
        b.iter(|| schema.validate(black_box("edit"), black_box(&invalid)))
    });
    group.finish();

    assert!(deserialize_arguments::<EditParams>("edit", valid.clone()).is_ok());
    c.bench_function("validate/deserialize/edit", |b| {
        b.iter(|| deserialize_arguments::<EditParams>(black_box("edit"), valid.clone()))
    });
    // The generated tool type is what a program registers; the bench reads its parameters.
    black_box(Edit);
}

criterion_group!(benches, bench);
criterion_main!(benches);
