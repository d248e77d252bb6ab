#!/usr/bin/env bash
# Checks that two icbench binaries fill the same states, byte for byte: each runs the same
# command with an empty cache of its own, and every post-prefill state and start it kept
# (the cache's states/ and warm/ entries) must be in the other's cache with the same
# bytes. An entry's key names the sources that made it, so entries are matched by their
# contents (all but the key), not their names. For a change to how fills run: the
# binary before it against the binary after it, at the default 1,000,000 rows.
#
#   scripts/fill-check.sh A_BIN B_BIN [icbench arguments...]
#
# Example, the default run's fills, before and after:
#   scripts/fill-check.sh /tmp/icbench-before target/release/icbench --batches 1 --positions end --no-reads
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: fill-check.sh A_BIN B_BIN [icbench arguments...]" >&2
    exit 2
fi
a="$1" b="$2"
shift 2
for bin in "$a" "$b"; do
    [ -x "$bin" ] || {
        echo "fill-check: $bin is not an executable" >&2
        exit 2
    }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/icbench-fill-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The entries of a cache, one line each: the kind, the SHA-256 of the entry without its
# key (bytes 12 to 44 of the header), its size; sorted.
contents() {
    python3 - "$1" <<'PY'
import hashlib, os, sys
root = sys.argv[1]
for kind in ("states", "warm"):
    d = os.path.join(root, kind)
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if name.endswith(".entry"):
            b = open(os.path.join(d, name), "rb").read()
            print(kind, hashlib.sha256(b[:12] + b[44:]).hexdigest(), len(b))
PY
}

for label in A B; do
    bin=$a
    [ "$label" = B ] && bin=$b
    ICBENCH_CACHE_DIR="$work/cache-$label" /usr/bin/time -f "$label: %e s wall, %U s user, %S s system, %M KB peak RSS of the largest process" \
        "$bin" --quiet --out "$work/out-$label" "$@" >/dev/null
    contents "$work/cache-$label" | sort >"$work/entries-$label"
done
if ! diff "$work/entries-A" "$work/entries-B" >&2; then
    echo "fill-check: the caches differ (< A only, > B only)" >&2
    exit 1
fi
if ! cmp -s "$work/out-A/results.csv" "$work/out-B/results.csv"; then
    echo "fill-check: results.csv differs" >&2
    exit 1
fi
echo "fill-check: $(grep -c '^states' "$work/entries-A") states and $(grep -c '^warm' "$work/entries-A") starts, byte for byte the same; results.csv the same"
