#!/usr/bin/env bash
# Instructions (valgrind cachegrind "I refs") rustc executes for each crate's own `cargo check`
# (MODE=build: `cargo build`, the debug profile), dependencies already built: deterministic,
# unlike times on a shared machine. INC=1: with incremental compilation, after a warm-up run
# with the same flags (what `touch src/lib.rs && cargo check` costs); INC=0 (the default):
# without it. Usage: irs.sh [crate...], a crate being a directory of the compile-cost
# workspace (`pi40`) or of another one (`../compile-cost-before/pi40`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "${COMPILE_COST_DIR:-$here/../../target/compile-cost}"
read -r -a crates <<< "${*:-pi40 rmcp40}"
for spec in "${crates[@]}"; do
  (
    cd "$(dirname "$spec")"
    cmd=$("$here/rustc-cmd.sh" "$(basename "$spec")")
    if [[ "${INC:-0}" == 1 ]]; then eval "$cmd" >/dev/null 2>&1; fi   # warm the cache with these flags
    ir=$(eval "valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null $cmd" 2>&1 | awk '/I *refs:/ {gsub(",","",$NF); print $NF}')
    printf '%s %s (incremental %s): %s M instructions\n' "$spec" "${MODE:-check}" "${INC:-0}" "$((ir / 1000000))"
  )
done
