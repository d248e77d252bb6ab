use super::*;
use crate::report::fixture::{machine, report, result};

fn run(module_sha: &str, kernel: &str) -> Provenance {
    Provenance {
        modules: vec![ModuleRun {
            name: "bench".into(),
            sha256: module_sha.into(),
            compiler: None,
            committed: None,
        }],
        machines: vec![machine(kernel)],
    }
}

#[test]
fn a_committed_module_is_named_by_its_record_and_its_compiler() {
    use sha2::{Digest, Sha256};
    let root = crate::bench_canister::project_root();
    for (module, compiler) in [
        ("bench", None),
        ("motoko", Some("moc ifw0ilrx-4948ab0m-qqywmmsi-y0xqcjns")),
    ] {
        let path = format!("canisters/prebuilt/{module}.wasm");
        let wasm = std::fs::read(root.join(&path)).unwrap();
        let run = ModuleRun::of(module, &wasm);
        assert_eq!(run.sha256, hex::encode(Sha256::digest(&wasm)));
        assert_eq!(run.committed.as_deref(), Some(path.as_str()));
        assert_eq!(run.compiler.as_deref(), compiler, "{module}");
    }
    // A module that is no committed one, built by rustc: its producers section says so.
    let wat = "(module (@producers (processed-by \"rustc\" \"1.95.0 (59807616e 2026-04-14)\")))";
    let wasm = wat::parse_str(wat).unwrap();
    let run = ModuleRun::of("x", &wasm);
    assert_eq!(run.committed, None);
    assert_eq!(
        run.compiler.as_deref(),
        Some("rustc 1.95.0 (59807616e 2026-04-14)")
    );
}

#[test]
fn a_results_file_without_provenance_reads_and_one_with_it_round_trips() {
    let mut r = report(vec![result("btree", "", "middle", "insert", 1, 1_000)]);
    let old = crate::report::json(&r);
    assert!(!old.contains(PROVENANCE));
    assert_eq!(crate::report::from_json(&old).unwrap().provenance(), None);
    r.set_provenance(&run("1be8bf44aa", "6.18.44"));
    let read = crate::report::from_json(&crate::report::json(&r)).unwrap();
    assert_eq!(read.provenance(), Some(run("1be8bf44aa", "6.18.44")));
}

#[test]
fn joined_shards_keep_the_modules_and_each_machine_once() {
    let parts = [
        Some(run("aa", "6.1")),
        None,
        Some(run("aa", "6.18")),
        Some(run("aa", "6.1")),
    ];
    let joined = Provenance::joined(&parts).unwrap();
    let kernels: Vec<&str> = joined.machines.iter().map(|m| m.kernel.as_str()).collect();
    assert_eq!(kernels, ["6.1", "6.18"]);
    assert_eq!(joined.modules, run("aa", "6.1").modules);
    assert!(
        joined.line().contains("Machines: AMD EPYC"),
        "{}",
        joined.line()
    );
    assert_eq!(Provenance::joined(&[None, None]), None);
}

#[test]
fn differences_name_the_module_with_both_shas_and_the_facts() {
    let with = |p: Option<Provenance>| {
        let mut r = report(vec![result("btree", "", "middle", "insert", 1, 1_000)]);
        if let Some(p) = p {
            r.set_provenance(&p);
        }
        r
    };
    let base = with(Some(run("1be8bf44f698", "6.1")));
    assert_eq!(differences(&base, &base), Vec::<String>::new());
    let new = with(Some(run("2f1d9b183e89", "6.18")));
    assert_eq!(
        differences(&base, &new),
        [
            "module bench 1be8bf44 (base) against 2f1d9b18 (new)",
            "kernel 6.1 (base) against 6.18 (new)"
        ]
    );
    assert_eq!(
        differences(&with(None), &new),
        ["the base run does not record its modules and machine (results.json of an older icbench)"]
    );
    assert_eq!(differences(&with(None), &with(None)), Vec::<String>::new());
}
