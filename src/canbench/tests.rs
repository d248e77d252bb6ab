use super::*;

#[test]
fn discovery_keeps_export_order_and_only_queries() {
    let wasm = wat::parse_str(
        r#"(module
            (func $f)
            (export "canister_query __canbench__zeta" (func $f))
            (export "canister_update __canbench__upd" (func $f))
            (export "canister_query other" (func $f))
            (export "canister_composite_query __canbench__cq" (func $f))
            (export "canister_query __canbench__alpha" (func $f)))"#,
    )
    .unwrap();
    assert_eq!(discover(&wasm).unwrap(), ["zeta", "alpha"]);
    assert!(discover(b"not wasm").is_err());
}

#[test]
fn plan_from_flags() {
    let args = CanbenchArgs {
        wasm: Some("m.wasm".into()),
        init_args: Some("4449444c0000".into()),
        noise_threshold: 2.0,
        ..Default::default()
    };
    let p = args.plan().unwrap();
    assert_eq!(p.init_args, b"DIDL\x00\x00");
    assert_eq!(p.results_path, PathBuf::from("canbench_results.yml"));
    assert_eq!(p.csv_path, PathBuf::from("canbench_results.csv"));
    let bad = CanbenchArgs {
        init_args: Some("xyz".into()),
        ..args.clone()
    };
    let refusal = |a: &CanbenchArgs| a.plan().unwrap_err().to_string();
    assert!(refusal(&bad).contains("invalid init_args hex value"));
    let tracing = CanbenchArgs {
        instruction_tracing: true,
        shard: Some(Shard { index: 1, count: 2 }),
        out: Some("parts".into()),
        ..args.clone()
    };
    assert!(refusal(&tracing).contains("--instruction-tracing writes its flame graphs next to the results file: run it without --shard"));
    let negative = CanbenchArgs {
        noise_threshold: -1.0,
        ..args
    };
    assert!(negative.plan().is_err());
}

#[test]
fn gz_modules_are_gunzipped_and_missing_files_named() {
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("icbench-canbench-gz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wasm =
        wat::parse_str(r#"(module (func $f) (export "canister_query __canbench__b" (func $f)))"#)
            .unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&wasm).unwrap();
    let path = dir.join("m.wasm.gz");
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    assert_eq!(read_wasm(&path).unwrap(), wasm);
    let missing = dir.join("missing.wasm");
    assert_eq!(
        read_wasm(&missing).unwrap_err().to_string(),
        format!(
            "Couldn't read file at {}. Are you sure the file exists?",
            missing.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
