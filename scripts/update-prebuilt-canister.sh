#!/usr/bin/env bash
# Rebuilds the bench canister from its sources and commits the module as
# canisters/prebuilt/bench.wasm, with canisters/prebuilt/bench.sources naming the sources
# (a SHA-256 over them) it was built from, and the tune variant (the cargo feature `tune`)
# as canisters/prebuilt/bench-tune.wasm with bench-tune.sources. Run it after changing anything the canister is
# built from (canisters/, scripts/build-canister.sh, scripts/wasi2ic-post, rust-toolchain.toml);
# the test `prebuilt_canister_is_of_the_current_sources` says when.
#
# Why a committed module: a fresh clone then runs the benchmark without the wasm32 build
# (about 75 s on 2 cores). It is safe because the build is reproducible (the same sources
# give the same bytes from any clone path) and .ci/run rebuilds it and compares the bytes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
cargo build --release --locked --quiet --bin icbench
target/release/icbench update-prebuilt-canister
