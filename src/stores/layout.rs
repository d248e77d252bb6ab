//! Where a run fills its stores: each in a canister of its own, or seed 003's one canister
//! per module. The users suites (seed003, lookups, cache) take either (`--layout`); the
//! other suites always fill each store in a canister of its own.

use clap::ValueEnum;

/// Where the stores are filled (`--layout`; results.json's `layout`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum)]
pub enum Layout {
    /// Each store in a canister of its own, only that store filled: its figures are its own,
    /// the same whichever other stores a run selects.
    #[default]
    Alone,
    /// Seed 003's: every store of a module filled in one canister (the heap map filled
    /// after that canister's snapshot, in a copy of its own), so that a store's figures
    /// depend on its neighbours.
    Shared,
}

impl Layout {
    /// Its `--layout` value, and its value in results.json.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Alone => "alone",
            Layout::Shared => "shared",
        }
    }

    /// A `--layout` value (results.json's `layout`), if it is one.
    pub fn by_name(name: &str) -> Option<Layout> {
        Layout::value_variants()
            .iter()
            .copied()
            .find(|l| l.name() == name)
    }

    /// What it means, for a report's settings.
    pub fn describe(self) -> &'static str {
        match self {
            Layout::Alone => "each store filled in a canister of its own, so that its figures are its own",
            Layout::Shared => "seed 003's, every store of a module filled in one canister, so that a store's figures depend on the others",
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
