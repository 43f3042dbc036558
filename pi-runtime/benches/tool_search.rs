//! `tool_search` at scale: building the index over 1,000 and 10,000 deferred tools (once per
//! change of the registered tools), and one call (a query, the ranking, the result text)
//! against it. Tools are named `<service>__<action>_<n>` with descriptions and schemas drawn
//! from a fixed vocabulary, so both sizes have realistic term statistics.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pi_runtime::tool::Exposure;
use pi_runtime::tool_search::ToolSearch;
use serde_json::{Value, json};

const WORDS: [&str; 48] = [
    "issue",
    "repository",
    "message",
    "channel",
    "calendar",
    "event",
    "file",
    "folder",
    "invoice",
    "customer",
    "payment",
    "ticket",
    "incident",
    "alert",
    "metric",
    "dashboard",
    "deployment",
    "cluster",
    "database",
    "table",
    "query",
    "report",
    "forecast",
    "weather",
    "city",
    "user",
    "team",
    "project",
    "task",
    "comment",
    "label",
    "release",
    "branch",
    "commit",
    "review",
    "document",
    "page",
    "image",
    "video",
    "playlist",
    "order",
    "product",
    "shipment",
    "contact",
    "lead",
    "campaign",
    "email",
    "translation",
];
const VERBS: [&str; 8] = [
    "create", "list", "get", "update", "delete", "search", "export", "share",
];

/// A small deterministic generator (no dependency, same tools on every run).
struct Words(u64);

impl Words {
    fn next(&mut self) -> &'static str {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        WORDS[(self.0 >> 33) as usize % WORDS.len()]
    }
}

fn tools(count: usize) -> Vec<(String, String, Value)> {
    let mut words = Words(7);
    (0..count)
        .map(|n| {
            let verb = VERBS[n % VERBS.len()];
            let object = words.next();
            let name = format!("mcp__svc{}__{verb}_{object}_{n}", n % 97);
            let description = format!(
                "{verb} a {object} in the {} {} service, with its {} and {}",
                words.next(),
                words.next(),
                words.next(),
                words.next()
            );
            let parameters = json!({"type": "object", "properties": {
                object: {"type": "string", "description": format!("The {object} id")},
                words.next(): {"type": "string", "description": format!("The {} to use", words.next())},
            }});
            (name, description, parameters)
        })
        .collect()
}

fn index(tools: &[(String, String, Value)]) -> ToolSearch {
    ToolSearch::new(tools.iter().map(|(name, description, parameters)| {
        (
            name.as_str(),
            description.as_str(),
            parameters,
            Exposure::Deferred,
            None,
        )
    }))
}

fn bench(c: &mut Criterion) {
    let active: [&str; 1] = ["tool_search"];
    let queries = [
        json!({"query": "create an issue in the repository"}),
        json!({"query": "weather forecast for a city", "limit": 3}),
        json!({"query": "export invoice report"}),
    ];
    for count in [1_000, 10_000] {
        let tools = tools(count);
        let mut group = c.benchmark_group("tool_search");
        group.bench_with_input(BenchmarkId::new("index", count), &tools, |b, tools| {
            b.iter(|| index(black_box(tools)))
        });
        let search = index(&tools);
        for query in &queries {
            assert!(search.call(query, &active).is_ok());
        }
        group.bench_with_input(BenchmarkId::new("call", count), &search, |b, search| {
            b.iter(|| {
                for query in &queries {
                    black_box(search.call(black_box(query), &active).ok());
                }
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
