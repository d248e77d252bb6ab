//! icbench: what Internet Computer storage really costs, measured with the replica's
//! instruction metering on an embedded engine (or on PocketIC).
//!
//! Layers, each using only the ones before it: `engine` (the crate icbench-engine: the Engine
//! trait, the embedded engine, PocketIC, the cost model) <- `bench_canister` (the canister
//! client) <- `stores` (the store table: which stores exist, in which module, what each
//! supports) <- `report` (records and renderers; it knows no suite) <- `suites` (one module
//! per suite) <- the CLI, `crosscheck` and `canbench`.
//!
//! # The public surface
//!
//! The binary (`src/cli/`) and the integration tests (`tests/it/`, the benches) use this
//! library as an outside crate would, so what they need is `pub`. That is not all supported:
//!
//! * **Supported API**, documented; a change to it follows semver:
//!   * [`engine`]: the [`Engine`](engine::Engine) trait and what a message reports, the
//!     embedded engine ([`engine::embedded`]: load a module, install, call, snapshot), the
//!     replica's cost model as data ([`engine::cost`]: fees, limits, the vintages
//!     `--replica` names, the hosts `--host` names), instruction profiles and page maps, and
//!     the PocketIC backend (`engine::pocket_ic`, with the `pocket-ic` feature).
//!   * [`bench_canister`]: the benchmark canister's typed Candid client
//!     ([`BenchClient`](bench_canister::BenchClient)) over any engine, its records, and the
//!     modules this build embeds ([`Module`](bench_canister::Module)).
//!   * [`report`]: a run's records ([`Report`](report::Report),
//!     [`ScenarioResult`](report::ScenarioResult)), results.json read and written, results.csv,
//!     two runs compared ([`report::compare`]) and the pull-request comment, tables, plots
//!     and flame graphs.
//! * **`pub` for the binary and the tests only**, hidden from the documentation
//!   (`#[doc(hidden)]`) and changed whenever the CLI needs: `suites` (each suite's clap
//!   flags, plan and run: a plan is made from a command line whose list values the CLI has
//!   checked, src/cli/lists.rs), `stores` (the store table the suites ask), `canbench`
//!   (`icbench canbench`), `mops` and `replay` (`icbench mops`, `icbench replay`), `crosscheck`, `interrupt` (the CLI's signal handling) and
//!   `memory` (the memory a run may use); inside the engine, what its tests and benchmarks
//!   reach into: the instrumentation (`engine::instrument`), the disk cache, the counter
//!   reads, and the embedded engine's memory and System API.
//! * **Crate-private**, what nothing outside needs: `canister_sources` (compiled into
//!   build.rs too), and the report's renderers behind its re-exports (`report::comment`,
//!   `svg`, `table`, `work`, `page_map`).

pub mod bench_canister;
#[doc(hidden)]
pub mod canbench;
mod canister_sources;
#[doc(hidden)]
pub mod crosscheck;
pub use icbench_engine as engine;
#[doc(hidden)]
pub use icbench_engine::interrupt;
#[doc(hidden)]
pub mod memory;
#[doc(hidden)]
pub mod mops;
#[doc(hidden)]
pub mod replay;
pub mod report;
#[doc(hidden)]
pub mod stores;
#[doc(hidden)]
pub mod suites;

/// What the unit tests of several modules share (the engine's, as its tests need them too).
#[cfg(test)]
pub(crate) use icbench_engine::testing;
