#!/usr/bin/env bash
# The rustc command line cargo runs for a crate's own `cargo check` (MODE=build: `cargo
# build`), with incremental compilation when INC=1, its output sent to /tmp/irs: what
# irs.sh and bench.sh run directly, so only the crate's own compilation is measured (not
# cargo's fingerprint checks of the dependencies, which pi-runtime has many more of than
# rmcp). Run from the crate's workspace. Usage: rustc-cmd.sh crate
set -euo pipefail
c=$1
touch "$c/src/lib.rs"
cmd=$(CARGO_INCREMENTAL=${INC:-0} cargo "${MODE:-check}" -v -p "$c" 2>&1 | grep "Running \`.*--crate-name ${c//-/_} " | tail -1 | sed 's/^ *Running `//; s/`$//')
if [[ -z "$cmd" ]]; then echo "$c: cargo did not run rustc" >&2; exit 1; fi
mkdir -p /tmp/irs
cmd=${cmd//--error-format=json --json=diagnostic-rendered-ansi,artifacts,future-incompat/}
echo "$cmd" | sed 's|--out-dir [^ ]*|--out-dir /tmp/irs|'
