#!/usr/bin/env bash
# Lines of each crate's macro expansion (rustfmt'd, as `cargo expand` prints it). Usage:
# expand.sh [crate...], a crate being a directory of the compile-cost workspace (`pi40`) or
# of another one (`../compile-cost-before/pi40`).
set -euo pipefail
cd "${COMPILE_COST_DIR:-$(dirname "$0")/../../target/compile-cost}"
for spec in ${@:-pi40 rmcp40}; do
  (
    cd "$(dirname "$spec")"
    c=$(basename "$spec")
    out="/tmp/expanded-$(echo "$spec" | tr '/.' '__').rs"
    touch "$c/src/lib.rs"
    RUSTC_BOOTSTRAP=1 cargo rustc -q -p "$c" --profile=check -- -Zunpretty=expanded > "$out" 2>/dev/null
    rustfmt --edition 2024 "$out" 2>/dev/null || true
    printf '%s expanded: %s lines (%s bytes)\n' "$spec" "$(wc -l < "$out")" "$(wc -c < "$out")"
  )
done
