//! A suite declared by its parts: its name, its flags, the plan made from them and its
//! document. The blanket [`Suite`] impl supplies what every suite does the same way (parse
//! the flags, register them, box the plan).

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{ArgMatches, Args, Command, FromArgMatches};

use crate::report::{Document, Report};
use crate::suites::{CommonArgs, Plan, Suite};

/// The parts of a suite that differ from suite to suite.
pub trait Define: Sync {
    /// `--suite NAME`.
    const NAME: &'static str;
    /// The suite's own flags (under a help heading of its own).
    type Args: Args + FromArgMatches;
    /// The plan from the suite's flags and the shared ones, checked; `matches` tells which
    /// flags were given on the command line.
    fn plan(args: Self::Args, common: &CommonArgs, matches: &ArgMatches) -> Result<Box<dyn Plan>>;
    /// As [`Suite::document`].
    fn document(report: &Report) -> Document;
    /// As [`Suite::gate`].
    fn gate(_report: &Report) -> Vec<String> {
        Vec::new()
    }
    /// As [`Suite::out_dir`].
    fn out_dir(base: &Path) -> PathBuf {
        base.join(Self::NAME)
    }
}

impl<T: Define> Suite for T {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn args(&self, cmd: Command) -> Command {
        T::Args::augment_args(cmd)
    }

    fn plan(&self, matches: &ArgMatches, common: &CommonArgs) -> Result<Box<dyn Plan>> {
        T::plan(T::Args::from_arg_matches(matches)?, common, matches)
    }

    fn out_dir(&self, base: &Path) -> PathBuf {
        T::out_dir(base)
    }

    fn document(&self, report: &Report) -> Document {
        T::document(report)
    }

    fn gate(&self, report: &Report) -> Vec<String> {
        T::gate(report)
    }
}
