//! The test of the package tests/interfaces (`cargo test --release -p icbench-interfaces`,
//! run by .ci/run), not of icbench: it is the only one that needs candid_parser, whose
//! grammar, template and parser-generator crates (about 100 build units, 80 to 90 s of CPU
//! on 2 cores) the README's `cargo test --release` then does not wait for.
//!
//! The benchmark canister's interface is stated once, in canisters/bench/bench.did, and
//! this test holds the built wasm to it:
//!   1. the `icp:public candid:service` section of target/canister/bench.wasm is bench.did;
//!   2. the wasm exports `canister_query NAME` / `canister_update NAME` for exactly the
//!      methods of bench.did, with the same query/update mode;
//!   3. the interface the Rust code generates (`get_candid_pointer`, from
//!      `ic_cdk::export_candid!`) is structurally equal to bench.did, argument and result
//!      types included;
//!   4. the module imports nothing but `ic0` (the WASI imports were all rewired).
//!
//! It checks the module the CLI runs for the current sources (`ensure_built_with`: the
//! committed canisters/prebuilt module when it is of these sources, else a build), so it
//! never checks a stale wasm; `prebuilt_canister_is_of_the_current_sources` keeps the
//! committed module in step with the sources, and .ci/run checks its bytes against a build.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use candid_parser::candid::types::FuncMode;
use candid_parser::utils::{service_equal, CandidSource};
use wasmparser::{Parser, Payload};

/// The checkout: this file's package is tests/interfaces.
fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn did_text() -> String {
    let path = root().join("canisters/bench/bench.did");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The module of the current sources, once per test process.
fn canister_wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| {
        icbench::bench_canister::ensure_built_with(true, None)
            .unwrap_or_else(|e| panic!("building the bench canister: {e:#}"))
    })
}

/// The committed module is the one of the sources in this checkout: after a change to the
/// canister, its build script, the converter or the toolchain pin, this fails until
/// scripts/update-prebuilt-canister.sh has rebuilt and recorded it (the CLI would otherwise
/// build the canister on every fresh clone).
#[test]
fn prebuilt_canister_is_of_the_current_sources() {
    let found = icbench::bench_canister::prebuilt_for_current_sources(root())
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert!(
        found.is_some(),
        "canisters/prebuilt/bench.wasm is not the module of the current canister sources; \
         run scripts/update-prebuilt-canister.sh and commit canisters/prebuilt"
    );
}

struct ModuleFacts {
    candid_section: Option<Vec<u8>>,
    /// (`query` | `update` | `composite_query`, method name)
    endpoints: BTreeSet<(String, String)>,
    imports: Vec<(String, String)>,
}

fn module_facts(wasm: &[u8]) -> ModuleFacts {
    let mut facts = ModuleFacts {
        candid_section: None,
        endpoints: BTreeSet::new(),
        imports: Vec::new(),
    };
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.expect("the canister wasm parses") {
            Payload::CustomSection(section) if section.name() == "icp:public candid:service" => {
                assert!(
                    facts.candid_section.is_none(),
                    "two candid:service sections"
                );
                facts.candid_section = Some(section.data().to_vec());
            }
            Payload::ExportSection(exports) => {
                for export in exports {
                    let export = export.expect("export entry parses");
                    for (prefix, kind) in [
                        ("canister_query ", "query"),
                        ("canister_update ", "update"),
                        ("canister_composite_query ", "composite_query"),
                    ] {
                        if let Some(method) = export.name.strip_prefix(prefix) {
                            facts
                                .endpoints
                                .insert((kind.to_string(), method.to_string()));
                        }
                    }
                }
            }
            Payload::ImportSection(imports) => {
                for import in imports.into_imports() {
                    let import = import.expect("import entry parses");
                    facts
                        .imports
                        .push((import.module.to_string(), import.name.to_string()));
                }
            }
            _ => {}
        }
    }
    facts
}

/// The methods a .did declares, as the wasm export they need.
fn did_endpoints(did: &str) -> BTreeSet<(String, String)> {
    let (env, actor) = CandidSource::Text(did)
        .load()
        .unwrap_or_else(|e| panic!("bench.did does not type-check: {e}"));
    let actor = actor.expect("bench.did has a service");
    let methods = env.as_service(&actor).expect("the service resolves");
    methods
        .iter()
        .map(|(name, ty)| {
            let func = env.as_func(ty).expect("a method is a function");
            let kind = if func.modes.contains(&FuncMode::CompositeQuery) {
                "composite_query"
            } else if func.modes.contains(&FuncMode::Query) {
                "query"
            } else {
                "update"
            };
            (kind.to_string(), name.clone())
        })
        .collect()
}

#[test]
fn embedded_candid_section_is_bench_did() {
    let facts = module_facts(canister_wasm());
    let section = facts
        .candid_section
        .expect("bench.wasm has no `icp:public candid:service` section");
    assert!(
        section == did_text().as_bytes(),
        "the candid:service section differs from canisters/bench/bench.did; rebuild with scripts/build-canister.sh"
    );
}

#[test]
fn exported_methods_are_exactly_the_did_methods() {
    let exported = module_facts(canister_wasm()).endpoints;
    let declared = did_endpoints(&did_text());
    let missing: Vec<_> = declared.difference(&exported).collect();
    let undeclared: Vec<_> = exported.difference(&declared).collect();
    assert!(
        missing.is_empty() && undeclared.is_empty(),
        "bench.did and the wasm exports disagree:\n  in bench.did, not exported: {missing:?}\n  exported, not in bench.did: {undeclared:?}"
    );
}

#[test]
fn only_ic0_is_imported() {
    let imports = module_facts(canister_wasm()).imports;
    let foreign: Vec<_> = imports.iter().filter(|(m, _)| m != "ic0").collect();
    assert!(foreign.is_empty(), "non-ic0 imports: {foreign:?}");
    assert!(!imports.is_empty(), "a canister imports ic0 functions");
}

/// Runs the wasm's `get_candid_pointer` (every import a trap: it needs none) and returns
/// the interface text the Rust code generates.
fn generated_candid(wasm: &[u8]) -> String {
    use wasmtime::{Config, Engine, Linker, Module, OptLevel, RegallocAlgorithm, Store};
    // One call of the whole canister's code (SQLite included): cranelift's fastest settings
    // compile it in less than half the CPU time of the default ones, and the text it returns
    // does not depend on how well the code is optimized.
    let mut config = Config::new();
    config
        .cranelift_opt_level(OptLevel::None)
        .cranelift_regalloc_algorithm(RegallocAlgorithm::SinglePass);
    let engine = Engine::new(&config).expect("a valid wasmtime configuration");
    let module = Module::new(&engine, wasm).expect("wasmtime compiles the canister");
    let mut linker = Linker::new(&engine);
    linker
        .define_unknown_imports_as_traps(&module)
        .expect("trap stubs for the imports");
    let mut store = Store::new(&engine, ());
    let instance = linker
        .instantiate(&mut store, &module)
        .expect("the canister instantiates (its start function calls no import)");
    let get = instance
        .get_typed_func::<(), i32>(&mut store, "get_candid_pointer")
        .expect("the canister exports get_candid_pointer (ic_cdk::export_candid!)");
    let ptr = get.call(&mut store, ()).expect("get_candid_pointer runs") as u32 as usize;
    let memory = instance
        .get_memory(&mut store, "memory")
        .expect("the canister exports its memory");
    let data = memory.data(&store);
    let len = data[ptr..]
        .iter()
        .position(|&b| b == 0)
        .expect("NUL-terminated candid");
    String::from_utf8(data[ptr..ptr + len].to_vec()).expect("candid is UTF-8")
}

#[test]
fn code_interface_equals_bench_did() {
    let generated = generated_candid(canister_wasm());
    if let Err(e) = service_equal(
        CandidSource::Text(&generated),
        CandidSource::Text(&did_text()),
    ) {
        panic!(
            "the canister code and canisters/bench/bench.did disagree: {e}\n--- generated by the code:\n{generated}"
        );
    }
}

// ---- the tune variant (canisters/prebuilt/bench-tune.wasm) -----------------------------

/// The tune variant module of the current sources, once per test process.
fn tune_wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| {
        icbench::bench_canister::Module::TUNE
            .ensure_built_with(true, None)
            .unwrap_or_else(|e| panic!("building the tune variant: {e:#}"))
    })
}

/// As `prebuilt_canister_is_of_the_current_sources`, for the tune variant.
#[test]
fn prebuilt_tune_variant_is_of_the_current_sources() {
    let found = icbench::bench_canister::Module::TUNE
        .prebuilt_for_current_sources(root())
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert!(
        found.is_some(),
        "canisters/prebuilt/bench-tune.wasm is not the module of the current canister sources; \
         run scripts/update-prebuilt-canister.sh and commit canisters/prebuilt"
    );
}

/// The variant is the default module plus the `btree_bounded` store's methods: it embeds
/// bench.did, exports every method of it with the same mode and those methods besides, and
/// imports only ic0. Its generated interface is bench.did's (the store's module is declared
/// after `export_candid!`, so the default module's code keeps its lines).
#[test]
fn the_tune_variant_is_the_default_interface_plus_the_bounded_store() {
    let facts = module_facts(tune_wasm());
    assert!(facts.candid_section.as_deref() == Some(did_text().as_bytes()));
    let declared = did_endpoints(&did_text());
    let extra: BTreeSet<(String, String)> =
        facts.endpoints.difference(&declared).cloned().collect();
    let expected: BTreeSet<(String, String)> = [
        ("update", "add_users_btree_bounded"),
        ("update", "add_users_btree_bounded_ids"),
        ("query", "get_users_btree_bounded"),
        ("update", "get_users_btree_bounded_update"),
        ("query", "get_users_btree_bounded_ids"),
        ("update", "get_users_btree_bounded_ids_update"),
        ("query", "scan_users_btree_bounded"),
        ("update", "scan_users_btree_bounded_update"),
        ("update", "clear_btree_bounded"),
    ]
    .into_iter()
    .map(|(k, m)| (k.to_string(), m.to_string()))
    .collect();
    assert_eq!(extra, expected);
    assert!(declared.is_subset(&facts.endpoints));
    assert!(facts.imports.iter().all(|(m, _)| m == "ic0"));
    if let Err(e) = service_equal(
        CandidSource::Text(&generated_candid(tune_wasm())),
        CandidSource::Text(&did_text()),
    ) {
        panic!("the tune variant's generated interface is not bench.did: {e}");
    }
}

// ---- the ic-sqlite-vfs canister (the module list's `sqlite-vfs`) -----------------------
// (tests/it/modules.rs holds every committed module to its sources)

fn vfs_did_text() -> String {
    let path = root().join("canisters/sqlite-vfs/sqlite-vfs.did");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The module of the current sources, as the CLI runs it.
fn vfs_wasm() -> Vec<u8> {
    icbench::bench_canister::Module::SQLITE_VFS
        .ensure_built_with(true, None)
        .unwrap_or_else(|e| panic!("building the sqlite-vfs canister: {e:#}"))
}

/// The module embeds sqlite-vfs.did, exports exactly its methods with their modes, and its
/// code generates the same interface.
#[test]
fn the_sqlite_vfs_module_is_its_did() {
    let wasm = vfs_wasm();
    let facts = module_facts(&wasm);
    assert!(
        facts.candid_section.as_deref() == Some(vfs_did_text().as_bytes()),
        "the candid:service section of sqlite-vfs.wasm is not canisters/sqlite-vfs/sqlite-vfs.did"
    );
    assert_eq!(facts.endpoints, did_endpoints(&vfs_did_text()));
    assert!(facts.imports.iter().all(|(m, _)| m == "ic0"));
    let generated = generated_candid(&wasm);
    if let Err(e) = service_equal(
        CandidSource::Text(&generated),
        CandidSource::Text(&vfs_did_text()),
    ) {
        panic!("the sqlite-vfs code and sqlite-vfs.did disagree: {e}\n--- generated:\n{generated}");
    }
}

/// Its records are bench.did's (the bench canister's client decodes its replies), and its
/// methods are the bench canister's SQLite methods with the stem `sqlite_vfs`.
#[test]
fn the_sqlite_vfs_interface_is_the_bench_sqlite_stores_renamed() {
    let (bench_env, _) = CandidSource::Text(&did_text()).load().unwrap();
    let (vfs_env, _) = CandidSource::Text(&vfs_did_text()).load().unwrap();
    for name in [
        "InsertReport",
        "ReadReport",
        "SqliteConfig",
        "SqliteSettings",
        "Stats",
        "InsertResult",
        "ReadResult",
        "ConfigureResult",
        "Nat64Result",
    ] {
        assert_eq!(
            vfs_env.find_type(name).unwrap(),
            bench_env.find_type(name).unwrap(),
            "{name}"
        );
    }
    let renamed: BTreeSet<(String, String)> = did_endpoints(&vfs_did_text())
        .into_iter()
        .map(|(kind, m)| {
            let m = match m.as_str() {
                "configure_sqlite_vfs" => "configure_sqlite".to_string(),
                "clear_sqlite_vfs" => "clear_sqlite".to_string(),
                _ => m.replacen("_sqlite_vfs", "_sqlite", 1),
            };
            (kind, m)
        })
        .collect();
    let bench = did_endpoints(&did_text());
    assert!(
        renamed.is_subset(&bench),
        "not methods of bench.did: {:?}",
        renamed.difference(&bench).collect::<Vec<_>>()
    );
    for method in [
        "add_users_sqlite",
        "get_users_sqlite_ids_update",
        "scan_users_sqlite",
    ] {
        assert!(renamed.iter().any(|(_, m)| m == method), "{method}");
    }
}
