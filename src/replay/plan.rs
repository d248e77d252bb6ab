//! A replay's plan: the arguments read and checked, every step's candid typed against the
//! module it will reach, before any step runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use candid::Principal;

use super::interface::{parse_args, CallKind, Interface};
use super::script::{self, Line, Step};
use super::snapshot::Snapshot;
use super::ReplayArgs;
use crate::engine::cost::{CyclesFees, Host, Limits, Replica};
use crate::engine::embedded::Settings;

pub struct Plan {
    pub start: Start,
    /// The module the canister starts with, then each upgrade's, as given.
    pub modules: Vec<Module>,
    pub steps: Vec<Planned>,
    pub rules: Vec<Replica>,
    pub host: Host,
    pub caller: Option<Principal>,
    pub assumed: Assumed,
    pub price: Price,
    pub output: Output,
}

/// What the replay takes the canister and its subnet to be, which a snapshot does not say.
pub struct Assumed {
    /// `--canister-id`: a snapshot's canister's id (else the engine's first).
    pub canister_id: Option<Principal>,
    /// Its controllers and cycles balance.
    pub settings: Settings,
    /// An application subnet's, with `--wasm-memory-limit`.
    pub limits: Limits,
}

/// What a step's cycles cost: the subnet's fees, and the dollars an XDR (a trillion cycles)
/// buys.
pub struct Price {
    pub fees: CyclesFees,
    pub usd_per_xdr: f64,
}

/// What a replay records and writes beside its report on the terminal.
pub struct Output {
    /// `--out`: the report's files.
    pub dir: Option<PathBuf>,
    /// `--profile`: each step's flame graph.
    pub profile: bool,
    /// `--save-snapshot`: the state after the steps.
    pub snapshot: Option<PathBuf>,
}

pub enum Start {
    Snapshot(Box<Snapshot>),
    /// A fresh canister of `modules[0]`, installed with this argument.
    Fresh {
        args: String,
        bytes: Vec<u8>,
    },
}

pub struct Module {
    /// Its file's name.
    pub name: String,
    pub wasm: Vec<u8>,
    pub interface: Interface,
}

pub struct Planned {
    /// Where the step was written.
    pub at: String,
    pub action: Action,
}

pub enum Action {
    Call(Call),
    Caller(Option<Principal>),
    Advance(Duration),
    Tick,
    Upgrade {
        module: usize,
        args: String,
        bytes: Vec<u8>,
    },
    Reply {
        callee: Principal,
        method: String,
        bytes: Vec<u8>,
    },
}

/// A call step: its method, how it is sent, its candid as written and encoded.
pub struct Call {
    pub kind: CallKind,
    pub method: String,
    pub args: String,
    pub bytes: Vec<u8>,
    pub times: u32,
    /// The module it reaches (index into [`Plan::modules`]).
    pub module: usize,
}

impl Plan {
    pub fn new(args: &ReplayArgs) -> Result<Plan> {
        if !args.usd_per_xdr.is_finite() || args.usd_per_xdr <= 0.0 {
            bail!(
                "--usd-per-xdr {} must be a finite positive number",
                args.usd_per_xdr
            );
        }
        let rules = match args.replica.is_empty() {
            true => vec![Replica::NEWEST],
            false => args
                .replica
                .iter()
                .map(|name| Replica::by_name(name).map_err(|e| anyhow!(e)))
                .collect::<Result<_>>()?,
        };
        let host = args.host.get();
        let caller = args
            .caller
            .as_deref()
            .map(|p| principal(p).map_err(|e| anyhow!("--caller: {e}")))
            .transpose()?
            .flatten();
        let canister_id = args
            .canister_id
            .as_deref()
            .map(|p| {
                Principal::from_text(p)
                    .map_err(|e| anyhow!("--canister-id: {p} is not a principal: {e}"))
            })
            .transpose()?;
        if canister_id.is_some() && args.snapshot.is_none() {
            bail!("--canister-id names a snapshot's canister; a fresh canister (--wasm) gets the engine's first id");
        }
        let mut settings = Settings::default();
        if let Some(cycles) = args.cycles {
            settings.cycles = cycles;
        }
        if !args.controllers.is_empty() {
            settings.controllers = (args.controllers.iter())
                .map(|p| {
                    Principal::from_text(p)
                        .map_err(|e| anyhow!("--controller: {p} is not a principal: {e}"))
                })
                .collect::<Result<_>>()?;
        }
        let (start, first) = match (&args.snapshot, &args.wasm) {
            (Some(dir), _) => {
                let snapshot = Snapshot::read(dir)?;
                let module = module(
                    dir.join(super::snapshot::WASM_MODULE).as_path(),
                    Some(snapshot.wasm.clone()),
                )?;
                (Start::Snapshot(Box::new(snapshot)), module)
            }
            (None, Some(path)) => {
                let module = module(path, None)?;
                let text = args.init_arg.clone().unwrap_or_default();
                let bytes = module
                    .interface
                    .encode_init(&text)
                    .map_err(|e| anyhow!("--init-arg: {e}"))?;
                (Start::Fresh { args: text, bytes }, module)
            }
            (None, None) => bail!("give a snapshot directory, or --wasm FILE for a fresh canister"),
        };
        let mut lines: Vec<Line> = Vec::new();
        if let Some(path) = &args.upgrade {
            lines.push(Line {
                at: "--upgrade".into(),
                step: Step::Upgrade {
                    wasm: path.clone(),
                    args: args.upgrade_arg.clone().unwrap_or_default(),
                },
            });
        }
        if let Some(path) = &args.script {
            lines.extend(script::read(path)?);
        }
        for (i, text) in args.calls.iter().enumerate() {
            let at = format!("--call {}", i + 1);
            match script::parse(text, Path::new("")).map_err(|e| anyhow!("{at}: {e}"))? {
                Some(step) => lines.push(Line { at, step }),
                None => bail!("{at}: empty: a --call is a step such as `METHOD (ARGS)`"),
            }
        }
        let mut modules = vec![first];
        let mut steps = Vec::with_capacity(lines.len());
        for Line { at, step } in lines {
            let current = modules.len() - 1;
            let action = match step {
                Step::Call {
                    kind,
                    method,
                    args,
                    times,
                } => {
                    let interface = &modules[current].interface;
                    let kind = interface
                        .kind(&method, kind)
                        .map_err(|e| anyhow!("{at}: {e}"))?;
                    let bytes = interface
                        .encode(&method, &args)
                        .map_err(|e| anyhow!("{at}: {e}"))?;
                    Action::Call(Call {
                        kind,
                        method,
                        args,
                        bytes,
                        times,
                        module: current,
                    })
                }
                Step::Caller(p) => Action::Caller(p),
                Step::Advance(d) => Action::Advance(d),
                Step::Tick => Action::Tick,
                Step::Reply {
                    callee,
                    method,
                    args,
                } => {
                    let bytes = parse_args(&args)
                        .and_then(|a| a.to_bytes().map_err(|e| anyhow!("{args}: {e}")))
                        .map_err(|e| anyhow!("{at}: {e}"))?;
                    Action::Reply {
                        callee,
                        method,
                        bytes,
                    }
                }
                Step::Upgrade { wasm, args } => {
                    let new = module(&wasm, None).map_err(|e| anyhow!("{at}: {e}"))?;
                    let bytes = new
                        .interface
                        .encode_init(&args)
                        .map_err(|e| anyhow!("{at}: {e}"))?;
                    modules.push(new);
                    Action::Upgrade {
                        module: modules.len() - 1,
                        args,
                        bytes,
                    }
                }
            };
            steps.push(Planned { at, action });
        }
        if let Some(out) = &args.out {
            let dirs: Vec<PathBuf> = match rules.len() {
                1 => vec![out.clone()],
                _ => rules.iter().map(|r| out.join(r.name)).collect(),
            };
            for dir in dirs {
                crate::report::probe_dir(&dir)
                    .map_err(|e| anyhow!("--out {}: cannot write there: {e}", dir.display()))?;
            }
        }
        if let Some(dir) = &args.save_snapshot {
            check_empty(dir)?;
        }
        Ok(Plan {
            start,
            modules,
            steps,
            rules,
            host,
            caller,
            assumed: Assumed {
                canister_id,
                settings,
                limits: Limits {
                    wasm_memory_limit: args.wasm_memory_limit,
                    ..Limits::APPLICATION
                },
            },
            price: Price {
                fees: CyclesFees {
                    subnet_size: args.subnet_size,
                    ..CyclesFees::APPLICATION_13
                },
                usd_per_xdr: args.usd_per_xdr,
            },
            output: Output {
                dir: args.out.clone(),
                profile: args.profile,
                snapshot: args.save_snapshot.clone(),
            },
        })
    }
}

/// `anonymous` (None) or a principal's text.
fn principal(text: &str) -> Result<Option<Principal>> {
    match text {
        "anonymous" => Ok(None),
        p => Principal::from_text(p)
            .map(Some)
            .map_err(|e| anyhow!("{p} is not a principal: {e}")),
    }
}

/// The module at `path` (its bytes `given` when already read), checked.
fn module(path: &Path, given: Option<Vec<u8>>) -> Result<Module> {
    let wasm = match given {
        Some(bytes) => bytes,
        None => std::fs::read(path).with_context(|| path.display().to_string())?,
    };
    let interface = Interface::of(&wasm).map_err(|e| anyhow!("{}: {e:#}", path.display()))?;
    Ok(Module {
        name: path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        wasm,
        interface,
    })
}

/// `--save-snapshot`'s directory must be new or empty (as dfx wants a download's), and its
/// parent writable.
fn check_empty(dir: &Path) -> Result<()> {
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir)
            .map_err(|e| anyhow!("--save-snapshot {}: {e}", dir.display()))?;
        if entries.next().is_some() {
            bail!("--save-snapshot {}: not empty (a snapshot directory is written into a new or empty one)", dir.display());
        }
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    crate::report::probe_dir(parent)
        .map_err(|e| anyhow!("--save-snapshot {}: cannot write there: {e}", dir.display()))
}
