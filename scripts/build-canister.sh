#!/usr/bin/env bash
# Builds a canister module of canisters/prebuilt/modules.txt (the list of modules: how each
# is built, from what) into target/canister/, an IC module.
#
#   scripts/build-canister.sh          the default module (the list's first, bench):
#                                      target/canister/bench.wasm
#   scripts/build-canister.sh NAME     the module NAME; `tune`: canisters/bench with the
#                                      cargo feature `tune`, target/canister/bench-tune.wasm;
#                                      `sqlite-vfs`: canisters/sqlite-vfs for
#                                      wasm32-unknown-unknown, target/canister/sqlite-vfs.wasm;
#                                      `motoko`: canisters/motoko/main.mo with moc (npm),
#                                      target/canister/motoko.wasm; `motoko-classic`: the
#                                      same with moc's --legacy-persistence,
#                                      target/canister/motoko-classic.wasm
#   scripts/build-canister.sh --list   the list as this script reads it, a module a line:
#                                      name crate target features rewire did, the committed
#                                      module and the built one
#
#   1. cargo builds the module's crate (its workspace and Cargo.lock) for its target with its
#      features, in a target dir of the crate's own (the bench canister: canisters/ for
#      wasm32-wasip1, as ic-rusqlite's precompiled SQLite is a WASI library; the
#      ic-sqlite-vfs canister: canisters/sqlite-vfs for wasm32-unknown-unknown, whose
#      `sqlite-precompiled` feature links a vendored SQLite for that target: no C toolchain);
#   2. the converter (scripts/wasi2ic-post) rewires the WASI imports (`rewire wasi`: as
#      wasi2ic does) to ic-wasi-polyfill inside the module, and embeds the module's did as
#      the `icp:public candid:service` section (`rewire none`: appended to the compiler's
#      bytes, which stay as they are); a module with neither is taken as built.
#
# Reproducible: the same sources give a byte-identical wasm from any clone path
# (paths are remapped, nothing records a time). Works from any cwd; dfx runs it as the
# canister's build step (dfx.json).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT" # so rust-toolchain.toml picks the toolchain

LIST="$ROOT/canisters/prebuilt/modules.txt"
# The list, a module a line: name crate target features rewire did, then the committed
# module (canisters/prebuilt/WASM) and where this script writes it (target/canister/WASM).
# It reads the list as canisters/prebuilt/src/list.rs does (a test holds the two readings
# equal); that parser also checks the list at every cargo build, so this one only refuses
# a missing key.
read_list() {
    awk '
        BEGIN { n = split("crate target features rewire did wasm", keys, " ") }
        function flush(   i) {
            if (name == "") return
            for (i = 1; i <= n; i++) {
                if (!(keys[i] in f)) {
                    printf "build-canister: %s: module %s has no `%s` line\n", FILENAME, name, keys[i] > "/dev/stderr"
                    failed = 1
                    exit 1
                }
            }
            print name, f["crate"], f["target"], f["features"], f["rewire"], f["did"],
                "canisters/prebuilt/" f["wasm"], "target/canister/" f["wasm"]
        }
        /^[ \t]*(#|$)/ { next }
        /^[ \t]*\[/ { flush(); name = $1; gsub(/^\[|\]$/, "", name); split("", f); next }
        { f[$1] = $2 }
        END { if (!failed) flush() }
    ' "$LIST"
}
if [ "${1:-}" = --list ]; then
    read_list
    exit 0
fi
MODULES="$(read_list)"
if [ -n "${1:-}" ]; then
    line="$(awk -v name="$1" '$1 == name' <<<"$MODULES")"
else
    line="$(head -n 1 <<<"$MODULES")"
fi
if [ -z "$line" ]; then
    names="$(cut -d' ' -f1 <<<"$MODULES" | paste -sd' ')"
    echo "build-canister: unknown module \"${1:-}\"; accepted: $names (or none: the default module, ${names%% *})" >&2
    exit 2
fi
read -r NAME CRATE TARGET FEATURES REWIRE DID _ BUILT <<<"$line"
OUT="$ROOT/$BUILT"

# A Motoko module (`target moc`): the crate folder's build.js runs moc from the npm package
# `motoko` its package-lock.json pins (npm ci installs it there), with mo:core bundled in
# that package; moc embeds the did (build.js checks it is moc's interface of main.mo). Its
# features are moc's options, given to build.js as flags (`legacy-persistence`:
# --legacy-persistence).
if [ "$TARGET" = moc ]; then
    for tool in node npm; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "build-canister: module $NAME is Motoko: building it needs $tool (Node.js 18 or newer), which is not on PATH" >&2
            exit 1
        fi
    done
    started=$(date +%s)
    echo "build-canister: installing moc ($CRATE/package-lock.json) and compiling $CRATE/main.mo" >&2
    mkdir -p "$(dirname "$OUT")" "$ROOT/target/canister-build"
    tmp="$(mktemp "$OUT.XXXXXX")"
    trap 'rm -f "$tmp"' EXIT
    MOC_FLAGS=()
    if [ "$FEATURES" != - ]; then
        IFS=, read -ra options <<<"$FEATURES"
        for option in "${options[@]}"; do MOC_FLAGS+=("--$option"); done
    fi
    # npm ci empties node_modules first: two builds at once from one folder (dfx and a test,
    # two tests, the folder's two modules) would pull moc.js from under each other, so one
    # installs and compiles at a time (a lock per folder).
    exec 9>"$ROOT/target/canister-build/moc-${CRATE//\//-}.lock"
    flock 9
    npm ci --prefix "$ROOT/$CRATE" --no-audit --no-fund --silent >&2
    node "$ROOT/$CRATE/build.js" "$tmp" "$ROOT/$DID" ${MOC_FLAGS[@]+"${MOC_FLAGS[@]}"} >&2
    flock -u 9
    chmod 644 "$tmp"
    mv -f "$tmp" "$OUT"
    echo "build-canister: done in $(($(date +%s) - started)) s"
    echo "$OUT"
    echo "size: $(wc -c <"$OUT") bytes"
    echo "sha256: $(sha256sum "$OUT" | cut -d' ' -f1)"
    exit 0
fi

FEATURE_ARGS=()
[ "$FEATURES" = - ] || FEATURE_ARGS=(--features "$FEATURES")
# A target dir per crate: the bench module and its `tune` variant share their dependencies'
# build (on 2 cores a tune build took 127 s in a dir of its own, 36 s beside the bench
# module's). The variants link to the same artifact, so a build holds the dir's lock from
# cargo's build until it has taken the artifact.
BUILD_DIR="$ROOT/target/canister-build/$(basename "$CRATE")"
# cargo names a cdylib after its package (the first `name =` of its manifest), - as _.
PACKAGE="$(sed -n 's/^name *= *"\([^"]*\)".*/\1/p' "$ROOT/$CRATE/Cargo.toml" | head -n 1)"
ARTIFACT="$BUILD_DIR/$TARGET/release/${PACKAGE//-/_}.wasm"
# The converter's arguments: it runs with `rewire wasi`, or to embed a did (then with
# --no-rewire).
CONVERT=()
case "$REWIRE" in
    wasi) [ "$DID" = - ] || CONVERT=(--did "$ROOT/$DID") ;;
    none) [ "$DID" = - ] || CONVERT=(--no-rewire --did "$ROOT/$DID") ;;
    *) echo "build-canister: module $NAME: rewire \"$REWIRE\" is neither wasi nor none" >&2; exit 2 ;;
esac
TOOL_DIR="$ROOT/target/wasi2ic-post"
OUT_DIR="$(dirname "$OUT")"
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

echo "build-canister: compiling $CRATE${FEATURE_ARGS[*]:+ (${FEATURE_ARGS[*]})} for $TARGET" >&2
mkdir -p "$ROOT/target/canister-build"
exec 8>"$BUILD_DIR.lock"
flock 8
# Nor may the caller's environment change the module: crates turn on nightly code under
# RUSTC_BOOTSTRAP (a test binary run with `-Z` flags passes it down: bench.wasm grew by
# 77 KB), and CARGO_PROFILE_* would override the canister's profile.
clean_env=(-u RUSTFLAGS -u RUSTC_BOOTSTRAP)
while read -r var; do
    clean_env+=(-u "$var")
done < <(compgen -e | grep '^CARGO_PROFILE_' || true)
env "${clean_env[@]}" CARGO_ENCODED_RUSTFLAGS="$rustflags" \
    cargo build --release --locked \
    --manifest-path "$ROOT/$CRATE/Cargo.toml" \
    --target "$TARGET" \
    ${FEATURE_ARGS[@]+"${FEATURE_ARGS[@]}"} \
    --target-dir "$BUILD_DIR"

# The converter (scripts/wasi2ic-post) is linked into icbench: `icbench wasi2ic-post`.
# ICBENCH_BIN names the icbench binary to use (icbench itself and the tests set it); else
# target/release/icbench if it is newer than the converter's sources; else (a fresh clone
# under dfx, say) the standalone converter is built in a target dir of its own, never in
# target/, whose lock a running `cargo test` holds while its tests call this script.
# True when no source of the converter (or the lock file) is newer than $1.
converter_sources_older_than() {
    [ -z "$(find "$ROOT/scripts/wasi2ic-post" "$ROOT/Cargo.lock" -newer "$1" -print -quit)" ]
}
find_converter() {
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
}

mkdir -p "$OUT_DIR"
# A temp file of this run's own, renamed into place: builds may run concurrently (dfx, a
# test binary and a benchmark run can all call this script), and a shared temp name let
# one run move another's file away under it.
tmp="$(mktemp "$OUT.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
if [ "$REWIRE" = wasi ]; then
    echo "build-canister: converting to an IC module (WASI imports -> ic-wasi-polyfill)" >&2
elif [ "$DID" != - ]; then
    echo "build-canister: embedding $DID" >&2
fi
if [ "$REWIRE" = wasi ] || [ "$DID" != - ]; then
    find_converter
    "${convert[@]}" "$ARTIFACT" "$tmp" ${CONVERT[@]+"${CONVERT[@]}"}
else
    cp "$ARTIFACT" "$tmp"
fi
flock -u 8
chmod 644 "$tmp"
mv -f "$tmp" "$OUT"

size=$(wc -c <"$OUT")
sha=$(sha256sum "$OUT" | cut -d' ' -f1)
echo "build-canister: done in $(($(date +%s) - started)) s"
echo "$OUT"
echo "size: $size bytes ($((size / 1024)) KiB)"
echo "sha256: $sha"
