#!/bin/sh
# F1's impact, measured: `trc-lab impact` on each kernel for each path, then the plots.
# Usage (from the repository root, trc and trc-lab built with
#   `cargo build --release -p trc -p trc-lab`):
#   sh docs/findings/F1-impact.sh OUT [KERNEL=LABEL ...]
# Default kernels: Debian's 7.2 cloud kernel (`trc kernel fetch debian:7.2-sid` first; it has
# AF_PACKET, so undo events are attributed) and the two trc-minimal builds of Debian's 7.2
# source, as it is and with vm/kconfig/f1-fix.patch (`trc kernel build`: cached after the first
# build, which takes minutes). RUNS and DURATION override 5 runs of 30 s.
# Every VM run holds the machine-wide lock /tmp/trc-kernel.lock (CPU-heavy).
set -eu
out=${1:?usage: F1-impact.sh OUT [KERNEL=LABEL ...]}
shift
runs=${RUNS:-5}
dur=${DURATION:-30}
trc=${TRC:-./target/release/trc}
lab=${TRC_LAB:-./target/release/trc-lab}
mkdir -p "$out"
if [ $# -eq 0 ]; then
  base=$("$trc" kernel build debian:sid --print-path)
  f1fix=$("$trc" kernel build debian:sid --patch vm/kconfig/f1-fix.patch --print-path)
  set -- debian:7.2-sid=debian-7.2 "$base"=base "$f1fix"=f1fix
fi
# The two paths: netem's reorder model, and delay jitter with a heavy tail (pareto).
for path in reorder jitter; do
  case $path in
    reorder) args="--rtt 40 --loss 1 --reorder 1" ;;
    jitter) args="--rtt 40 --loss 1 --reorder 0 --jitter 10 --jitter-dist pareto" ;;
  esac
  for kl in "$@"; do
    k=${kl%=*}
    l=${kl##*=}
    echo "== $path on $l ($k)"
    # shellcheck disable=SC2086
    flock /tmp/trc-kernel.lock "$lab" impact --kernel "$k" --label "$l" --runs "$runs" --duration "$dur" $args \
      --json "$out/$path-$l.json" | tee "$out/$path-$l.txt"
  done
done
/usr/bin/python3 docs/findings/F1-impact-plot.py "$out" "$out"/*.json
