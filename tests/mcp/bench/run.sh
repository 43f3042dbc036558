#!/usr/bin/env bash
# Our MCP server, the official TypeScript SDK's and the official Python SDK's, side by side on
# this machine: one trivial tool (`countdown` with 0 seconds), loaded with `tools/call` by wrk
# (Debian's package) from a second process over loopback. `session`: one client per
# connection, each with its own session of the 2025-06-18 revision (a session's requests are
# answered in turn by rmcp, as a client sends them), then the resident memory that 1,000
# idle sessions add; `stateless`:
# requests of the 2026-07-28 revision, which has no sessions (the TypeScript SDK 1.32.2 does
# not speak it).
#
# usage: tests/mcp/bench/run.sh   (from the workspace root, after .ci/run has installed the
#        SDKs under target/mcp-interop; needs wrk and curl)
set -euo pipefail
cd "$(dirname "$0")/../../.."
interop=target/mcp-interop
bench=tests/mcp/bench
duration=${DURATION:-10s}
connections=${CONNECTIONS:-32}

cargo build --release --example mcp_server -p pi-examples >/dev/null 2>&1
ours=target/release/examples/mcp_server

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

initialize='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}'
initialized='{"jsonrpc":"2.0","method":"notifications/initialized"}'

# A session at $1; prints its id.
open_session() {
    local id
    id=$(curl -s -D - -o /dev/null -X POST "$1" -H 'content-type: application/json' \
        -H 'accept: application/json, text/event-stream' --data "$initialize" |
        awk 'tolower($1) == "mcp-session-id:" {print $2}' | tr -d '\r')
    curl -s -o /dev/null -X POST "$1" -H 'content-type: application/json' \
        -H 'accept: application/json, text/event-stream' -H "mcp-session-id: $id" \
        -H 'mcp-protocol-version: 2025-06-18' --data "$initialized"
    echo "$id"
}

measure() {
    local name=$1 port=$2 mode=$3
    shift 3
    "$@" >/dev/null 2>&1 &
    local pid=$!
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && break
        sleep 0.1
    done
    local url="http://127.0.0.1:$port/mcp"
    if [ "$mode" = stateless ]; then
        local answer out
        answer=$(curl -s -X POST "$url" -H 'content-type: application/json' \
            -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
            -H 'mcp-method: tools/call' -H 'mcp-name: countdown' \
            --data '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"countdown","arguments":{"seconds":0},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}')
        case "$answer" in
            *"counted down from 0 s"*) ;;
            *) echo "$name: unexpected answer: $answer" >&2; kill "$pid"; return 1 ;;
        esac
        out=$(wrk -t2 -c"$connections" -d"$duration" --latency -s "$bench/call_stateless.lua" "$url")
        report "$name" stateless "$out" "-"
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        return
    fi
    local session sessions=""
    for _ in $(seq "$connections"); do
        session=$(open_session "$url")
        sessions="$sessions${sessions:+,}$session"
    done
    local answer
    answer=$(curl -s -X POST "$url" -H 'content-type: application/json' \
        -H 'accept: application/json, text/event-stream' -H "mcp-session-id: $session" \
        -H 'mcp-protocol-version: 2025-06-18' \
        --data '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"countdown","arguments":{"seconds":0}}}')
    case "$answer" in
        *"counted down from 0 s"*) ;;
        *) echo "$name: unexpected answer: $answer" >&2; kill "$pid"; return 1 ;;
    esac
    local out
    out=$(SESSIONS=$sessions wrk -t"$connections" -c"$connections" -d"$duration" --latency -s "$bench/call.lua" "$url")
    local before after
    before=$(rss_kb "$pid")
    for _ in $(seq 1000); do open_session "$url" >/dev/null; done
    after=$(rss_kb "$pid")
    report "$name" session "$out" "$((after - before)) KB"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
}

# One line of the table from wrk's output.
report() {
    local rps p50 p99 errors
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$3")
    p50=$(awk '$1 == "50%" {print $2}' <<<"$3")
    p99=$(awk '$1 == "99%" {print $2}' <<<"$3")
    errors=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$3" | tr '\n' ' ')
    printf '%-22s %-9s %10s req/s  p50 %8s  p99 %8s  +RSS per 1,000 idle sessions: %s %s\n' \
        "$1" "$2" "$rps" "$p50" "$p99" "$4" "${errors:+($errors)}"
}

echo "tools/call of a trivial tool for $duration over $connections connections: one session each (wrk -t$connections), or none (-t2); then 1,000 idle sessions"
measure "pi-runtime (Rust)" 18931 session "$ours" --http 127.0.0.1:18931 --max-sessions 2000 --max-calls 256
measure "pi-runtime (Rust)" 18931 stateless "$ours" --http 127.0.0.1:18931 --max-calls 256
measure "TypeScript SDK 1.32.2" 18932 session node "$bench/ts_server.mjs" "$PWD/$interop/node_modules" 18932
measure "Python SDK 2.3.0" 18933 session "$interop/venv/bin/python" "$bench/py_server.py" 18933
measure "Python SDK 2.3.0" 18933 stateless "$interop/venv/bin/python" "$bench/py_server.py" 18933
