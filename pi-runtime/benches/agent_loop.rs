//! Loop overhead per tool call: one prompt whose first response is a batch of 1, 10 or 100
//! calls of a no-op tool, answered by the faux model; throughput is reported per call.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pi_runtime::agent::Agent;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{ExecutionMode, FnTool, ToolError, ToolResult};
use serde_json::json;

fn noop() -> FnTool {
    FnTool::new(
        "noop",
        "Does nothing.",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        |_, _| async { Ok::<_, ToolError>(ToolResult::text("ok")) },
    )
}

fn batch(calls: usize) -> FauxResponse {
    (0..calls).fold(FauxResponse::new(Vec::new()), |response, n| {
        response.and_tool_call(format!("c{n}"), "noop", json!({"n": n}))
    })
}

fn agent_loop(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut group = c.benchmark_group("agent_loop");
    for mode in [ExecutionMode::Parallel, ExecutionMode::Sequential] {
        for calls in [1, 10, 100] {
            group.throughput(Throughput::Elements(calls as u64));
            let id = BenchmarkId::new(format!("{mode:?}").to_lowercase(), calls);
            group.bench_function(id, |b| {
                b.iter(|| {
                    runtime.block_on(async {
                        let model = FauxModel::new().respond(batch(calls));
                        let agent = Agent::builder()
                            .model(model)
                            .tools(noop())
                            .tool_execution(mode)
                            .build()
                            .expect("an agent");
                        black_box(agent.prompt("go").await.expect("a run"))
                    })
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, agent_loop);
criterion_main!(benches);
