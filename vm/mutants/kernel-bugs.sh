#!/usr/bin/env bash
# The detection benchmark of docs/kernel-bugs.md: every mutant of vm/mutants/ (or those named)
# checked by trc from the kernel alone, by the regressions suite, by the public packetdrill suite,
# and compared with its model profile. `just kernel-bugs` runs it; the results go to OUT
# (default target/kernel-bugs), one directory per mutant, and OUT/table.md is the table.
#
#   vm/mutants/kernel-bugs.sh [--out DIR] [--only "a b c d"] [MUTANT...]   (a1..a4: one line of (a))
#
# Columns (the commands, per mutant P; MUT is P's image from `trc kernel build --patch`):
#   (a)  trc kernel check --patch vm/mutants/P.patch --suite coverage+random:20,7
#        trc kernel check --patch vm/mutants/P.patch --suite coverage --losses 2 --rtos 2
#        trc kernel check --patch vm/mutants/P.patch --suite bulk
#        trc kernel check --patch vm/mutants/P.patch --suite random:400,7
#   (b)  trc kernel check --patch vm/mutants/P.patch --suite regressions
#   (c)  trc kernel run --kernel MUT --packetdrill PD --packetdrill-tree TREE TREE/tcp/**.pkt
#        (all on the base once; on MUT the scripts that pass on the base; one that fails on MUT
#        is rerun on both)
#   (d)  trc diff --profile P[.toml] --kernel MUT --scenarios 20 --seed 11
# The base kernel's runs are kept in OUT/base-runs (--base-runs), so the base runs each scenario once.
# Needs root, qemu-system-x86, busybox-static and the kernel toolchain (as trc kernel check
# --patch); (c) needs gcc, make, bison and flex (packetdrill is built from ../shared/vendor).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
trc=${TRC:-$root/target/release/trc}
out=$root/target/kernel-bugs
cols="a b c d"
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --only) cols=$2; shift 2 ;;
    -*) echo "kernel-bugs: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
[ -x "$trc" ] || { echo "kernel-bugs: no trc binary at $trc (cargo build --release)" >&2; exit 2; }
if [ ${#names[@]} -eq 0 ]; then
  for p in "$here"/*.patch; do names+=("$(basename "$p" .patch)"); done
fi
mkdir -p "$out/base-runs"
cd "$root"
log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$out/log.txt" >&2; }
base=$("$trc" kernel build --print-path) || { log "base build failed"; exit 1; }

# (c)'s packetdrill and script tree: the vendored gtests with cubic selected by route (as
# ../shared/tools/gtests-compare runs them). trc's kernels have no packet sockets, so packetdrill is
# testkit's tun-capture build (testkit/patches/packetdrill-tun-capture.patch).
pd_setup() {
  shared=${TRC_SHARED:-$root/../shared}
  pd=$(cd "$root" && cargo run --release -q -p trc-testkit --bin packetdrill-path -- --tun-capture 2>> "$out/log.txt")
  [ -x "$pd" ] || { log "(c) skipped: packetdrill could not be built from $shared/vendor"; return 1; }
  tree=$out/gtests
  if [ ! -d "$tree/tcp" ]; then
    t=$(mktemp -d) && tar -xzf "$shared"/vendor/packetdrill-*.tar.gz -C "$t" || return 1
    mkdir -p "$tree" && cp -r "$t"/packetdrill/gtests/net/tcp "$t"/packetdrill/gtests/net/common "$tree"/ && rm -rf "$t"
    for d in "$tree"/common/defaults.sh "$tree"/tcp/common/defaults.sh; do
      printf '\nip route change 192.0.2.1 via 192.168.0.1 dev tun0 congctl cubic\n' >> "$d"
    done
  fi
  mapfile -t scripts < <(cd "$tree" && find tcp -name '*.pkt' | sort)
  return 0
}
pd_run() { # KERNEL JSON [SCRIPT...]
  local k=$1 j=$2; shift 2
  (cd "$tree" && "$trc" kernel run --kernel "$k" --packetdrill "$pd" --packetdrill-tree "$tree" --json "$j" "$@" > "${j%.json}.txt" 2>> "$out/log.txt")
}
pd_failed() { jq -r '.scripts[] | select(.rc != 0) | .name' "$1" | sort; }
pd_passed() { jq -r '.scripts[] | select(.rc == 0) | .name' "$1" | sort; }

case " $cols " in *" c "*) pd_setup && have_pd=1 || have_pd=0 ;; *) have_pd=0 ;; esac
if [ "$have_pd" = 1 ] && [ ! -f "$out/c-base.json" ]; then
  log "(c) base: ${#scripts[@]} scripts"
  pd_run "$base" "$out/c-base.json" "${scripts[@]}"
fi

for n in "${names[@]}"; do
  p=vm/mutants/$n.patch
  [ -f "$p" ] || { log "$n: no $p"; continue; }
  d=$out/$n; mkdir -p "$d"
  prof=$n; [ -f "vm/mutants/$n.toml" ] && prof=vm/mutants/$n.toml
  mut=$("$trc" kernel build --patch "$p" --print-path 2>> "$out/log.txt") || { log "$n: build failed"; continue; }
  for c in $cols; do
    t0=$(date +%s)
    case $c in
      a|a1|a2|a3|a4) log "$n ($c)"
         if [ "$c" = a ] || [ "$c" = a1 ]; then
           "$trc" kernel check --patch "$p" --suite coverage+random:20,7 --base-runs "$out/base-runs" --json --out "$d/a1" > "$d/a1.json" 2>> "$out/log.txt"; echo "$?" > "$d/a1.rc"
         fi
         if [ "$c" = a ] || [ "$c" = a2 ]; then
           "$trc" kernel check --patch "$p" --suite coverage --losses 2 --rtos 2 --base-runs "$out/base-runs" --json --out "$d/a2" > "$d/a2.json" 2>> "$out/log.txt"; echo "$?" > "$d/a2.rc"
         fi
         if [ "$c" = a ] || [ "$c" = a3 ]; then
           "$trc" kernel check --patch "$p" --suite bulk --base-runs "$out/base-runs" --json --out "$d/a3" > "$d/a3.json" 2>> "$out/log.txt"; echo "$?" > "$d/a3.rc"
         fi
         # random:400,7 holds random:20,7's walks (a scenario's seed does not depend on N)
         if [ "$c" = a ] || [ "$c" = a4 ]; then
           "$trc" kernel check --patch "$p" --suite random:400,7 --base-runs "$out/base-runs" --json --out "$d/a4" > "$d/a4.json" 2>> "$out/log.txt"; echo "$?" > "$d/a4.rc"
         fi ;;
      b) log "$n (b)"
         "$trc" kernel check --patch "$p" --suite regressions --base-runs "$out/base-runs" --json --out "$d/b" > "$d/b.json" 2>> "$out/log.txt"; echo "$?" > "$d/b.rc" ;;
      c) [ "$have_pd" = 1 ] || continue
         log "$n (c)"
         # only the scripts that pass on the base can detect the mutant
         mapfile -t okbase < <(pd_passed "$out/c-base.json")
         pd_run "$mut" "$d/c.json" "${okbase[@]}"
         mapfile -t cand < <(comm -12 <(pd_passed "$out/c-base.json") <(pd_failed "$d/c.json"))
         : > "$d/c-confirmed.txt"
         if [ ${#cand[@]} -gt 0 ]; then
           pd_run "$base" "$d/c-rerun-base.json" "${cand[@]}"
           pd_run "$mut" "$d/c-rerun.json" "${cand[@]}"
           comm -12 <(pd_passed "$d/c-rerun-base.json") <(pd_failed "$d/c-rerun.json") > "$d/c-confirmed.txt"
         fi ;;
      d) log "$n (d)"
         "$trc" diff --profile "$prof" --kernel "$mut" --scenarios 20 --seed 11 --json --out "$d/d" > "$d/d.json" 2>> "$out/log.txt"; echo "$?" > "$d/d.rc" ;;
    esac
    echo "$(( $(date +%s) - t0 ))" > "$d/$c.seconds"
  done
done
python3 "$here/kernel-bugs-table.py" "$out" > "$out/table.md" && log "table: $out/table.md"
