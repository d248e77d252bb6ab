//! Refuses to build when bench.wasm is not the module bench.sources names (a damaged
//! checkout or package: an LFS pointer, a bad merge), so a binary never embeds a module
//! other than the one its record vouches for. Whether that record is of the *current*
//! canister sources is checked by icbench's own build script, which has the sources.

use sha2::{Digest, Sha256};

fn main() {
    for file in ["bench.wasm", "bench.sources"] {
        println!("cargo::rerun-if-changed={file}");
    }
    let wasm = std::fs::read("bench.wasm").expect("canisters/prebuilt/bench.wasm is readable");
    let record = std::fs::read_to_string("bench.sources")
        .expect("canisters/prebuilt/bench.sources is readable");
    let recorded = record
        .lines()
        .find_map(|l| l.strip_prefix("module-sha256 "))
        .expect("bench.sources has a module-sha256 line");
    let actual = hex(&Sha256::digest(&wasm));
    if recorded != actual {
        panic!(
            "canisters/prebuilt/bench.wasm (sha256 {actual}) is not the module bench.sources names \
             ({recorded}); run scripts/update-prebuilt-canister.sh"
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
