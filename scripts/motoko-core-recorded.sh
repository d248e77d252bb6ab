#!/usr/bin/env bash
# Reruns the benches whose results dfinity/motoko-core's CI recorded on its branch
# `benchmark-results` with `npx mops bench --save`, and prints the cell-by-cell outcome as
# markdown (docs/mops.md's last section). Two recordings, both moc 0.14.14 (mops.toml's
# toolchain), dfx 0.27.0's replica, copying collector, forced GC, `--release` (no dfx.json:
# mops' profile Release); `RECORDING=` picks one:
#   be4db1e7 (default; 2025-07-01, from motoko-core f8478a5): ic-mops 1.8.0 (package-lock),
#     which deploys its moc's module as a dfx `custom` canister as it is: no optimizer ran.
#   495f88b3 (2025-07-14, from 374cb109): ic-mops 1.10.0 (2dd2bc54), which adds
#     `"optimize": "cycles"`: dfx 0.27.0 runs ic-wasm 0.8.6's O3, binaryen 116 through
#     wasm-opt-rs 0.116.1 (-O3 -g and the IC's features) between walrus 0.21.1 round trips.
#     Here: mops.toml's [optimize] with a wasm-opt that is those round trips (a small walrus
#     program built with cargo into CARGO_TARGET_DIR, default target/) around the wasm-opt
#     of npm binaryen@116.0.0.
# Sources are read from git repositories at pinned commits into a temporary directory
# (KEEP_WORK=1 keeps it); nothing of them is committed here.
#
#   [RECORDING=495f88b3] scripts/motoko-core-recorded.sh CORE MOPS NODE_MOTOKO BASE BENCH FUZZ
#
# Each argument is a git repository (a clone, or a bare mirror) holding the commits named:
#   CORE         dfinity/motoko-core: the recording and the commit it was made from
#   MOPS         caffeinelabs/mops: 15966a51, "[cli] 1.8.0" (its bench canister, which
#                1.10.0 kept: cli/commands/bench/bench-canister.mo)
#   NODE_MOTOKO  dfinity/node-motoko: b03082b, "Update moc to 0.14.14" (npm motoko 3.13.3,
#                which the registry does not have: its moc.min.js goes into motoko@3.13.0,
#                whose other files are 3.13.3's)
#   BASE         dfinity/motoko-base: moc-0.14.5 (base@0.14.5, the highest `base` of the
#                packages: test@2.1.1's; bench@1.0.0 asks 0.10.1, fuzz@0.2.1 0.10.2), and
#                the dev-dependency base-0-14-8 (9e601059) or base-0-14-13 (794174a3)
#   BENCH        ZenVoich/bench: d4ce879 (bench@1.0.0)
#   FUZZ         ZenVoich/fuzz: 23952c2 (fuzz@0.2.1; FromIters seeds it with a constant)
# motoko-core has no mops.lock, so the registry's copies of base, bench and fuzz cannot be
# checked against hashes; the tags and commits are the ones those versions were cut from.
#
# moc.js has no `--release`; mops' native moc drops the `debug` expressions under it
# (desugar: `debug e` becomes `()`). The copies of the sources get that edit in advance: each
# `debug` expression becomes `()` padded with blanks, every line and column kept (a trap
# message quotes them). Needs git, node, npm, python3 and icbench (ICBENCH_BIN, default
# target/release/icbench), and cargo for 495f88b3.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
usage="usage: scripts/motoko-core-recorded.sh CORE MOPS NODE_MOTOKO BASE BENCH FUZZ"
CORE="${1:?$usage}" MOPS="${2:?$usage}" NODE_MOTOKO="${3:?$usage}"
BASE="${4:?$usage}" BENCH="${5:?$usage}" FUZZ="${6:?$usage}"
ICBENCH="${ICBENCH_BIN:-$ROOT/target/release/icbench}"
work="$(mktemp -d)"
trap '[ -n "${KEEP_WORK:-}" ] && echo "kept $work" >&2 || rm -rf "$work"' EXIT

case "${RECORDING:-be4db1e7}" in
  be4db1e7)
    RESULTS_COMMIT=be4db1e7 CORE_COMMIT=f8478a5adbb4bd61bc6fa9b5489d8806d86a7523 IC_MOPS=1.8.0
    OLD_BASE=base-0-14-8 OLD_BASE_SPEC="moc-0.14.8@9e6010595cb9bad5b637ab7438fd11dc79a21a06" ;;
  495f88b3)
    RESULTS_COMMIT=495f88b3 CORE_COMMIT=374cb1099ef2b8a6e02ca8a6dff20dcd28d5fd42 IC_MOPS=1.10.0
    OLD_BASE=base-0-14-13 OLD_BASE_SPEC="moc-0.14.13@794174a307975c225cfb26b57f73e38a841c0415" ;;
  *) echo "RECORDING is be4db1e7 or 495f88b3" >&2; exit 2 ;;
esac
MOPS_COMMIT=15966a51
NODE_MOTOKO_COMMIT=b03082b2244d0901a5b5cbce3ad702b1f1cbca0a
BASE_TAG=moc-0.14.5
BENCH_COMMIT=d4ce879
FUZZ_COMMIT=23952c2

# A tree of REPO at COMMIT (only PATHS) into DIR.
tree() {
  local repo="$1" commit="$2" dir="$3"
  shift 3
  mkdir -p "$dir"
  git -C "$repo" archive --format=tar "$commit" "$@" | tar -x -C "$dir"
}

# The recording is the one of CORE_COMMIT, and it was made with the tools named above.
subject="$(git -C "$CORE" log -1 --format=%s "$RESULTS_COMMIT")"
case "$subject" in
  *"dfinity/motoko-core@$CORE_COMMIT"*) ;;
  *) echo "$RESULTS_COMMIT is not the recording of $CORE_COMMIT: $subject" >&2; exit 2 ;;
esac
git -C "$CORE" show "$CORE_COMMIT:mops.toml" | grep -qx 'moc = "0.14.14"'
git -C "$CORE" show "$CORE_COMMIT:package-lock.json" | grep -A1 '"node_modules/ic-mops"' | grep -q "\"$IC_MOPS\""
git -C "$CORE" show "$CORE_COMMIT:mops.toml" | grep -q "^$OLD_BASE = .*#$OLD_BASE_SPEC\""
git -C "$MOPS" show "$MOPS_COMMIT:cli/package.json" | grep -q '"version": "1.8.0"'
git -C "$NODE_MOTOKO" show "$NODE_MOTOKO_COMMIT:package.json" | grep -q '"version": "3.13.3"'

npm=(motoko@3.13.0)
[ "$IC_MOPS" = 1.10.0 ] && npm+=(binaryen@116.0.0)
npm install --silent --no-audit --no-fund --prefix "$work/npm" "${npm[@]}" >&2
motoko="$work/npm/node_modules/motoko"
# 3.13.0 → 3.13.3 changed only these (node-motoko d887b37..b03082b, besides its scripts).
for f in package.json versions/latest/moc.min.js versions/latest/moc_interpreter.min.js packages/latest/base.json; do
  git -C "$NODE_MOTOKO" show "$NODE_MOTOKO_COMMIT:$f" > "$motoko/$f"
done
git -C "$NODE_MOTOKO" diff --quiet d887b37 "$NODE_MOTOKO_COMMIT" -- src index.js

project="$work/project"
tree "$CORE" "$CORE_COMMIT" "$project" src bench
tree "$CORE" "$RESULTS_COMMIT" "$work/recorded" .bench
tree "$BASE" "$BASE_TAG" "$project/.mops/base@0.14.5" src mops.toml
tree "$BASE" "${OLD_BASE_SPEC#*@}" "$project/.mops/_github/$OLD_BASE#$OLD_BASE_SPEC" src mops.toml
tree "$BENCH" "$BENCH_COMMIT" "$project/.mops/bench@1.0.0" src mops.toml
tree "$FUZZ" "$FUZZ_COMMIT" "$project/.mops/fuzz@0.2.1" src mops.toml
git -C "$MOPS" show "$MOPS_COMMIT:cli/commands/bench/bench-canister.mo" > "$work/bench-canister.mo"
# The dependencies that reach the benches' compile (test and matchers only add `base`,
# whose version is pinned here as mops resolved it).
cat > "$project/mops.toml" <<EOF
[dependencies]
base = "0.14.5"

[dev-dependencies]
bench = "1.0.0"
fuzz = "0.2.1"
$OLD_BASE = "https://github.com/dfinity/motoko-base#$OLD_BASE_SPEC"

[toolchain]
moc = "0.14.14"
EOF
if [ "$IC_MOPS" = 1.10.0 ]; then
  # dfx 0.27.0 (Cargo.lock: ic-wasm 0.8.6, wasm-opt 0.116.1, walrus 0.21.1) reads the module
  # with walrus (names kept, no producers section), and ic-wasm's optimize() writes it out,
  # runs wasm-opt-rs' new_opt_level_3() with debug_info (-g) and the features it enables,
  # and reads it back; dfx writes it once more.
  mkdir -p "$work/walrus-rt/src"
  cat > "$work/walrus-rt/Cargo.toml" <<'EOF'
[package]
name = "walrus-rt"
version = "0.1.0"
edition = "2021"

[dependencies]
walrus = "=0.21.1"

[workspace]
EOF
  cat > "$work/walrus-rt/src/main.rs" <<'EOF'
// `walrus-rt IN OUT`: IN read and written by walrus as ic-wasm 0.8.6's parse_wasm does.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut config = walrus::ModuleConfig::new();
    config.generate_name_section(true);
    config.generate_producers_section(false);
    let mut m = config.parse(&std::fs::read(&a[1]).unwrap()).unwrap();
    m.emit_wasm_file(&a[2]).unwrap();
}
EOF
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
  nice -n 19 cargo build --release -q --manifest-path "$work/walrus-rt/Cargo.toml" >&2
  cat > "$work/ic-wasm-opt" <<EOF
#!/usr/bin/env bash
set -euo pipefail
args=("\$@"); n=\${#args[@]}
"$CARGO_TARGET_DIR/release/walrus-rt" "\${args[n-3]}" "\${args[n-3]}.in"
node "$work/npm/node_modules/binaryen/bin/wasm-opt" "\${args[@]:0:n-3}" "\${args[n-3]}.in" -o "\${args[n-3]}.out"
"$CARGO_TARGET_DIR/release/walrus-rt" "\${args[n-3]}.out" "\${args[n-1]}"
EOF
  chmod +x "$work/ic-wasm-opt"
  cat >> "$project/mops.toml" <<EOF
wasm-opt = "../ic-wasm-opt"

[optimize]
level = "O3"
args = ["--enable-mutable-globals", "--enable-nontrapping-float-to-int", "--enable-simd",
  "--enable-bulk-memory", "--enable-sign-ext", "--enable-reference-types", "--enable-memory64"]
EOF
fi

# `--release` by hand: every `debug` expression of the sources becomes `()`.
python3 - "$project" <<'EOF'
import os, re, sys

def blank(text):
    """`debug e` → `()` with e blanked (newlines kept), outside comments and literals."""
    out, i, n, count = list(text), 0, len(text), 0
    def skip(i):  # past a comment or literal starting at i, else i
        if text.startswith("//", i):
            j = text.find("\n", i)
            return n if j < 0 else j
        if text.startswith("/*", i):
            depth, i = 1, i + 2
            while depth and i < n:
                if text.startswith("/*", i): depth, i = depth + 1, i + 2
                elif text.startswith("*/", i): depth, i = depth - 1, i + 2
                else: i += 1
            return i
        if text[i] in "\"'":
            q, i = text[i], i + 1
            while text[i] != q: i += 2 if text[i] == "\\" else 1
            return i + 1
        return i
    while i < n:
        j = skip(i)
        if j != i:
            i = j
            continue
        m = re.compile(r"\bdebug\b").match(text, i)
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_.")):
            start, k, depth = i, m.end(), 0
            while k < n:
                j = skip(k)
                if j != k:
                    k = j
                    continue
                c = text[k]
                if c in "([{": depth += 1
                elif c in ")]}":
                    if depth == 0: break
                    depth -= 1
                elif c == ";" and depth == 0: break
                k += 1
            for p in range(start, k):
                if out[p] != "\n": out[p] = " "
            out[start:start + 2] = "()"
            count += 1
            i = k
            continue
        i += 1
    return "".join(out), count

for d, _, files in os.walk(sys.argv[1]):
    for f in files:
        if f.endswith(".mo"):
            p = os.path.join(d, f)
            text, count = blank(open(p).read())
            if count:
                open(p, "w").write(text)
                print(f"--release by hand: {count} debug expression(s) in {os.path.relpath(p, sys.argv[1])}", file=sys.stderr)
EOF

(cd "$project" && ICBENCH_CACHE_DIR="$work/cache" "$ICBENCH" mops --save \
  --moc "$motoko" --bench-canister "$work/bench-canister.mo" \
  --gc copying --replica 2025-03 > "$work/report.txt")

python3 "$ROOT/scripts/compare-recorded.py" --by-figure "$work/recorded/.bench" "$project/.bench"
