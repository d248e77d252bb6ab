#!/usr/bin/env bash
# What `cargo install icbench` gives a user, on every change:
#
#   .ci/package-check.sh [--allow-dirty]
#
# 1. `cargo publish --dry-run` of the workspace's crates, in dependency order (bench-types,
#    icbench-canister, wasi2ic-post, icbench-engine, icbench); each .crate under crates.io's
#    10 MB limit, and icbench-canister's holding every module of canisters/prebuilt/modules.txt.
# 2. icbench installed from its .crate (not from the tree) into an empty root, the other
#    four crates taken from their .crate files as crates.io would serve them. Cargo's own
#    verification would compile everything again in the dev profile (minutes); this build
#    reuses target/'s release dependencies and compiles only the five crates.
# 3. The installed binary, alone in an empty directory with HOME elsewhere and no cargo on
#    PATH, runs the canbench fixture and a small default run with the results of the
#    checkout's target/release/icbench.
# Run it last: the install rebuilds icbench in target/release from the packaged sources.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --no-verify: step 2 is the build of the packaged crate.
quiet() { grep -v '^warning: ignoring \(test\|benchmark\) ' | grep -v '^ *Updating ' || true; }
cargo publish --workspace --dry-run --no-verify --locked "$@" 2>&1 | quiet
test "${PIPESTATUS[0]}" = 0
# The .crate files themselves (publish --dry-run keeps them in a scratch registry; it skips
# tests/interfaces, `publish = false`, which `cargo package` must be told to).
rm -f target/package/*.crate
cargo package --workspace --exclude icbench-interfaces --no-verify --locked "$@" 2>&1 | quiet
test "${PIPESTATUS[0]}" = 0
limit=$((10 * 1024 * 1024))
for crate in bench-types icbench-canister wasi2ic-post icbench-engine icbench; do
    file="target/package/$crate-0.1.0.crate"
    [ -f "$file" ] || { echo "cargo publish --dry-run made no $file" >&2; exit 1; }
    size=$(wc -c < "$file")
    if [ "$size" -ge "$limit" ]; then
        echo "$file is $size bytes: over crates.io's 10 MB limit" >&2
        exit 1
    fi
    echo "$file: $size bytes"
done
list=$(cargo package --list --allow-dirty -p icbench-canister 2> /dev/null)
# The list of modules, its parser, and every module it lists with its record.
needed=(modules.txt src/lib.rs src/list.rs)
modules=$(bash scripts/build-canister.sh --list)
while read -r _ _ _ _ _ _ committed _; do
    needed+=("${committed#canisters/prebuilt/}" "$(basename "${committed%.wasm}").sources")
done <<< "$modules"
for f in "${needed[@]}"; do
    grep -qx "$f" <<< "$list" || { echo "icbench-canister's package lacks $f" >&2; exit 1; }
done

# The checkout's binary first (the install below replaces target/release/icbench).
fixture=tests/canbench_fixture/canbench_fixture.wasm
run_pair() { # BIN DIR: the canbench fixture and a small default run, from an empty DIR
    local bin=$1 dir=$2
    mkdir -p "$dir/home" "$dir/run"
    cp "$fixture" "$dir/run/fixture.wasm"
    (
        cd "$dir/run"
        env -i PATH=/usr/bin:/bin HOME="$dir/home" "$bin" canbench --wasm fixture.wasm \
            --hide-results --persist --results canbench_results.yml --csv > canbench.out
        env -i PATH=/usr/bin:/bin HOME="$dir/home" "$bin" --quiet --rows 2000 --batches 1 --out out > default.out
    )
}
run_pair "$ROOT/target/release/icbench" "$work/checkout"

mkdir "$work/crates" "$work/root"
for crate in target/package/*.crate; do tar -xzf "$crate" -C "$work/crates"; done
# The .crate files date their files 2006 (cargo's fixed mtime): newer than any build, so
# target/'s fingerprints never take them for built already.
find "$work/crates" -type f -exec touch {} +
patches=()
for dep in bench-types icbench-canister wasi2ic-post icbench-engine; do
    patches+=(--config "patch.crates-io.$dep.path=\"$work/crates/$dep-0.1.0\"")
done
(cd "$work/crates/icbench-0.1.0" &&
    cargo install --locked --quiet --path . --root "$work/root" --target-dir "$ROOT/target" "${patches[@]}")
installed="$work/empty/bin/icbench"
mkdir -p "$(dirname "$installed")"
mv "$work/root/bin/icbench" "$installed"
rm -rf "$work/crates" "$work/root"
"$installed" --version
run_pair "$installed" "$work/installed"
for f in canbench_results.yml canbench_results.csv out/results.csv; do
    cmp "$work/checkout/run/$f" "$work/installed/run/$f"
done
echo "the icbench installed from its .crate runs the canbench fixture and a default run alone, with the checkout's results"
