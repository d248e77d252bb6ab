#!/usr/bin/env bash
# Rebuilds tests/canbench_fixture/canbench_fixture.wasm, the canbench-rs canister whose
# replica results the tests compare against, from tests/canbench_fixture (its own workspace
# and Cargo.lock). Not needed to run the tests: the module is committed, so `cargo test`
# neither spends a wasm32 build on it nor depends on the clone path or the toolchain of the
# day for the counts it pins. `cargo test --release -- --ignored canbench_fixture_is_built_from_its_source`
# checks that the committed module is what this script builds.
#
#   scripts/build-canbench-fixture.sh [OUT]   (default: the committed path)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT" # so rust-toolchain.toml picks the toolchain

TARGET=wasm32-unknown-unknown
BUILD_DIR="$ROOT/target/canbench-fixture"
OUT="${1:-$ROOT/tests/canbench_fixture/canbench_fixture.wasm}"
CARGO_HOME_DIR="$(cd "${CARGO_HOME:-$HOME/.cargo}" && pwd -P)"

if command -v rustup >/dev/null 2>&1; then
    if ! rustup target list --installed | grep -qx "$TARGET"; then
        rustup target add "$TARGET"
    fi
fi

# Panic locations carry source paths: remap them so any clone builds the same bytes.
sep=$'\x1f'
rustflags="--remap-path-prefix=$ROOT=/icbench${sep}--remap-path-prefix=$CARGO_HOME_DIR=/cargo"
env -u RUSTFLAGS CARGO_ENCODED_RUSTFLAGS="$rustflags" \
    cargo build --release --locked --target "$TARGET" \
    --manifest-path "$ROOT/tests/canbench_fixture/Cargo.toml" \
    --target-dir "$BUILD_DIR"

tmp="$(mktemp "$(dirname "$OUT")/.canbench_fixture.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
cp "$BUILD_DIR/$TARGET/release/canbench_fixture.wasm" "$tmp"
chmod 644 "$tmp"
mv -f "$tmp" "$OUT"
echo "$OUT"
echo "sha256: $(sha256sum "$OUT" | cut -d' ' -f1)"
