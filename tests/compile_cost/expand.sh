#!/usr/bin/env bash
# Lines of each crate's macro expansion (rustfmt'd, as `cargo expand` prints it).
set -euo pipefail
cd "${COMPILE_COST_DIR:-$(dirname "$0")/../../target/compile-cost}"
for c in ${@:-pi40 rmcp40}; do
  touch "$c/src/lib.rs"
  RUSTC_BOOTSTRAP=1 cargo rustc -q -p "$c" --profile=check -- -Zunpretty=expanded > "/tmp/expanded-$c.rs" 2>/dev/null
  rustfmt --edition 2024 "/tmp/expanded-$c.rs" 2>/dev/null || true
  printf '%s expanded: %s lines (%s bytes)\n' "$c" "$(wc -l < /tmp/expanded-$c.rs)" "$(wc -c < /tmp/expanded-$c.rs)"
done
