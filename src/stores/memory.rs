//! What a store needs of the machine, per suite, for the estimates the CLI checks before a
//! run starts: memory the machine lends (resident memory plus the snapshots' memfds, mapped
//! or not), per row of the store, and what its fill costs. The figures are each store's
//! in [`super::ROWS`]; where they come from is said here.

/// A store's memory per row in each suite that estimates it, and its fill's cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory {
    /// The users suites (seed003, lookups): tenths of `payload size + 50` bytes per row of
    /// `--rows`, at the run's peak: the prefilled canister, its snapshot and the workers'
    /// copies of what they touch. From the sizes at 1,000,000 rows of 100 bytes: the
    /// StableBTreeMap's 300 MB of stable memory, shared by its snapshots (20); the heap
    /// map's 156 MB heap, live, frozen in its snapshot and mapped by a worker (30); SQLite's
    /// 210 MB file in stable memory and 122 MB page cache on the heap (22). Checked against
    /// the default run (docs/performance.md, "Memory"): its process tree measured 5.29 GB on
    /// one job and 5.64 GB on two (2026-11-27), against 5.5 GB estimated.
    pub users_tenths: u64,
    /// And per journal mode measured: that mode's snapshot, whose fresh connection rewrites
    /// most of the page cache (SQLite: 8).
    pub users_tenths_per_mode: u64,
    /// The upgrade suite.
    pub upgrade: UpgradeMemory,
    /// The scaling suite: bytes per row at the peak of the store's work at its largest size,
    /// from the 10,000,000-row runs of issue 22 (git history of docs/performance.md). The
    /// heap map's 1.5 GB heap and the memfd its snapshot is frozen into, then its failing
    /// pre_upgrade growing the heap (350); SQLite's stable memory (1.1 GB), heap (its page
    /// cache, 1.2 GB), the snapshot of it, and the snapshot of a journal mode set on a fresh
    /// connection (380; it was 510 until a snapshot moved the live heap into its copy
    /// instead of holding both while it was taken); the StableBTreeMap's stable memory
    /// (2.1 GB; 210). Each store run alone to 10,000,000 rows (`--shard K/3 --jobs 1`,
    /// e88694c, 2026-11-24) peaked at 3.47 GB (heap map), 2.15 GB (StableBTreeMap) and
    /// 3.64 GB (SQLite), the process's own memory included, which `MEMORY_BASE` covers.
    pub scaling_per_row: u64,
    /// The scaling suite's peak for this store whatever its largest size, where a limit
    /// bounds it (0: none): a Motoko store's heap stops at wasm_memory_limit (3 GiB), so
    /// its peak stops growing with the rows there (measured: see the store's row).
    pub scaling_cap: u64,
    /// The scaling suite's capacity search at 1,000,000 rows: the heap map's largest insert
    /// grows the heap by about 2.2 GB in one message (`--scaling-max-rows 1000000` peaked at
    /// 2.72 GB); the stable stores' searches write far less (0.6 GB).
    pub capacity_search: u64,
    /// What its fill costs per row, relative to the other stores' (the StableBTreeMap's
    /// messages cost the most per row, then SQLite's, then the heap map's): the costliest
    /// selected store's fill is the scaling run's critical path.
    pub fill_cost: i64,
}

/// Bytes a store needs per row in the upgrade suite at its largest size, as `tenths / 10 ×
/// (payload size + overhead)`. From the upgrade points of `--suite upgrade` at c5d7e43
/// (2026-11-23; in git history of docs/performance.md): the heap map at 1,000,000 rows of
/// 100 bytes holds its heap (156 MB; 181 MB with the smaller sizes' snapshots), and while
/// upgrading it that heap frozen for the rollback, pre_upgrade's heap with the encoded copy
/// (390 MB), the encoded rows in stable memory (109 MB) and post_upgrade's decoded heap
/// (265 MB): 920 bytes a row, 7.7 × (100 + 20); the limit run's upgrade at 98,000 rows of
/// 10,000 bytes took 7.55 GB the same way, 7.7 × (10,000 + 20) a row. SQLite holds its page
/// cache on the heap (122 MB) and its file in stable memory (210 MB), the StableBTreeMap
/// 302 MB of stable memory; both keep their rows where they are when upgraded and share
/// them with their snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpgradeMemory {
    /// While the canister is upgraded at that size.
    pub upgrade_tenths: u64,
    /// For its state and its snapshots at the smaller sizes while they wait for their
    /// upgrades.
    pub held_tenths: u64,
    /// Bytes a row takes besides its payload.
    pub overhead: u64,
}
