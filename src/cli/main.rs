//! `icbench`: what IC storage really costs. With no arguments: build the bench canister if
//! needed, run the seed-003 suite on the embedded engine and print the tables.
//!
//! The flags are defined in args.rs (lists.rs refuses a value repeated in a list flag), a
//! run is in run.rs, the other subcommands in commands.rs; this file dispatches.

mod args;
mod commands;
mod lists;
mod run;
mod shared;

use args::*;
use commands::*;
use run::*;

use std::process::ExitCode;

use anyhow::Result;
use clap::{ArgMatches, FromArgMatches};

use icbench::bench_canister;
use icbench::engine::disk_cache;
use icbench::engine::embedded::memory::write_log::HeapWrites;
use icbench::interrupt;

/// `icbench wasi2ic-post IN OUT [--did FILE]`: the canister build's converter (the
/// wasi2ic-post crate), for scripts/build-canister.sh. Not a clap subcommand: it is a build
/// step, not part of the documented CLI, and its arguments are the converter's own.
const CONVERTER_COMMAND: &str = "wasi2ic-post";
/// `icbench update-prebuilt-canister`: builds the canister and commits the module as
/// canisters/prebuilt (scripts/update-prebuilt-canister.sh). A maintainer's step, not
/// part of the documented CLI either.
const UPDATE_PREBUILT_COMMAND: &str = "update-prebuilt-canister";

fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == CONVERTER_COMMAND)
    {
        return wasi2ic_post::main_with_args(std::env::args_os().skip(2));
    }
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == UPDATE_PREBUILT_COMMAND)
    {
        let exe = std::env::current_exe().ok();
        return match bench_canister::update_prebuilt(exe.as_deref()) {
            Ok(()) => {
                for module in bench_canister::Module::ALL {
                    eprintln!(
                        "wrote {} and {}",
                        module.prebuilt_wasm, module.prebuilt_sources
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(1)
            }
        };
    }
    let matches = command().get_matches();
    if let Err(e) = lists::refuse_repeated(&command(), &matches) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if let Err(e) = interrupt::install() {
        eprintln!("warning: cannot handle SIGINT/SIGTERM ({e}); an interrupted run may leave temporary files");
    }
    // The commands that run canisters (compare, merge, cache and the profile commands run
    // none): they get the compile cache.
    let runs_canisters = matches!(
        cli.command,
        None | Some(
            Command::Run(_)
                | Command::Canbench(_)
                | Command::Mops(_)
                | Command::Replay(_)
                | Command::Crosscheck(_)
        )
    );
    if runs_canisters {
        if let Err(e) = HeapWrites::configured() {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        // Compiled modules are kept across runs; without a directory the run only compiles.
        // The directory is made and tried before any work. One the user named that cannot
        // be written is refused (they asked for it); the platform's is said and the run
        // goes on without it (it costs speed, not the run).
        match disk_cache::dir_from_env().and_then(|dir| disk_cache::prepare(&dir).map(|()| dir)) {
            Ok(dir) => disk_cache::enable(Some(dir)),
            Err(e) if disk_cache::dir_set_by_env() => {
                eprintln!("error: {e:#}; set it to a directory icbench can write, or unset it to use the platform's cache directory");
                return ExitCode::from(2);
            }
            Err(e) => eprintln!("warning: {e:#}; compiling without the compile cache"),
        }
    }
    // Canisters run on this thread and the suites' workers: with a large stack, Wasm runs
    // on them directly (see `embedded::spawn_scoped`).
    let outcome = std::thread::scope(|scope| {
        let command = || dispatch(&cli, &matches);
        match icbench::engine::embedded::spawn_scoped(scope, "icbench", command) {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => dispatch(&cli, &matches),
        }
    });
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            // A run that stops after it started leaves no directory it made empty.
            interrupt::remove_made_dirs();
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs the command `cli` names.
fn dispatch(cli: &Cli, matches: &ArgMatches) -> Result<bool> {
    match &cli.command {
        None => run(&cli.run, matches),
        Some(Command::Run(args)) => run(
            args,
            matches
                .subcommand_matches("run")
                .expect("the run subcommand"),
        ),
        Some(Command::Compare(args)) => compare(args),
        Some(Command::Canbench(args)) => icbench::canbench::run(args),
        Some(Command::Mops(args)) => icbench::mops::run(args),
        Some(Command::Replay(args)) => icbench::replay::run(args),
        Some(Command::Merge(args)) => merge(args),
        Some(Command::Crosscheck(args)) => crosscheck(args),
        Some(Command::ProfileDiff(args)) => profile_diff(args),
        Some(Command::ProfileTop(args)) => profile_top(args),
        Some(Command::Cache { action }) => cache(action),
    }
}
