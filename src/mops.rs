//! `icbench mops`: runs a Motoko project's `mops bench` suite (ic-mops 3.x) offline on the
//! embedded engine: the bench files mops finds, compiled as mops compiles them with the moc
//! the project names, wrapped in icbench's own bench canister (written to behave as mops'
//! does), run cell by cell as mops runs them, and reported as mops prints them, with mops'
//! results files. What mops cannot give: the figures under another replica's rules
//! (`--replica 2026-07`), the pages each cell touched (`--pages`), a cell's flame graph
//! (`--profile`) and the pull-request comment (`--markdown`).

pub mod compile;
pub mod optimize;
pub mod project;
pub mod report;
pub mod results;
pub mod runner;
pub mod toolchain;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;

use crate::engine::cost::{Host, Replica, POCKET_IC_RELEASES};

use self::compile::{Flags, Gc, Moc};
use self::optimize::Optimizer;
use self::project::Project;
use self::report::Style;
use self::results::Saved;
use self::runner::{Cell, Mode, Schema};

/// The PocketIC release `mops bench` recommends pinning (`RECOMMENDED_POCKET_IC_VERSION`,
/// ic-mops 3.1.0): whose rules charge the figures unless mops.toml pins another or
/// `--replica` says otherwise.
pub const RECOMMENDED_POCKET_IC: &str = "15.0.0";

#[derive(Args, Clone, Debug, Default)]
pub struct MopsArgs {
    /// Bench files to run: paths of `*.mo` files, or one filter (mops' `[filter]`: the
    /// files under bench/ or benchmark/ whose name contains it). Default: every
    /// `*.bench.mo` under bench/ and benchmark/. Arguments after `--` go to moc.
    #[arg(value_name = "FILE_OR_FILTER")]
    pub files: Vec<String>,
    /// The garbage collector (mops' `--gc`); copying, compacting and generational imply
    /// legacy persistence.
    #[arg(long, value_enum, default_value = "incremental")]
    pub gc: Option<Gc>,
    /// Compile without moc's --force-gc (mops always passes it).
    #[arg(long)]
    pub no_force_gc: bool,
    /// Run each cell as a query call (mops' `--query`: no garbage collection).
    #[arg(long)]
    pub query: bool,
    /// Compile under legacy (classical) persistence (mops' `--legacy-persistence`).
    #[arg(long)]
    pub legacy_persistence: bool,
    /// Skip mops.toml's [optimize] wasm-opt pass (mops' `--no-optimize`); icbench has no
    /// wasm-opt, so a project that configures one needs this flag.
    #[arg(long)]
    pub no_optimize: bool,
    /// Write each file's results to .bench/<file>.json in mops' format (`--save`).
    #[arg(long)]
    pub save: bool,
    /// Compare with .bench/<file>.json, as `mops bench --compare` does.
    #[arg(long)]
    pub compare: bool,
    /// The moc to compile with: a native moc, or the directory of the npm package `motoko`
    /// (default: what mops.toml's [toolchain] moc names, found offline).
    #[arg(long, value_name = "PATH")]
    pub moc: Option<PathBuf>,
    /// The bench canister to wrap each bench in (default: icbench's own). mops' template
    /// (cli/commands/bench/bench-canister.mo of ic-mops) gives mops' module.
    #[arg(long, value_name = "FILE")]
    pub bench_canister: Option<PathBuf>,
    /// The replica rules the figures are charged by: a vintage (`2026-07`: today's, with
    /// the memory tracker) or `pocket-ic-VERSION`. Default: those of the PocketIC mops.toml
    /// pins ([toolchain] pocket-ic), else of mops' recommended 15.0.0.
    #[arg(long, value_name = "VINTAGE", value_parser = crate::suites::replica_value_parser())]
    pub replica: Option<String>,
    #[command(flatten)]
    pub host: crate::suites::HostArg,
    /// Also print each cell's Wasm pages and their charge under mops' tables.
    #[arg(long)]
    pub pages: bool,
    /// Write a flame graph of the message each cell ran in (.bench/<file>/<row>-<col>.svg
    /// and .folded).
    #[arg(long)]
    pub profile: bool,
    /// Also write the results as a pull-request comment (markdown) to this file.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    #[command(flatten)]
    pub comment: crate::report::CommentArgs,
    /// Arguments after `--`, passed to moc after mops' flags.
    #[arg(last = true, value_name = "MOC_ARGS")]
    pub moc_args: Vec<String>,
}

/// Everything a run needs, found and checked before any compile.
struct Plan {
    project: Project,
    files: Vec<PathBuf>,
    moc: Moc,
    template: String,
    args: Vec<String>,
    flags: Flags,
    rules: (Replica, Host),
    /// The PocketIC version the results file names.
    replica_version: String,
    /// Whether the rules are those mops' own run would have (no line in the tables).
    default_rules: bool,
    /// With `--compare` or `--markdown`, each file's saved results (read before any work).
    previous: Vec<Option<Saved>>,
    /// mops.toml's `[optimize]` pass, unless `--no-optimize`.
    optimizer: Option<Optimizer>,
}

/// The rules the figures are charged by, the PocketIC version they stand for, and whether
/// they are the default.
fn rules(args: &MopsArgs, project: &Project) -> Result<(Replica, String, bool)> {
    if let Some(name) = &args.replica {
        let replica = Replica::by_name(name).map_err(|e| anyhow!(e))?;
        let version = replica
            .pocket_ic_releases()
            .last()
            .map_or_else(String::new, |r| r.version().to_string());
        return Ok((replica, version, false));
    }
    let pin = project
        .toolchain
        .pocket_ic
        .clone()
        .unwrap_or_else(|| RECOMMENDED_POCKET_IC.into());
    let release = POCKET_IC_RELEASES.iter().find(|r| r.version() == pin).ok_or_else(|| {
        anyhow!(
            "mops.toml pins PocketIC {pin}, whose replica rules icbench does not know: pass --replica with a vintage or one of {}",
            POCKET_IC_RELEASES.iter().map(|r| r.name).collect::<Vec<_>>().join(", ")
        )
    })?;
    Ok((release.replica, pin, true))
}

/// The bench files: those named, or those mops finds (with a filter); an error when none.
fn select(args: &MopsArgs, root: &Path) -> Result<Vec<PathBuf>> {
    let cwd = std::env::current_dir()?;
    // An empty filter is none, as mops takes it (its glob would take every `.mo`).
    let given: Vec<&String> = args.files.iter().filter(|f| !f.is_empty()).collect();
    let (named, filters): (Vec<&String>, Vec<&String>) = given
        .iter()
        .partition(|f| f.ends_with(".mo") || cwd.join(f).is_file());
    if filters.len() > 1 {
        bail!(
            "one filter at most (mops takes one), got {}",
            filters
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut files = Vec::new();
    for f in &named {
        let path = cwd.join(f);
        if !path.is_file() {
            bail!("bench file {f} does not exist");
        }
        files.push(path.canonicalize()?);
    }
    if let Some(filter) = filters.first() {
        let found = project::bench_files(root, Some(filter))?;
        if found.is_empty() {
            let all = project::bench_files(root, None)?;
            bail!(
                "no bench file matches the filter '{filter}' (mops' glob `**/bench?(mark)/**/*{filter}*.mo`); the bench files are: {}",
                if all.is_empty() { "none".into() } else { all.iter().map(|f| compile::rel(root, f)).collect::<Vec<_>>().join(", ") }
            );
        }
        files.extend(found);
    }
    if given.is_empty() {
        files = project::bench_files(root, None)?;
        if files.is_empty() {
            bail!("no *.bench.mo files under bench/ or benchmark/ in {}: put your benchmark code in 'bench' directory in *.bench.mo files", root.display());
        }
    }
    files.sort();
    files.dedup();
    for file in &files {
        check_bench_file(root, file)?;
    }
    Ok(files)
}

/// Refuses, before any compile, a file mops could not run as a bench: one outside the
/// project, one that is not Motoko, and a module without the `init()` the bench canister
/// calls (a library), which moc would otherwise report against icbench's generated file.
fn check_bench_file(root: &Path, file: &Path) -> Result<()> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let canonical = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    if !canonical.starts_with(&root) {
        bail!(
            "{} lies outside the project ({}): a bench file is one of its own",
            file.display(),
            root.display()
        );
    }
    let shown = compile::rel(&root, &canonical);
    if canonical.extension().is_none_or(|e| e != "mo") {
        bail!("{shown} is not a Motoko file: a bench file is a module (.mo) whose `init()` returns a Bench");
    }
    let text = std::fs::read_to_string(&canonical).with_context(|| format!("reading {shown}"))?;
    if !defines_init(&text) {
        bail!("{shown} is not a bench: it defines no `init()` (the bench canister calls `init()` for the Bench)");
    }
    Ok(())
}

/// Whether Motoko source `text` has a `func init(`.
fn defines_init(text: &str) -> bool {
    text.match_indices("func").any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let rest = text[at + "func".len()..].trim_start();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && rest
                .strip_prefix("init")
                .is_some_and(|r| r.trim_start().starts_with(['(', '<']))
    })
}

fn plan(args: &MopsArgs) -> Result<Plan> {
    args.comment.check().map_err(|e| anyhow!(e))?;
    let root = project::find_root(&std::env::current_dir()?)?;
    let project = Project::load(&root)?;
    let optimizer = match (&project.optimize, args.no_optimize) {
        (Some(optimize), false) => Some(Optimizer::find(&project, optimize)?),
        _ => None,
    };
    let files = select(args, &root)?;
    // What would fail after a bench ran fails here: a saved file --compare (or the comment)
    // cannot read, a .bench --save or --profile cannot write. Read before any file is saved
    // again, the saved files are what every figure is compared with.
    let previous = match args.compare || args.markdown.is_some() {
        true => files
            .iter()
            .map(|f| results::read(&results::path(&root, f)))
            .collect::<Result<_>>()?,
        false => Vec::new(),
    };
    if args.save || args.profile {
        let dir = root.join(results::DIR);
        crate::report::prepare_dir(&dir)
            .map_err(|e| anyhow!("cannot write into {}: {e}", dir.display()))?;
    }
    let (replica, replica_version, default_rules) = rules(args, &project)?;
    let host = args.host.get();
    let template = match &args.bench_canister {
        Some(p) => std::fs::read_to_string(p)
            .with_context(|| format!("--bench-canister {}", p.display()))?,
        None => compile::BENCH_CANISTER.to_string(),
    };
    compile::wrap(&template, "check")?;
    let moc = compile::find(&project, args.moc.as_deref())?;
    let flags = Flags {
        gc: args.gc.unwrap_or(Gc::Incremental),
        force_gc: !args.no_force_gc,
        legacy_persistence: args.legacy_persistence,
        extra: args.moc_args.clone(),
    };
    let version = moc_release(&project, &moc);
    let mut moc_args = project.moc_args.clone();
    moc_args.extend(compile::mops_flags(&flags, version.as_deref()));
    moc_args.extend(flags.extra.iter().cloned());
    Ok(Plan {
        project,
        files,
        moc,
        template,
        args: moc_args,
        flags,
        rules: (replica, host),
        replica_version,
        default_rules,
        previous,
        optimizer,
    })
}

/// The moc release the figures are of: the one mops.toml pins, else `moc`'s own (a pinned
/// path names no release). Both moc's flags and the results file take it.
fn moc_release(project: &Project, moc: &Moc) -> Option<String> {
    project
        .toolchain
        .moc
        .clone()
        .filter(|m| !project::is_path(m))
        .or_else(|| moc.release())
}

impl Plan {
    /// The results saved for `file` before the run (read with `--compare` or `--markdown`).
    fn previous_of(&self, file: &Path) -> Option<Saved> {
        let i = self.files.iter().position(|f| f == file)?;
        self.previous.get(i).cloned().flatten()
    }

    /// What this run's results file records of how it ran, without results.
    fn settings(&self) -> Saved {
        Saved {
            version: 1,
            moc: moc_release(&self.project, &self.moc).unwrap_or_default(),
            replica: "pocket-ic".into(),
            replica_version: self.replica_version.clone(),
            gc: self.flags.gc.name().into(),
            force_gc: self.flags.force_gc,
            results: Default::default(),
        }
    }
}

/// How the run that saved `saved` differs from this one (`now`) in what sets its figures:
/// moc, the PocketIC whose rules charged them, the collector; empty when alike.
fn unlike_saved(saved: &Saved, now: &Saved) -> Vec<String> {
    let mut unlike = Vec::new();
    let mut check = |what: &str, then: String, this: String| {
        if then != this {
            unlike.push(format!("{what} {then} there, {this} here"));
        }
    };
    check("moc", saved.moc.clone(), now.moc.clone());
    check(
        "PocketIC",
        saved.replica_version.clone(),
        now.replica_version.clone(),
    );
    check("the collector", saved.gc.clone(), now.gc.clone());
    check(
        "forced GC",
        saved.force_gc.to_string(),
        now.force_gc.to_string(),
    );
    unlike
}

/// The line on stderr that says which rules charged the figures.
fn rules_line(plan: &Plan) -> String {
    let (replica, host) = plan.rules;
    let releases: Vec<&str> = replica
        .pocket_ic_releases()
        .iter()
        .map(|r| r.version())
        .collect();
    let servers = match releases.as_slice() {
        [] => "no PocketIC release charges by them".to_string(),
        [one] => format!("as PocketIC {one}"),
        [first, .., last] => format!("as PocketIC {first} to {last}"),
    };
    let on = if host == Host::default() {
        String::new()
    } else {
        format!(" on host {}", host.name())
    };
    format!(
        "Replica rules {}{on} ({servers}); `--replica 2026-07` charges today's.",
        replica.name
    )
}

/// A bench file as run.
struct Ran {
    file: PathBuf,
    rel: String,
    outcome: Result<(Schema, Vec<Cell>), String>,
}

/// The whole command; `Ok(false)` when a cell trapped or a bench failed.
pub fn run(args: &MopsArgs) -> Result<bool> {
    let plan = plan(args)?;
    if let Some(md) = &args.markdown {
        crate::report::prepare_file(md)
            .map_err(|e| anyhow!("--markdown: cannot write {}: {e}", md.display()))?;
    }
    let root = &plan.project.root;
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
    let style = Style {
        color: std::io::stdout().is_terminal(),
        ci,
    };
    eprintln!(
        "Compiling {} bench file(s) with {}",
        plan.files.len(),
        plan.moc.describe()
    );
    let modules = compile::compile_all(
        &plan.moc,
        &plan.project,
        &plan.files,
        &plan.template,
        &plan.args,
        plan.optimizer.as_ref(),
    )?;
    if let Some(optimizer) = &plan.optimizer {
        eprintln!("Optimized with {}", optimizer.describe());
    }
    eprintln!("{}", rules_line(&plan));
    if ci {
        println!("# Benchmark Results\n\n");
    } else {
        println!("Benchmark files:");
        for f in &plan.files {
            println!(
                "{}",
                style_gray(style, &format!("• {}", compile::rel(root, f)))
            );
        }
        println!("\n{}\n", "=".repeat(50));
    }
    let mode = Mode {
        rules: plan.rules,
        query: args.query,
        profile: args.profile,
    };
    let mut ran = Vec::new();
    let mut ok = true;
    for (file, wasm) in plan.files.iter().zip(&modules) {
        let rel = compile::rel(root, file);
        if !ci {
            println!("\n{}", "-".repeat(50));
            println!("\nRunning {}...", style_gray(style, &rel));
            println!();
        }
        let outcome = runner::run(wasm, mode)?;
        ok &= print_bench(args, &plan, file, &rel, &outcome, style)?;
        ran.push(Ran {
            file: file.clone(),
            rel,
            outcome,
        });
    }
    if let Some(md) = &args.markdown {
        write_comment(args, &plan, &ran, md)?;
    }
    Ok(ok)
}

fn style_gray(style: Style, text: &str) -> String {
    if style.color && !style.ci {
        format!("\x1b[90m{text}\x1b[39m")
    } else {
        text.to_string()
    }
}

/// Prints one bench file's report, saves its results and profiles as asked; `Ok(false)`
/// when it failed or a cell trapped (then nothing is saved).
fn print_bench(
    args: &MopsArgs,
    plan: &Plan,
    file: &Path,
    rel: &str,
    outcome: &Result<(Schema, Vec<Cell>), String>,
    style: Style,
) -> Result<bool> {
    let root = &plan.project.root;
    let saved_path = results::path(root, file);
    let (schema, cells) = match outcome {
        Ok(run) => run,
        Err(e) => {
            eprintln!("error: {rel}: {e}");
            return Ok(false);
        }
    };
    let prev = match args.compare {
        true => {
            let prev = plan.previous_of(file);
            match &prev {
                None => println!("No previous results found \"{}\"", saved_path.display()),
                Some(saved) => {
                    let unlike = unlike_saved(saved, &plan.settings());
                    if !unlike.is_empty() {
                        eprintln!(
                            "warning: {rel}: {} was saved by another setup ({}): its figures differ by that too",
                            compile::rel(root, &saved_path),
                            unlike.join("; ")
                        );
                    }
                }
            }
            prev
        }
        false => None,
    };
    let mut text = report::output(rel, schema, cells, prev.as_ref(), style);
    if !plan.default_rules {
        text.push_str(&format!(
            "\n(charged by replica rules {})",
            plan.rules.0.name
        ));
    }
    if args.pages {
        text.push_str(&report::pages(schema, cells, plan.rules.0.name));
    }
    println!("{text}");
    let trapped: Vec<&Cell> = cells.iter().filter(|c| c.outcome.is_err()).collect();
    for c in &trapped {
        eprintln!(
            "error: {rel}: cell {} trapped: {}",
            c.key(),
            c.outcome.as_ref().err().map_or("", |e| e.as_str())
        );
    }
    if args.profile {
        write_profiles(root, file, cells)?;
    }
    if !trapped.is_empty() {
        if args.save {
            eprintln!(
                "{rel}: {} cell(s) trapped; {} not written",
                trapped.len(),
                compile::rel(root, &saved_path)
            );
        }
        return Ok(false);
    }
    if args.save {
        println!(
            "Saving results to {}",
            style_gray(style, &compile::rel(root, &saved_path))
        );
        let saved = Saved {
            results: cells
                .iter()
                .filter_map(|c| Some((c.key(), *c.outcome.as_ref().ok()?)))
                .collect(),
            ..plan.settings()
        };
        let text = results::render(&saved);
        if let Some(dir) = saved_path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
        }
        crate::report::write_files(&saved_path, vec![(saved_path.clone(), text)])
            .with_context(|| format!("writing {}", saved_path.display()))?;
    }
    Ok(true)
}

/// Each cell's flame graph: `.bench/<file>/<row>-<col>.svg` and `.folded`; those of cells
/// the file no longer has are removed.
fn write_profiles(root: &Path, file: &Path, cells: &[Cell]) -> Result<()> {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("bench");
    let dir = root.join(results::DIR).join(stem);
    let mut written = Vec::new();
    for c in cells {
        let Some(profile) = &c.profile else { continue };
        let name: String = format!("{}-{}", c.row, c.col)
            .chars()
            .map(|ch| {
                if ch.is_alphanumeric() || ch == '-' || ch == '_' || ch == '.' {
                    ch
                } else {
                    '_'
                }
            })
            .collect();
        let out = dir.join(name);
        let [folded, svg] = crate::report::profiles::write_profile(
            &out,
            &format!("{stem} {} (icbench mops)", c.key()),
            profile,
        )
        .map_err(|e| anyhow!("writing the flame graph of {}: {e}", c.key()))?;
        eprintln!("Flame graph of {} written to {}", c.key(), svg.display());
        written.extend([folded, svg]);
    }
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let profile = path
            .extension()
            .is_some_and(|e| e == "svg" || e == "folded");
        if profile && !written.contains(&path) {
            std::fs::remove_file(&path)
                .with_context(|| format!("removing the old flame graph {}", path.display()))?;
        }
    }
    Ok(())
}

/// The pull-request comment: a table per bench file with each cell's figures and their
/// change against the saved file, and its pages.
fn write_comment(args: &MopsArgs, plan: &Plan, ran: &[Ran], path: &Path) -> Result<()> {
    use crate::report::comment::{Comment, Section};
    let mut comment = Comment {
        headline: format!("**{}**: mops benchmarks, {} file(s)", args.comment.title, ran.len()),
        paragraphs: vec![format!(
            "Charged by replica rules {}. Changes against `.bench/*.json`; pages are the 64 KiB Wasm pages each cell first touched (heap accessed/written · stable accessed/written).",
            plan.rules.0.name
        )],
        marker: args.comment.marker.clone(),
        ..Comment::default()
    };
    for r in ran {
        let prev = plan.previous_of(&r.file);
        let mut section = Section::new(
            r.rel.clone(),
            &["cell", "instructions", "change", "heap", "GC", "pages"],
        );
        match &r.outcome {
            Ok((_, cells)) => {
                for c in cells {
                    section.rows.push(comment_row(c, prev.as_ref()));
                }
            }
            Err(e) => section.rows.push(vec![
                format!("failed: {e}"),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]),
        }
        comment.shown.push(section);
    }
    let text = comment
        .render(args.comment.max_chars)
        .map_err(|e| anyhow!(e))?;
    crate::report::write_files(path, vec![(path.to_path_buf(), text)])
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("Pull-request comment written to {}", path.display());
    Ok(())
}

fn comment_row(c: &Cell, prev: Option<&Saved>) -> Vec<String> {
    let Ok(s) = &c.outcome else {
        return vec![
            c.key(),
            "trap".into(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ];
    };
    let change = match prev.and_then(|p| p.get(&c.key())) {
        Some(b) if b.instructions != 0 => format!(
            "{:+.2}%",
            (s.instructions - b.instructions) as f64 / b.instructions as f64 * 100.0
        ),
        Some(_) => "0%".into(),
        None => "new".into(),
    };
    let pages = c.pages.as_ref().map(report::touched).unwrap_or_default();
    vec![
        c.key(),
        report::number(s.instructions),
        change,
        report::size(s.rts_heap_size as f64),
        report::size(s.rts_reclaimed as f64),
        pages,
    ]
}
