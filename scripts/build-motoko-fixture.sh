#!/usr/bin/env bash
# Rebuilds tests/motoko_fixture/counter.wasm from counter.mo with the Motoko compiler from
# npm (package `motoko`, pinned below). Not needed to run the tests: the module is
# committed, so they need no Node. Needs node and npm.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
MOTOKO_VERSION=4.10.0
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

npm install --silent --prefix "$work" "motoko@$MOTOKO_VERSION" >&2
NODE_PATH="$work/node_modules" node "$ROOT/tests/motoko_fixture/build.js"
sha256sum "$ROOT/tests/motoko_fixture/counter.wasm"
