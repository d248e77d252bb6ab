//! The `sustained` suite: what a store costs when it keeps serving. Per store and position,
//! N update messages of one workload sent one after the other from the store's start (the
//! default run's: the filled table, a collector with nothing to do, a cold page cache),
//! each measured; the record gives the sequence's mean, median, 99th percentile and
//! largest charged instructions, the pages per message, and where the runtime reports it
//! the garbage collector's share. One message from one snapshot catches one phase of a
//! collector, an allocator or a page cache; a sequence catches them all.

use std::fmt;
use std::str::FromStr;

use anyhow::{anyhow, Result};
use clap::{ArgMatches, Args};

use super::scenario::{CacheState, Operation, Position, Scenario};
use super::shared::{default_from_flags, Define, Reads, Run};
use super::users::{self, Point, UsersPlan};
use super::CommonArgs;
use crate::report::format::thousands;
use crate::report::{Document, Report};
use bench_types::limits::users::MAX_IDS_PER_CALL;

mod document;

/// The suite's name: `--suite sustained`, the store table's `suites` entries.
pub const SUITE: &str = "sustained";

/// The sequences measured by default: 1,000 one-row inserts, 100 inserts of 100 rows.
pub const WORKLOADS: [Workload; 2] = [
    Workload {
        messages: 1_000,
        rows: 1,
    },
    Workload {
        messages: 100,
        rows: 100,
    },
];
/// Where the rows go by default: the default run's headline position, and ids spread over
/// the whole table.
pub const POSITIONS: [Position; 2] = [Position::Middle, Position::Random];
/// The most messages one sequence may send (each is a message of its own).
pub const MAX_MESSAGES: u64 = 10_000;

/// A sequence: `messages` insert messages of `rows` rows each (`1000x1` on the command line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Workload {
    pub messages: u64,
    pub rows: u64,
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.messages, self.rows)
    }
}

impl FromStr for Workload {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let parse = |part: &str| part.trim().parse::<u64>().ok().filter(|&n| n > 0);
        match s.split_once(['x', 'X']) {
            Some((messages, rows)) => match (parse(messages), parse(rows)) {
                (Some(messages), Some(rows)) => Ok(Workload { messages, rows }),
                _ => Err(format!(
                    "`{s}`: both numbers must be whole and at least 1 (MESSAGESxROWS, e.g. 1000x1)"
                )),
            },
            None => Err(format!(
                "`{s}` is not a sequence: give MESSAGESxROWS, e.g. 1000x1 for 1,000 one-row inserts"
            )),
        }
    }
}

pub struct Sustained;

#[derive(Args)]
#[command(next_help_heading = "sustained")]
pub struct SustainedArgs {
    /// The sequences, comma-separated: MESSAGESxROWS, that many insert messages of that many
    /// rows each, one after the other from the store's start.
    #[arg(long, value_delimiter = ',', default_values_t = WORKLOADS)]
    sustained_workloads: Vec<Workload>,
    /// Where the rows go, comma-separated (sorted: random ids sent in ascending order).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = POSITIONS)]
    sustained_positions: Vec<Position>,
}

/// The sustained suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The stores (the users suites' every store, cold: a sequence starts where the default
    /// run's scenarios start).
    pub users: users::Config,
    pub workloads: Vec<Workload>,
    pub positions: Vec<Position>,
    /// Whether the sequences were given on the command line (then every one must fit the
    /// table; a default one that does not is refused, with the reason, in the report).
    pub workloads_given: bool,
}

default_from_flags!(Sustained => Config);

impl Define for Sustained {
    type Args = SustainedArgs;
    type Plan = Config;

    fn plan(args: SustainedArgs, common: &CommonArgs, matches: &ArgMatches) -> Result<Config> {
        let given =
            |id: &str| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        // In the order given (the report's rows follow it); a repeat is refused before this.
        let mut workloads = args.sustained_workloads;
        let mut seen = std::collections::HashSet::new();
        workloads.retain(|w| seen.insert(*w));
        let mut positions = args.sustained_positions;
        positions.sort();
        positions.dedup();
        Ok(Config {
            users: users::Config {
                caches: vec![CacheState::Cold],
                ..users::Config::from_args(common, <Config as UsersPlan>::SUITE)?
            },
            workloads,
            positions,
            workloads_given: given("sustained_workloads"),
        })
    }

    const DOCUMENT: fn(&Report) -> Document = document::document;
    // Every sequence starts cold and its messages warm the cache: no --page-cache.
    const READS: Reads = Reads::Except(&["page_cache"]);
}

impl UsersPlan for Config {
    const SUITE: &'static str = SUITE;

    fn validate(&self) -> Result<()> {
        if self.workloads.is_empty() {
            return Err(anyhow!("--sustained-workloads needs at least one sequence"));
        }
        if self.positions.is_empty() {
            return Err(anyhow!("--sustained-positions needs at least one position"));
        }
        let max_rows = MAX_IDS_PER_CALL.min(self.users.rows / 2);
        for w in &self.workloads {
            if w.messages > MAX_MESSAGES {
                return Err(anyhow!(
                    "--sustained-workloads {w}: at most {} messages a sequence (each is a message of its own)",
                    thousands(MAX_MESSAGES)
                ));
            }
            if w.rows > max_rows {
                return Err(anyhow!(
                    "--sustained-workloads {w}: rows per message must be between 1 and {max_rows} (at most {MAX_IDS_PER_CALL} ids per call and half of --rows)"
                ));
            }
        }
        for point in self.points().iter().filter(|_| self.workloads_given) {
            let s = point.scenario;
            users::Call::warm_ups_fit(&s, self.users.rows, point.warm_ups).map_err(|e| {
                anyhow!(
                    "--sustained-workloads {}x{} (a sequence is its last message after N - 1 warm-ups): {e}",
                    point.messages(),
                    s.operation.rows()
                )
            })?;
        }
        Ok(())
    }

    fn measure(&self, run: Run<'_>) -> Result<Report> {
        let note = "The sustained suite: each row is a sequence of N insert messages of the workload sent one after the other from the store's start (the filled table, the collector of a Motoko store with nothing left to do, SQLite's page cache cold), each message measured. Its figures are per message: the mean, the median, the 99th percentile (nearest rank) and the largest charged instructions, the 64 KiB pages the memory tracker counted (accessed plus written), and for a Motoko store the share of the charged instructions its garbage collector's increments took (the runtime's own count). results.csv's own columns are those of the sequence's median message. Middle and end sequences take the windows of ids just below the last message's, random ones draws of their own.";
        users::run_points(run, &self.users, &self.points(), &[note.to_string()], None)
    }

    /// Per position, per workload, per store: the sequence's point.
    fn points(&self) -> Vec<Point> {
        let mut out = Vec::new();
        for &position in &self.positions {
            for workload in &self.workloads {
                let operation = Operation::Insert {
                    rows: workload.rows,
                };
                out.extend(self.users.stores.iter().map(|&store| {
                    let scenario = Scenario {
                        store,
                        position,
                        operation,
                        cache: CacheState::Cold,
                    };
                    Point::sequence(scenario, workload.messages)
                }));
            }
        }
        out
    }

    fn users(&self) -> &users::Config {
        &self.users
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_reads_as_messages_x_rows() {
        assert_eq!(
            "1000x1".parse::<Workload>(),
            Ok(Workload {
                messages: 1_000,
                rows: 1
            })
        );
        assert_eq!(WORKLOADS[1].to_string(), "100x100");
        let err = "1000".parse::<Workload>().unwrap_err();
        assert!(err.contains("MESSAGESxROWS"), "{err}");
        let err = "0x5".parse::<Workload>().unwrap_err();
        assert!(err.contains("at least 1"), "{err}");
    }

    #[test]
    fn a_point_per_position_workload_and_store() {
        let cfg = Config::default();
        let points = cfg.points();
        assert_eq!(
            points.len(),
            POSITIONS.len() * WORKLOADS.len() * cfg.users.stores.len()
        );
        let first = points[0];
        assert!(first.sequence);
        assert_eq!(first.messages(), 1_000);
        assert_eq!(first.scenario.position, Position::Middle);
        assert_eq!(first.scenario.cache, CacheState::Cold);
    }
}
