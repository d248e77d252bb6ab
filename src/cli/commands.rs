//! The subcommands besides a run: cache, merge, compare, profile-diff, profile-top and
//! crosscheck.

use crate::args::*;
use crate::shared::*;

use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};

use icbench::engine::disk_cache;
use icbench::engine::Engine;
use icbench::report::{self, Folded, Report};
use icbench::suites::{self, Exec, Plan};

pub(crate) fn cache(action: &CacheAction) -> Result<bool> {
    let dir = disk_cache::dir_from_env()?;
    match action {
        CacheAction::Dir => println!("{}", dir.display()),
        CacheAction::Info => {
            println!("{}", dir.display());
            let usage = disk_cache::usage(&dir)?;
            for (kind, n, bytes) in usage.kinds {
                println!("{kind}: {n} entries, {:.1} MB", bytes as f64 / 1e6);
            }
            let (n, bytes) = usage.leftovers;
            println!(
                "left by stopped runs: {n} temporary files, {:.1} MB (the next run removes them)",
                bytes as f64 / 1e6
            );
        }
        CacheAction::Clear => {
            let removed = disk_cache::clear(&dir)?;
            println!("removed {removed} files from {}", dir.display());
        }
    }
    Ok(true)
}

/// Refuses an `--out` that is one of the merged directories (by any spelling: the paths
/// are compared canonicalized): the joined files would overwrite that shard's and leave the
/// files of its own (work.csv) beside them.
fn refuse_out_among_dirs(args: &MergeArgs) -> Result<()> {
    // An --out not made yet is none of the directories, which exist.
    let Ok(out) = args.out.canonicalize() else {
        return Ok(());
    };
    match args
        .dirs
        .iter()
        .find(|d| d.canonicalize().is_ok_and(|d| d == out))
    {
        Some(dir) => Err(anyhow!(
            "--out {} is the directory of the shard {}: the merged files would overwrite that \
             shard's and leave its work.csv beside them; give --out a directory of its own",
            args.out.display(),
            dir.display()
        )),
        None => Ok(()),
    }
}

pub(crate) fn merge(args: &MergeArgs) -> Result<bool> {
    use icbench::canbench::shard;
    refuse_out_among_dirs(args)?;
    // canbench parts and suite shards are told apart by their files; never mixed.
    let canbench: Vec<&PathBuf> = args.dirs.iter().filter(|d| shard::is_part(d)).collect();
    if canbench.len() == args.dirs.len() {
        return shard::merge(&args.dirs, &args.out);
    }
    if let Some(part) = canbench.first() {
        let other = args
            .dirs
            .iter()
            .find(|d| !shard::is_part(d))
            .expect("some directory is not a canbench part");
        return Err(anyhow!(
            "{} holds a part of an `icbench canbench --shard` run ({}) and {} does not: canbench parts are merged only with each other",
            part.display(),
            shard::PART_FILE,
            other.display()
        ));
    }
    let merged = suites::merge::merge(&args.dirs)?;
    for m in &merged {
        prepare_out(m.suite, &args.out)?;
    }
    let mut gate_ok = true;
    for m in merged {
        let document = m.suite.document(&m.report);
        let dir = m.suite.out_dir(&args.out);
        // The shards' profiles, written with the merged files (and as a run's, so that
        // an earlier run's left there go).
        let mut profiles = Vec::new();
        for (from, file) in &m.profiles {
            for from in [from.clone(), from.with_extension("svg")] {
                let to = dir
                    .join(file)
                    .with_extension(from.extension().unwrap_or_default());
                if let Some(parent) = to.parent() {
                    icbench::interrupt::create_dir_all(parent)
                        .with_context(|| format!("creating {}", parent.display()))?;
                }
                let text = std::fs::read_to_string(&from)
                    .with_context(|| format!("reading the profile {}", from.display()))?;
                profiles.push((to, text));
            }
        }
        let written = report::write_all(&m.report, &document, &dir, profiles)
            .with_context(|| format!("writing results to {}", dir.display()))?;
        let failures = m.suite.gate(&m.report);
        if !failures.is_empty() {
            gate_ok = false;
            eprint_gate_failures(m.suite.name(), &failures);
        }
        if !eprint_failed(m.suite.name(), &m.suite.failed(&m.report)) {
            gate_ok = false;
        }
        if !args.quiet {
            eprint_written(&written);
        }
    }
    Ok(gate_ok)
}

pub(crate) fn compare(args: &CompareArgs) -> Result<bool> {
    let read = |p: &PathBuf| -> Result<Report> {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        report::from_json(&text).map_err(|e| anyhow!("{}: {e}", p.display()))
    };
    if !(args.noise.is_finite() && args.noise >= 0.0) {
        return Err(anyhow!("--noise must be a non-negative percentage"));
    }
    let gate = report::Gate {
        max_ratio: args.max_ratio,
        max_section_ratio: args.max_section_ratio,
    };
    gate.check().map_err(anyhow::Error::msg)?;
    args.comment.check().map_err(anyhow::Error::msg)?;
    let (base, new) = (read(&args.base)?, read(&args.new)?);
    if let Some(why) = report::compare::incomparable(&base, &new) {
        return Err(anyhow!("{why}"));
    }
    let unlike = report::compare::unlike(&base, &new);
    if !unlike.is_empty() && !args.cross_rules {
        let each: Vec<String> = unlike.iter().map(|u| u.to_string()).collect();
        return Err(anyhow!(
            "the runs are not alike: {}; their counts differ by that whatever the code did \
             (--cross-rules compares them anyway)",
            each.join("; ")
        ));
    }
    let mut comparison = report::compare::compare(&base, &new, args.noise);
    let dir = |p: &PathBuf| p.parent().map(PathBuf::from).unwrap_or_default();
    let (base_dir, new_dir) = (dir(&args.base), dir(&args.new));
    let graphs = args
        .flame_graphs
        .clone()
        .unwrap_or_else(|| new_dir.join("profile-diffs"));
    let (written, warnings) = comparison.write_flame_graphs(&base_dir, &new_dir, &graphs);
    for w in warnings {
        eprintln!("warning: {w}");
    }
    match args.format {
        CompareFormat::Text => print!("{}", comparison.render()),
        CompareFormat::Markdown => {
            let mut comment = comparison.comment(&args.comment.title, &gate);
            comment.marker = args.comment.marker.clone();
            let text = comment
                .render(args.comment.max_chars)
                .map_err(anyhow::Error::msg)?;
            print!("{text}");
        }
    }
    if !written.is_empty() {
        eprint_written(&written);
    }
    let failures = comparison.gate_failures(&gate);
    if !failures.is_empty() {
        eprintln!(
            "gate failed ({}):\n  {}",
            gate.describe(args.noise),
            failures.join("\n  ")
        );
    }
    Ok(failures.is_empty())
}

pub(crate) fn profile_diff(args: &ProfileDiffArgs) -> Result<bool> {
    let a = Folded::read(&args.a).map_err(anyhow::Error::msg)?;
    let b = Folded::read(&args.b).map_err(anyhow::Error::msg)?;
    let (a_name, b_name) = (args.a.display().to_string(), args.b.display().to_string());
    let svg = report::differential_graph((&a_name, &a), (&b_name, &b), args.a_shape)
        .map_err(anyhow::Error::msg)?;
    std::fs::write(&args.out, svg).with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!("wrote {}", args.out.display());
    Ok(true)
}

pub(crate) fn profile_top(args: &ProfileTopArgs) -> Result<bool> {
    let profile = Folded::read(&args.file).map_err(anyhow::Error::msg)?;
    print!("{}", profile.top_table(args.top));
    Ok(true)
}

pub(crate) fn crosscheck(args: &CrosscheckArgs) -> Result<bool> {
    use icbench::crosscheck::{self, Metric};
    if !(args.threshold.is_finite() && args.threshold >= 0.0) {
        return Err(anyhow!("--threshold must be a non-negative percentage"));
    }
    // The server first: without one this fails at once, before any build or run.
    let mut pocket_ic = pocket_ic_engine("crosscheck")?;
    let cfg = crosscheck::config();
    let needs = [cfg.modules()];
    let named = args.module.read_named(&needs)?;
    let wasm = named.default_module(args.module.build_canister, args.quiet)?;
    let modules = named.modules(&wasm, &needs, args.quiet)?;
    let mut reports = Vec::new();
    for engine in [
        &mut args.rules.embedded_engine()? as &mut dyn Engine,
        pocket_ic.as_mut(),
    ] {
        if !args.quiet {
            eprintln!(
                "crosscheck: running {} scenarios on {}...",
                cfg.matrix().len(),
                engine.name()
            );
        }
        reports.push(cfg.run_modules(engine, &modules[0], &Exec::SEQUENTIAL, &mut |_| {})?);
    }
    let metric = match args.metric {
        MetricKind::Store => Metric::Store,
        MetricKind::Charged => Metric::Charged,
    };
    let check = crosscheck::compare(&reports[0], &reports[1], metric, args.threshold);
    print!("{}", check.render());
    Ok(check.failures() == 0)
}
