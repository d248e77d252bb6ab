//! The golden run: Rust's and Motoko's stores at 10,000 rows, one to 1,000 rows inserted in
//! the middle, at the end and at random, under a vintage that charges the 4 KiB pages a
//! message writes (`2025-03`) and one that charges the Wasm pages it touches (`2026-07`).
//! Its results.csv is committed (`golden/`) and must come out byte for byte on every
//! machine: a count that depends on the machine, its kernel or its memory fails here, with
//! the machine facts of both runs (`golden/machine.json`: the recording run's, from its
//! results.json). After a change that moves counts on purpose (a rebuilt canister),
//! `ICBENCH_UPDATE_GOLDEN=1` rewrites the files and `git diff` shows what moved.

use std::path::{Path, PathBuf};

use icbench::report::Machine;

use crate::support::{run_bench_into, scratch_dir};

const ARGS: [&str; 9] = [
    "--rows",
    "10000",
    "--batches",
    "1,10,100,1000",
    "--stores",
    "heap,btree,sqlite,sqlite-vfs,mo-map,mo-pure-map,mo-region",
    "--journal-modes",
    "WAL",
    "--no-reads",
];

fn golden(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/golden")
        .join(file)
}

/// The rows of `got` that `want` lacks and the other way round, with the header.
fn differing_rows(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let mut out = format!("{}\n", g.first().copied().unwrap_or_default());
    for line in w.iter().filter(|l| !g.contains(l)) {
        out += &format!("- {line}\n");
    }
    for line in g.iter().filter(|l| !w.contains(l)) {
        out += &format!("+ {line}\n");
    }
    out
}

/// The machine the run in `out` ran on, as its results.json records it.
fn machine_of(out: &Path) -> Machine {
    let json = std::fs::read_to_string(out.join("results.json")).unwrap();
    let report = icbench::report::from_json(&json).unwrap();
    let provenance = report
        .provenance()
        .expect("results.json records its machine");
    provenance.machines.into_iter().next().unwrap()
}

/// The recording machine's facts (`recorded`: golden/machine.json) beside this run's, and
/// which of them differ.
fn machines(recorded: &Path, this: &Machine) -> String {
    let text = std::fs::read_to_string(recorded).map_err(|e| e.to_string());
    let machine = text.and_then(|t| serde_json::from_str::<Machine>(&t).map_err(|e| e.to_string()));
    let Ok(machine) = machine else {
        return format!(
            "recorded on: unknown ({})\nthis run on: {}",
            recorded.display(),
            this.line()
        );
    };
    let differ = machine.differences(this);
    format!(
        "recorded on: {}\nthis run on: {}\n{}",
        machine.line(),
        this.line(),
        match differ.is_empty() {
            true => "The machines agree in every fact recorded.".to_string(),
            false => format!(
                "They differ in (base: recorded, new: this run): {}.",
                differ.join("; ")
            ),
        }
    )
}

#[test]
fn the_golden_run_counts_as_recorded_on_every_machine() {
    let update = std::env::var_os("ICBENCH_UPDATE_GOLDEN").is_some_and(|v| v == "1");
    for replica in ["2026-07", "2025-03"] {
        let out = scratch_dir(&format!("golden-{replica}"));
        let mut args = ARGS.to_vec();
        args.extend(["--replica", replica]);
        run_bench_into(&out, &args);
        let got = std::fs::read_to_string(out.join("results.csv")).unwrap();
        let path = golden(&format!("results-{replica}.csv"));
        let (recorded, this) = (golden("machine.json"), machine_of(&out));
        if update {
            std::fs::write(&path, &got).unwrap();
            let json = serde_json::to_string_pretty(&this).unwrap();
            std::fs::write(&recorded, json + "\n").unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (ICBENCH_UPDATE_GOLDEN=1 writes it)",
                path.display()
            )
        });
        assert!(
            got == want,
            "the golden run under {replica} counts otherwise than {} recorded:\n{}{}",
            path.display(),
            differing_rows(&want, &got),
            machines(&recorded, &this)
        );
        std::fs::remove_dir_all(&out).unwrap();
    }
}

/// What a mismatch prints after the rows: the recording machine's facts, this run's, and
/// those they differ in.
#[test]
fn a_mismatch_names_both_machines_and_the_facts_they_differ_in() {
    let recorded = golden("machine.json");
    let machine: Machine =
        serde_json::from_str(&std::fs::read_to_string(&recorded).unwrap()).unwrap();
    let mut other = machine.clone();
    other.kernel = "0.0-other".into();
    assert_eq!(
        machines(&recorded, &other),
        format!(
            "recorded on: {}\nthis run on: {}\nThey differ in (base: recorded, new: this run): \
             kernel {} (base) against 0.0-other (new).",
            machine.line(),
            other.line(),
            machine.kernel
        )
    );
    assert!(machines(&recorded, &machine).ends_with("\nThe machines agree in every fact recorded."));
    let missing = golden("no-such-machine.json");
    assert!(machines(&missing, &machine).starts_with("recorded on: unknown ("));
}
