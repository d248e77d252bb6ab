#!/usr/bin/env bash
# Rebuilds every canister module of canisters/prebuilt/modules.txt from its sources
# (scripts/build-canister.sh NAME) and commits it in canisters/prebuilt under the file name
# the list gives (bench.wasm, bench-tune.wasm), with a record beside it (bench.sources)
# naming the sources, a SHA-256 over them and the module's build line, it was built from.
# Run it after changing anything a module is built from (its `sources` in the list, or its
# line there); the test `modules::every_committed_module_is_of_the_current_sources_and_embedded`
# says when.
#
# Why committed modules: a fresh clone then runs the benchmark without the wasm32 build
# (about 75 s a module on 2 cores). It is safe because the build is reproducible (the same
# sources give the same bytes from any clone path) and .ci/run rebuilds every module and
# compares the bytes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
cargo build --release --locked --quiet --bin icbench
target/release/icbench update-prebuilt-canister
