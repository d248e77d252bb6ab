//! wasi2ic-post IN OUT [--did FILE] [--no-rewire]
//!
//! Turns a wasm32-wasip1 canister into an Internet Computer module: every WASI import is
//! rewired to ic-wasi-polyfill's implementation inside the module (as wasi2ic does, see
//! `rewire.rs`), then (with --did) the Candid interface is embedded as the
//! `icp:public candid:service` custom section, as dfx does. Fails if any import outside
//! `ic0` is left. With --no-rewire (a module with no WASI import to rewire, such as a
//! wasm32-unknown-unknown build) only the interface is embedded: appended as a section to
//! the module's own bytes, which are left as the compiler wrote them.
//! Deterministic: same input bytes and .did give the same output bytes.
//!
//! A library so that icbench links the same converter (`icbench wasi2ic-post ...`, which
//! scripts/build-canister.sh calls when given one) and reuses the host build's compiled
//! dependencies; the `wasi2ic-post` binary is the standalone form.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

pub mod rewire;
// For the tests of `rewire` (tests/it/wasi2ic_post.rs), which build walrus modules.
pub use walrus;

const USAGE: &str = "usage: wasi2ic-post IN.wasm OUT.wasm [--did FILE.did] [--no-rewire]";

struct Args {
    input: PathBuf,
    output: PathBuf,
    did: Option<PathBuf>,
    rewire: bool,
}

fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Args> {
    let mut positional = Vec::new();
    let mut did = None;
    let mut rewire = true;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--did" {
            did = Some(PathBuf::from(args.next().context("--did needs a file")?));
        } else if arg == "--no-rewire" {
            rewire = false;
        } else if arg == "-h" || arg == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        } else {
            positional.push(PathBuf::from(arg));
        }
    }
    let [input, output]: [PathBuf; 2] = positional
        .try_into()
        .map_err(|_| anyhow::anyhow!("{USAGE}"))?;
    Ok(Args {
        input,
        output,
        did,
        rewire,
    })
}

/// The module `wasm` (a wasm32-wasip1 build) as an IC module: WASI imports rewired to the
/// polyfill and, with `did`, the interface embedded. Deterministic: the same bytes in give
/// the same bytes out.
pub fn convert(wasm: &[u8], did: Option<&Path>) -> Result<Vec<u8>> {
    process(wasm, did, true)
}

/// The module `wasm` (one with no WASI import, such as a wasm32-unknown-unknown build) with,
/// given a `did`, the interface embedded; checked as [`convert`] checks, but not re-encoded:
/// the section is appended to the compiler's bytes, so the code is byte for byte the
/// build's.
pub fn embed_did(wasm: &[u8], did: Option<&Path>) -> Result<Vec<u8>> {
    let module = parse(wasm)?;
    check_imports(&module)?;
    let mut out = wasm.to_vec();
    if let Some(did_path) = did {
        if module
            .customs
            .iter()
            .any(|(_, c)| c.name() == CANDID_SECTION)
        {
            bail!("the module has a {CANDID_SECTION} section already");
        }
        let did = read_did(did_path)?;
        append_custom_section(&mut out, CANDID_SECTION, did.as_bytes());
    }
    Ok(out)
}

/// The section dfx and icp-cli read the interface from.
const CANDID_SECTION: &str = "icp:public candid:service";

/// Appends a custom section (id 0, its size, its length-prefixed name, its bytes).
fn append_custom_section(wasm: &mut Vec<u8>, name: &str, data: &[u8]) {
    let mut payload = Vec::new();
    leb128(&mut payload, name.len() as u64);
    payload.extend_from_slice(name.as_bytes());
    payload.extend_from_slice(data);
    wasm.push(0);
    leb128(wasm, payload.len() as u64);
    wasm.extend_from_slice(&payload);
}

/// `n` as unsigned LEB128.
fn leb128(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn parse(wasm: &[u8]) -> Result<walrus::Module> {
    // dfx's parser settings: keep the name section (the polyfill's functions are found
    // by name), drop the producers section.
    let mut config = walrus::ModuleConfig::new();
    config.generate_name_section(true);
    config.generate_producers_section(false);
    config.parse(wasm).context("parsing the module")
}

fn check_imports(module: &walrus::Module) -> Result<()> {
    let foreign = rewire::foreign_imports(module);
    if !foreign.is_empty() {
        bail!(
            "imports the IC does not provide are left: {}",
            foreign.join(", ")
        );
    }
    Ok(())
}

fn read_did(path: &Path) -> Result<String> {
    // The interface is type-checked by the tests (tests/canister_did.rs holds it to the
    // canister's own), not here: candid_parser and its template and grammar crates cost a
    // fresh `cargo run` about 30 s of compiling.
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn process(wasm: &[u8], did: Option<&Path>, rewire: bool) -> Result<Vec<u8>> {
    if !rewire {
        return embed_did(wasm, did);
    }
    let mut module = parse(wasm)?;
    if rewire::rewire_wasi(&mut module)? == 0 {
        bail!(
            "no WASI import to rewire; is this a wasm32-wasip1 build with \
             ic-wasi-polyfill linked in?"
        );
    }
    check_imports(&module)?;
    if let Some(did_path) = did {
        let did = read_did(did_path)?;
        drop(module.customs.remove_raw(CANDID_SECTION));
        module.customs.add(walrus::RawCustomSection {
            name: CANDID_SECTION.to_string(),
            data: did.into_bytes(),
        });
    }
    Ok(module.emit_wasm())
}

fn run(args: impl IntoIterator<Item = OsString>) -> Result<()> {
    let args = parse_args(args)?;
    let wasm =
        std::fs::read(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let out = process(&wasm, args.did.as_deref(), args.rewire)
        .with_context(|| format!("converting {}", args.input.display()))?;
    std::fs::write(&args.output, &out)
        .with_context(|| format!("writing {}", args.output.display()))?;
    Ok(())
}

/// The command line `IN OUT [--did FILE] [--no-rewire]` (the arguments after the program
/// name).
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wasi2ic-post: {e:#}");
            ExitCode::FAILURE
        }
    }
}
