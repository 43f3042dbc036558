#!/usr/bin/env bash
# Best of N runs (alternating) of the crate's own `cargo check` / `cargo build`, deps already
# built: touch src/lib.rs, time cargo. Usage: bench.sh check|build [N] [crates...]
set -euo pipefail
cd "${COMPILE_COST_DIR:-$(dirname "$0")/../../target/compile-cost}"
mode=${1:-check}; n=${2:-5}; shift 2 || true
crates=("${@:-pi40 rmcp40}")
read -r -a crates <<< "${crates[*]}"
for c in "${crates[@]}"; do cargo "$mode" -q -p "$c" 2>/dev/null; done   # warm
declare -A best
for i in $(seq "$n"); do
  for c in "${crates[@]}"; do
    touch "$c/src/lib.rs"
    s=$(date +%s.%N); cargo "$mode" -q -p "$c" 2>/dev/null; e=$(date +%s.%N)
    t=$(echo "$e - $s" | bc)
    if [[ -z "${best[$c]:-}" ]] || (( $(echo "$t < ${best[$c]}" | bc) )); then best[$c]=$t; fi
  done
done
for c in "${crates[@]}"; do printf '%s %s best of %d: %.2f s\n' "$c" "$mode" "$n" "${best[$c]}"; done
if [[ -n "${best[pi40]:-}" && -n "${best[rmcp40]:-}" ]]; then
  printf 'ratio pi40/rmcp40: %.2fx\n' "$(echo "${best[pi40]} / ${best[rmcp40]}" | bc -l)"
fi
if [[ -n "${best[pi40-before]:-}" && -n "${best[rmcp40]:-}" ]]; then
  printf 'ratio pi40-before/rmcp40: %.2fx\n' "$(echo "${best[pi40-before]} / ${best[rmcp40]}" | bc -l)"
fi
