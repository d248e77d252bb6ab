//! wasi2ic-post IN OUT [--did FILE]
//!
//! Turns a wasm32-wasip1 canister into an Internet Computer module: wasi2ic's library
//! rewires every WASI import to ic-wasi-polyfill's implementation inside the module,
//! then (with --did) the Candid interface is embedded as the `icp:public candid:service`
//! custom section, as dfx does. Fails if any import outside `ic0` is left.
//! Deterministic: same input bytes and .did give the same output bytes.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

const USAGE: &str = "usage: wasi2ic-post IN.wasm OUT.wasm [--did FILE.did]";

struct Args {
    input: PathBuf,
    output: PathBuf,
    did: Option<PathBuf>,
}

fn parse_args() -> Result<Args> {
    let mut positional = Vec::new();
    let mut did = None;
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--did" {
            did = Some(PathBuf::from(args.next().context("--did needs a file")?));
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
    Ok(Args { input, output, did })
}

fn run() -> Result<()> {
    let args = parse_args()?;
    let wasm =
        std::fs::read(&args.input).with_context(|| format!("reading {}", args.input.display()))?;

    // dfx's parser settings: keep the name section (wasi2ic finds the polyfill's
    // functions by name), drop the producers section.
    let mut module = ic_wasm::utils::parse_wasm(&wasm, true)
        .with_context(|| format!("parsing {}", args.input.display()))?;

    if !wasi2ic::process_module(&mut module) {
        bail!(
            "{}: no WASI import could be rewired; is ic-wasi-polyfill linked in?",
            args.input.display()
        );
    }
    let foreign: Vec<String> = wasi2ic::module_imports(&mut module)
        .into_iter()
        .filter(|(module_name, _)| module_name != "ic0")
        .map(|(module_name, name)| format!("{module_name}.{name}"))
        .collect();
    if !foreign.is_empty() {
        bail!(
            "imports the IC does not provide are left: {}",
            foreign.join(", ")
        );
    }

    if let Some(did_path) = &args.did {
        let did = std::fs::read_to_string(did_path)
            .with_context(|| format!("reading {}", did_path.display()))?;
        // Refuse to ship an interface that does not even type-check.
        candid_parser::check_file(did_path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", did_path.display()))?;
        ic_wasm::metadata::add_metadata(
            &mut module,
            ic_wasm::metadata::Kind::Public,
            "candid:service",
            did.into_bytes(),
        );
    }

    let out = module.emit_wasm();
    std::fs::write(&args.output, &out)
        .with_context(|| format!("writing {}", args.output.display()))?;
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wasi2ic-post: {e:#}");
            ExitCode::FAILURE
        }
    }
}
