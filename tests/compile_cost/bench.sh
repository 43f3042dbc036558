#!/usr/bin/env bash
# Best of N wall times (the crates alternating) of each crate's own compilation, dependencies
# already built: the rustc command cargo runs for `cargo check` (MODE=build: `cargo build`),
# run directly, with a warm incremental cache (INC=0: without one). CARGO=1 times the whole
# `touch src/lib.rs && cargo check` instead, cargo's checks of the dependencies included.
# Usage: bench.sh [N] [crate...], a crate being a directory of the compile-cost workspace
# (`pi40`) or of another one (`../compile-cost-before/pi40`). The last crate is the ratios'
# base.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "${COMPILE_COST_DIR:-$here/../../target/compile-cost}"
n=${1:-5}; shift || true
read -r -a crates <<< "${*:-pi40 rmcp40}"
export INC=${INC:-1}
declare -A cmds
for c in "${crates[@]}"; do
  cmds[$c]=$(cd "$(dirname "$c")" && "$here/rustc-cmd.sh" "$(basename "$c")")
done
run() {
  (
    cd "$(dirname "$1")"
    if [[ "${CARGO:-0}" == 1 ]]; then
      touch "$(basename "$1")/src/lib.rs"
      CARGO_INCREMENTAL=$INC cargo "${MODE:-check}" -q -p "$(basename "$1")" 2>/dev/null
    else
      eval "${cmds[$1]}" >/dev/null 2>&1
    fi
  )
}
for c in "${crates[@]}"; do run "$c"; done   # warm
declare -A best
for _ in $(seq "$n"); do
  for c in "${crates[@]}"; do
    s=$(date +%s.%N); run "$c"; e=$(date +%s.%N)
    t=$(echo "$e - $s" | bc)
    if [[ -z "${best[$c]:-}" ]] || (( $(echo "$t < ${best[$c]}" | bc) )); then best[$c]=$t; fi
  done
done
last=${crates[-1]}
for c in "${crates[@]}"; do
  printf '%s %s (incremental %s%s) best of %d: %.2f s (%.2fx %s)\n' "$c" "${MODE:-check}" "$INC" \
    "$([[ "${CARGO:-0}" == 1 ]] && echo ', via cargo')" "$n" "${best[$c]}" \
    "$(echo "${best[$c]} / ${best[$last]}" | bc -l)" "$last"
done
