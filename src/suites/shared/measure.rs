//! A suite's plan as the suite writes it: its run gets the run's inputs and a started
//! [`Session`] in one [`Run`]. The blanket [`Plan`] impl checks the plan and starts the
//! session.

use anyhow::Result;

use super::Session;
use crate::engine::Engine;
use crate::report::Report;
use crate::stores::{self, ModuleNeed, Modules};
use crate::suites::{Exec, Fitted, MemoryEstimate, Plan, Progress};

/// What a run is given: its session (clock, engine name, work log), the engine and the
/// modules (`wasm` the default one), the part of the plan to run (`exec`), and where
/// progress goes.
pub struct Run<'a> {
    pub session: Session,
    pub engine: &'a mut dyn Engine,
    pub wasm: &'a [u8],
    pub modules: &'a Modules<'a>,
    pub exec: &'a Exec,
    pub progress: &'a mut dyn FnMut(Progress<'_>),
}

/// The parts of a plan that differ from suite to suite.
pub trait Measure: std::fmt::Debug {
    /// The suite's name: `--suite NAME`, and the report's suite.
    const SUITE: &'static str;
    /// The plan's settings checked: the CLI checks them before it boxes the plan, and a run
    /// before it starts (a plan built by hand may be wrong).
    fn validate(&self) -> Result<()>;
    /// As [`Plan::run`]: runs the plan (its settings checked) and returns the report.
    fn measure(&self, run: Run<'_>) -> Result<Report>;
    /// As [`Plan::modules`]: the default module alone, unless the suite says otherwise.
    fn modules(&self) -> Vec<ModuleNeed> {
        stores::needs(std::iter::empty())
    }
    /// As [`Plan::scenario_ids`].
    fn scenario_ids(&self) -> Option<Vec<String>> {
        None
    }
    /// As [`Plan::memory_estimate`].
    fn memory_estimate(&self, _exec: &Exec) -> Option<MemoryEstimate> {
        None
    }
    /// As [`Plan::fit_to`].
    fn fit_to(&self, _available: u64, _exec: &Exec) -> Option<Fitted> {
        None
    }
}

impl<T: Measure> Plan for T {
    fn run_modules(
        &self,
        engine: &mut dyn Engine,
        modules: &Modules<'_>,
        exec: &Exec,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Report> {
        self.validate()?;
        let session = Session::start(T::SUITE, engine, exec);
        self.measure(Run {
            session,
            engine,
            wasm: modules.default_module(),
            modules,
            exec,
            progress,
        })
    }

    fn modules(&self) -> Vec<ModuleNeed> {
        T::modules(self)
    }

    fn scenario_ids(&self) -> Option<Vec<String>> {
        T::scenario_ids(self)
    }

    fn memory_estimate(&self, exec: &Exec) -> Option<MemoryEstimate> {
        T::memory_estimate(self, exec)
    }

    fn fit_to(&self, available: u64, exec: &Exec) -> Option<Fitted> {
        T::fit_to(self, available, exec)
    }
}
