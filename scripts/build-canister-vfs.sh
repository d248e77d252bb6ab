#!/usr/bin/env bash
# Builds the ic-sqlite-vfs canister into target/canister/sqlite-vfs.wasm, an IC module.
#
#   1. cargo builds canisters/sqlite-vfs (a workspace of its own, with its own Cargo.lock)
#      for wasm32-unknown-unknown: ic-sqlite-vfs's `sqlite-precompiled` feature links its
#      vendored libsqlite3.a for that target, so no C toolchain is needed, and the module
#      imports only ic0 (no WASI, so no wasi2ic step);
#   2. canisters/sqlite-vfs/sqlite-vfs.did is appended as the `icp:public candid:service`
#      custom section (the section dfx and icp-cli read the interface from), as
#      scripts/wasi2ic-post does for bench.wasm.
#
#   scripts/build-canister-vfs.sh prebuilt   also commits the module as
#      canisters/prebuilt/sqlite-vfs.wasm with canisters/prebuilt/sqlite-vfs.sources, the
#      SHA-256 over the sources below in the framing of src/canister_sources.rs (each file's
#      path, a NUL, its length as a little-endian u64, its bytes, in path order), which the
#      tests (tests/it/sqlite_vfs.rs) recompute.
#
# Reproducible: the same sources give a byte-identical wasm from any clone path (paths
# are remapped, nothing records a time). Works from any cwd.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT" # so rust-toolchain.toml picks the toolchain

TARGET=wasm32-unknown-unknown
NAME=sqlite-vfs
CRATE="$ROOT/canisters/sqlite-vfs"
BUILD_DIR="$ROOT/target/canister-build-vfs"
OUT_DIR="$ROOT/target/canister"
OUT="$OUT_DIR/$NAME.wasm"
DID="$CRATE/$NAME.did"
CARGO_HOME_DIR="$(cd "${CARGO_HOME:-$HOME/.cargo}" && pwd -P)"
# The Candid section's name, as dfx writes it.
SECTION="icp:public candid:service"
# What the module is built from (relative to the project root): the crate (its symlink
# bench-types -> ../types followed), bench-types, the two bench canister files it compiles
# (#[path]), this script and the toolchain pin.
SOURCES=(
    canisters/sqlite-vfs
    canisters/types
    canisters/bench/src/ids.rs
    canisters/bench/src/report.rs
    scripts/build-canister-vfs.sh
    rust-toolchain.toml
)
MODE="${1:-}"
case "$MODE" in
    "" | prebuilt) ;;
    *) echo "build-canister-vfs: unknown argument \"$MODE\"; accepted: prebuilt (or none: build only)" >&2; exit 2 ;;
esac
started=$(date +%s)

if command -v rustup >/dev/null 2>&1; then
    if ! rustup target list --installed | grep -qx "$TARGET"; then
        rustup target add "$TARGET"
    fi
else
    echo "build-canister-vfs: rustup not found; assuming the $TARGET target is installed" >&2
fi

# Build paths must not leak into the wasm (panic locations carry source paths).
# CARGO_ENCODED_RUSTFLAGS (0x1f-separated) keeps paths with spaces intact, and only
# applies to this build.
sep=$'\x1f'
rustflags="--remap-path-prefix=$ROOT=/icbench${sep}--remap-path-prefix=$CARGO_HOME_DIR=/cargo"

echo "build-canister-vfs: compiling canisters/sqlite-vfs for $TARGET" >&2
env -u RUSTFLAGS CARGO_ENCODED_RUSTFLAGS="$rustflags" \
    cargo build --release --locked \
    --manifest-path "$CRATE/Cargo.toml" \
    --target "$TARGET" \
    --target-dir "$BUILD_DIR"

# $1 as unsigned LEB128, the bytes as printf escapes.
leb128() {
    local n=$1 byte out=""
    while :; do
        byte=$((n & 0x7f))
        n=$((n >> 7))
        [ "$n" -ne 0 ] && byte=$((byte | 0x80))
        out+=$(printf '\\x%02x' "$byte")
        [ "$n" -eq 0 ] && break
    done
    printf '%s' "$out"
}

mkdir -p "$OUT_DIR"
# A temp file of this run's own, renamed into place: builds may run concurrently.
tmp="$(mktemp "$OUT_DIR/$NAME.wasm.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
did_bytes=$(wc -c <"$DID")
name_bytes=${#SECTION} # ASCII: characters are bytes
payload_bytes=$(($(printf '%b' "$(leb128 "$name_bytes")" | wc -c) + name_bytes + did_bytes))
{
    cat "$BUILD_DIR/$TARGET/release/sqlite_vfs.wasm"
    # A custom section: id 0, its size, then its name (length-prefixed) and the interface.
    printf '\x00'
    printf '%b' "$(leb128 "$payload_bytes")"
    printf '%b' "$(leb128 "$name_bytes")"
    printf '%s' "$SECTION"
    cat "$DID"
} >"$tmp"
chmod 644 "$tmp"
mv -f "$tmp" "$OUT"

# $1 as 8 little-endian bytes, written out.
le64() {
    local i
    for i in 0 1 2 3 4 5 6 7; do
        printf '%b' "$(printf '\\x%02x' $((($1 >> (8 * i)) & 0xff)))"
    done
}

# The SHA-256 (hex) over SOURCES, in src/canister_sources.rs's framing.
sources_sha256() {
    local rel
    for rel in "${SOURCES[@]}"; do
        if [ -d "$rel" ]; then
            find -L "$rel" \( -name target -o -name '.*' \) -prune -o -type f -print
        else
            echo "$rel"
        fi
    done | LC_ALL=C sort | while IFS= read -r rel; do
        printf '%s\0' "$rel"
        le64 "$(wc -c <"$rel")"
        cat "$rel"
    done | sha256sum | cut -d' ' -f1
}

if [ "$MODE" = prebuilt ]; then
    cp "$OUT" canisters/prebuilt/$NAME.wasm
    {
        echo "# The sources canisters/prebuilt/$NAME.wasm is built from; written by"
        echo "# scripts/build-canister-vfs.sh prebuilt, checked by the tests."
        echo "sources-sha256 $(sources_sha256)"
        echo "module-sha256 $(sha256sum "$OUT" | cut -d' ' -f1)"
    } >canisters/prebuilt/$NAME.sources
    echo "build-canister-vfs: committed as canisters/prebuilt/$NAME.wasm and $NAME.sources" >&2
fi

size=$(wc -c <"$OUT")
sha=$(sha256sum "$OUT" | cut -d' ' -f1)
echo "build-canister-vfs: done in $(($(date +%s) - started)) s"
echo "$OUT"
echo "size: $size bytes ($((size / 1024)) KiB)"
echo "sha256: $sha"
