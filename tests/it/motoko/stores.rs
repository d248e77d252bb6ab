//! icbench's Motoko canister (canisters/motoko, built by moc from npm): the committed
//! module is of its sources and embeds its interface; its three stores count exactly under
//! both vintages; the region store takes no empty value at the region's end; an upgrade that
//! keeps the heap keeps every row; and the collector's increments land in known messages.
//! The same canister with classical persistence serializes its Map on upgrade, and the
//! upgrade suite counts that exactly.
//!
//! Its calls are the bench canister's users calls with the stems `mo_map`, `mo_pure_map`
//! and `mo_region`, so the bench canister's client drives it.

use candid::Encode;
use icbench::bench_canister::{BenchClient, IdSequence, Module};
use icbench::engine::cost::Replica;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::{Engine, UpgradeOptions, WasmMemoryPersistence};
use wasmparser::{Parser, Payload};

use crate::support::small_store::{default_calls, table, Counts, CALLS};

const STEMS: [&str; 3] = ["mo_map", "mo_pure_map", "mo_region"];
const DID: &str = "canisters/motoko/motoko.did";

fn read(rel: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

fn wasm() -> &'static [u8] {
    Module::MOTOKO
        .embedded()
        .expect("the committed motoko module is of its sources")
}

/// The module list's entry `name` is `module`, built by `recipe`, and its committed file is
/// the module the binary embeds.
fn listed(name: &str, module: Module, recipe: &str) {
    let m = Module::named(name).unwrap_or_else(|| panic!("the list has {name}"));
    assert_eq!(m, module);
    assert_eq!(m.listing().recipe, recipe);
    let embedded = m
        .embedded()
        .unwrap_or_else(|| panic!("the committed {name} module is of its sources"));
    assert_eq!(embedded, &read(m.prebuilt_wasm)[..]);
}

#[test]
fn the_module_list_builds_it_with_moc_and_its_record_names_the_compiler() {
    listed(
        "motoko",
        Module::MOTOKO,
        "canisters/motoko moc - none canisters/motoko/motoko.did",
    );
    for (name, stem) in [
        ("mo-map", "mo_map"),
        ("mo-pure-map", "mo_pure_map"),
        ("mo-region", "mo_region"),
    ] {
        let kind = icbench::stores::find(name).expect("a store of the table");
        assert_eq!((kind.module(), kind.stem()), (Module::MOTOKO, stem));
    }
    // The compiler's version string, in the module and in its record.
    let mut compiler = None;
    let mut service = None;
    for payload in Parser::new(0).parse_all(wasm()) {
        if let Payload::CustomSection(s) = payload.unwrap() {
            match s.name() {
                "icp:private motoko:compiler" => compiler = Some(s.data().to_vec()),
                "icp:public candid:service" => service = Some(s.data().to_vec()),
                _ => {}
            }
        }
    }
    let compiler = String::from_utf8(compiler.expect("moc records itself")).unwrap();
    let record = String::from_utf8(read("canisters/prebuilt/motoko.sources")).unwrap();
    assert!(
        record.lines().any(|l| l == format!("moc {compiler}")),
        "{record}"
    );
    // The interface moc embeds, public as dfx makes it, is the committed did.
    assert_eq!(service.expect("a public candid:service"), read(DID));
}

/// The classical module: main.mo again, built with moc's --legacy-persistence (its one
/// feature), a 32-bit memory; the store `mo-map-classic` is its Map, measured by the suites
/// where the persistence differs.
#[test]
fn the_classical_module_is_main_mo_with_legacy_persistence_in_32_bits() {
    listed(
        "motoko-classic",
        Module::MOTOKO_CLASSIC,
        "canisters/motoko moc legacy-persistence none canisters/motoko/motoko.did",
    );
    let wasm = classic_wasm();
    let memories: Vec<bool> = Parser::new(0)
        .parse_all(wasm)
        .filter_map(|p| match p.unwrap() {
            Payload::MemorySection(r) => Some(
                r.into_iter()
                    .map(|m| m.unwrap().memory64)
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(memories, [false]);
    assert_ne!(wasm, self::wasm());
    let kind = icbench::stores::find("mo-map-classic").expect("a store of the table");
    assert_eq!(
        (kind.module(), kind.stem()),
        (Module::MOTOKO_CLASSIC, "mo_map")
    );
    assert!(kind.saved_on_upgrade() && kind.encodings().is_empty());
    let suites: Vec<&str> = icbench::suites::REGISTRY
        .iter()
        .map(|s| s.name())
        .filter(|s| kind.measured_by(s))
        .collect();
    assert_eq!(suites, ["upgrade", "scaling"]);
}

fn classic_wasm() -> &'static [u8] {
    Module::MOTOKO_CLASSIC
        .embedded()
        .expect("the committed motoko-classic module is of its sources")
}

/// Classical persistence: a plain upgrade (no `keep`) serializes the Map into stable memory
/// and reads it back, so the rows stay; the 32-bit heap after it is a new one.
#[test]
fn a_classical_upgrade_serializes_the_map_and_keeps_its_rows() {
    let mut engine = EmbeddedEngine::default();
    let id = {
        let mut c = BenchClient::install(&mut engine, classic_wasm()).unwrap();
        let added = c.add_users("mo_map", IdSequence::new(0, 10, 100)).unwrap();
        assert_eq!(added.value.unwrap().rows_inserted, 100);
        assert!(!added.message.wasm64);
        c.canister
    };
    let stable_before = BenchClient::attach(&mut engine, id)
        .stats()
        .unwrap()
        .stable_pages;
    let out = engine
        .upgrade(id, classic_wasm(), &Encode!().unwrap())
        .unwrap();
    out.result.unwrap();
    let mut c = BenchClient::attach(&mut engine, id);
    assert_eq!(c.motoko_stats().unwrap().map_rows, 100);
    let v = c
        .scan_users("mo_map", 0, 1_000, false)
        .unwrap()
        .value
        .unwrap();
    assert_eq!((v.rows_found, v.bytes_read), (100, 10_000));
    assert!(c.stats().unwrap().stable_pages > stable_before);
}

/// [`default_calls`] of the store of `stem`, on a new canister.
fn small_store(replica: Replica, stem: &str) -> Vec<Counts> {
    let mut engine = EmbeddedEngine::default().with_replica(replica);
    let mut c = BenchClient::install(&mut engine, wasm()).unwrap();
    default_calls(&mut c, stem)
}

/// Each store's small-store calls (fill, insert, 1 and 100 keys, scan). Since the memory
/// tracker (2026-07) a call pays 80,000 instructions per Wasm page it touches and as much
/// again per page it writes, queries included (a Motoko query allocates: it writes pages);
/// before it (2026-05) 1,000 per 4 KiB heap page an update writes. The pages are the same
/// under both.
#[test]
fn each_store_counts_exactly_under_both_vintages() {
    let vintages = [Replica::R2026_07, Replica::R2026_05];
    let measured = vintages.map(|r| STEMS.map(|stem| small_store(r, stem)));
    let [now, before] = &measured;
    for (now, before) in now.iter().flatten().zip(before.iter().flatten()) {
        assert_eq!(now.touched(), before.touched());
    }
    let mut counts = table(&["vintage", "store", "call"]);
    for (replica, stores) in vintages.iter().zip(&measured) {
        for (stem, calls) in STEMS.iter().zip(stores) {
            for (call, c) in CALLS.iter().zip(calls) {
                counts.row(c.row(&[replica.name, stem, call]));
            }
        }
    }
    insta::assert_snapshot!(counts.to_string());
}

/// Why the store table gives mo-region values of at least one byte (`min_value_size`): an
/// empty value stored where the region ends traps. Each row takes its 4 length bytes, so the
/// 16,384th fills the first 64 KiB page and its empty value lands at the region's end.
#[test]
fn the_region_store_refuses_an_empty_value_at_the_region_s_end() {
    let mut engine = EmbeddedEngine::default();
    let mut c = BenchClient::install(&mut engine, wasm()).unwrap();
    assert_eq!(c.set_payload_size(0).unwrap().value, Ok(0));
    c.add_users("mo_region", IdSequence::new(0, 1, 16_383))
        .unwrap()
        .value
        .unwrap();
    let err = c
        .add_users("mo_region", IdSequence::new(16_383, 1, 1))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("Region error: offset out of bounds"),
        "{err}"
    );
    let region = icbench::stores::find("mo-region").unwrap();
    assert_eq!(region.def().min_value_size, 1);
}

/// Enhanced orthogonal persistence: an upgrade with `wasm_memory_persistence = keep` keeps
/// the heap, so every store keeps its rows with nothing serialized; the replica refuses an
/// upgrade without it, and the rows stay.
#[test]
fn an_upgrade_that_keeps_the_heap_keeps_every_store_s_rows() {
    let mut engine = EmbeddedEngine::default();
    let id = {
        let mut c = BenchClient::install(&mut engine, wasm()).unwrap();
        for stem in STEMS {
            assert_eq!(
                c.add_users(stem, IdSequence::new(0, 10, 100))
                    .unwrap()
                    .value
                    .unwrap()
                    .rows_inserted,
                100
            );
        }
        c.canister
    };
    let rows = |engine: &mut EmbeddedEngine| {
        let s = BenchClient::attach(engine, id).motoko_stats().unwrap();
        (s.map_rows, s.pure_map_rows, s.region_rows)
    };
    let refused = engine.upgrade(id, wasm(), &Encode!().unwrap()).unwrap();
    assert!(refused.result.is_err());
    assert_eq!(rows(&mut engine), (100, 100, 100));
    let options = UpgradeOptions {
        skip_pre_upgrade: false,
        wasm_memory_persistence: Some(WasmMemoryPersistence::Keep),
    };
    let kept = engine
        .upgrade_with(id, wasm(), &Encode!().unwrap(), options)
        .unwrap();
    kept.result.unwrap();
    assert_eq!(rows(&mut engine), (100, 100, 100));
    let mut c = BenchClient::attach(&mut engine, id);
    for stem in STEMS {
        let v = c.scan_users(stem, 0, 1_000, false).unwrap().value.unwrap();
        assert_eq!((v.rows_found, v.bytes_read), (100, 10_000), "{stem}");
    }
}

/// The collector runs after update messages, never inside one: filling the map 10,000 rows
/// a message from an empty canister, the first collection starts after the 14th message
/// and ends in that message's increment (603,850,966 instructions beside the message's own
/// 128,592,464); the other messages' cleanup, with no collection under way or due, costs
/// 330. Then one empty message finds the collector idle.
#[test]
fn the_collector_s_increments_land_in_known_messages() {
    let mut engine = EmbeddedEngine::default();
    let mut c = BenchClient::install(&mut engine, wasm()).unwrap();
    let mut collector = Vec::new();
    for i in 0..20 {
        let r = c
            .add_users("mo_map", IdSequence::new(i * 100_000, 10, 10_000))
            .unwrap();
        r.value.unwrap();
        let s = c.motoko_stats().unwrap();
        // What the message was charged is its own work, the increment after it and the 19
        // instructions of the cleanup after its last reading of the counter.
        assert_eq!(
            r.message.instructions,
            s.mutator_instructions + s.collector_instructions + 19,
            "message {i}"
        );
        collector.push(s.collector_instructions);
        if i == 13 {
            assert_eq!(s.mutator_instructions, 128_592_464);
        }
    }
    let mut expected = [330; 20];
    expected[13] = 603_850_966;
    assert_eq!(collector, expected);
    assert_eq!(icbench::stores::settle_collector(&mut c).unwrap(), 1);
}

/// `--suite upgrade` of one store at two sizes, without the limit run: its records by
/// rows and operation, each ok (instructions, cycles).
fn upgrade_suite(store: &str, sizes: &str) -> impl Fn(u64, &str) -> (u64, u64) {
    let out = crate::support::scratch_dir(&format!("motoko_upgrade_suite_{store}"));
    crate::support::output_ok(
        crate::support::icbench_command()
            .args(["--quiet", "--suite", "upgrade", "--stores", store])
            .args(["--upgrade-sizes", sizes, "--no-limit-run", "--jobs", "1"])
            .arg("--out")
            .arg(&out),
    );
    let text = std::fs::read_to_string(out.join("upgrade/results.json")).unwrap();
    let report = icbench::report::from_json(&text).unwrap();
    let store = store.to_string();
    move |rows, operation| {
        let r = report
            .results
            .iter()
            .find(|r| r.store == store && r.rows_before == rows && r.operation == operation)
            .unwrap_or_else(|| panic!("no {operation} at {rows}"));
        assert_eq!(
            r.status,
            icbench::report::Status::Ok,
            "{operation} at {rows}"
        );
        (r.instructions, r.cycles)
    }
}

/// The upgrade suite upgrades a Motoko store with `keep` (nothing serialized: the hooks do
/// not grow with the rows) and charges its instructions at the Wasm64 rate: 2 cycles per
/// instruction beside the 5,000,000 of the message.
#[test]
fn the_upgrade_suite_keeps_the_heap_and_charges_the_wasm64_rate() {
    let of = upgrade_suite("mo-map", "1000,2000");
    for rows in [1_000, 2_000] {
        assert_eq!(of(rows, "pre_upgrade").0, 561_657, "{rows}");
        let (upgrade, cycles) = of(rows, "upgrade");
        assert_eq!(cycles, 5_000_000 + 2 * upgrade, "{rows}");
    }
    assert_eq!(of(1_000, "upgrade").0, 1_097_531_183);
}

/// The upgrade suite upgrades the classical Map by serializing it: pre_upgrade and
/// post_upgrade grow with the rows (exact counts at 1,000 and 10,000 rows), the whole
/// install_code is charged at the Wasm32 rate (1 cycle per instruction), and the first calls
/// after it find the rows.
#[test]
fn the_upgrade_suite_counts_the_classical_serialization() {
    let of = upgrade_suite("mo-map-classic", "1000,10000");
    assert_eq!(of(1_000, "pre_upgrade").0, 2_158_559);
    assert_eq!(of(10_000, "pre_upgrade").0, 15_417_848);
    assert_eq!(of(1_000, "post_upgrade").0, 5_008_967);
    assert_eq!(of(10_000, "post_upgrade").0, 60_416_842);
    for rows in [1_000, 10_000] {
        let (upgrade, cycles) = of(rows, "upgrade");
        assert_eq!(cycles, 5_000_000 + upgrade, "{rows}");
        of(rows, "first_query");
        of(rows, "first_update");
    }
    assert_eq!(of(10_000, "upgrade").0, 1_105_633_072);
}
