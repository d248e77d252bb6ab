#!/usr/bin/env bash
# Measures the fresh-machine table of docs/performance.md ("A fresh machine") the way a new user meets
# it: a fresh clone of this repository's HEAD, an empty cargo cache (CARGO_HOME in a scratch
# directory, so every crate is downloaded and compiled) and an empty ICBENCH_CACHE_DIR.
# Prints a markdown table with the date, the commit and the machine. Takes about as long as
# the steps it times (15 to 25 minutes on 2 cores); nothing is left behind unless --keep.
#
#   scripts/speed-table.sh [--keep] [--warm-cargo]
#
# --warm-cargo keeps the user's cargo cache (downloads and nothing else: the build still
# starts from an empty target/), for machines without access to crates.io.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
keep=0
warm_cargo=0
for arg in "$@"; do
    case "$arg" in
    --keep) keep=1 ;;
    --warm-cargo) warm_cargo=1 ;;
    *)
        echo "speed-table: unknown argument $arg (expected --keep or --warm-cargo)" >&2
        exit 2
        ;;
    esac
done

work="$(mktemp -d "${TMPDIR:-/tmp}/icbench-speed.XXXXXX")"
if [ "$keep" = 0 ]; then
    trap 'rm -rf "$work"' EXIT
else
    echo "speed-table: keeping $work" >&2
fi
git clone --quiet "$ROOT" "$work/icbench"
cd "$work/icbench"
commit="$(git rev-parse --short HEAD)"

export ICBENCH_CACHE_DIR="$work/icbench-cache"
if [ "$warm_cargo" = 0 ]; then
    # rustup's proxies live in the user's CARGO_HOME/bin; the toolchains in RUSTUP_HOME.
    export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
    export CARGO_HOME="$work/cargo-home"
fi

log="$work/log"
mkdir -p "$log"
declare -a rows

# step NAME CMD...: runs CMD (output into $log), records its wall time in seconds.
step() {
    local name="$1"
    shift
    # The log file is named after the step, without the slashes a step name may hold.
    local file="${name//\//_}"
    local start end
    start=$(date +%s.%N)
    if ! "$@" >"$log/$file.out" 2>&1; then
        echo "speed-table: step '$name' failed; its output:" >&2
        tail -n 30 "$log/$file.out" >&2
        exit 1
    fi
    end=$(date +%s.%N)
    local secs
    secs=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }')
    echo "speed-table: $name: $secs s" >&2
    rows+=("$name|$secs")
}

tiny=(--rows 2000 --batches 1 --stores btree --positions end --no-reads --quiet)

step "cargo run --release (download, build, default run on the committed canister module)" \
    cargo run --release -- --quiet --out "$work/out-first"
step "cargo test --release right after it" cargo test --release
step "default run (1,000,000 rows), binary built" \
    target/release/icbench --quiet --out "$work/out-second"
step "tiny run, first (empty compile cache)" \
    env ICBENCH_CACHE_DIR="$work/empty-cache" target/release/icbench "${tiny[@]}" --out "$work/out-tiny1"
step "tiny run, second" \
    env ICBENCH_CACHE_DIR="$work/empty-cache" target/release/icbench "${tiny[@]}" --out "$work/out-tiny2"
# What a change to the canister costs: its wasm32 build from the sources; the bytes must be
# the committed module's (the build is reproducible).
step "canister build from its sources (scripts/build-canister.sh)" \
    bash -c 'bash scripts/build-canister.sh && cmp canisters/prebuilt/bench.wasm target/canister/bench.wasm'
step "cargo bench --bench engine_speed" cargo bench --bench engine_speed

ratio="(target/engine_speed.json not written)"
if [ -f target/engine_speed.json ]; then
    ratio=$(python3 -c '
import json, sys
w = {x["name"]: x for x in json.load(open(sys.argv[1]))["workloads"]}
b = w.get("bench-canister-btree-insert")
print("%.2f (plain %.0f ms, metered %.0f ms)" % (b["ratio"], b["plain_ms"], b["metered_ms"]) if b else "(no bench-canister-btree-insert workload)")
' target/engine_speed.json)
fi

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo
echo "Measured $(date -u +%Y-%m-%d) at $commit by scripts/speed-table.sh: $(nproc) cores ($cpu)," \
    "fresh clone, $([ "$warm_cargo" = 1 ] && echo "cargo's download cache kept" || echo "empty cargo cache"), empty ICBENCH_CACHE_DIR."
echo
echo "| step | wall time |"
echo "|---|---:|"
for row in "${rows[@]}"; do
    name="${row%|*}"
    secs="${row##*|}"
    printf '| %s | %s s |\n' "$name" "$secs"
done
echo "| bench canister B-tree inserts, plain / metered speed | $ratio |"
