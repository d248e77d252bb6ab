//! The replica's rules that changed over time, as dated vintages (`--replica NAME`): how
//! memory pages are charged (the deterministic memory tracker), the compilation charge and
//! the base storage fee; and the PocketIC releases that charge by each vintage. Data, as the
//! rest of the cost model: each rule with the dfinity/ic pull request that changed it.

use super::{
    Host, BASE_PER_SECOND_FEE, CREATE_EXECUTION_STATE_BASE_COST, DESERIALIZATION_SPEED_UP_FACTOR,
    OS_PAGE_SIZE, WASM_PAGE_SIZE,
};

/// The deterministic memory tracker's charge for memory pages (dfinity/ic pull request #10789
/// "Switch to deterministic memory tracker", merged 2026-07-16, squashed from #10536; its
/// feature flag removed by #11180, 2026-08-24). Every message starts with no page of the heap
/// or of stable memory mapped; the first access to a page faults, and the tracker maps the
/// whole 64 KiB Wasm page around it and charges `os_page_overhead` for each of its OS pages;
/// the first write to a Wasm page (of a message that tracks writes) charges as much again. The
/// charge is taken from the instruction counter inside the fault handler, during the message
/// (`ic0.performance_counter` sees it), and replaces both older page charges: the heap's
/// dirty pages after an update and the dirty stable pages in `stable_write`.
///
/// Sources, read through the search index (docs/engine.md says what each settles):
/// * rs/embedders/src/wasmtime_embedder.rs @ a3f79e4bcfeab4d5bba8d3652eeb4e4c8c7731f4:
///   `sigsegv_memory_tracker(..., self.config.page_overhead, subtract_instruction_counter)`
///   builds a `DeterministicMemoryTracker` for the heap and for stable memory, the heap's with
///   the message's `ModificationTracking`, stable memory's with the same; after the run "No
///   need to charge for dirty wasm heap pages anymore: The DMT charges directly".
/// * rs/memory_tracker/src/tests.rs (index id 70526575907): a fault raises the accessed pages
///   by `OS_PAGES_IN_WASM_PAGE`, a first write the dirty pages by as many, and a write to an
///   accessed page only lifts its write protection.
/// * #10440 (2026-06-11, review of deterministic.rs): "Charge ... per OS page accessed" and
///   "... per OS page dirtied", `INSTRUCTION_OVERHEAD_PER_OS_PAGE = 5_000`, then threaded
///   through from the configuration; #9944 (2026-04-20): the charge per Wasm page is
///   `OS_PAGES_PER_WASM_PAGE` times the charge per OS page; #11344 (2026-08-28): "every OS
///   page of heap or stable memory that a message touches: once when the Wasm page is first
///   accessed and once more when it is first written to".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryTracker {
    /// Instructions per OS page (`page_overhead`, 5,000 from #10789: "increased to 5000
    /// instructions per OS page (4KiB)").
    pub os_page_overhead: u64,
    /// OS pages the tracker maps and charges at once: one 64 KiB Wasm page.
    pub os_pages_per_wasm_page: u64,
}

impl MemoryTracker {
    /// The replica since dfinity/ic #10789.
    pub const DMT: MemoryTracker = MemoryTracker {
        os_page_overhead: 5_000,
        os_pages_per_wasm_page: 65_536 / OS_PAGE_SIZE,
    };

    /// The rule on `host`: the same charge per OS page, for as many OS pages as the host's
    /// fit in a Wasm page (`OS_PAGES_IN_WASM_PAGE`; [`Host`] has the sources): 80,000 per
    /// Wasm page on Linux, 20,000 on a Mac.
    pub const fn on(self, host: Host) -> MemoryTracker {
        MemoryTracker {
            os_pages_per_wasm_page: WASM_PAGE_SIZE / host.os_page_size(),
            ..self
        }
    }

    /// What the first access to a Wasm page costs, and the first write as much again.
    pub const fn wasm_page_charge(&self) -> u64 {
        self.os_page_overhead * self.os_pages_per_wasm_page
    }

    /// The Wasm pages `len` bytes at `offset` touch (empty when `len` is 0).
    pub fn wasm_pages(offset: u64, len: u64) -> std::ops::Range<u64> {
        if len == 0 {
            return 0..0;
        }
        let last = offset.saturating_add(len - 1);
        offset / WASM_PAGE_SIZE..last / WASM_PAGE_SIZE + 1
    }
}

/// One dated set of the replica's rules where they changed over time (`--replica NAME`).
/// Every rule not listed here is the same in every vintage (docs/engine.md has the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replica {
    /// The `--replica` name: the month the newest rule of the set was merged.
    pub name: &'static str,
    /// What changed in this vintage, for `--help` and the reports.
    pub summary: &'static str,
    /// The compilation of a module whose hash was installed (by any successful install_code
    /// on the subnet) since the last checkpoint counts 1/[`DESERIALIZATION_SPEED_UP_FACTOR`]
    /// (dfinity/ic pull request #4506, "Skip compilation charge when Wasm is in cache",
    /// 2025-03-25). Before it the canister paid the full compilation every time; only the
    /// round limit counted the reduced amount (hypervisor.rs, index ids 3440849940 and
    /// 11978743391, against 2421025282 after it).
    pub compilation_by_module_hash: bool,
    /// Instructions charged on every execution state created, on top of the compilation.
    pub create_execution_state_base_cost: u64,
    /// Storage cycles per second every canister with memory pays on top of its memory
    /// (`base_per_second_fee`, at the reference subnet size).
    pub base_per_second_fee: u128,
    /// How memory pages are charged: `None` by dirty pages (1,000 per 4 KiB page written,
    /// [`DIRTY_PAGE_OVERHEAD`](super::DIRTY_PAGE_OVERHEAD): heap pages after an update,
    /// stable pages in `stable_write`), `Some` by the deterministic memory tracker, during
    /// the message.
    pub memory_tracker: Option<MemoryTracker>,
}

impl Replica {
    /// The replica of 2024 until March 2025, whose rules the cost table was first
    /// transcribed from: every install_code pays the full compilation.
    pub const R2024: Replica = Replica {
        name: "2024",
        summary: "every install_code pays the module's full compilation",
        compilation_by_module_hash: false,
        create_execution_state_base_cost: 0,
        base_per_second_fee: 0,
        memory_tracker: None,
    };
    /// From dfinity/ic #4506 (2025-03-25): a module hash installed since the last
    /// checkpoint compiles for 1/100 of the charge.
    pub const R2025_03: Replica = Replica {
        name: "2025-03",
        summary: "a module installed since the last checkpoint pays 1/100 of its compilation",
        compilation_by_module_hash: true,
        create_execution_state_base_cost: 0,
        base_per_second_fee: 0,
        memory_tracker: None,
    };
    /// From dfinity/ic #10065 (2026-04-30): plus 20M instructions per execution state.
    pub const R2026_04: Replica = Replica {
        name: "2026-04",
        summary: "as 2025-03, plus 20,000,000 instructions per execution state created",
        compilation_by_module_hash: true,
        create_execution_state_base_cost: CREATE_EXECUTION_STATE_BASE_COST,
        base_per_second_fee: 0,
        memory_tracker: None,
    };
    /// From dfinity/ic #10292 (2026-05-22): plus a storage fee per canister.
    pub const R2026_05: Replica = Replica {
        name: "2026-05",
        summary: "as 2026-04, plus 10,000 storage cycles per second for every canister",
        base_per_second_fee: BASE_PER_SECOND_FEE,
        ..Replica::R2026_04
    };
    /// From dfinity/ic #10789 (2026-07-16): every heap and stable page a message touches is
    /// charged during the message ([`MemoryTracker::DMT`]).
    pub const R2026_07: Replica = Replica {
        name: "2026-07",
        summary: "as 2026-05, plus 80,000 instructions for every 64 KiB page of heap or stable memory a message touches and as much again for every one it writes, during the message (the deterministic memory tracker)",
        memory_tracker: Some(MemoryTracker::DMT),
        ..Replica::R2026_05
    };
    /// Every vintage, oldest first.
    pub const ALL: [Replica; 5] = [
        Replica::R2024,
        Replica::R2025_03,
        Replica::R2026_04,
        Replica::R2026_05,
        Replica::R2026_07,
    ];
    /// What the engine models unless told otherwise: the newest vintage.
    pub const NEWEST: Replica = Replica::R2026_07;

    /// The vintage called `name`, or the one a PocketIC release charges by
    /// (`pocket-ic-13.0.0`, see [`POCKET_IC_RELEASES`]), or an error naming the known ones.
    pub fn by_name(name: &str) -> Result<Replica, String> {
        if let Some(version) = name.strip_prefix(PocketIcRelease::PREFIX) {
            return POCKET_IC_RELEASES
                .iter()
                .find(|r| r.version() == version)
                .map(|r| r.replica)
                .ok_or_else(|| {
                    let known: Vec<&str> = POCKET_IC_RELEASES.iter().map(|r| r.name).collect();
                    let hint = PocketIcRelease::suggest(name)
                        .map_or_else(String::new, |r| format!(" (did you mean {}?)", r.name));
                    format!(
                        "unknown PocketIC release '{name}'{hint}: known releases are {}",
                        known.join(", ")
                    )
                });
        }
        Replica::ALL
            .into_iter()
            .find(|r| r.name == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Replica::ALL.iter().map(|r| r.name).collect();
                format!(
                    "unknown replica vintage '{name}': known vintages are {} (or a PocketIC release: {})",
                    known.join(", "),
                    POCKET_IC_RELEASES[POCKET_IC_RELEASES.len() - 1].name
                )
            })
    }

    /// The PocketIC releases that charge by this vintage's rules.
    pub fn pocket_ic_releases(&self) -> Vec<&'static PocketIcRelease> {
        POCKET_IC_RELEASES
            .iter()
            .filter(|r| r.replica == *self)
            .collect()
    }

    /// What creating an execution state for a module charges (`Hypervisor::
    /// create_execution_state`): the base cost plus its compilation, `full_compilation`
    /// instructions, or 1/100 of it when the module's hash is expected to be compiled.
    pub fn compilation_charge(&self, full_compilation: u64, hash_expected: bool) -> u64 {
        let compilation = if self.compilation_by_module_hash && hash_expected {
            full_compilation / DESERIALIZATION_SPEED_UP_FACTOR
        } else {
            full_compilation
        };
        self.create_execution_state_base_cost + compilation
    }
}

/// A PocketIC server release, and the vintage whose rules it charges by: the rules merged
/// into dfinity/ic before the release (the server is built from dfinity/ic when it is
/// released). Dates: the release's section in dfinity/pocketic's CHANGELOG.md (a980c33);
/// the rules' merge dates: the vintages above. canbench 0.1.12 to 0.2.1 run 9.0.1, 0.2.2 to
/// 0.4.1 run 10.0.0, 0.5.0 to 0.7.0 run 13.0.0 (the server each downloads; the research
/// sheet on canbench, 3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PocketIcRelease {
    /// `pocket-ic-VERSION`, as `--replica` takes it.
    pub name: &'static str,
    pub date: &'static str,
    pub replica: Replica,
    /// Why this vintage: the rule changes the date falls between.
    pub because: &'static str,
}

impl PocketIcRelease {
    /// `--replica pocket-ic-VERSION`.
    pub const PREFIX: &'static str = "pocket-ic-";

    /// The server's version (`13.0.0`).
    pub fn version(&self) -> &'static str {
        self.name.strip_prefix(Self::PREFIX).unwrap_or(self.name)
    }

    /// The release to suggest for `value` when it looks like a PocketIC release
    /// (`pocket-ic-17.0.0`, `pocketic-16`, `pocket_ic`) but is not one of
    /// [`POCKET_IC_RELEASES`]: the one of the nearest major version, the newest among
    /// equally near ones (so never an older release where a newer one is as near); the
    /// newest release when `value` has no major version. By spelling alone, 17.0.0 would be
    /// nearer 16.0.0 than 16.1.0.
    pub fn suggest(value: &str) -> Option<&'static PocketIcRelease> {
        let value = value.to_ascii_lowercase().replace('_', "-");
        let version = ["pocket-ic", "pocketic"]
            .iter()
            .find_map(|p| value.strip_prefix(p))?
            .trim_start_matches(['-', 'v']);
        let major = |v: &str| -> Option<u64> { v.split('.').next()?.parse().ok() };
        let newest = POCKET_IC_RELEASES.last();
        let Some(wanted) = major(version) else {
            return newest;
        };
        // `min_by_key` keeps the first of equals: search newest first.
        POCKET_IC_RELEASES
            .iter()
            .rev()
            .min_by_key(|r| major(r.version()).map_or(u64::MAX, |m| m.abs_diff(wanted)))
    }
}

const BETWEEN_4506_AND_10065: &str =
    "after #4506 (2025-03-25), before #10065 (2026-04-30): compilation by module hash";

const AFTER_10789: &str =
    "after #10789 (2026-07-16) and #11180 (2026-08-24, the tracker without its feature flag): the memory tracker";

/// The PocketIC releases `--replica pocket-ic-VERSION` names, oldest first.
pub const POCKET_IC_RELEASES: [PocketIcRelease; 9] = [
    PocketIcRelease {
        name: "pocket-ic-9.0.1",
        date: "2025-04-30",
        replica: Replica::R2025_03,
        because: BETWEEN_4506_AND_10065,
    },
    PocketIcRelease {
        name: "pocket-ic-10.0.0",
        date: "2025-09-12",
        replica: Replica::R2025_03,
        because: BETWEEN_4506_AND_10065,
    },
    PocketIcRelease {
        name: "pocket-ic-11.0.0",
        date: "2025-12-05",
        replica: Replica::R2025_03,
        because: BETWEEN_4506_AND_10065,
    },
    PocketIcRelease {
        name: "pocket-ic-12.0.0",
        date: "2026-01-23",
        replica: Replica::R2025_03,
        because: BETWEEN_4506_AND_10065,
    },
    PocketIcRelease {
        name: "pocket-ic-13.0.0",
        date: "2026-03-23",
        replica: Replica::R2025_03,
        because: BETWEEN_4506_AND_10065,
    },
    PocketIcRelease {
        name: "pocket-ic-14.0.0",
        date: "2026-05-26",
        replica: Replica::R2026_05,
        because: "after #10292 (2026-05-22), before #10789 (2026-07-16): no memory tracker",
    },
    PocketIcRelease {
        name: "pocket-ic-15.0.0",
        date: "2026-06-26",
        replica: Replica::R2026_05,
        because: "after #10292 (2026-05-22), before #10789 (2026-07-16): no memory tracker",
    },
    PocketIcRelease {
        name: "pocket-ic-16.0.0",
        date: "2026-08-31",
        replica: Replica::R2026_07,
        because: AFTER_10789,
    },
    // Released by 2026-10-08 (the month only: no release note of it is in the record; see
    // docs/canbench.md). No rule that moves a count was merged between 16.0.0 and it.
    PocketIcRelease {
        name: "pocket-ic-16.1.0",
        date: "2026-10",
        replica: Replica::R2026_07,
        because: AFTER_10789,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::COST_TO_COMPILE_WASM_INSTRUCTION;

    #[test]
    fn each_vintage_charges_compilation_by_its_own_rule() {
        // A module of 1,000 Wasm instructions: 6,000,000 to compile in full.
        let full = 1_000 * COST_TO_COMPILE_WASM_INSTRUCTION;
        assert_eq!(Replica::R2024.compilation_charge(full, false), 6_000_000);
        assert_eq!(Replica::R2024.compilation_charge(full, true), 6_000_000);
        assert_eq!(Replica::R2025_03.compilation_charge(full, false), 6_000_000);
        assert_eq!(Replica::R2025_03.compilation_charge(full, true), 60_000);
        assert_eq!(
            Replica::R2026_04.compilation_charge(full, false),
            26_000_000
        );
        assert_eq!(Replica::R2026_04.compilation_charge(full, true), 20_060_000);
        assert_eq!(Replica::R2026_05.compilation_charge(full, true), 20_060_000);
        // 6,000 per instruction is a multiple of 100: the reduced charge is exact.
        assert_eq!(
            COST_TO_COMPILE_WASM_INSTRUCTION % DESERIALIZATION_SPEED_UP_FACTOR,
            0
        );
        assert_eq!(Replica::NEWEST, *Replica::ALL.last().unwrap());
        assert_eq!(Replica::by_name("2025-03"), Ok(Replica::R2025_03));
        assert_eq!(
            Replica::by_name("2027"),
            Err(
                "unknown replica vintage '2027': known vintages are 2024, 2025-03, 2026-04, 2026-05, 2026-07 (or a PocketIC release: pocket-ic-16.1.0)"
                    .into()
            )
        );
    }

    #[test]
    fn a_pocket_ic_release_names_the_vintage_it_charges_by() {
        assert_eq!(Replica::by_name("pocket-ic-16.0.0"), Ok(Replica::R2026_07));
        assert_eq!(Replica::by_name("pocket-ic-16.1.0"), Ok(Replica::R2026_07));
        assert_eq!(Replica::by_name("pocket-ic-15.0.0"), Ok(Replica::R2026_05));
        assert_eq!(Replica::by_name("pocket-ic-13.0.0"), Ok(Replica::R2025_03));
        assert_eq!(
            Replica::by_name("pocket-ic-17.0.0"),
            Err("unknown PocketIC release 'pocket-ic-17.0.0' (did you mean pocket-ic-16.1.0?): known releases are pocket-ic-9.0.1, pocket-ic-10.0.0, pocket-ic-11.0.0, pocket-ic-12.0.0, pocket-ic-13.0.0, pocket-ic-14.0.0, pocket-ic-15.0.0, pocket-ic-16.0.0, pocket-ic-16.1.0".into())
        );
        // Oldest first, each on or after the vintage's own date (its name is its month).
        for pair in POCKET_IC_RELEASES.windows(2) {
            assert!(pair[0].date < pair[1].date);
        }
        for r in POCKET_IC_RELEASES {
            assert!(r.date[..7] >= *r.replica.name, "{r:?}");
        }
        let names: Vec<&str> = Replica::R2025_03
            .pocket_ic_releases()
            .iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names.first(), Some(&"pocket-ic-9.0.1"));
        assert_eq!(names.last(), Some(&"pocket-ic-13.0.0"));
        assert!(Replica::R2024.pocket_ic_releases().is_empty());
    }

    #[test]
    fn a_misspelt_release_suggests_the_newest_of_the_nearest_major_version() {
        let suggest = |v: &str| PocketIcRelease::suggest(v).map(|r| r.name);
        // By spelling alone 16.0.0 is nearer; the newest of the same major is suggested.
        assert_eq!(suggest("pocket-ic-17.0.0"), Some("pocket-ic-16.1.0"));
        assert_eq!(suggest("pocket-ic-16.2"), Some("pocket-ic-16.1.0"));
        assert_eq!(suggest("pocket-ic-18"), Some("pocket-ic-16.1.0"));
        assert_eq!(suggest("pocket_ic_16"), Some("pocket-ic-16.1.0"));
        assert_eq!(suggest("PocketIC-v15.1.0"), Some("pocket-ic-15.0.0"));
        assert_eq!(suggest("pocket-ic-9.0.0"), Some("pocket-ic-9.0.1"));
        assert_eq!(suggest("pocket-ic"), Some("pocket-ic-16.1.0"));
        assert_eq!(suggest("pocket-ic-latest"), Some("pocket-ic-16.1.0"));
        assert_eq!(suggest("2027"), None);
    }
}
