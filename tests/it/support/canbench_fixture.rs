//! The canbench-rs fixture: tests/canbench_fixture built for wasm32-unknown-unknown and
//! committed as tests/canbench_fixture/canbench_fixture.wasm (scripts/build-canbench-fixture.sh
//! rebuilds it). The tests pin exact counts of this module, so it must not change with the
//! toolchain or the clone path; `canbench_fixture_is_built_from_its_source` (ignored: a
//! wasm32 build of about a minute) checks that the committed bytes are what its source builds.

use std::path::PathBuf;

/// The path of the committed fixture module.
pub fn fixture_wasm_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/canbench_fixture/canbench_fixture.wasm")
}

/// The fixture's bytes, compiled once for the test run on first use (see
/// [`super::keep_compiled`]).
pub fn fixture_wasm() -> Vec<u8> {
    static KEPT: std::sync::Once = std::sync::Once::new();
    let path = fixture_wasm_path();
    let wasm = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    KEPT.call_once(|| super::keep_compiled(&wasm, false));
    wasm
}
