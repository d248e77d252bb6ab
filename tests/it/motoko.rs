//! A real Motoko canister, compiled by moc with enhanced orthogonal persistence (its
//! default): a wasm64 module whose state lives in the heap. `tests/motoko_fixture/` holds
//! the source and the committed module (`scripts/build-motoko-fixture.sh` rebuilds it).
//! The engine must run it and treat its upgrades as the replica does.

use candid::{Decode, Encode, Nat, Principal};
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::{CallOutcome, Engine, ErrorCode, UpgradeOptions, WasmMemoryPersistence};

const COUNTER: &[u8] = include_bytes!("../motoko_fixture/counter.wasm");

fn nat(out: CallOutcome) -> u64 {
    let reply = out.result.expect("a reply");
    let n = Decode!(&reply, Nat).expect("a Nat");
    u64::try_from(n.0).unwrap()
}

/// Upgrades the canister to the same module with `wasm_memory_persistence` set.
fn upgrade(
    e: &mut EmbeddedEngine,
    id: Principal,
    persistence: WasmMemoryPersistence,
) -> CallOutcome {
    let options = UpgradeOptions {
        skip_pre_upgrade: false,
        wasm_memory_persistence: Some(persistence),
    };
    e.upgrade_with(id, COUNTER, &Encode!().unwrap(), options)
        .unwrap()
}

#[test]
fn the_module_is_wasm64_with_the_persistence_metadata() {
    let mut memory64 = None;
    let mut metadata = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(COUNTER) {
        match payload.unwrap() {
            wasmparser::Payload::MemorySection(r) => {
                memory64 = Some(r.into_iter().next().unwrap().unwrap().memory64);
            }
            wasmparser::Payload::CustomSection(c) => metadata.push(c.name().to_string()),
            _ => {}
        }
    }
    assert_eq!(memory64, Some(true));
    assert!(
        metadata
            .iter()
            .any(|n| n.ends_with(" enhanced-orthogonal-persistence")),
        "{metadata:?}"
    );
}

/// Every call of the scenario below, with its instruction count, for the determinism check.
fn scenario() -> Vec<(String, u64)> {
    let mut log = Vec::new();
    let mut e = EmbeddedEngine::default();
    let (id, install) = e.install(COUNTER, &Encode!().unwrap()).unwrap();
    install.result.clone().unwrap();
    log.push(("install".to_string(), install.report.instructions));
    let mut call = |what: &str, out: CallOutcome| {
        log.push((what.to_string(), out.report.instructions));
        out
    };

    let out = e.update(id, "inc", &Encode!().unwrap()).unwrap();
    assert_eq!(nat(call("inc", out)), 1);
    let out = e.update(id, "inc", &Encode!().unwrap()).unwrap();
    assert_eq!(nat(call("inc", out)), 2);

    // A million-element array: the 64-bit heap grows.
    let out = e
        .update(id, "allocate", &Encode!(&Nat::from(1_000_000u64)).unwrap())
        .unwrap();
    let grew = out.report.heap_bytes_after > out.report.heap_bytes_before;
    assert_eq!(nat(call("allocate", out)), 1_000_000);
    assert!(grew, "allocating a million elements grows the heap");

    // Without the option the replica refuses, and nothing changes.
    let out = e.upgrade(id, COUNTER, &Encode!().unwrap()).unwrap();
    let err = call("upgrade", out).result.unwrap_err();
    assert_eq!(err.error_code, ErrorCode::CanisterContractViolation);
    assert_eq!(
        err.message,
        "Missing upgrade option: Enhanced orthogonal persistence requires the \
         `wasm_memory_persistence` upgrade option."
    );
    let out = e.query(id, "get", &Encode!().unwrap()).unwrap();
    assert_eq!(nat(call("get", out)), 2);

    // Keep: the new instance runs on the old heap, literals included.
    let out = upgrade(&mut e, id, WasmMemoryPersistence::Keep);
    call("upgrade keep", out).result.unwrap();
    let out = e.update(id, "inc", &Encode!().unwrap()).unwrap();
    assert_eq!(nat(call("inc", out)), 3);
    let out = e.query(id, "hello", &Encode!().unwrap()).unwrap();
    let reply = call("hello", out).result.unwrap();
    assert_eq!(Decode!(&reply, String).unwrap(), "hello, persistent world");

    // Replace: a fresh heap, so a fresh counter.
    let out = upgrade(&mut e, id, WasmMemoryPersistence::Replace);
    call("upgrade replace", out).result.unwrap();
    let out = e.query(id, "get", &Encode!().unwrap()).unwrap();
    assert_eq!(nat(call("get", out)), 0);
    log
}

#[test]
fn a_motoko_canister_runs_and_upgrades_as_on_the_replica_deterministically() {
    let first = scenario();
    assert_eq!(first, scenario());
}

mod stores;
