//! One run of a suite from its start to its report: what every [`Plan::run`](super::super::Plan)
//! begins with and ends with, around the suite's own scenarios.

use std::time::Instant;

use anyhow::Result;

use crate::bench_canister::BenchClient;
use crate::engine::Engine;
use crate::report::{Report, Workload};
use crate::suites::pool::{self, Outcomes, Recorder, UnitId};
use crate::suites::Exec;

/// A run under way: its suite, its clock, its engine and the log of its units of work.
pub struct Session {
    suite: String,
    started: Instant,
    /// `embedded` or `pocket-ic`, for every record.
    pub engine_name: String,
    /// The run's units of work, on `exec.jobs` lanes.
    pub work: Recorder,
}

/// What a suite's report says of its run besides the records (the session fills the rest:
/// suite, engine, wall time, instructions executed, the work log).
pub struct Header {
    pub workload: Workload,
    /// Where the scenarios' starting state came from, when the suite says.
    pub prefill: Option<String>,
    pub notes: Vec<String>,
}

impl Session {
    /// Starts the clock and the work log of a run of `suite` on `engine`.
    pub fn start(suite: &str, engine: &dyn Engine, exec: &Exec) -> Session {
        Session {
            suite: suite.to_string(),
            started: Instant::now(),
            engine_name: engine.name().to_string(),
            work: Recorder::new(exec.jobs),
        }
    }

    /// The module compiled and the canister installed, each a unit of the log: the client
    /// and the install's unit, which the suite's first work follows.
    pub fn install<'e>(
        &self,
        engine: &'e mut dyn Engine,
        wasm: &[u8],
    ) -> Result<(BenchClient<'e>, UnitId)> {
        pool::install(engine, wasm, &self.work)
    }

    /// The suite that runs, as its records name it.
    pub fn suite(&self) -> &str {
        &self.suite
    }

    /// Seconds since the run started.
    pub fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The report: `header`, the measured outcomes, the instructions `client` executed and the
    /// work log so far.
    pub fn report(&self, client: &BenchClient<'_>, header: Header, measured: Outcomes) -> Report {
        let mut report = Report {
            suite: self.suite.clone(),
            engine: self.engine_name.clone(),
            workload: Some(header.workload),
            wall_seconds: self.elapsed(),
            prefill: header.prefill,
            executed_instructions: client.executed_instructions,
            work: Some(self.work.log()),
            results: Vec::new(),
            notes: header.notes,
            extra: Default::default(),
        };
        measured.into_report(&mut report);
        report
    }
}
