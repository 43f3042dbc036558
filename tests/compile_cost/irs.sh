#!/usr/bin/env bash
# Instructions (valgrind cachegrind "I refs") rustc executes to check each crate, without
# incremental compilation (INC=1: with it, after a warm-up, as `touch` + `cargo check`):
# deterministic, unlike times on a shared machine.
set -euo pipefail
cd "${COMPILE_COST_DIR:-$(dirname "$0")/../../target/compile-cost}"
read -r -a crates <<< "${*:-pi40 rmcp40}"
for c in "${crates[@]}"; do
  touch "$c/src/lib.rs"
  cmd=$(CARGO_INCREMENTAL=${INC:-0} cargo check -v -p "$c" 2>&1 | grep "Running \`.*--crate-name ${c//-/_} " | tail -1 | sed 's/^ *Running `//; s/`$//')
  cmd=${cmd//--error-format=json --json=diagnostic-rendered-ansi,artifacts,future-incompat/}
  mkdir -p /tmp/irs
  cmd=$(echo "$cmd" | sed 's|--out-dir [^ ]*|--out-dir /tmp/irs|')
  if [[ "${INC:-0}" == 1 ]]; then eval "$cmd" >/dev/null 2>&1; fi   # warm the cache with these flags
  ir=$(eval "valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null $cmd" 2>&1 | awk '/I *refs:/ {gsub(",","",$NF); print $NF}')
  printf '%s: %s M instructions\n' "$c" "$((ir / 1000000))"
done
