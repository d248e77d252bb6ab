//! What the suites over the users stores (seed003, lookups, cache, sustained) have in
//! common as plans: their points run from the stores' starts, so the modules, the records'
//! ids and the memory a run needs are their users settings'.

use anyhow::Result;

use super::{point_ids, Config, Point};
use crate::report::Report;
use crate::stores::ModuleNeed;
use crate::suites::shared::{Measure, Run};
use crate::suites::{Exec, MemoryEstimate};

/// The parts of a users suite's plan that differ from suite to suite; the rest of its
/// [`Measure`] is the same for each.
pub(in crate::suites) trait UsersPlan: std::fmt::Debug {
    /// As [`Measure::SUITE`].
    const SUITE: &'static str;
    /// As [`Measure::validate`], after the users settings' own checks.
    fn validate(&self) -> Result<()>;
    /// As [`Measure::measure`].
    fn measure(&self, run: Run<'_>) -> Result<Report>;
    /// What it measures, in report order.
    fn points(&self) -> Vec<Point>;
    /// The stores, their rows and the shared settings.
    fn users(&self) -> &Config;
}

impl<T: UsersPlan> Measure for T {
    const SUITE: &'static str = T::SUITE;

    fn validate(&self) -> Result<()> {
        self.users().validate()?;
        T::validate(self)
    }

    fn measure(&self, run: Run<'_>) -> Result<Report> {
        T::measure(self, run)
    }

    fn modules(&self) -> Vec<ModuleNeed> {
        self.users().modules()
    }

    fn scenario_ids(&self) -> Option<Vec<String>> {
        Some(point_ids(&self.points(), self.users()))
    }

    fn memory_estimate(&self, _exec: &Exec) -> Option<MemoryEstimate> {
        // Every part of a `--shard` run does the whole prefill.
        Some(self.users().memory_estimate(T::SUITE))
    }
}
