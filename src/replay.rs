//! `icbench replay`: a deployed canister's downloaded snapshot (or a fresh canister of a
//! module), your calls and your upgrade run on it offline on the embedded engine, and what
//! each step costs under the replica rules you name, side by side. Everything the steps
//! need (the snapshot's files, the modules, every call's candid typed against the module
//! it will reach, the output directories) is read and checked before the first step runs.

pub mod interface;
mod plan;
mod report;
mod run;
pub mod script;
pub mod snapshot;

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::suites::DEFAULT_USD_PER_XDR;

#[derive(Args, Clone, Debug, Default)]
pub struct ReplayArgs {
    /// A downloaded snapshot's directory (`dfx canister snapshot download --dir`, `icp
    /// canister snapshot download -o`, PocketIC's `canister_snapshot_download`).
    #[arg(
        value_name = "SNAPSHOT_DIR",
        required_unless_present = "wasm",
        conflicts_with = "wasm"
    )]
    pub snapshot: Option<PathBuf>,
    /// Start from a fresh canister of this module (raw or gzipped) instead, installed with
    /// --init-arg.
    #[arg(long, value_name = "FILE")]
    pub wasm: Option<PathBuf>,
    /// The fresh canister's init argument, candid text (default: none).
    #[arg(long, value_name = "CANDID", requires = "wasm")]
    pub init_arg: Option<String>,
    /// A step, written as a script line (repeatable; run after --script's): `METHOD
    /// (ARGS)`, `query METHOD (ARGS)`, `N x METHOD (ARGS)`, `caller PRINCIPAL`, `advance
    /// 90s`, `tick`, `upgrade FILE (ARGS)`.
    #[arg(long = "call", value_name = "STEP")]
    pub calls: Vec<String>,
    /// A file of steps, one a line (`#` starts a comment).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Upgrade to this module (raw or gzipped) before the steps, on the snapshot's state.
    #[arg(long, value_name = "FILE")]
    pub upgrade: Option<PathBuf>,
    /// The upgrade's argument for post_upgrade, candid text (default: none).
    #[arg(long, value_name = "CANDID", requires = "upgrade")]
    pub upgrade_arg: Option<String>,
    /// The snapshot's canister's id, which a snapshot does not hold (`ic0.canister_self`;
    /// default: lxzze-o7777-77777-aaaaa-cai, the first of PocketIC's application subnet).
    #[arg(long, value_name = "PRINCIPAL")]
    pub canister_id: Option<String>,
    /// The canister's cycles balance, which a snapshot does not hold
    /// (`ic0.canister_cycle_balance`; default 10^15, as canbench gives).
    #[arg(long, value_name = "CYCLES")]
    pub cycles: Option<u128>,
    /// A controller of the canister (repeatable; `ic0.is_controller`), which a snapshot does
    /// not hold (default: the anonymous principal).
    #[arg(long = "controller", value_name = "PRINCIPAL")]
    pub controllers: Vec<String>,
    /// Who sends the calls until a `caller` step (default: the anonymous principal).
    #[arg(long, value_name = "PRINCIPAL")]
    pub caller: Option<String>,
    /// The replica rules to charge by, comma-separated: several are replayed side by side
    /// (default: today's, the newest vintage).
    #[arg(long, value_name = "VINTAGE", value_delimiter = ',', value_parser = crate::suites::replica_value_parser())]
    pub replica: Vec<String>,
    #[command(flatten)]
    pub host: crate::suites::HostArg,
    /// The canister's `wasm_memory_limit` setting in bytes, which a snapshot does not hold
    /// (0: none); a message that grows the heap past it traps, as on the replica.
    #[arg(long, value_name = "BYTES", default_value_t = crate::engine::cost::DEFAULT_WASM_MEMORY_LIMIT)]
    pub wasm_memory_limit: u64,
    /// The nodes of the application subnet the cycles are priced for (13 or 34 on mainnet).
    #[arg(long, default_value_t = 13, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub subnet_size: u64,
    /// USD per XDR for the price column (1 XDR = 10^12 cycles).
    #[arg(long, default_value_t = DEFAULT_USD_PER_XDR)]
    pub usd_per_xdr: f64,
    /// Write report.md, results.csv and results.json here (with several --replica, a
    /// directory per vintage); `icbench compare` compares two replays.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write a flame graph of each step under --out's profiles/.
    #[arg(long, requires = "out")]
    pub profile: bool,
    /// Write the canister's state after the steps (under the first --replica's rules) as a
    /// snapshot directory in the shape it was read, for `dfx canister snapshot upload`.
    #[arg(long, value_name = "DIR")]
    pub save_snapshot: Option<PathBuf>,
}

/// Runs the replay; Ok(false) when a step failed (the rest ran).
pub fn run(args: &ReplayArgs) -> Result<bool> {
    let plan = plan::Plan::new(args)?;
    let replays = plan
        .rules
        .iter()
        .enumerate()
        .map(|(i, &replica)| run::replay(&plan, replica, i == 0))
        .collect::<Result<Vec<_>>>()?;
    report::output(&plan, &replays)
}
