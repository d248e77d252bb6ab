#!/usr/bin/env bash
# Times two icbench binaries on the same run, alternating A, B, A, B, ... so that a noisy
# machine weighs on both alike, and checks that every pair wrote the same results.csv.
# Each run gets a compile/state cache of its own binary: `cold` empties it before every run
# (a first run on a fresh machine, crates built), `warm` fills it once and keeps it.
#
#   scripts/side-by-side.sh A_BIN B_BIN cold|warm ROUNDS [icbench arguments...]
#
# Prints one line per run (binary, round, wall s, user s, sys s, peak RSS MB of the largest
# process, minor page faults, scenarios, faults per scenario) and per binary the medians of
# wall time, of the system's share of the CPU and of faults per scenario (the figures issue
# 64 bounds). Example, the default run from the cache, five rounds:
#   scripts/side-by-side.sh /tmp/icbench-main target/release/icbench warm 5
set -euo pipefail

if [ $# -lt 4 ]; then
    echo "usage: side-by-side.sh A_BIN B_BIN cold|warm ROUNDS [icbench arguments...]" >&2
    exit 2
fi
a="$1" b="$2" mode="$3" rounds="$4"
shift 4
case "$mode" in cold | warm) ;; *)
    echo "side-by-side: the mode is cold or warm, not $mode" >&2
    exit 2
    ;;
esac
for bin in "$a" "$b"; do
    [ -x "$bin" ] || {
        echo "side-by-side: $bin is not an executable" >&2
        exit 2
    }
done
case "$rounds" in '' | *[!0-9]*)
    echo "side-by-side: ROUNDS is a number, not $rounds" >&2
    exit 2
    ;;
esac

work="$(mktemp -d "${TMPDIR:-/tmp}/icbench-sbs.XXXXXX")"
trap 'rm -rf "$work"' EXIT

run() { # label bin round
    local label="$1" bin="$2" round="$3" cache="$work/cache-$1" out="$work/out-$1-$3"
    shift 3
    if [ "$mode" = cold ]; then rm -rf "$cache"; fi
    mkdir -p "$cache"
    ICBENCH_CACHE_DIR="$cache" /usr/bin/time -f "%e %U %S %M %R" -o "$work/time" \
        "$bin" --quiet --out "$out" "$@" >/dev/null
    read -r wall user sys rss faults <"$work/time"
    # A scenario is a record: a line of a results.csv below its header.
    scenarios=$(find "$out" -name results.csv -exec sh -c 'tail -n +2 "$1"' _ {} \; | grep -c . || true)
    printf '%s %s %s %s %s %d %d %d %d\n' "$label" "$round" "$wall" "$user" "$sys" \
        $((rss / 1024)) "$faults" "$scenarios" $((faults / (scenarios > 0 ? scenarios : 1)))
    echo "$wall" >>"$work/walls-$label"
    awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f\n", (u + s > 0 ? s / (u + s) : 0) }' >>"$work/sys-$label"
    echo $((faults / (scenarios > 0 ? scenarios : 1))) >>"$work/faults-$label"
}

# Every results.csv a run wrote (one per suite), with its checksum.
sums() { (cd "$1" && find . -name results.csv -exec sha256sum {} + | sort -k2); }

if [ "$mode" = warm ]; then
    run A "$a" 0 "$@" >/dev/null
    run B "$b" 0 "$@" >/dev/null
    for file in walls-A walls-B sys-A sys-B faults-A faults-B; do : >"$work/$file"; done
fi
echo "binary round wall_s user_s sys_s peak_rss_mb minor_faults scenarios faults_per_scenario"
for round in $(seq 1 "$rounds"); do
    run A "$a" "$round" "$@"
    run B "$b" "$round" "$@"
    if ! diff -q <(sums "$work/out-A-$round") <(sums "$work/out-B-$round") >/dev/null; then
        echo "side-by-side: round $round: results.csv differs between A and B" >&2
        exit 1
    fi
done
median() { sort -n "$1" | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
for label in A B; do
    echo "$label: median wall $(median "$work/walls-$label") s, system $(median "$work/sys-$label") of the CPU, $(median "$work/faults-$label") minor faults per scenario"
done
echo "results.csv identical in every round"
