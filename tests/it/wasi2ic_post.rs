//! The WASI -> IC rewiring of scripts/wasi2ic-post (run here: `cargo test` tests the root
//! package only, and icbench links the converter).

use wasi2ic_post::rewire::{foreign_imports, rewire_wasi};
use wasi2ic_post::walrus::{self, ElementItems, Module};

fn parse(wat_src: &str) -> Module {
    let bytes = wat::parse_str(wat_src).unwrap();
    walrus::ModuleConfig::new().parse(&bytes).unwrap()
}

const MODULE: &str = r#"(module
    (import "ic0" "msg_reply" (func $reply))
    (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
    (table (export "table") 2 funcref)
    (elem (i32.const 0) $fd_write)
    (func $impl (export "__ic_custom_fd_write") (param i32 i32 i32 i32) (result i32) i32.const 7)
    (func $init (export "_initialize"))
    (func (export "canister_update go")
        (drop (call $fd_write (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0)))
        call $reply))"#;

#[test]
fn calls_and_table_entries_point_at_the_polyfill_and_the_import_is_gone() {
    let mut m = parse(MODULE);
    assert_eq!(rewire_wasi(&mut m).unwrap(), 1);
    assert_eq!(foreign_imports(&m), Vec::<String>::new());
    let imports: Vec<_> = m.imports.iter().map(|i| i.name.clone()).collect();
    assert_eq!(imports, ["msg_reply"]);
    let implementation = m.funcs.by_name("impl").unwrap();
    let table_entries: Vec<_> = m
        .elements
        .iter()
        .flat_map(|e| match &e.items {
            ElementItems::Functions(ids) => ids.clone(),
            _ => vec![],
        })
        .collect();
    assert_eq!(table_entries, [implementation]);
    assert_eq!(m.start, m.funcs.by_name("init"));
    assert!(m.exports.iter().all(|e| e.name != "_initialize"));
    // The rewritten module is valid wasm.
    walrus::ModuleConfig::new().parse(&m.emit_wasm()).unwrap();
}

#[test]
fn a_wasi_import_without_implementation_is_named() {
    let mut m =
        parse(r#"(module (import "wasi_snapshot_preview1" "proc_exit" (func (param i32))))"#);
    let err = rewire_wasi(&mut m).unwrap_err().to_string();
    assert!(err.contains("wasi_snapshot_preview1.proc_exit"), "{err}");
}

#[test]
fn a_type_mismatch_is_refused() {
    let mut m = parse(
        r#"(module (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))
             (func (export "__ic_custom_proc_exit") (param i64)))"#,
    );
    let err = rewire_wasi(&mut m).unwrap_err().to_string();
    assert!(err.contains("does not have the type"), "{err}");
}

/// A module with no WASI import (a wasm32-unknown-unknown build): `embed_did` (the build's
/// `--no-rewire`) embeds the interface and leaves the code alone, where `convert` refuses
/// it; a WASI import left in such a module is still refused.
#[test]
fn without_rewiring_only_the_interface_is_embedded() {
    let dir = crate::support::scratch_dir("wasi2ic-embed-did");
    let did = dir.join("x.did");
    std::fs::write(&did, "service : { go : () -> () }\n").unwrap();
    let plain = wat::parse_str(
        r#"(module (import "ic0" "msg_reply" (func $reply))
             (func (export "canister_update go") call $reply))"#,
    )
    .unwrap();
    let err = wasi2ic_post::convert(&plain, Some(&did)).unwrap_err();
    assert!(
        format!("{err:#}").contains("no WASI import to rewire"),
        "{err:#}"
    );
    let out = wasi2ic_post::embed_did(&plain, Some(&did)).unwrap();
    let section = wasmparser::Parser::new(0)
        .parse_all(&out)
        .find_map(|p| match p.unwrap() {
            wasmparser::Payload::CustomSection(c) if c.name() == "icp:public candid:service" => {
                Some(c.data().to_vec())
            }
            _ => None,
        });
    assert_eq!(
        section.as_deref(),
        Some(&b"service : { go : () -> () }\n"[..])
    );
    let m = walrus::ModuleConfig::new().parse(&out).unwrap();
    let imports: Vec<_> = m.imports.iter().map(|i| i.name.clone()).collect();
    assert_eq!(imports, ["msg_reply"]);
    let err = wasi2ic_post::embed_did(&wat::parse_str(MODULE).unwrap(), None).unwrap_err();
    assert!(
        format!("{err:#}").contains("wasi_snapshot_preview1.fd_write"),
        "{err:#}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
