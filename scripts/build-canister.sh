#!/usr/bin/env bash
# Builds the benchmark canister into target/canister/bench.wasm, an IC module.
#
#   scripts/build-canister.sh          the default module: target/canister/bench.wasm
#   scripts/build-canister.sh tune     the tune variant, the same sources with the cargo
#                                      feature `tune`: target/canister/bench-tune.wasm
#
#   1. cargo builds canisters/bench (workspace and Cargo.lock: canisters/) for wasm32-wasip1:
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
# The variant: a cargo feature of canisters/bench, built in a target dir of its own (so the
# two builds never overwrite each other's bench.wasm) into a module of its own name.
VARIANT="${1:-}"
case "$VARIANT" in
    "") NAME=bench; FEATURES=(); BUILD_DIR="$ROOT/target/canister-build" ;;
    tune) NAME=bench-tune; FEATURES=(--features tune); BUILD_DIR="$ROOT/target/canister-build-tune" ;;
    *) echo "build-canister: unknown variant \"$VARIANT\"; accepted: tune (or none: the default module)" >&2; exit 2 ;;
esac
# The converter (scripts/wasi2ic-post) is linked into icbench: `icbench wasi2ic-post`.
# ICBENCH_BIN names the icbench binary to use (icbench itself and the tests set it); else
# target/release/icbench if it is newer than the converter's sources; else (a fresh clone
# under dfx, say) the standalone converter is built in a target dir of its own, never in
# target/, whose lock a running `cargo test` holds while its tests call this script.
TOOL_DIR="$ROOT/target/wasi2ic-post"
OUT_DIR="$ROOT/target/canister"
OUT="$OUT_DIR/$NAME.wasm"
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

echo "build-canister: compiling canisters/bench${FEATURES[*]:+ (${FEATURES[*]})} for $TARGET" >&2
env -u RUSTFLAGS CARGO_ENCODED_RUSTFLAGS="$rustflags" \
    cargo build --release --locked \
    --manifest-path "$ROOT/canisters/bench/Cargo.toml" \
    --target "$TARGET" \
    ${FEATURES[@]+"${FEATURES[@]}"} \
    --target-dir "$BUILD_DIR"

echo "build-canister: converting to an IC module (WASI imports -> ic-wasi-polyfill)" >&2
# True when no source of the converter (or the lock file) is newer than $1.
converter_sources_older_than() {
    [ -z "$(find "$ROOT/scripts/wasi2ic-post" "$ROOT/Cargo.lock" -newer "$1" -print -quit)" ]
}
if [ -n "${ICBENCH_BIN:-}" ]; then
    if [ ! -x "$ICBENCH_BIN" ]; then
        echo "build-canister: ICBENCH_BIN=$ICBENCH_BIN is not an executable" >&2
        exit 1
    fi
    convert=("$ICBENCH_BIN" wasi2ic-post)
elif [ -x "$ROOT/target/release/icbench" ] && converter_sources_older_than "$ROOT/target/release/icbench"; then
    convert=("$ROOT/target/release/icbench" wasi2ic-post)
else
    cargo build --release --locked --quiet --manifest-path "$ROOT/Cargo.toml" -p wasi2ic-post \
        --target-dir "$TOOL_DIR"
    convert=("$TOOL_DIR/release/wasi2ic-post")
fi

mkdir -p "$OUT_DIR"
# A temp file of this run's own, renamed into place: builds may run concurrently (dfx, a
# test binary and a benchmark run can all call this script), and a shared temp name let
# one run move another's file away under it.
tmp="$(mktemp "$OUT_DIR/$NAME.wasm.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
"${convert[@]}" "$BUILD_DIR/$TARGET/release/bench.wasm" "$tmp" --did "$DID"
chmod 644 "$tmp"
mv -f "$tmp" "$OUT"

size=$(wc -c <"$OUT")
sha=$(sha256sum "$OUT" | cut -d' ' -f1)
echo "build-canister: done in $(($(date +%s) - started)) s"
echo "$OUT"
echo "size: $size bytes ($((size / 1024)) KiB)"
echo "sha256: $sha"
