#!/usr/bin/env bash
# Bounded fuzz run (CI): each target on top of the committed corpus, the regression inputs and
# counterexamples/, for a fixed number of new inputs with a fixed seed, capped in time. Any
# panic, timeout (an input running over 10 s) or out-of-memory fails the run; the input is left
# in fuzz/artifacts/<target>/. docs/guides/fuzzing.md has the long run.
set -euo pipefail
cd "$(dirname "$0")"
runs=${TRC_FUZZ_RUNS:-200000}
secs=${TRC_FUZZ_SECONDS:-90}
# cargo-fuzz's sanitizer flags are nightly-only; RUSTC_BOOTSTRAP lets the stable toolchain take them.
export RUSTC_BOOTSTRAP=1
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --version 0.13.2 --locked
# -O: optimised; -a: with debug assertions and overflow checks (a wrapped u32 is a finding).
cargo fuzz build -O -a
for t in parse replay; do
  new=$(mktemp -d)   # new inputs go here: the committed corpus is only read
  log=$(mktemp)
  echo "== fuzz $t: $runs inputs (seed 1, at most $secs s)"
  seeds=()   # libFuzzer stops at a seed directory that does not exist
  for d in "corpus/$t" "regressions/$t" ../counterexamples; do [ -d "$d" ] && seeds+=("$d"); done
  if ! cargo fuzz run -O -a "$t" "$new" "${seeds[@]}" -- \
      -seed=1 -runs="$runs" -max_total_time="$secs" -dict=pkt.dict -max_len=8192 -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    tail -60 "$log"
    echo "fuzz $t: FAILED (the input is in fuzz/artifacts/$t/)"
    exit 1
  fi
  grep -E '^#[0-9]+ +(INITED|DONE)|^Done|^stat::number_of_executed_units' "$log"
  rm -rf "$new" "$log"
done
