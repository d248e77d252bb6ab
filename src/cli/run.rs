//! A benchmark run (`icbench [--suite ...]`): the engine chosen, each suite's plan checked
//! and run, the progress bar, the outputs written and the gate.

use crate::args::*;
use crate::shared::*;

use std::io::IsTerminal;

use anyhow::{anyhow, Context, Result};
use clap::parser::ValueSource;
use clap::ArgMatches;
use indicatif::{ProgressBar, ProgressStyle};

use icbench::engine::cost::Replica;
use icbench::engine::embedded::memory::write_log::HeapWrites;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::Engine;
use icbench::interrupt;
use icbench::report::format::gigabytes;
use icbench::report::{self, profiles, Provenance, Report};
use icbench::stores::StoreKind;
use icbench::suites::{self, pool, Exec, Fitted, Plan, Progress, Shard};

impl RulesArgs {
    /// The embedded engine under the vintage and host named (default: the newest, linux).
    pub(crate) fn embedded_engine(&self) -> Result<EmbeddedEngine> {
        let replica = self
            .replica
            .as_deref()
            .map_or(Ok(Replica::NEWEST), Replica::by_name);
        Ok(EmbeddedEngine::default()
            .with_replica(replica.map_err(|e| anyhow!(e))?)
            .with_host(self.host.get()))
    }
}

/// The engine `kind` with the embedded engine's `--replica` and `--host`, which a PocketIC
/// server refuses: it charges by its own replica, on the machine it runs on.
pub(crate) fn make_engine(kind: EngineKind, rules: &RulesArgs) -> Result<Box<dyn Engine>> {
    match (kind, &rules.replica, rules.host.given()) {
        (EngineKind::Embedded, _, _) => Ok(Box::new(rules.embedded_engine()?)),
        (EngineKind::PocketIc, Some(name), _) => Err(anyhow!(
            "--replica {name} selects the rules of the embedded engine; a PocketIC server \
             charges by the replica it was built from"
        )),
        (EngineKind::PocketIc, None, Some(host)) => Err(anyhow!(
            "--host {} selects the OS pages the embedded engine counts; a PocketIC server \
             counts those of the machine it runs on",
            host.name()
        )),
        (EngineKind::PocketIc, None, None) => pocket_ic_engine("--engine pocket-ic"),
    }
}

/// `--payload-size` within what the bench canister takes: its `set_payload_size` refuses
/// more than `MAX_PAYLOAD_SIZE`, 1 MiB, so a larger size is refused here, naming that limit,
/// before any plan is made or memory estimated.
fn check_payload_size(size: u64) -> Result<()> {
    let max = icbench::suites::tune::MAX_VALUE_SIZE;
    if size > max {
        return Err(anyhow!(
            "--payload-size {size}: the bench canister takes at most {max} bytes per row (1 MiB, \
             the MAX_PAYLOAD_SIZE of its set_payload_size)"
        ));
    }
    Ok(())
}

/// The flags given on the command line: each suite flag (one of a suite's own, or a shared
/// one some suite reads) must be read by a suite of the run, else it is refused, naming the
/// suites that read it: the run would drop it without a word.
fn check_flags_read(selected: &[&'static dyn suites::Suite], matches: &ArgMatches) -> Result<()> {
    let given = matches
        .ids()
        .filter(|id| matches.value_source(id.as_str()) == Some(ValueSource::CommandLine));
    for id in given {
        let readers: Vec<&str> = suites::REGISTRY
            .iter()
            .filter(|s| s.reads(id.as_str()))
            .map(|s| s.name())
            .collect();
        // A flag of the run, not of a suite.
        if readers.is_empty() || selected.iter().any(|s| s.reads(id.as_str())) {
            continue;
        }
        return Err(anyhow!(
            "--{}: {} {} not read it ({} {} it): leave it out",
            id.as_str().replace('_', "-"),
            the_suites(selected),
            if selected.len() == 1 { "does" } else { "do" },
            listed(&readers),
            if readers.len() == 1 { "reads" } else { "read" },
        ));
    }
    Ok(())
}

/// `--stores`, given: every store it names must be measured by a suite of the run, else it
/// is refused (the run would drop it without a word), naming the suites that measure it.
fn check_stores_measured(
    selected: &[&'static dyn suites::Suite],
    stores: &[StoreKind],
    matches: &ArgMatches,
) -> Result<()> {
    if matches.value_source("stores") != Some(ValueSource::CommandLine) {
        return Ok(());
    }
    let Some(kind) = stores
        .iter()
        .find(|k| !selected.iter().any(|s| k.measured_by(s.name())))
    else {
        return Ok(());
    };
    let measuring: Vec<&str> = suites::REGISTRY
        .iter()
        .map(|s| s.name())
        .filter(|&s| kind.measured_by(s))
        .collect();
    let given: Vec<&str> = stores.iter().map(|k| k.name()).collect();
    Err(anyhow!(
        "--stores {}: {} {} not measure {kind} ({} {} it): leave it out",
        given.join(","),
        the_suites(selected),
        if selected.len() == 1 { "does" } else { "do" },
        listed(&measuring),
        if measuring.len() == 1 {
            "measures"
        } else {
            "measure"
        },
    ))
}

/// `the dbbench suite`, `the dbbench and keys suites`.
fn the_suites(selected: &[&'static dyn suites::Suite]) -> String {
    let names: Vec<&str> = selected.iter().map(|s| s.name()).collect();
    match names.len() {
        1 => format!("the {} suite", names[0]),
        _ => format!("the {} suites", listed(&names)),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn listed(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// Runs the selected suites and writes all their outputs; `Ok(false)` when a suite's gate
/// (sysbench's ceilings) failed or a scenario could not be measured ([`suites::Suite::failed`]). `matches` holds the suites' own flags.
pub(crate) fn run(args: &RunArgs, matches: &ArgMatches) -> Result<bool> {
    check_payload_size(args.common.payload_size)?;
    let selected = suites::select(&args.suite)?;
    check_flags_read(&selected, matches)?;
    check_stores_measured(&selected, &args.common.stores, matches)?;
    // Every plan is made, so every flag checked, before any work starts.
    let mut plans = selected
        .iter()
        .map(|s| s.plan(matches, &args.common))
        .collect::<Result<Vec<_>>>()?;
    if selected.len() > 1 && matches!(args.format, Format::Json | Format::Csv) {
        return Err(anyhow!(
            "--format json/csv prints one suite; with {} suites read results.json / results.csv under --out {}",
            selected.len(),
            args.out.display()
        ));
    }
    if args.list_scenarios {
        list_scenarios(&selected, &plans);
        return Ok(true);
    }
    if let Some(pattern) = &args.profile {
        if args.engine != EngineKind::Embedded {
            return Err(anyhow!(
                "--profile needs the embedded engine: instruction profiles come from its own counter"
            ));
        }
        // Where the ids are known before the run, a pattern that matches none of them
        // stops it before any work.
        let known: Option<Vec<String>> = plans
            .iter()
            .map(|p| p.scenario_ids())
            .collect::<Option<Vec<Vec<String>>>>()
            .map(|ids| ids.concat());
        if let Some(ids) = known.filter(|ids| !ids.iter().any(|id| profiles::matches(pattern, id)))
        {
            return Err(anyhow!("{}", profiles::no_match(pattern, &ids)));
        }
    }
    let mut exec = Exec {
        jobs: args.jobs.map_or_else(Exec::default_jobs, |n| n as usize),
        shard: args.shard.unwrap_or(Shard::WHOLE),
        profile: args.profile.is_some(),
    };
    if !args.ignore_memory_estimate && args.engine == EngineKind::Embedded {
        exec = fit_memory(&mut plans, exec, args.jobs.is_some())?;
    }
    // What can refuse the run comes first, before an output directory is made or anything
    // is printed: the engine's flags, and every module --wasm names (read and checked).
    let mut engine = make_engine(args.engine, &args.rules)?;
    // Each plan's modules: the default one, and those of its other stores.
    let needs: Vec<_> = plans.iter().map(|p| p.modules()).collect();
    let named = args.module.read_named(&needs)?;
    // Every output directory is made and tried before any build, compile or prefill: a run
    // must not end, after minutes of work, in a directory it cannot write.
    for suite in &selected {
        let earlier = suite.out_dir(&args.out).join("results.json").is_file();
        let dir = prepare_out(*suite, &args.out)?;
        interrupt::expect(
            &dir,
            format!("the {} suite's results in {}", suite.name(), dir.display()),
            earlier,
        );
    }
    let wasm = named.default_module(args.module.build_canister, args.quiet)?;
    let modules = named.modules(&wasm, &needs, args.quiet)?;
    let mut gate_ok = true;
    let mut profiled = profiles::Selected::default();
    let mut all_ids = Vec::new();
    for ((suite, plan), modules) in selected.iter().zip(&plans).zip(&modules) {
        let started = std::time::Instant::now();
        if !args.quiet && selected.len() > 1 {
            eprintln!("suite {}", suite.name());
        }
        let mut bar = Bar::new(args.quiet);
        let mut report =
            plan.run_modules(engine.as_mut(), modules, &exec, &mut |p| bar.update(p))?;
        report.set_replica(engine.replica());
        report.set_host(engine.host());
        let embedded = args.engine == EngineKind::Embedded;
        report.set_provenance(&Provenance::of(modules.each(), embedded));
        pool::sign_shard(&mut report, &format!("{plan:?}"), modules);
        bar.finish();
        if let Some(pattern) = &args.profile {
            let selected = profiles::select(&mut report, pattern);
            profiled.matched += selected.matched;
            profiled.kept += selected.kept;
            all_ids.extend(report::scenario_ids(&report.results));
        }
        let document = suite.document(&report);
        let dir = suite.out_dir(&args.out);
        let written = report::write_all(&report, &document, &dir, Vec::new())
            .with_context(|| format!("writing results to {}", dir.display()))?;
        // A shard has only part of the checks' inputs: `icbench merge` applies the gate.
        let failures = if exec.shard.is_whole() {
            suite.gate(&report)
        } else {
            Vec::new()
        };
        if !failures.is_empty() {
            gate_ok = false;
            eprint_gate_failures(suite.name(), &failures);
        }
        if !eprint_failed(suite.name(), &suite.failed(&report)) {
            gate_ok = false;
        }
        let stdout = match args.format {
            Format::Table => format!(
                "{}\n{}",
                report::rules_line(&report),
                report::terminal(&document)
            ),
            Format::Markdown => report::markdown(&report, &document),
            Format::Json => report::json(&report),
            Format::Csv => report::csv(&report),
        };
        if selected.len() > 1 {
            println!("== suite {} ==\n", suite.name());
        }
        print!("{stdout}");
        if !args.quiet {
            eprint_written(&written);
            eprint_profiles(&report, &dir);
            eprintln!("{}", speed_line(&report, started.elapsed().as_secs_f64()));
        }
    }
    if let Some(pattern) = &args.profile {
        if profiled.matched == 0 {
            return Err(anyhow!("{}", profiles::no_match(pattern, &all_ids)));
        }
    }
    if let Some(line) = cache_line().filter(|_| !args.quiet) {
        eprintln!("{line}");
    }
    if !args.quiet && args.engine == EngineKind::Embedded {
        // How the heap's written pages were found: the counts are the same either way,
        // the speed is not.
        if let Ok(writes) = HeapWrites::configured() {
            eprintln!("heap writes found by: {}", writes.said());
        }
    }
    Ok(gate_ok)
}

/// `--list-scenarios`: each suite's scenario ids, one per line, or why they are not known
/// before a run.
pub(crate) fn list_scenarios(selected: &[&'static dyn suites::Suite], plans: &[Box<dyn Plan>]) {
    for (suite, plan) in selected.iter().zip(plans) {
        match plan.scenario_ids() {
            Some(ids) => {
                for id in ids {
                    println!("{}\t{id}", suite.name());
                }
            }
            None => eprintln!(
                "{}: its scenarios come out of the run; a --profile run lists their ids in report.md",
                suite.name()
            ),
        }
    }
}

/// After a profiled run: where each profile went, and the functions that spent the most
/// when there is one profile to read.
pub(crate) fn eprint_profiles(report: &Report, dir: &std::path::Path) {
    let kept = profiles::kept(report);
    for (id, file, profile) in &kept {
        eprintln!(
            "profile {id}: {} instructions in {}",
            report::format::thousands(profile.total()),
            dir.join(file).display()
        );
    }
    if let [(_, _, profile)] = kept.as_slice() {
        eprint!("{}", profiles::top_functions(profile, 15));
    }
}

/// Refuses a run whose suites are expected to need more memory than is available (the
/// suites run one after another: the largest estimate counts), naming the estimate, what
/// is available and the settings that fit, instead of being killed by the OOM killer after
/// minutes of work. Without `--jobs` (`jobs_given` false), a plan that does not fit even on
/// one worker leaves out what does not fit where it can ([`Plan::fit_to`]), and fewer
/// workers than the machine's cores are taken where they fit, a line saying each: the
/// counts are the same on any number of workers.
pub(crate) fn fit_memory(
    plans: &mut [Box<dyn Plan>],
    exec: Exec,
    jobs_given: bool,
) -> Result<Exec> {
    let peak = |plans: &[&dyn Plan], exec: &Exec| {
        plans
            .iter()
            .filter_map(|p| p.memory_estimate(exec))
            .max_by_key(|e| e.bytes)
    };
    let given: Vec<&dyn Plan> = plans.iter().map(|p| p.as_ref()).collect();
    let Some(estimate) = peak(&given, &exec) else {
        return Ok(exec);
    };
    let Some(available) = icbench::memory::available()? else {
        return Ok(exec);
    };
    if estimate.bytes <= available {
        return Ok(exec);
    }
    if !jobs_given {
        // Each plan that does not fit on one worker, fitted where it can be.
        let one = Exec { jobs: 1, ..exec };
        let fitted: Vec<Option<Fitted>> = given
            .iter()
            .map(|p| {
                let over = p.memory_estimate(&one).is_some_and(|e| e.bytes > available);
                over.then(|| p.fit_to(available, &exec)).flatten()
            })
            .collect();
        let current: Vec<&dyn Plan> = given
            .iter()
            .zip(&fitted)
            .map(|(p, f)| f.as_ref().map_or(*p, |f| f.plan.as_ref()))
            .collect();
        let fewer = (1..=exec.jobs).rev().find_map(|jobs| {
            let fewer = Exec { jobs, ..exec };
            let bytes = peak(&current, &fewer).map_or(0, |e| e.bytes);
            (bytes <= available).then_some((fewer, bytes))
        });
        if let Some((fewer, bytes)) = fewer {
            let estimate = peak(&current, &exec).unwrap_or(estimate);
            for (plan, fitted) in plans.iter_mut().zip(fitted) {
                if let Some(fitted) = fitted {
                    for line in fitted.lines {
                        eprintln!("icbench: {line}");
                    }
                    *plan = fitted.plan;
                }
            }
            if fewer.jobs < exec.jobs {
                let jobs = |n: usize| format!("{n} job{}", if n == 1 { "" } else { "s" });
                eprintln!(
                    "icbench: {} instead of {}: {} needs about {} of memory at its peak (an estimate), and {} is available; on {} about {}",
                    jobs(fewer.jobs),
                    exec.jobs,
                    estimate.what,
                    gigabytes(estimate.bytes),
                    gigabytes(available),
                    jobs(fewer.jobs),
                    gigabytes(bytes)
                );
            }
            return Ok(fewer);
        }
    }
    let fitting: Vec<String> = estimate
        .smaller
        .iter()
        .filter(|(_, b)| *b <= available)
        .take(3)
        .map(|(flags, b)| format!("`{flags}` (about {})", gigabytes(*b)))
        .collect();
    let fits = if fitting.is_empty() {
        "no smaller setting of this suite fits".to_string()
    } else {
        format!("these fit: {}", fitting.join(", "))
    };
    Err(anyhow!(
        "{} needs about {} of memory at its peak (an estimate), and {} is available; {fits}; or pass --ignore-memory-estimate to run anyway",
        estimate.what,
        gigabytes(estimate.bytes),
        gigabytes(available)
    ))
}

/// Progress on stderr: a live bar on a terminal; on a pipe or in CI, one line per prefill
/// message and per tenth of the scenarios.
pub(crate) struct Bar {
    quiet: bool,
    live: Option<ProgressBar>,
    started: std::time::Instant,
}

impl Bar {
    fn new(quiet: bool) -> Bar {
        let live = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:<14} [{bar:30}] {pos}/{len} {msg} [{elapsed}]",
                )
                .expect("a valid template")
                .progress_chars("#>."),
            );
            bar
        });
        Bar {
            quiet,
            live,
            started: std::time::Instant::now(),
        }
    }

    fn update(&mut self, p: Progress<'_>) {
        if self.quiet {
            return;
        }
        let loaded = matches!(p, Progress::Loaded { .. });
        let (prefix, done, total, msg, milestone) = match p {
            Progress::Prefill { store, done, total } => (
                format!("prefill {store}"),
                done,
                total,
                "rows".to_string(),
                true,
            ),
            Progress::Loaded { store } => (
                format!("loaded {store}"),
                1,
                1,
                "post-prefill state from the cache".to_string(),
                true,
            ),
            Progress::Scenario { done, total, key } => (
                "scenarios".to_string(),
                done as u64,
                total as u64,
                key.to_string(),
                done == total || done % (total / 10).max(1) == 0,
            ),
        };
        match &self.live {
            Some(bar) => {
                bar.set_prefix(prefix);
                bar.set_length(total);
                bar.set_position(done);
                bar.set_message(msg);
            }
            None if milestone => {
                // A loaded state has no rows to count.
                let counted = match loaded {
                    true => String::new(),
                    false => format!("{done}/{total} "),
                };
                eprintln!(
                    "{prefix:<14} {counted}{msg} [{:.0}s]",
                    self.started.elapsed().as_secs_f64()
                )
            }
            None => {}
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.live {
            bar.finish();
        }
    }
}

pub(crate) fn speed_line(report: &Report, wall: f64) -> String {
    let executed = report.executed_instructions as f64;
    format!(
        "wall time {wall:.1}s for {} scenarios, prefill included; the engine executed {:.2}B instructions, {:.2}B per second",
        report.results.len(),
        executed / 1e9,
        executed / 1e9 / wall.max(1e-9)
    )
}
