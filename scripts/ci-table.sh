#!/usr/bin/env bash
# Measures docs/performance.md's ".ci/run and the tests": `.ci/run` on a fresh clone of HEAD
# (the cargo registry and toolchain as they are, `target/` empty), then the integration
# tests once more, alone, each with its own time (libtest's --report-time). Prints the
# steps' wall and CPU time and the slowest tests as markdown, with the date, the commit and
# the machine. About as long as CI (15 to 40 minutes on 2 cores); nothing is left behind
# unless --keep.
#
#   scripts/ci-table.sh [--keep] [--slowest N]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
keep=0
slowest=12
while [ "$#" -gt 0 ]; do
    case "$1" in
    --keep) keep=1 ;;
    --slowest)
        slowest=${2:-}
        [[ "$slowest" =~ ^[1-9][0-9]*$ ]] || {
            echo "ci-table: --slowest takes a positive number, not \"$slowest\"" >&2
            exit 2
        }
        shift
        ;;
    *)
        echo "ci-table: unknown argument $1 (expected --keep or --slowest N)" >&2
        exit 2
        ;;
    esac
    shift
done

work="$(mktemp -d "${TMPDIR:-/tmp}/icbench-ci.XXXXXX")"
if [ "$keep" = 0 ]; then
    trap 'rm -rf "$work"' EXIT
fi
git clone --quiet "$ROOT" "$work/clone"
cd "$work/clone"
commit=$(git rev-parse --short HEAD)
started=$(date -u '+%Y-%m-%d %H:%M')
if ! .ci/run > "$work/ci.log" 2>&1; then
    tail -n 30 "$work/ci.log" >&2
    echo "ci-table: .ci/run failed (log: $work/ci.log)" >&2
    keep=1
    trap - EXIT
    exit 1
fi
# The test binary the README's command built; RUSTC_BOOTSTRAP lets stable libtest take
# -Z unstable-options (--report-time), as nothing else here needs it.
it=$(cargo test --release --test it --no-run 2>&1 |
    sed -n 's/^ *Executable tests\/it\/main\.rs (\(.*\))$/\1/p')
RUSTC_BOOTSTRAP=1 "$it" -Z unstable-options --report-time > "$work/times.txt" 2>&1

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "\`scripts/ci-table.sh\` at $commit, $started UTC, $cpu, $(nproc) cores:"
echo
echo "| step | wall | CPU |"
echo "|---|---:|---:|"
sed -n 's/^ci: \(.*\) took \([0-9]*\) s, CPU \([0-9]*\) s (at [0-9]* s)$/| \1 | \2 s | \3 s |/p' "$work/ci.log" |
    grep -v '^| toolchain |'
total=$(sed -n 's/^ci: .* (at \([0-9]*\) s)$/\1/p' "$work/ci.log" | tail -n 1)
echo "| **all** | **$((total / 60)) min $((total % 60)) s** | |"
echo
echo "The $slowest slowest integration tests, run alone after CI:"
echo
echo "| test | s |"
echo "|---|---:|"
sed -n 's/^test \([^ ]*\) \.\.\. ok <\([0-9.]*\)s>$/\2 \1/p' "$work/times.txt" |
    sort -rn | awk -v n="$slowest" 'NR <= n { printf "| `%s` | %.1f |\n", $2, $1 }'
sed -n 's/^test result: .* finished in \([0-9.]*\)s$/\nAll of them: \1 s on the harness'"'"'s threads./p' "$work/times.txt" | tail -n 2
