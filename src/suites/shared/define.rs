//! A suite declared by its parts: its name, its flags, the plan made from them and its
//! document. The blanket [`Suite`] impl supplies what every suite does the same way (parse
//! the flags, register them, check the plan and box it).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Command, FromArgMatches};

use super::Measure;
use crate::report::{Document, Report, Status};
use crate::suites::scenario::StoreKind;
use crate::suites::{CommonArgs, Plan, Suite};

/// The parts of a suite that differ from suite to suite. Its name (`--suite NAME`) is its
/// plan's [`Measure::SUITE`].
pub trait Define: Sync {
    /// The suite's own flags (under a help heading of its own).
    type Args: Args + FromArgMatches;
    /// The plan the flags make.
    type Plan: Measure + 'static;
    /// The plan from the suite's flags and the shared ones; `matches` tells which flags were
    /// given on the command line. The blanket impl has checked the shared ones
    /// ([`CommonArgs::validate`]) before, and checks the plan ([`Measure::validate`]) after.
    fn plan(args: Self::Args, common: &CommonArgs, matches: &ArgMatches) -> Result<Self::Plan>;
    /// As [`Suite::document`].
    const DOCUMENT: fn(&Report) -> Document;
    /// As [`Suite::gate`].
    fn gate(_report: &Report) -> Vec<String> {
        Vec::new()
    }
    /// As [`Suite::out_dir`].
    fn out_dir(base: &Path) -> PathBuf {
        base.join(Self::Plan::SUITE)
    }
    /// Whether a message the replica rejects is one of its findings (the limit a store
    /// reaches) rather than a scenario it could not measure ([`Suite::failed`]).
    const LIMITS_ARE_FINDINGS: bool = false;
    /// The shared flags ([`CommonArgs`]) its plan reads; `--layout` among them says it fills
    /// its stores where the flag says (the others fill each in a canister of its own). The
    /// unit tests check it against the plan the flags make.
    const READS: Reads;
}

/// Shared flags, by clap id (`rows`, `page_cache`).
pub enum Reads {
    /// These.
    Only(&'static [&'static str]),
    /// All but these.
    Except(&'static [&'static str]),
}

impl<T: Define> Suite for T {
    fn name(&self) -> &'static str {
        T::Plan::SUITE
    }

    fn args(&self, cmd: Command) -> Command {
        T::Args::augment_args(cmd)
    }

    fn plan(&self, matches: &ArgMatches, common: &CommonArgs) -> Result<Box<dyn Plan>> {
        if matches.value_source("journal_modes") == Some(ValueSource::CommandLine) {
            crate::stores::check_journal_modes(
                T::Plan::SUITE,
                &common.stores,
                &common.journal_modes,
            )?;
        }
        common.validate()?;
        let plan = T::plan(T::Args::from_arg_matches(matches)?, common, matches)?;
        plan.validate()?;
        Ok(Box::new(plan))
    }

    fn out_dir(&self, base: &Path) -> PathBuf {
        T::out_dir(base)
    }

    fn document(&self, report: &Report) -> Document {
        (T::DOCUMENT)(report)
    }

    fn gate(&self, report: &Report) -> Vec<String> {
        T::gate(report)
    }

    fn failed(&self, report: &Report) -> Vec<String> {
        if T::LIMITS_ARE_FINDINGS {
            return Vec::new();
        }
        let ids = crate::report::scenario_ids(&report.results);
        ids.into_iter()
            .zip(&report.results)
            .filter_map(|(id, r)| match &r.status {
                Status::Failed(reason) if r.position != crate::suites::scenario::ABOVE => {
                    Some(format!("{id}: {reason}"))
                }
                _ => None,
            })
            .collect()
    }

    fn reads(&self, id: &str) -> bool {
        let shared = match T::READS {
            Reads::Only(ids) => ids.contains(&id),
            Reads::Except(ids) => !ids.contains(&id) && CommonArgs::has_flag(id),
        };
        shared
            || T::Args::augment_args(Command::new("icbench"))
                .get_arguments()
                .any(|a| a.get_id() == id)
    }
}

/// The plan an empty command line makes: the suite's defaults, from its flags' own (the
/// one place they are written).
pub fn default_plan<T: Define>() -> T::Plan {
    // The shared flags too: a plan asks `matches` whether they were given.
    let matches = T::Args::augment_args(CommonArgs::augment_args(Command::new("icbench")))
        .try_get_matches_from(["icbench"])
        .expect("every flag has a default");
    let common = CommonArgs::from_arg_matches(&matches).expect("the defaults parse");
    let args = T::Args::from_arg_matches(&matches).expect("the defaults parse");
    T::plan(args, &common, &matches).expect("the defaults make a plan")
}

/// `impl Default` for a suite's plan: [`default_plan`].
macro_rules! default_from_flags {
    ($suite:ty => $plan:ty) => {
        impl Default for $plan {
            fn default() -> Self {
                $crate::suites::shared::default_plan::<$suite>()
            }
        }
    };
}
pub(crate) use default_from_flags;

/// The check of a suite that does not measure every store: `--stores` must name one it
/// measures.
pub fn store_selected(stores: &[StoreKind], suite: &str) -> Result<()> {
    if crate::stores::measured_by(suite, stores).is_empty() {
        let (theirs, others): (Vec<StoreKind>, Vec<StoreKind>) =
            StoreKind::ALL.iter().partition(|k| k.measured_by(suite));
        let names = |kinds: &[StoreKind]| -> Vec<&str> { kinds.iter().map(|k| k.name()).collect() };
        let others = names(&others);
        let others = match others.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => others.join(""),
        };
        return Err(anyhow!(
            "no store of the {suite} suite selected (--stores {}; it has no {others} store)",
            names(&theirs).join(","),
        ));
    }
    Ok(())
}
