//! The cache: a module loaded from it has exactly the facts of the module compiled (so the
//! counts cannot move), a post-prefill state loaded from it continues exactly as the one
//! prefilled, damaged or foreign entries are made again and replaced, a cache that cannot
//! be written only costs a warning, and the CLI honors ICBENCH_CACHE_DIR and
//! `icbench cache clear`. Every test uses a directory of its own.

use std::path::{Path, PathBuf};
use std::process::Output;

use icbench::engine::disk_cache::{self, MODULES};
use icbench::engine::embedded::{
    load_module, load_module_cached, load_module_kept, EmbeddedEngine, Origin,
};
use icbench::engine::instrument::Counter;
use icbench::engine::Engine;
use icbench::report;

use crate::support::{
    cache_entries, cache_entry, icbench_command, scratch_dir, the_cache_entry, TINY_RUN,
};

/// Two update methods and a query over a heap with data and a mutable global.
const PLAIN: &str = r#"(module
    (import "ic0" "msg_reply" (func $reply))
    (memory 1)
    (data (i32.const 16) "cached")
    (global $n (mut i32) (i32.const 0))
    (func $inc (global.set $n (i32.add (global.get $n) (i32.const 1))) (call $reply))
    (func $get (drop (i32.load (i32.const 16))) (call $reply))
    (export "canister_update inc" (func $inc))
    (export "canister_update inc2" (func $inc))
    (export "canister_query get" (func $get)))"#;

/// A 64-bit heap and a message that drops a data segment: both flags the cache keeps.
const WASM64_MUTATING: &str = r#"(module
    (import "ic0" "msg_reply" (func $reply))
    (memory i64 1)
    (data $d "x")
    (func $f (data.drop $d) (call $reply))
    (export "canister_update f" (func $f)))"#;

fn the_entry(dir: &Path) -> PathBuf {
    the_cache_entry(dir, MODULES)
}

#[test]
fn a_cached_module_has_the_facts_of_the_compiled_one() {
    for (name, wat, wasm64, fresh) in [
        ("plain", PLAIN, false, false),
        ("wasm64", WASM64_MUTATING, true, true),
    ] {
        let wasm = wat::parse_str(wat).unwrap();
        for counter in [Counter::Local, Counter::Global] {
            let dir = scratch_dir(&format!("facts-{name}-{counter:?}"));
            let (miss, origin) = load_module_cached(&wasm, counter, &dir).unwrap();
            assert_eq!(origin, Origin::Compiled);
            let (hit, origin) = load_module_cached(&wasm, counter, &dir).unwrap();
            assert_eq!(origin, Origin::Cache);
            assert_eq!(hit.facts(), miss.facts(), "{name} {counter:?}");
            let facts = hit.facts();
            assert_eq!(
                (facts.wasm64, facts.fresh_instance_per_message),
                (wasm64, fresh)
            );
            assert!(facts.compile_instructions > 0);
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    let dir = scratch_dir("facts-methods");
    let facts = load_module_cached(&wat::parse_str(PLAIN).unwrap(), Counter::Local, &dir)
        .unwrap()
        .0
        .facts();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(facts.update_methods, ["inc", "inc2"]);
    assert_eq!(facts.query_methods, ["get"]);
}

#[test]
fn a_kept_module_goes_through_the_given_directory_and_stays_for_the_process() {
    // A module no other test loads, so this process has not loaded it yet.
    let wasm = wat::parse_str(PLAIN.replace("inc2", "kept_inc2")).unwrap();
    let dir = scratch_dir("kept");
    let kept = load_module_kept(&wasm, Counter::Local, false, &dir).unwrap();
    let (stored, origin) = load_module_cached(&wasm, Counter::Local, &dir).unwrap();
    assert_eq!(
        origin,
        Origin::Cache,
        "the kept module was compiled into the directory"
    );
    assert_eq!(stored.facts(), kept.facts());
    let loaded = load_module(&wasm, Counter::Local).unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&loaded, &kept),
        "load_module uses the kept module"
    );
    // Kept already: taken from memory, the other directory stays empty.
    let other = scratch_dir("kept-other");
    let again = load_module_kept(&wasm, Counter::Local, false, &other).unwrap();
    assert!(std::sync::Arc::ptr_eq(&again, &kept));
    assert!(!other.join(MODULES).exists());
    // The profiled variant is a module of its own, compiled into its own entry.
    let profiled = load_module_kept(&wasm, Counter::Local, true, &other).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&profiled, &kept));
    the_entry(&other);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&other).unwrap();
}

#[test]
fn damaged_and_foreign_entries_are_compiled_again_and_replaced() {
    let dir = scratch_dir("damaged");
    let plain = wat::parse_str(PLAIN).unwrap();
    let load = |wasm: &[u8]| load_module_cached(wasm, Counter::Local, &dir).unwrap();
    let (compiled, _) = load(&plain);
    let want = compiled.facts();
    let path = the_entry(&dir);
    let good = std::fs::read(&path).unwrap();
    // Each damage: compiled again (same facts), and the entry is whole again afterwards.
    let check = |what: &str, bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        let (m, origin) = load(&plain);
        assert_eq!(origin, Origin::Compiled, "{what}");
        assert_eq!(m.facts(), want, "{what}");
        let (m, origin) = load(&plain);
        assert_eq!(origin, Origin::Cache, "{what}: replaced");
        assert_eq!(m.facts(), want, "{what}");
    };
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x20;
    check("a flipped byte", &flipped);
    check("truncated", &good[..good.len() / 2]);
    check("empty", b"");
    check("appended to", &[&good[..], b"tail"].concat());

    // A whole entry of another module copied over this one: not used for this module.
    let other_dir = scratch_dir("damaged-other");
    load_module_cached(
        &wat::parse_str(WASM64_MUTATING).unwrap(),
        Counter::Local,
        &other_dir,
    )
    .unwrap();
    check(
        "another module's entry",
        &std::fs::read(the_entry(&other_dir)).unwrap(),
    );

    // Entries with this key and an intact checksum whose contents are still wrong (made by
    // hand here): a payload wasmtime refuses, a flag byte that is neither 0 nor 1, an unknown counter
    // placement, a meta part cut short.
    let key: [u8; 32] = good[12..44].try_into().unwrap();
    let Ok(disk_cache::Lookup::Found(entry)) = disk_cache::read(&dir, MODULES, &key) else {
        panic!("the entry was replaced by a good one");
    };
    for (what, meta, payload) in [
        (
            "a payload that is not a module",
            entry.meta().to_vec(),
            b"not wasmtime's".to_vec(),
        ),
        (
            "a bad flag",
            [&entry.meta()[..8], &[2, 0, 1]].concat(),
            entry.payload().to_vec(),
        ),
        (
            "a bad counter placement",
            [&entry.meta()[..10], &[7]].concat(),
            entry.payload().to_vec(),
        ),
        (
            "a short meta part",
            entry.meta()[..10].to_vec(),
            entry.payload().to_vec(),
        ),
    ] {
        disk_cache::write(&dir, MODULES, &key, &meta, &payload).unwrap();
        check(what, &std::fs::read(&path).unwrap());
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&other_dir).unwrap();
}

#[test]
fn an_unusable_cache_directory_only_costs_compiling() {
    let scratch = scratch_dir("unusable");
    let file = scratch.join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let wasm = wat::parse_str(PLAIN).unwrap();
    for _ in 0..2 {
        let (m, origin) = load_module_cached(&wasm, Counter::Local, &file.join("cache")).unwrap();
        assert_eq!(origin, Origin::Compiled);
        assert_eq!(m.facts().update_methods, ["inc", "inc2"]);
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// Heap, mutable globals, stable memory and certified data all change with each `step`.
const STATEFUL: &str = r#"(module
    (import "ic0" "msg_reply" (func $reply))
    (import "ic0" "stable64_grow" (func $grow (param i64) (result i64)))
    (import "ic0" "stable64_write" (func $swrite (param i64 i64 i64)))
    (import "ic0" "certified_data_set" (func $cert (param i32 i32)))
    (memory 2)
    (global $n (mut i64) (i64.const 0))
    (global $f (mut f64) (f64.const 0.5))
    (func $step
        (global.set $n (i64.add (global.get $n) (i64.const 1)))
        (global.set $f (f64.mul (global.get $f) (f64.const 3)))
        (i64.store (i32.wrap_i64 (i64.mul (global.get $n) (i64.const 5000))) (global.get $n))
        (if (i64.eqz (call $grow (i64.const 0))) (then (drop (call $grow (i64.const 1)))))
        (call $swrite (i64.mul (global.get $n) (i64.const 4099)) (i64.const 0) (i64.const 64))
        (call $cert (i32.const 0) (i32.const 8))
        (call $reply))
    (export "canister_update step" (func $step)))"#;

/// The `STATEFUL` module installed on a fresh engine and stepped `steps` times.
fn stepped(steps: usize) -> (Vec<u8>, EmbeddedEngine, candid::Principal) {
    let wasm = wat::parse_str(STATEFUL).unwrap();
    let mut engine = EmbeddedEngine::default();
    let (id, install) = engine.install(&wasm, &[]).unwrap();
    install.result.unwrap();
    for _ in 0..steps {
        engine.update(id, "step", &[]).unwrap().result.unwrap();
    }
    (wasm, engine, id)
}

/// Asserts `id` has the same state on `a` and on `b` and that its next two messages cost the
/// same and leave the same state on both: `a`'s two messages.
fn steps_alike(
    a: &mut EmbeddedEngine,
    b: &mut EmbeddedEngine,
    id: candid::Principal,
) -> Vec<icbench::engine::CallOutcome> {
    assert_eq!(b.state_hash(id).unwrap(), a.state_hash(id).unwrap());
    let steps = (0..2)
        .map(|_| {
            let (x, y) = (
                a.update(id, "step", &[]).unwrap(),
                b.update(id, "step", &[]).unwrap(),
            );
            assert_eq!(x.report, y.report);
            assert_eq!(x.result, y.result);
            x
        })
        .collect();
    assert_eq!(b.state_hash(id).unwrap(), a.state_hash(id).unwrap());
    steps
}

#[test]
fn an_imported_state_continues_as_the_exported_one() {
    let (wasm, mut a, id) = stepped(3);
    let state = a.export_state(id).unwrap().into_bytes();

    let mut b = EmbeddedEngine::default();
    // Refused, and the engine left fresh: a cut state, another module.
    let cut = b
        .import_state(&wasm, state[..state.len() - 1].into())
        .unwrap_err();
    assert!(
        format!("{cut:#}").contains("the state ends early"),
        "{cut:#}"
    );
    let other = wat::parse_str(PLAIN).unwrap();
    let wrong = b.import_state(&other, state[..].into()).unwrap_err();
    assert!(
        format!("{wrong:#}").contains("made with another module"),
        "{wrong:#}"
    );
    let long = b
        .import_state(&wasm, [&state[..], b"x"].concat()[..].into())
        .unwrap_err();
    assert!(
        format!("{long:#}").contains("1 bytes after the state"),
        "{long:#}"
    );

    assert_eq!(b.import_state(&wasm, state[..].into()).unwrap(), id);
    // The next messages cost the same and leave the same state, time included: the
    // engine's clock was carried over.
    for step in steps_alike(&mut a, &mut b, id) {
        assert!(step.report.stable_dirty_pages > 0 && step.report.heap_dirty_pages > 0);
    }
    assert_eq!(
        b.export_state(id).unwrap().into_bytes(),
        a.export_state(id).unwrap().into_bytes()
    );

    // Only into a fresh engine.
    let busy = b.import_state(&wasm, state[..].into()).unwrap_err();
    assert!(
        format!("{busy:#}").contains("only be imported into a fresh engine"),
        "{busy:#}"
    );

    // Read from a cache entry, the heap's and stable memory's pages are mapped from the
    // entry's file (no copy), and the state continues alike.
    let dir = scratch_dir("state-entry");
    let key = [1; 32];
    let entry = cache_entry(&dir, disk_cache::STATES, key, &state);
    let mut c = EmbeddedEngine::default();
    assert_eq!(c.import_state(&wasm, (&entry).into()).unwrap(), id);
    drop(entry);
    if cfg!(target_os = "linux") {
        let path = disk_cache::entry_path(&dir, disk_cache::STATES, &key);
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let of_entry: Vec<&str> = maps
            .lines()
            .filter(|l| l.ends_with(path.to_str().unwrap()))
            .collect();
        // At two offsets of the file: the heap's pages, and after them the stable pages'.
        let offsets: std::collections::BTreeSet<&str> = of_entry
            .iter()
            .map(|l| l.split_whitespace().nth(2).unwrap())
            .collect();
        assert_eq!(offsets.len(), 2, "{of_entry:#?}");
    }
    let (_, mut a, _) = stepped(3);
    steps_alike(&mut a, &mut c, id);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn bench_wasm() -> &'static Path {
    crate::support::bench_wasm_path()
}

fn run(cache: &Path, args: &[&str]) -> Output {
    icbench_command()
        .env("ICBENCH_CACHE_DIR", cache)
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The tiny run into `out`; returns its stderr and results.csv, with the instructions the
/// engine executed (prefill included) from results.json.
fn tiny_args(out: &Path) -> Vec<String> {
    let (wasm, out) = (bench_wasm().to_str().unwrap(), out.to_str().unwrap());
    [&["--wasm", wasm][..], &TINY_RUN, &["--out", out]]
        .concat()
        .into_iter()
        .map(String::from)
        .collect()
}

/// results.csv and the executed instructions of the run that wrote `out`.
fn tiny_results(out: &Path) -> String {
    let json = std::fs::read_to_string(out.join("results.json")).unwrap();
    let executed = report::from_json(&json).unwrap().executed_instructions;
    assert!(executed > 0);
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    format!("{csv}executed {executed}")
}

fn tiny_run(cache: &Path, out: &Path) -> (String, String) {
    let args = tiny_args(out);
    let o = run(cache, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (stderr(&o), tiny_results(out))
}

/// Canisters the cache lacks are filled on worker processes beside this one (each writes
/// its state into the cache, which this process loads): the same results as one job, the
/// states counted as prefilled, each fill in the work log once.
#[test]
fn fills_in_worker_processes_give_the_results_of_one_job() {
    let scratch = scratch_dir("fills-in-processes");
    let results = |jobs: &str| {
        let out = scratch.join(format!("jobs-{jobs}"));
        let mut args = tiny_args(&out);
        let stores = args.iter().position(|a| a == "btree").unwrap();
        args[stores] = "heap,btree".to_string();
        args.extend(["--jobs".to_string(), jobs.to_string()]);
        // The module compiled once; the states made again by each run.
        let cache = scratch.join("cache");
        let _ = std::fs::remove_dir_all(cache.join(disk_cache::STATES));
        let o = run(&cache, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("; post-prefill states: 0 loaded, 2 prefilled\n"),
            "{}",
            stderr(&o)
        );
        let work = std::fs::read_to_string(out.join("work.csv")).unwrap();
        for store in ["heap", "btree"] {
            let fill = format!("\"fill {store} to 2,000 rows\"");
            assert_eq!(work.matches(&fill).count(), 1, "{work}");
        }
        tiny_results(&out)
    };
    assert_eq!(results("2"), results("1"));
}

#[test]
fn the_cli_keeps_compiled_modules_in_icbench_cache_dir() {
    let scratch = scratch_dir("cli-cache");
    let cache = scratch.join("cache");
    let shown = cache.display().to_string();

    let o = run(&cache, &["cache", "dir"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("{shown}\n"));
    let info = |want: &str| {
        let o = run(&cache, &["cache", "info"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = stdout(&o);
        assert!(
            text.starts_with(&format!("{shown}\nmodules: {want}")),
            "{text}"
        );
    };
    info("0 entries, 0.0 MB");

    let (first, csv) = tiny_run(&cache, &scratch.join("1"));
    let line = |modules: &str, states: &str| {
        format!("cache {shown}: {modules}; post-prefill states: {states}")
    };
    assert!(
        first.contains(&(line("0 modules loaded, 1 compiled", "0 loaded, 1 prefilled") + "\n")),
        "{first}"
    );
    info("1 entries");
    let (second, csv2) = tiny_run(&cache, &scratch.join("2"));
    assert!(
        second.contains(&(line("1 modules loaded, 0 compiled", "1 loaded, 0 prefilled") + "\n")),
        "{second}"
    );
    assert!(!second.contains("warning"), "{second}");
    // The progress says the state was loaded, not prefilled.
    assert!(
        second.contains("loaded btree   post-prefill state from the cache [")
            && !second.contains("prefill btree")
            && first.contains("prefill btree  2000/2000 rows ["),
        "{first}\n{second}"
    );
    assert_eq!(csv2, csv, "hits give the results of misses");
    // The report says where the starting state came from, on the line of the wall time.
    let prefill_line = |run: &str| {
        let md = std::fs::read_to_string(scratch.join(run).join("report.md")).unwrap();
        let line = md
            .lines()
            .find(|l| l.starts_with("- Wall time: "))
            .map(str::to_string);
        line.unwrap_or_else(|| panic!("no wall time line in {md}"))
    };
    assert!(
        prefill_line("1").ends_with(" (prefill run)"),
        "{}",
        prefill_line("1")
    );
    assert!(
        prefill_line("2").ends_with(" (prefill loaded from the cache)"),
        "{}",
        prefill_line("2")
    );

    // A damaged module entry: said, compiled again, the same results.
    let flip = |path: &Path| {
        let mut bytes = std::fs::read(path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 1;
        std::fs::write(path, &bytes).unwrap();
    };
    // A run after `entry` was damaged: it says so and what it did instead, counts the
    // cache's use as `modules` and `states`, and gives the same results.
    let damaged = |entry: &Path, run: &str, instead: &str, modules: &str, states: &str| {
        flip(entry);
        let (out, csv_again) = tiny_run(&cache, &scratch.join(run));
        assert!(
            out.contains(&format!("checksum mismatch; {instead}")),
            "{out}"
        );
        let want = line(modules, states);
        assert!(
            out.contains(&format!("{want} (1 damaged entries replaced)\n")),
            "{out}"
        );
        assert_eq!(csv_again, csv);
    };
    damaged(
        &the_entry(&cache),
        "3",
        "compiling again",
        "0 modules loaded, 1 compiled",
        "1 loaded, 0 prefilled",
    );
    // A damaged state: said, prefilled again, the same results.
    damaged(
        &the_cache_entry(&cache, disk_cache::STATES),
        "4",
        "running the prefill",
        "1 modules loaded, 0 compiled",
        "0 loaded, 1 prefilled",
    );

    let o = run(&cache, &["cache", "clear"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The module, the state and the stamps their reads left.
    assert_eq!(stdout(&o), format!("removed 4 files from {shown}\n"));
    info("0 entries, 0.0 MB\nstates: 0 entries, 0.0 MB\n");

    // The platform's cache directory where it cannot exist: one warning, the run and its
    // results unchanged. (One named by ICBENCH_CACHE_DIR is refused: tests/it/cli.rs.)
    let file = scratch.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let o = icbench_command()
        .env_remove("ICBENCH_CACHE_DIR")
        .env("XDG_CACHE_HOME", &file)
        .args(tiny_args(&scratch.join("5")))
        .output()
        .unwrap();
    let unusable = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{unusable}");
    assert_eq!(unusable.matches("warning").count(), 1, "{unusable}");
    // Said before any work (the directory is tried first); no more after.
    assert!(
        unusable.contains("cannot write into")
            && unusable.contains("compiling without the compile cache"),
        "{unusable}"
    );
    assert_eq!(tiny_results(&scratch.join("5")), csv);
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// SQLite's journal-mode start and warm start, made by the first run and kept as changes to
/// the post-prefill state, come back in the next run with the same results and the same
/// setup instructions; damaged, they are made again.
#[test]
fn a_journal_modes_start_and_warm_start_come_back_from_the_cache() {
    let scratch = scratch_dir("kept-starts");
    let cache = scratch.join("cache");
    let sqlite_run = |name: &str| {
        let out = scratch.join(name);
        let mut args = tiny_args(&out);
        let stores = args.iter().position(|a| a == "--stores").unwrap();
        args[stores + 1] = "sqlite".into();
        args.extend(["--journal-modes", "DELETE"].map(String::from));
        let o = run(&cache, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let work = std::fs::read_to_string(out.join("work.csv")).unwrap();
        (stderr(&o), work, tiny_results(&out))
    };
    let (_, work, csv) = sqlite_run("1");
    for made in [
        "set SQLite's journal mode to DELETE",
        "snapshot of SQLite DELETE\"",
        "snapshot of SQLite DELETE, warm",
        "keep SQLite DELETE's start in the cache",
        "keep the warm start of SQLite DELETE in the cache",
    ] {
        assert!(work.contains(made), "{made}: {work}");
    }
    assert!(csv.contains(",warm,"), "{csv}");
    // The two entries (each with the stamp its writer left).
    let kept = cache_entries(&cache, disk_cache::WARM);
    assert_eq!(kept.len(), 2, "{kept:?}");

    let (err, work, again) = sqlite_run("2");
    assert!(!err.contains("warning"), "{err}");
    assert_eq!(again, csv, "loaded starts give the results of made ones");
    for loaded in [
        "load SQLite DELETE's start",
        "load the warm start of SQLite DELETE",
    ] {
        assert!(work.contains(loaded), "{loaded}: {work}");
    }
    assert!(!work.contains("snapshot of SQLite DELETE"), "{work}");

    for entry in &kept {
        let mut bytes = std::fs::read(entry).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 1;
        std::fs::write(entry, &bytes).unwrap();
    }
    let (err, work, damaged) = sqlite_run("3");
    assert!(
        err.contains("checksum mismatch; making SQLite DELETE's start again"),
        "{err}"
    );
    assert!(work.contains("snapshot of SQLite DELETE, warm"), "{work}");
    assert_eq!(damaged, csv);
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// Every test that runs the binary goes through `support::icbench_command`, which points
/// the compile cache at the test run's own directory.
#[test]
fn no_test_runs_icbench_with_the_users_cache() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let marker = concat!("CARGO_BIN_", "EXE_icbench");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                !text.contains(marker),
                "{} runs icbench directly",
                path.display()
            );
        }
    }
}

#[test]
fn a_state_kept_as_changes_comes_back_on_its_base() {
    let (wasm, mut a, id) = stepped(2);
    let full = a.export_state(id).unwrap().into_bytes();
    let base = a.snapshot(id).unwrap();
    a.update(id, "step", &[]).unwrap().result.unwrap();
    let later = a.snapshot(id).unwrap();
    let delta = a.export_state_delta(later, base).unwrap().into_bytes();
    // Only the changes (one heap page and one stable page): smaller than the whole state
    // (two of each).
    assert!(
        delta.len() < full.len(),
        "{} >= {}",
        delta.len(),
        full.len()
    );

    let mut b = EmbeddedEngine::default();
    assert_eq!(b.import_state(&wasm, full[..].into()).unwrap(), id);
    let b_base = b.snapshot(id).unwrap();
    for (what, bytes, error) in [
        ("cut", &delta[..delta.len() - 1], "ends early"),
        (
            "long",
            &[&delta[..], b"x"].concat()[..],
            "1 bytes after the delta",
        ),
        ("foreign", &full[..], "not a canister state delta"),
    ] {
        let e = b.import_state_delta(b_base, bytes.into()).unwrap_err();
        assert!(format!("{e:#}").contains(error), "{what}: {e:#}");
    }
    let c = b.import_state_delta(b_base, delta[..].into()).unwrap();
    b.restore(id, c).unwrap();
    a.restore(id, later).unwrap();
    steps_alike(&mut a, &mut b, id);

    // Both read from cache entries: the heap is mapped from the state's file and the
    // delta's, and continues alike.
    let dir = scratch_dir("delta-entry");
    let entry = |key: [u8; 32], payload: &[u8]| cache_entry(&dir, disk_cache::WARM, key, payload);
    let (full_entry, delta_entry) = (entry([1; 32], &full), entry([2; 32], &delta));
    let mut d = EmbeddedEngine::default();
    assert_eq!(d.import_state(&wasm, (&full_entry).into()).unwrap(), id);
    let d_base = d.snapshot(id).unwrap();
    let e = d.import_state_delta(d_base, (&delta_entry).into()).unwrap();
    drop((full_entry, delta_entry));
    d.restore(id, e).unwrap();
    if cfg!(target_os = "linux") {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        for key in [[1; 32], [2; 32]] {
            let path = disk_cache::entry_path(&dir, disk_cache::WARM, &key);
            assert!(maps.contains(path.to_str().unwrap()), "{maps}");
        }
    }
    a.restore(id, later).unwrap();
    steps_alike(&mut a, &mut d, id);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every kind's damaged entry counts in the closing line as its warning says it: a kept start
/// (SQLite's, in a journal mode) made again is one of the damaged entries replaced.
#[test]
fn a_damaged_start_is_counted_with_the_others() {
    let cache = scratch_dir("cache-damaged-start");
    let small = |name: &str| {
        let out = cache.join(name).display().to_string();
        let args = "--rows 2000 --stores sqlite --journal-modes OFF --batches 1 --positions end --no-reads --out";
        let args: Vec<&str> = args.split(' ').chain([out.as_str()]).collect();
        run(&cache, &args)
    };
    let first = small("1");
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("; starts made from them: 0 loaded, 2 made\n"),
        "{}",
        stderr(&first)
    );
    let start = &cache_entries(&cache, disk_cache::WARM)[0];
    let mut bytes = std::fs::read(start).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(start, bytes).unwrap();
    let again = small("2");
    let err = stderr(&again);
    assert!(again.status.success(), "{err}");
    // The journal mode's start or the warm start, whichever was damaged.
    assert!(err.contains("checksum mismatch; making "), "{err}");
    assert!(
        err.contains("; starts made from them: 1 loaded, 1 made (1 damaged entries replaced)\n"),
        "{err}"
    );
}
