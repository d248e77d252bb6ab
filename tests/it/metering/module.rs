//! The instrumented module itself: function indices shifted with the names, sections kept or
//! created in order, memory64, the compile cost, and bad modules refused with a reason.

use super::*;

const INDICES: &str = r#"(module
    (import "env" "observe" (func $observe))
    (import "env" "add1" (func $add1 (param i32) (result i32)))
    (type $t (func (param i32) (result i32)))
    (table 4 funcref)
    (elem (i32.const 0) $double $triple)
    (elem declare func $quad)
    (global $started (mut i32) (i32.const 0))
    (func $init i32.const 42 global.set $started)
    (start $init)
    (func $double (export "double") (param i32) (result i32) local.get 0 i32.const 2 i32.mul)
    (func $triple (param i32) (result i32) local.get 0 i32.const 3 i32.mul)
    (func $quad (param i32) (result i32) local.get 0 i32.const 4 i32.mul)
    (func (export "via_table") (param i32 i32) (result i32)
      local.get 0 local.get 1 call_indirect (type $t))
    (func (export "via_ref") (param i32) (result i32)
      i32.const 2 ref.func $quad table.set 0
      local.get 0 i32.const 2 call_indirect (type $t))
    (func (export "via_import") (param i32) (result i32)
      local.get 0 call $add1 call $double)
    (func (export "started") (result i32) global.get $started))"#;

/// The module `wat` describes, instrumented.
fn instrument_wat(wat: &str) -> Result<Instrumented, InstrumentError> {
    instrument(&wat::parse_str(wat).unwrap())
}

#[test]
fn function_indices_are_shifted() {
    let mut h = Harness::new(INDICES);
    assert_eq!(h.instrumented().function_count, 8);
    // The start function did not run at instantiation (the counter was 0 then) ...
    assert_eq!(i32v(&h.run("started", &[]).1), 0);
    // ... it is exported as canister_start instead: entry 1 + i32.const 1 + global.set 2 = 4
    assert_eq!(h.used(CANISTER_START_EXPORT, &[]), 4);
    assert_eq!(i32v(&h.run("started", &[]).1), 42);

    assert_eq!(i32v(&h.run("double", &[Val::I32(21)]).1), 42);
    assert_eq!(i32v(&h.run("via_table", &[Val::I32(5), Val::I32(0)]).1), 10);
    assert_eq!(i32v(&h.run("via_table", &[Val::I32(5), Val::I32(1)]).1), 15);
    // via_ref: entry 1 + i32.const 1 + ref.func 130 + table.set 5 + local.get 1
    //   + i32.const 1 + call_indirect 10 = 149; quad: 1 + local.get 1 + i32.const 1
    //   + i32.mul 1 = 4
    assert_eq!(h.run_i32("via_ref", &[Val::I32(5)]), (149 + 4, 20));
    // via_import: entry 1 + local.get 1 + call 5 + call 5 = 12 (the host add1 is free here);
    // double: 4
    assert_eq!(h.run_i32("via_import", &[Val::I32(5)]), (12 + 4, 12));
}

#[test]
fn name_section_follows_the_shift() {
    let wasm = wat::parse_str(INDICES).unwrap();
    // The replica's placement: exports keep pointing at the (shifted) function itself.
    let out = instrument_with(&wasm, Counter::Global).unwrap();
    let mut names = std::collections::BTreeMap::new();
    let mut double_index = None;
    for payload in wasmparser::Parser::new(0).parse_all(&out.wasm) {
        match payload.unwrap() {
            wasmparser::Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.unwrap();
                    if export.name == "double" {
                        double_index = Some(export.index);
                    }
                }
            }
            wasmparser::Payload::CustomSection(reader) => {
                if let wasmparser::KnownCustom::Name(reader) = reader.as_known() {
                    for sub in reader {
                        if let wasmparser::Name::Function(map) = sub.unwrap() {
                            for naming in map {
                                let naming = naming.unwrap();
                                names.insert(naming.index, naming.name.to_string());
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    // 2 imports, then the injected import at index 2, then $init (3), $double (4), ...
    assert_eq!(double_index, Some(4));
    assert_eq!(names.get(&4).map(String::as_str), Some("double"));
    assert_eq!(names.get(&1).map(String::as_str), Some("add1"));
    assert_eq!(
        names.get(&2).map(String::as_str),
        Some("out_of_instructions")
    );
}

/// Appends a custom section to a binary module.
fn with_custom_section(mut wasm: Vec<u8>, name: &str, data: &[u8]) -> Vec<u8> {
    use wasm_encoder::Section;
    wasm_encoder::CustomSection {
        name: name.into(),
        data: data.into(),
    }
    .append_to(&mut wasm);
    wasm
}

#[test]
fn custom_sections_survive() {
    let wasm =
        wat::parse_str(r#"(module (memory 1) (data (i32.const 0) "hi") (func (export "f")))"#)
            .unwrap();
    let candid = b"service : { greet : (text) -> (text) query }";
    let wasm = with_custom_section(wasm, "icp:public candid:service", candid);
    let out = instrument(&wasm).unwrap();
    let mut found = None;
    let mut data_segments = 0;
    for payload in wasmparser::Parser::new(0).parse_all(&out.wasm) {
        match payload.unwrap() {
            wasmparser::Payload::CustomSection(reader)
                if reader.name() == "icp:public candid:service" =>
            {
                found = Some(reader.data().to_vec());
            }
            wasmparser::Payload::DataSection(reader) => data_segments = reader.count(),
            _ => {}
        }
    }
    assert_eq!(found.as_deref(), Some(&candid[..]));
    assert_eq!(data_segments, 1);
}

#[test]
fn memory64_loads_cost_two_and_sizes_pass_as_i64() {
    let mut h = Harness::new(
        r#"(module
            (memory i64 1)
            (func (export "f") (param i64)
              i64.const 0 i32.const 7 local.get 0 memory.fill
              i64.const 0 i64.load drop))"#,
    );
    assert!(h.instrumented().memory64);
    // entry 1 + i64.const 1 + i32.const 1 + local.get 1 + memory.fill 100 + i64.const 1
    //   + i64.load 2 (wasm64) + drop 1 + end 0 = 108, + n bytes
    assert_eq!(h.used("f", &[Val::I64(50)]), 108 + 50);
}

#[test]
fn memory_grow_and_size() {
    let mut h = Harness::new(
        r#"(module
            (memory 1)
            (func (export "f") (result i32)
              i32.const 1 memory.grow drop memory.size))"#,
    );
    // entry 1 + i32.const 1 + memory.grow 300 + drop 1 + memory.size 20 = 323
    assert_eq!(h.run_i32("f", &[]), (323, 2));
}

#[test]
fn sections_the_input_lacks_are_created_in_order() {
    // No sections at all, and a module whose only code-less sections surround the code slot.
    for wat in [
        "(module)",
        r#"(module (memory 1) (data (i32.const 0) "x"))"#,
    ] {
        let mut h = Harness::new(wat);
        h.set_counter(7);
        assert_eq!(h.counter(), 7);
        assert_eq!(h.instrumented().function_count, 0);
    }
}

#[test]
fn compile_cost_instruction_count() {
    let out = instrument_wat(r#"(module (func (export "f")))"#).unwrap();
    // body: end 1 + entry injection 10 = 11; our decrement helper 20; the replica's
    // count_clean_pages helper 46; 2 × (0 globals + the replica's 3 injected globals) = 6
    assert_eq!(out.wasm_instruction_count, 11 + 20 + 46 + 6);
    assert_eq!(out.function_count, 1);
    assert!(!out.memory64);
}

#[test]
fn invalid_modules_are_rejected_with_a_reason() {
    match instrument(b"\0asm garbage").unwrap_err() {
        InstrumentError::InvalidModule { message, .. } => assert!(!message.is_empty()),
        other => panic!("unexpected {other:?}"),
    }
    match instrument(b"not wasm at all").unwrap_err() {
        InstrumentError::InvalidModule { .. } => {}
        other => panic!("unexpected {other:?}"),
    }
    // A type error is invalid, not unsupported.
    assert!(matches!(
        instrument_wat(r#"(module (func (result i32) i64.const 1))"#),
        Err(InstrumentError::InvalidModule { .. })
    ));
}

#[test]
fn data_segments_must_fit_the_initial_memory() {
    // The replica applies data segments at install and refuses one that ends past the
    // initial memory, with this wording.
    let err = instrument_wat(r#"(module (memory 1) (data (i32.const 65535) "ab"))"#).unwrap_err();
    assert_eq!(
        err,
        InstrumentError::InvalidDataSegment {
            offset: 65535,
            len: 2
        }
    );
    assert_eq!(
        err.to_string(),
        "Wasm module has invalid data segment of 2 bytes at 65535"
    );
    // A negative i32 offset is a large unsigned one.
    assert_eq!(
        instrument_wat(r#"(module (memory 1) (data (i32.const -1) "a"))"#).unwrap_err(),
        InstrumentError::InvalidDataSegment {
            offset: u32::MAX as u64,
            len: 1
        }
    );
    // Ending exactly at the boundary is fine.
    assert!(instrument_wat(r#"(module (memory 1) (data (i32.const 65534) "ab"))"#).is_ok());
}

#[test]
fn mutable_reference_globals_are_refused() {
    // The replica cannot save them between messages; immutable ones are fine.
    let err = instrument_wat(
        r#"(module (global i32 (i32.const 0)) (global (mut funcref) (ref.null func)))"#,
    )
    .unwrap_err();
    assert_eq!(err, InstrumentError::MutableReferenceGlobal { index: 1 });
    assert!(
        err.to_string().contains("Unexpected global value type"),
        "{err}"
    );
    assert!(instrument_wat(r#"(module (global externref (ref.null extern)))"#).is_ok());
}

#[test]
fn unsupported_features_are_named() {
    let err = instrument_wat(r#"(module (memory 1 1 shared))"#).unwrap_err();
    assert!(
        matches!(err, InstrumentError::UnsupportedFeature { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("threads"), "{err}");

    let atomics = r#"(module (memory 1 1 shared)
             (func (drop (i32.atomic.load (i32.const 0)))))"#;
    assert!(matches!(
        instrument_wat(atomics),
        Err(InstrumentError::UnsupportedFeature { .. })
    ));

    assert!(matches!(
        instrument_wat(r#"(module (memory 1) (memory 1))"#),
        Err(InstrumentError::UnsupportedFeature { .. })
    ));
}

#[test]
fn reserved_exports_are_rejected() {
    for name in [INSTRUCTION_COUNTER_EXPORT, CANISTER_START_EXPORT] {
        let wat = format!(r#"(module (func (export "{name}")))"#);
        let err = instrument_wat(&wat).unwrap_err();
        assert_eq!(
            err,
            InstrumentError::ReservedExport {
                name: name.to_string()
            }
        );
    }
}

/// Generates a module of roughly `target` bytes of code with a realistic operator mix.
fn large_module(target: usize) -> Vec<u8> {
    let mut wat = String::from("(module (memory 1) (global $g (mut i32) (i32.const 0))\n");
    let body = r#"
        (local $i i32) (local $acc i64)
        block
          loop
            local.get $i i32.const 100 i32.ge_u br_if 1
            local.get $i i32.load offset=16 local.get $acc i32.wrap_i64 i32.add
            global.get $g i32.xor global.set $g
            local.get $acc i64.const 3 i64.mul local.get $i i64.extend_i32_u i64.add local.set $acc
            local.get $i i32.const 3 i32.and
            if
              i32.const 0 i32.const 8 i32.const 16 memory.copy
            else
              local.get $i i32.const 4 i32.add local.get $i i32.store
            end
            local.get $i i32.const 1 i32.add local.set $i
            br 0
          end
        end
        local.get $acc i32.wrap_i64"#;
    let per_function = 150; // bytes of code each function compiles to, roughly
    let functions = target / per_function;
    for i in 0..functions {
        wat.push_str(&format!("(func $f{i} (result i32) {body})\n"));
        if i > 0 {
            // a call chain so calls need remapping
            wat.push_str(&format!(
                "(func (result i32) call $f{} call $f{i} i32.add)\n",
                i - 1
            ));
        }
    }
    wat.push(')');
    wat::parse_str(&wat).unwrap()
}

/// Run with `cargo test --release --test it metering:: -- --ignored --nocapture`.
#[test]
#[ignore = "a timing measurement that prints, not a check: run it by hand"]
fn timing_large_module() {
    let wasm = large_module(5_000_000);
    let start = std::time::Instant::now();
    let out = instrument(&wasm).unwrap();
    let elapsed = start.elapsed();
    println!(
        "instrumented {:.1} MB ({} functions, {} wasm instructions) into {:.1} MB in {:?}",
        wasm.len() as f64 / 1e6,
        out.function_count,
        out.wasm_instruction_count,
        out.wasm.len() as f64 / 1e6,
        elapsed
    );
    wasmparser::Validator::new()
        .validate_all(&out.wasm)
        .expect("output validates");
}
