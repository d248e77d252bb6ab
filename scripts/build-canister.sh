#!/usr/bin/env bash
# Builds the benchmark canister into target/canister/bench.wasm, an IC module.
#
#   1. cargo builds canisters/bench (its own workspace and Cargo.lock) for wasm32-wasip1:
#      ic-rusqlite's precompiled SQLite is a WASI library;
#   2. scripts/wasi2ic-post rewires the WASI imports (as wasi2ic does) to
#      ic-wasi-polyfill inside the module and embeds canisters/bench/bench.did as the
#      `icp:public candid:service` section.
#
# Reproducible: the same sources give a byte-identical wasm from any clone path
# (paths are remapped, nothing records a time). Works from any cwd; dfx runs it as the
# canister's build step (dfx.json).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT" # so rust-toolchain.toml picks the toolchain

TARGET=wasm32-wasip1
BUILD_DIR="$ROOT/target/canister-build"
# The converter is a root workspace member but builds in its own target dir: no lock
# contention with a running `cargo test` (tests/it/canister_did.rs calls this script).
TOOL_DIR="$ROOT/target/wasi2ic-post"
OUT_DIR="$ROOT/target/canister"
OUT="$OUT_DIR/bench.wasm"
DID="$ROOT/canisters/bench/bench.did"
CARGO_HOME_DIR="$(cd "${CARGO_HOME:-$HOME/.cargo}" && pwd -P)"
started=$(date +%s)

if command -v rustup >/dev/null 2>&1; then
    if ! rustup target list --installed | grep -qx "$TARGET"; then
        rustup target add "$TARGET"
    fi
else
    echo "build-canister: rustup not found; assuming the $TARGET target is installed" >&2
fi

# Build paths must not leak into the wasm (panic locations carry source paths).
# CARGO_ENCODED_RUSTFLAGS (0x1f-separated) keeps paths with spaces intact, and only
# applies to this build: the host tools below keep their own flags and caches.
sep=$'\x1f'
rustflags="--remap-path-prefix=$ROOT=/icbench${sep}--remap-path-prefix=$CARGO_HOME_DIR=/cargo"

echo "build-canister: compiling canisters/bench for $TARGET" >&2
env -u RUSTFLAGS CARGO_ENCODED_RUSTFLAGS="$rustflags" \
    cargo build --release --locked \
    --manifest-path "$ROOT/canisters/bench/Cargo.toml" \
    --target "$TARGET" \
    --target-dir "$BUILD_DIR"

echo "build-canister: converting to an IC module (WASI imports -> ic-wasi-polyfill)" >&2
cargo build --release --locked --quiet --manifest-path "$ROOT/Cargo.toml" -p wasi2ic-post \
    --target-dir "$TOOL_DIR"

mkdir -p "$OUT_DIR"
# A temp file of this run's own, renamed into place: builds may run concurrently (dfx, a
# test binary and a benchmark run can all call this script), and a shared temp name let
# one run move another's file away under it.
tmp="$(mktemp "$OUT_DIR/bench.wasm.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
"$TOOL_DIR/release/wasi2ic-post" \
    "$BUILD_DIR/$TARGET/release/bench.wasm" "$tmp" --did "$DID"
chmod 644 "$tmp"
mv -f "$tmp" "$OUT"

size=$(wc -c <"$OUT")
sha=$(sha256sum "$OUT" | cut -d' ' -f1)
echo "build-canister: done in $(($(date +%s) - started)) s"
echo "$OUT"
echo "size: $size bytes ($((size / 1024)) KiB)"
echo "sha256: $sha"
