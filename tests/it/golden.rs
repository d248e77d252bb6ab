//! The golden run: Rust's and Motoko's stores at 10,000 rows, one to 1,000 rows inserted in
//! the middle, at the end and at random, under a vintage that charges the 4 KiB pages a
//! message writes (`2025-03`) and one that charges the Wasm pages it touches (`2026-07`).
//! Its results.csv is committed (`golden/`) and must come out byte for byte on every
//! machine: a count that depends on the machine, its kernel or its memory fails here, with
//! the machine facts of both runs. After a change that moves counts on purpose (a rebuilt
//! canister), `ICBENCH_UPDATE_GOLDEN=1` rewrites the files and `git diff` shows what moved.

use std::path::PathBuf;

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
        if update {
            std::fs::write(&path, &got).unwrap();
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
            "the golden run under {replica} counts otherwise than {} recorded:\n{}",
            path.display(),
            differing_rows(&want, &got)
        );
        std::fs::remove_dir_all(&out).unwrap();
    }
}
