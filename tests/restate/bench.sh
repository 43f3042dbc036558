#!/usr/bin/env bash
# What the journal costs: examples/durable_agent.rs runs the same script (`steps 20`: twenty
# tool calls one after the other, 21 model responses, no waiting in the tools or the model)
# in memory and as a Restate workflow on a restate-server on loopback, on this machine.
#
# - in memory: the time per run, runs one after the other in one process;
# - durable: the time per run, one after the other (each `POST .../run` waits for its answer);
#   the journal's cost per step is the difference over the run's 42 journal steps (the start,
#   21 responses, 20 calls);
# - durable, many at once: runs per second with 16 runs in flight.
#
# usage: tests/restate/bench.sh   (from the workspace root, after .ci/run has installed the
#        server under target/restate; needs curl)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${RUNS:-200}
steps=20
server=target/restate/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server

cargo build --release --example durable_agent -p pi-examples >/dev/null 2>&1
agent=target/release/examples/durable_agent
dir=$(mktemp -d)
cleanup() {
    kill "${service:-}" "${restate:-}" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
admin=$(port) ingress=$(port) node=$(port) endpoint=$(port)

"$agent" --effects /dev/null --step-ms 0 --chunk-delay-ms 0 --in-memory "$runs" --prompt "steps $steps"

RESTATE_DISABLE_TELEMETRY=true RESTATE_ADMIN__BIND_ADDRESS=127.0.0.1:$admin \
    RESTATE_INGRESS__BIND_ADDRESS=127.0.0.1:$ingress \
    "$server" --bind-ip 127.0.0.1 --bind-port "$node" --base-dir "$dir" --no-logo \
    --listen-mode tcp >"$dir/server.log" 2>&1 &
restate=$!
"$agent" --bind "127.0.0.1:$endpoint" --effects /dev/null --step-ms 0 --chunk-delay-ms 0 \
    >/dev/null 2>&1 &
service=$!
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$ingress/restate/health" >/dev/null && break
    sleep 0.1
done
curl -sf "http://127.0.0.1:$admin/deployments" -H 'content-type: application/json' \
    -d "{\"uri\": \"http://127.0.0.1:$endpoint\"}" >/dev/null

run() {
    curl -sf -X POST "http://127.0.0.1:$ingress/DurableAgent/$1/run" \
        -H 'content-type: application/json' -d "\"steps $steps\"" >/dev/null
}
export -f run
export ingress steps

# Warm up (connections, the first invocations), then measure.
for i in $(seq 10); do run "warm-$i"; done
start=$(date +%s%N)
for i in $(seq "$runs"); do run "one-$i"; done
one=$((($(date +%s%N) - start) / runs / 1000))
echo "durable: $one µs per run of \"steps $steps\", one after the other"

start=$(date +%s%N)
seq "$runs" | xargs -P 16 -I{} bash -c 'run many-{}'
took=$((($(date +%s%N) - start) / 1000000))
echo "durable: $runs runs with 16 in flight in $took ms: $((runs * 1000 / took)) runs/s"
