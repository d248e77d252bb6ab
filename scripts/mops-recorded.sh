#!/usr/bin/env bash
# Reruns the benches whose results caffeinelabs/mops recorded in its own `.bench/*.json`
# (with `mops bench --save` of its CLI at c2a6d3f1: moc 0.12.1, PocketIC 4.0.0, the copying
# collector, forced GC) with `icbench mops`, mops' own bench canister and `bench` library,
# and prints the cell-by-cell outcome as markdown (docs/mops.md's last section).
#
#   scripts/mops-recorded.sh MOPS_CHECKOUT PACKAGES
#
# MOPS_CHECKOUT: a checkout of caffeinelabs/mops at c2a6d3f1 (its bench/, .bench/, mops.lock
# and cli/commands/bench/bench-canister.mo are read). PACKAGES: a directory laid out as
# `.mops/` with the packages those benches import, each checked against mops.lock's hashes:
# base@0.12.1 (dfinity/motoko-base, tag moc-0.12.1), vector@0.4.0 (research-ag/vector, tag
# 0.4.0), bench@1.0.0 (ZenVoich/bench, d4ce879). Nothing of them is committed here. moc 0.12.1
# is moc.js of npm motoko@3.8.1, installed into a temporary directory. Needs node, npm,
# python3 and icbench (ICBENCH_BIN, default target/release/icbench).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
MOPS="${1:?usage: scripts/mops-recorded.sh MOPS_CHECKOUT PACKAGES}"
PACKAGES="${2:?usage: scripts/mops-recorded.sh MOPS_CHECKOUT PACKAGES}"
ICBENCH="${ICBENCH_BIN:-$ROOT/target/release/icbench}"
MOPS="$(cd "$MOPS" && pwd -P)"
PACKAGES="$(cd "$PACKAGES" && pwd -P)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The packages' sources are the ones mops.lock names, byte for byte (their READMEs are
# not: the registry's copy differs from the repository's).
python3 - "$MOPS/mops.lock" "$PACKAGES" base@0.12.1 vector@0.4.0 bench@1.0.0 <<'EOF'
import hashlib, json, os, sys
lock, packages, ids = json.load(open(sys.argv[1]))["hashes"], sys.argv[2], sys.argv[3:]
for pid in ids:
    for path, want in lock[pid].items():
        if not (path.endswith(".mo") or path.endswith("mops.toml")):
            continue
        have = hashlib.sha256(open(os.path.join(packages, path), "rb").read()).hexdigest()
        if have != want:
            sys.exit(f"{path}: sha256 {have}, mops.lock has {want}")
EOF

npm install --silent --no-audit --no-fund --prefix "$work/npm" motoko@3.8.1 >&2
project="$work/project"
mkdir -p "$project/bench" "$project/.mops"
ln -s "$work/npm/node_modules" "$project/node_modules"
for pkg in base@0.12.1 vector@0.4.0 bench@1.0.0; do
  cp -r "$PACKAGES/$pkg" "$project/.mops/$pkg"
done
cat > "$project/mops.toml" <<'EOF'
[dependencies]
base = "0.12.1"
vector = "0.4.0"

[dev-dependencies]
bench = "1.0.0"

[toolchain]
moc = "0.12.1"
EOF
# The benches whose packages are here; array and stable-memory also need mo:fuzz and seed
# their data from the clock (Time.now), which no rerun reproduces.
benches=()
for f in "$MOPS"/bench/*.bench.mo; do
  if grep -q '"mo:fuzz' "$f"; then
    echo "skipped $(basename "$f"): it imports mo:fuzz and seeds its data from the clock" >&2
    continue
  fi
  cp "$f" "$project/bench/"
  benches+=("bench/$(basename "$f")")
done
(cd "$project" && ICBENCH_CACHE_DIR="$work/cache" "$ICBENCH" mops --save \
  --bench-canister "$MOPS/cli/commands/bench/bench-canister.mo" \
  --gc copying --replica 2024 "${benches[@]}" > "$work/report.txt")

names=("${benches[@]##*/}")
python3 "$ROOT/scripts/compare-recorded.py" "$MOPS/.bench" "$project/.bench" "${names[@]/%.mo/.json}"
