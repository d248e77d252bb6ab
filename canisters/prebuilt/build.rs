//! Reads modules.txt (src/list.rs) and, for every module it lists, refuses to build when the
//! committed module is not the one its record names (a damaged checkout or package: an LFS
//! pointer, a bad merge), so a binary never embeds a module other than the one its record
//! vouches for; then writes `MODULES` (src/lib.rs) into OUT_DIR: each module's line of the
//! list and its committed bytes. Whether a record is of the *current* canister sources is
//! checked by icbench's own build script, which has the sources.

use std::fmt::Write;

use sha2::{Digest, Sha256};

#[path = "src/list.rs"]
#[allow(dead_code)]
mod list;

fn main() {
    println!("cargo::rerun-if-changed={}", list::FILE);
    let text = std::fs::read_to_string(list::FILE)
        .unwrap_or_else(|e| panic!("{}/{}: {e}", list::PREBUILT_DIR, list::FILE));
    let modules = list::parse(&text).unwrap_or_else(|e| panic!("{}/{e}", list::PREBUILT_DIR));
    let mut code = format!(
        "/// The modules of modules.txt, in its order (the first is the default).\n\
         pub const MODULES: [Prebuilt; {}] = [\n",
        modules.len()
    );
    for m in &modules {
        check(m);
        let strs = |v: &[&str]| format!("&{v:?}");
        let bytes = |macro_name: &str, file: &str| {
            format!("{macro_name}!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/{file}\"))")
        };
        let requires: Vec<&str> = m.requires.iter().map(String::as_str).collect();
        write!(
            code,
            "    Prebuilt {{\n        name: {:?},\n        crate_dir: {:?},\n        target: {:?},\n        \
             features: {},\n        rewire_wasi: {},\n        did: {:?},\n        recipe: {:?},\n        \
             sources: {},\n        requires: {},\n        built: {:?},\n        prebuilt_wasm: {:?},\n        \
             prebuilt_sources: {:?},\n        wasm: {},\n        record: {},\n    }},\n",
            m.name,
            m.crate_dir,
            m.target,
            strs(&m.features),
            m.rewire_wasi,
            m.did,
            m.recipe(),
            strs(&m.sources),
            strs(&requires),
            m.built(),
            m.prebuilt_wasm(),
            m.prebuilt_record(),
            bytes("include_bytes", m.wasm),
            bytes("include_str", &m.record()),
        )
        .expect("writing to a String");
    }
    code.push_str("];\n");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("modules.rs"), code).expect("OUT_DIR is writable");
}

/// Refuses a committed module whose bytes are not the ones its record names.
fn check(m: &list::Entry) {
    let record_file = m.record();
    for file in [m.wasm, &record_file] {
        println!("cargo::rerun-if-changed={file}");
    }
    let (wasm_path, record_path) = (m.prebuilt_wasm(), m.prebuilt_record());
    let wasm = std::fs::read(m.wasm).unwrap_or_else(|e| panic!("{wasm_path}: {e}"));
    let record =
        std::fs::read_to_string(&record_file).unwrap_or_else(|e| panic!("{record_path}: {e}"));
    let recorded = record
        .lines()
        .find_map(|l| l.strip_prefix("module-sha256 "))
        .unwrap_or_else(|| panic!("{record_path} has no module-sha256 line"));
    let actual = hex(&Sha256::digest(&wasm));
    if recorded != actual {
        panic!(
            "{wasm_path} (sha256 {actual}) is not the module {record_file} names ({recorded}); \
             run scripts/update-prebuilt-canister.sh"
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
