//! Engines run canisters. Scenarios talk to [`Engine`] only, so the same suite runs on the
//! embedded engine (wasmtime with the replica's metering) and on PocketIC.

pub mod cost;
#[doc(hidden)] // for the tests (the library's surface: lib.rs)
pub mod counter_reads;
// Cached modules and states are files mapped into memory.
#[allow(unsafe_code)]
#[doc(hidden)]
pub mod disk_cache;
// The embedded engine maps, protects and tracks the canister's memory itself (the memory
// tracker's faults, snapshots' copy-on-write pages) and reads wasmtime's raw values.
#[allow(unsafe_code)]
pub mod embedded;
#[doc(hidden)]
pub mod instrument;
// SIGINT/SIGTERM: a run stops at once and removes what it had half written; the disk
// cache's writes and the CLI's outputs register here. It kills the child processes working
// for the run (kill(2)).
#[allow(unsafe_code)]
#[doc(hidden)]
pub mod interrupt;
pub mod page_map;
pub mod profile;
pub mod state_files;
// Whether this process is a worker copy the embedded engine forked.
mod worker;
// The PocketIC backend. Its client (reqwest, rustls, tokio...) is the `pocket-ic` cargo
// feature: the default build leaves it out, and the CLI says how to rebuild when it is asked
// for; finding a server and the arithmetic are always built (and tested).
pub mod pocket_ic;

use std::fmt;

use anyhow::Result;
use candid::Principal;

pub use profile::Profile;

/// Whether two strings are equal, in a const context (`==` on `str` is not const): the
/// module list's and the store table's lookups by name, and the PocketIC client's check of
/// its server version against the crate's.
#[doc(hidden)]
pub const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The replica's reject codes (interface spec).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectCode {
    SysFatal = 1,
    SysTransient = 2,
    DestinationInvalid = 3,
    CanisterReject = 4,
    CanisterError = 5,
    /// Best-effort calls whose outcome is unknown; PocketIC can report it.
    SysUnknown = 6,
}

/// The replica's error codes, as shown `IC0nnn` to users. The embedded engine produces the
/// named ones; PocketIC can report any code of the replica, so a code without a name here
/// is kept as [`ErrorCode::Other`] with its number rather than mapped to a near miss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    CanisterOutOfCycles,
    CanisterNotFound,
    CanisterSnapshotNotFound,
    CanisterRejectedMessage,
    CanisterTrapped,
    CanisterCalledTrap,
    CanisterContractViolation,
    CanisterInvalidWasm,
    CanisterDidNotReply,
    CanisterOutOfMemory,
    CanisterStopped,
    CanisterStopping,
    CanisterNotStopped,
    CanisterInvalidController,
    CanisterInstructionLimitExceeded,
    CanisterMemoryAccessLimitExceeded,
    InsufficientCyclesInMemoryGrow,
    CanisterMethodNotFound,
    CanisterWasmModuleNotFound,
    CanisterWasmMemoryLimitExceeded,
    /// Any other replica error code, by number (e.g. 210 for IC0210).
    Other(u16),
}

/// (variant, number): one table for both directions, so they cannot disagree.
const NAMED_ERROR_CODES: [(ErrorCode, u16); 20] = [
    (ErrorCode::CanisterOutOfCycles, 207),
    (ErrorCode::CanisterNotFound, 301),
    (ErrorCode::CanisterSnapshotNotFound, 305),
    (ErrorCode::CanisterRejectedMessage, 406),
    (ErrorCode::CanisterTrapped, 502),
    (ErrorCode::CanisterCalledTrap, 503),
    (ErrorCode::CanisterContractViolation, 504),
    (ErrorCode::CanisterInvalidWasm, 505),
    (ErrorCode::CanisterDidNotReply, 506),
    (ErrorCode::CanisterOutOfMemory, 507),
    (ErrorCode::CanisterStopped, 508),
    (ErrorCode::CanisterStopping, 509),
    (ErrorCode::CanisterNotStopped, 510),
    (ErrorCode::CanisterInvalidController, 512),
    (ErrorCode::CanisterInstructionLimitExceeded, 522),
    (ErrorCode::CanisterMemoryAccessLimitExceeded, 524),
    (ErrorCode::InsufficientCyclesInMemoryGrow, 532),
    (ErrorCode::CanisterMethodNotFound, 536),
    (ErrorCode::CanisterWasmModuleNotFound, 537),
    (ErrorCode::CanisterWasmMemoryLimitExceeded, 539),
];

impl ErrorCode {
    /// The number shown as `IC0nnn`.
    pub fn code(self) -> u16 {
        match self {
            ErrorCode::Other(n) => n,
            named => NAMED_ERROR_CODES
                .iter()
                .find(|(e, _)| *e == named)
                .map(|(_, n)| *n)
                .expect("every named error code is in NAMED_ERROR_CODES"),
        }
    }

    /// The named variant for `code`, or `Other(code)`.
    pub fn from_code(code: u16) -> ErrorCode {
        NAMED_ERROR_CODES
            .iter()
            .find(|(_, n)| *n == code)
            .map(|(e, _)| *e)
            .unwrap_or(ErrorCode::Other(code))
    }

    pub fn reject_code(self) -> RejectCode {
        // The replica's convention (ic-error-types): the first digit is the reject code,
        // e.g. IC0536 "method not found" is a canister error, not an invalid destination.
        match self.code() / 100 {
            1 => RejectCode::SysFatal,
            2 => RejectCode::SysTransient,
            3 => RejectCode::DestinationInvalid,
            4 => RejectCode::CanisterReject,
            5 => RejectCode::CanisterError,
            _ => RejectCode::SysUnknown,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IC{:04}", self.code())
    }
}

/// A call that did not produce a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reject {
    pub code: RejectCode,
    pub error_code: ErrorCode,
    pub message: String,
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.error_code, self.message)
    }
}

impl std::error::Error for Reject {}

/// What one message cost. `instructions` is what cycles are computed from: the metered
/// Wasm, System API fees, stable-memory charges and the page charges of the replica
/// vintage: the memory tracker's during the message, or before it the after-execution heap
/// dirty-page charge (which `performance_counter` cannot see). `heap_dirty_pages` and
/// `stable_dirty_pages` count the 4 KiB pages the message wrote, whatever the vintage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageReport {
    pub instructions: u64,
    pub heap_dirty_pages: u64,
    pub stable_dirty_pages: u64,
    /// The 64 KiB Wasm pages the message accessed and wrote, and what the vintage charged
    /// for pages; None where the engine cannot see them (PocketIC).
    pub pages: Option<PageCounts>,
    /// With [`Profiling::Messages`]: which Wasm pages the message touched and the function
    /// that touched each first (a message of several parts: the last part's).
    pub page_map: Option<page_map::PageMap>,
    pub heap_bytes_before: u64,
    pub heap_bytes_after: u64,
    pub stable_bytes_before: u64,
    pub stable_bytes_after: u64,
    /// Whether the canister's module has a 64-bit memory: the replica charges its
    /// instructions at the Wasm64 rate ([`cost::CyclesFees::execution_cost`]). False where
    /// the engine cannot see the module (PocketIC).
    pub wasm64: bool,
    /// For `install_code` (install, upgrade, reinstall): each stage's own report, in the
    /// order they ran, so hooks can be told apart from compilation (whose report has only
    /// instructions); empty for messages and for engines that cannot tell (PocketIC).
    pub stages: Vec<(InstallStage, MessageReport)>,
    /// Where the instructions went, when the engine was asked ([`Engine::set_profiling`]):
    /// with [`Profiling::Messages`] its total is `instructions`. In `stages` it is left out
    /// (the whole call's profile has each stage under a frame of its own).
    pub profile: Option<Profile>,
}

/// The Wasm pages (64 KiB) of the heap and of stable memory one message accessed and
/// wrote, as the replica's deterministic memory tracker counts them (a written page is also
/// an accessed one), and the instructions the replica vintage charged for memory pages. The
/// pages are counted under every vintage, so two vintages can be compared page for page;
/// the charge is the vintage's own: since `2026-07` the tracker's 80,000 per page accessed
/// and as much per page written (not in queries), before it 1,000 per 4 KiB heap page
/// written, after the message (not in queries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PageCounts {
    pub heap_wasm_pages_accessed: u64,
    pub heap_wasm_pages_written: u64,
    pub stable_wasm_pages_accessed: u64,
    pub stable_wasm_pages_written: u64,
    /// Instructions charged for pages (part of the message's `instructions`).
    pub page_charge_instructions: u64,
}

impl PageCounts {
    /// The counts of two messages together (each message pays for its own pages).
    pub fn add(&mut self, other: &PageCounts) {
        self.heap_wasm_pages_accessed += other.heap_wasm_pages_accessed;
        self.heap_wasm_pages_written += other.heap_wasm_pages_written;
        self.stable_wasm_pages_accessed += other.stable_wasm_pages_accessed;
        self.stable_wasm_pages_written += other.stable_wasm_pages_written;
        self.page_charge_instructions += other.page_charge_instructions;
    }

    /// Wasm pages accessed plus Wasm pages written, heap and stable memory: what the
    /// tracker charges 80,000 each for (a written page counts twice).
    pub fn counted(&self) -> u64 {
        self.heap_wasm_pages_accessed
            + self.heap_wasm_pages_written
            + self.stable_wasm_pages_accessed
            + self.stable_wasm_pages_written
    }

    /// `total` plus `part`: None (not seen) only when neither was seen.
    pub fn sum(total: Option<PageCounts>, part: Option<&PageCounts>) -> Option<PageCounts> {
        if total.is_none() && part.is_none() {
            return None;
        }
        let mut t = total.unwrap_or_default();
        if let Some(p) = part {
            t.add(p);
        }
        Some(t)
    }
}

/// What messages are sent for ([`Engine::set_metering`]). Either way a message executes
/// the same instructions, is charged the same and reads the same `ic0.performance_counter`,
/// so it leaves the same state: what differs is which figures of its report are exact and
/// what a failed message leaves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Metering {
    /// A measurement: every figure of the report exact; a failed message rolled back.
    #[default]
    Exact,
    /// The state alone (a store's fill): `heap_dirty_pages` may count every 4 KiB page of
    /// each Wasm page written where the vintage charges by the memory tracker (no charge
    /// depends on them), and nothing is kept to roll back with, so a failed update leaves
    /// its canister lost (its calls fail from then on, until a snapshot is restored) and
    /// its report names the replica's error only. Queries still leave nothing behind.
    StateOnly,
}

/// What [`Engine::set_profiling`] asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Profiling {
    #[default]
    Off,
    /// Every instruction a message is charged, the page charges and an install_code's
    /// compilation charge included: the profile's total is the report's `instructions`.
    Messages,
    /// What canbench measures: only the instructions from a message's first
    /// `ic0.performance_counter` read to its last (the first read's own fee excluded, the
    /// last one's included, as the difference of the two readings has it).
    BetweenCounterReads,
}

/// A stage of `install_code` (rs/execution_environment/src/execution/upgrade.rs, install.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallStage {
    PreUpgrade,
    /// Compiling the new module: 6,000 instructions per Wasm instruction.
    Compilation,
    Start,
    Init,
    PostUpgrade,
}

impl InstallStage {
    /// The frame a profile of `install_code` puts the stage's instructions under.
    pub fn frame(self) -> &'static str {
        match self {
            InstallStage::PreUpgrade => "[pre_upgrade]",
            InstallStage::Compilation => profile::COMPILATION,
            InstallStage::Start => "[start]",
            InstallStage::Init => "[init]",
            InstallStage::PostUpgrade => "[post_upgrade]",
        }
    }
}

/// The outcome of one message: reply bytes or a reject, plus what it cost.
#[derive(Clone, Debug)]
pub struct CallOutcome {
    pub result: Result<Vec<u8>, Reject>,
    pub report: MessageReport,
}

/// A message the IC sends a canister by itself in a round ([`Engine::tick`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CanisterTask {
    /// `canister_global_timer`: the deadline set with `ic0.global_timer_set` was reached.
    GlobalTimer,
    /// `canister_heartbeat`: every round, for a canister that exports it.
    Heartbeat,
}

impl CanisterTask {
    /// The export the task runs.
    pub fn export(self) -> &'static str {
        match self {
            CanisterTask::GlobalTimer => "canister_global_timer",
            CanisterTask::Heartbeat => "canister_heartbeat",
        }
    }
}

/// A task one round ran, and its outcome as any message's: `Ok` with no bytes when it ran to
/// its end (nothing replies to a task), the reject when it trapped.
#[derive(Clone, Debug)]
pub struct TaskOutcome {
    pub canister: Principal,
    pub task: CanisterTask,
    pub outcome: CallOutcome,
}

/// An `install_code` over an existing canister (a new one is [`Engine::install`]'s): the
/// module, and `arg` for its `canister_init` or `canister_post_upgrade`.
#[derive(Clone, Copy, Debug)]
pub struct InstallCode<'a> {
    pub mode: InstallMode,
    pub wasm: &'a [u8],
    pub arg: &'a [u8],
}

/// `install_code`'s mode over an existing canister.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallMode {
    Reinstall,
    Upgrade(UpgradeOptions),
}

/// `install_code`'s upgrade options (the management canister's `canister_upgrade_options`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpgradeOptions {
    /// Do not run `canister_pre_upgrade` (the way out for a canister whose pre_upgrade traps).
    pub skip_pre_upgrade: bool,
    /// What happens to the heap. A canister built with Motoko's enhanced orthogonal
    /// persistence (its module has the `enhanced-orthogonal-persistence` metadata section)
    /// must say: the replica refuses its upgrade without this option rather than lose the
    /// heap, where its state lives.
    pub wasm_memory_persistence: Option<WasmMemoryPersistence>,
}

impl UpgradeOptions {
    /// What dfx and icp-cli pass when they upgrade a canister to `wasm` (raw): `keep` for a
    /// module with enhanced orthogonal persistence, whose state is its heap; nothing else.
    pub fn for_module(wasm: &[u8]) -> UpgradeOptions {
        use embedded::module::{has_metadata, ENHANCED_ORTHOGONAL_PERSISTENCE};
        UpgradeOptions {
            skip_pre_upgrade: false,
            wasm_memory_persistence: has_metadata(wasm, ENHANCED_ORTHOGONAL_PERSISTENCE)
                .then_some(WasmMemoryPersistence::Keep),
        }
    }
}

/// `wasm_memory_persistence` of an upgrade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WasmMemoryPersistence {
    /// The new module runs on the old heap (its own data segments are not applied); the
    /// new module must support enhanced orthogonal persistence.
    Keep,
    /// The new module starts on a fresh heap, as every upgrade without the option does.
    Replace,
}

/// A saved canister state, restorable any number of times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SnapshotId(pub u64);

/// Which process [`Engine::fork_process`] returned in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessSide {
    /// The original process; the child's process id.
    Parent(u32),
    /// The copy.
    Child,
}

/// A snapshot as a value: taken out of one engine ([`Engine::share`]) and put into forks of
/// it ([`Engine::adopt`]), so work spread over forks can start from a state any one of them
/// made. The state is shared, not copied; its memory goes with the last handle and the
/// last canister loaded from it.
#[derive(Clone)]
pub struct SharedSnapshot {
    pub canister: Principal,
    /// The engine's own state, which only an engine of the same kind reads.
    pub state: std::sync::Arc<dyn std::any::Any + Send + Sync>,
}

impl SharedSnapshot {
    /// Whether two handles are the same state (not merely equal ones).
    pub fn same(&self, other: &SharedSnapshot) -> bool {
        std::sync::Arc::ptr_eq(&self.state, &other.state)
    }
}

impl fmt::Debug for SharedSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedSnapshot({})", self.canister)
    }
}

/// A canister's state as [`Engine::export_state`] took it: taking it is cheap (the engine's
/// frozen pages are shared, not copied); the bytes are written later, on any thread, so that
/// keeping a 420 MB state in the cache need not hold up the run, nor sit whole in memory.
#[allow(clippy::type_complexity)]
pub struct ExportedState(Box<dyn FnOnce(&mut dyn std::io::Write) -> std::io::Result<()> + Send>);

/// The bytes of an exported state, and the file they lie in when they are a cache entry's:
/// an engine may then map the state's heap pages from the file instead of copying them.
#[derive(Clone, Copy, Debug)]
pub struct StateBytes<'a> {
    pub bytes: &'a [u8],
    /// The file and where `bytes` starts in it.
    pub file: Option<(&'a std::fs::File, u64)>,
}

impl<'a> From<&'a [u8]> for StateBytes<'a> {
    fn from(bytes: &'a [u8]) -> Self {
        Self { bytes, file: None }
    }
}

impl<'a> From<&'a disk_cache::Entry> for StateBytes<'a> {
    fn from(entry: &'a disk_cache::Entry) -> Self {
        Self {
            bytes: entry.payload(),
            file: Some(entry.payload_file()),
        }
    }
}

impl ExportedState {
    pub fn new(
        write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()> + Send + 'static,
    ) -> Self {
        Self(Box::new(write))
    }

    /// Writes the state's bytes to `w`.
    pub fn write_to(self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        (self.0)(w)
    }

    /// The state's bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        let mut bytes = Vec::new();
        self.write_to(&mut bytes)
            .expect("writing into memory does not fail");
        bytes
    }
}

/// One canister execution environment. Errors (`Err`) are failures of the engine or of
/// the request (unknown canister, invalid module); a canister's own failure is a
/// [`Reject`] inside the [`CallOutcome`].
pub trait Engine {
    /// Short name for reports: `embedded` or `pocket-ic`.
    fn name(&self) -> &'static str;
    /// The per-message limits calls run under: an application subnet's unless the engine
    /// was configured otherwise.
    fn limits(&self) -> cost::Limits {
        cost::Limits::APPLICATION
    }
    /// The dated replica rules the engine charges by ([`cost::Replica`]), or None when a
    /// replica of its own decides (PocketIC).
    fn replica(&self) -> Option<cost::Replica> {
        None
    }
    /// The machine whose OS pages the charges count ([`cost::Host`]), or None when a
    /// replica of its own decides (PocketIC: the machine it runs on).
    fn host(&self) -> Option<cost::Host> {
        None
    }
    /// Charges the messages from now on (on this engine and forks taken from now on) by
    /// `replica`'s rules; states and snapshots are untouched. The tune suite measures a
    /// configuration under two vintages this way. An error where a replica of its own
    /// decides (PocketIC).
    fn set_replica(&mut self, replica: cost::Replica) -> Result<()> {
        anyhow::bail!(
            "the {} engine cannot charge by replica {}: a replica of its own decides",
            self.name(),
            replica.name
        )
    }
    /// What the replica does at a checkpoint that changes later charges: it forgets which
    /// modules it expects to have compiled (`expected_compiled_wasms`), so the next
    /// install_code of any module pays its full compilation. A no-op where a replica of its
    /// own takes the checkpoints (PocketIC).
    fn checkpoint(&mut self) {}
    /// Gets `wasm` ready to install (the embedded engine instruments and compiles it, or
    /// loads it from the compile cache), so that a suite can time that apart and do other
    /// work meanwhile; installing does it otherwise.
    fn prepare(&mut self, _wasm: &[u8]) -> Result<()> {
        Ok(())
    }
    /// Creates a canister and installs `wasm` (raw or gzipped) with `arg` for `canister_init`.
    fn install(&mut self, wasm: &[u8], arg: &[u8]) -> Result<(Principal, CallOutcome)>;
    /// `canister_pre_upgrade`, new module, `canister_post_upgrade(arg)`; stable memory kept.
    fn upgrade(&mut self, canister: Principal, wasm: &[u8], arg: &[u8]) -> Result<CallOutcome> {
        self.upgrade_with(canister, wasm, arg, UpgradeOptions::default())
    }
    /// An upgrade with `install_code`'s options.
    fn upgrade_with(
        &mut self,
        canister: Principal,
        wasm: &[u8],
        arg: &[u8],
        options: UpgradeOptions,
    ) -> Result<CallOutcome> {
        let mode = InstallMode::Upgrade(options);
        self.install_code(canister, InstallCode { mode, wasm, arg })
    }
    /// A fresh install over an existing canister: heap and stable memory are wiped.
    fn reinstall(&mut self, canister: Principal, wasm: &[u8], arg: &[u8]) -> Result<CallOutcome> {
        let mode = InstallMode::Reinstall;
        self.install_code(canister, InstallCode { mode, wasm, arg })
    }
    /// A reinstall or an upgrade: what [`Engine::reinstall`] and [`Engine::upgrade_with`] ask for.
    fn install_code(&mut self, canister: Principal, code: InstallCode<'_>) -> Result<CallOutcome>;
    /// A replicated update call from the anonymous principal.
    fn update(&mut self, canister: Principal, method: &str, arg: &[u8]) -> Result<CallOutcome>;
    /// A non-replicated query call; nothing it does persists.
    fn query(&mut self, canister: Principal, method: &str, arg: &[u8]) -> Result<CallOutcome>;
    /// Moves the clock `by` forward (PocketIC's `advance_time`); no message runs. The next
    /// [`Engine::tick`] runs the global timers the new time reached.
    fn advance_time(&mut self, by: std::time::Duration) -> Result<()>;
    /// One round (PocketIC's `tick`): for each canister, in the order they were created,
    /// its global timer if the round's time reached the deadline it set (run once: the
    /// timer is cleared before the task runs, so only a new `ic0.global_timer_set` fires it
    /// again) and then its heartbeat, each only if the module exports the task's method.
    /// The round's time is one nanosecond past the last message's (or past the time
    /// [`Engine::advance_time`] set). Gives each task's outcome and report, as a message's;
    /// none where the engine cannot see them (PocketIC runs the round and reports nothing).
    fn tick(&mut self) -> Result<Vec<TaskOutcome>>;
    /// Saves the canister's whole state.
    fn snapshot(&mut self, canister: Principal) -> Result<SnapshotId>;
    /// Puts the canister back to a saved state (on the embedded engine, the clock too).
    fn restore(&mut self, canister: Principal, snapshot: SnapshotId) -> Result<()>;
    /// Releases a snapshot the caller no longer needs: its memory goes once no fork and no
    /// canister loaded from it holds it, and restoring it is an error from now on. Other
    /// snapshots keep their ids. Engines that keep nothing in memory ignore it.
    fn forget(&mut self, _snapshot: SnapshotId) -> Result<()> {
        Ok(())
    }

    /// Keeping a canister's state across runs (the post-prefill state cache): the part of
    /// the key that names this engine, its configuration and `wasm`, or None when this
    /// engine cannot (PocketIC), no disk cache is enabled, or the engine already ran
    /// something (a state is only reproducible from a fresh engine).
    fn state_key(&self, _wasm: &[u8]) -> Result<Option<[u8; 32]>> {
        Ok(None)
    }

    /// The state of `canister`, the only canister of an engine that was fresh when it was
    /// installed, to be turned into bytes [`Engine::import_state`] takes back.
    fn export_state(&mut self, _canister: Principal) -> Result<ExportedState> {
        anyhow::bail!("the {} engine cannot export canister states", self.name())
    }

    /// The bytes [`Engine::export_state`] gives, written to `w` now: nothing is kept to
    /// write later, so an engine may write them from the live canister without a copy
    /// (a process that keeps a state and ends).
    fn write_state(&mut self, canister: Principal, w: &mut dyn std::io::Write) -> Result<()> {
        Ok(self.export_state(canister)?.write_to(w)?)
    }

    /// Makes a fresh engine what it was when `state` was exported, with `wasm` (the module
    /// the state was made with) installed; returns the canister. On an error nothing changed.
    fn import_state(&mut self, _wasm: &[u8], _state: StateBytes<'_>) -> Result<Principal> {
        anyhow::bail!("the {} engine cannot import canister states", self.name())
    }

    /// The snapshot `state` as its differences from the snapshot `base` (of the same
    /// canister and module), to be turned into bytes [`Engine::import_state_delta`] takes
    /// back on top of the same `base`: a state that differs from one the engine can make
    /// cheaply in a small part, kept without the rest.
    fn export_state_delta(
        &mut self,
        _state: SnapshotId,
        _base: SnapshotId,
    ) -> Result<ExportedState> {
        anyhow::bail!("the {} engine cannot export canister states", self.name())
    }

    /// A new snapshot: `base` with the differences of [`Engine::export_state_delta`]'s
    /// bytes made. `base` must be the state they were taken against (the same bytes, in
    /// this engine or another); on an error nothing changed.
    fn import_state_delta(
        &mut self,
        _base: SnapshotId,
        _delta: StateBytes<'_>,
    ) -> Result<SnapshotId> {
        anyhow::bail!("the {} engine cannot import canister states", self.name())
    }

    /// An independent engine that can run on another thread: `canister` in it is at
    /// `snapshot`, and every snapshot of this engine exists there under the same id,
    /// shared rather than copied. Messages in one engine do not affect the other.
    /// `Ok(None)` when the engine cannot fork (PocketIC): callers then run everything on
    /// this engine, one scenario after another.
    fn fork(
        &mut self,
        _canister: Principal,
        _snapshot: SnapshotId,
    ) -> Result<Option<Box<dyn Engine + Send>>> {
        Ok(None)
    }

    /// Forks the whole process, this engine with it, so that a worker runs in an address
    /// space of its own: a thread's changes to its page tables (the memory tracker's
    /// protections, copy-on-write faults, the kernel's write log) then stop the other cores
    /// running this process (TLB shootdowns: a quarter of a two-worker run's CPU on an idle
    /// 2-core virtual machine). Each side goes on with its own copy of every engine and
    /// state; nothing done in one is seen by the other. Call it with no other thread of
    /// this process running the engine. `Ok(None)` where the engine cannot (PocketIC's is a
    /// connection to a server, which a copy would share).
    fn fork_process(&mut self) -> Result<Option<ProcessSide>> {
        Ok(None)
    }

    /// A new engine of this one's kind and configuration (its limits, replica vintage and
    /// host) with no canister in it, for a canister whose state must be its engine's first
    /// and only one (a kept post-prefill state of another module's canister); `None` for an
    /// engine that cannot make one (a PocketIC server: callers then use this engine).
    fn fresh(&self) -> Option<Box<dyn Engine + Send>> {
        self.fresh_with(self.limits())
    }

    /// [`Engine::fresh`], with other per-message limits (a reader whose queries may touch as
    /// much as an update, say).
    fn fresh_with(&self, _limits: cost::Limits) -> Option<Box<dyn Engine + Send>> {
        None
    }

    /// The snapshot as a value that forks of this engine take in with [`Engine::adopt`];
    /// `Ok(None)` where states cannot move between engines (PocketIC, which cannot fork).
    fn share(&mut self, _snapshot: SnapshotId) -> Result<Option<SharedSnapshot>> {
        Ok(None)
    }

    /// Takes in a state [`Engine::share`]d by this engine or another engine of the same
    /// family (its parent or a fork), under a new id of this engine; the canister is created
    /// here if it was not.
    fn adopt(&mut self, _shared: &SharedSnapshot) -> Result<SnapshotId> {
        anyhow::bail!("the {} engine cannot take in shared snapshots", self.name())
    }

    /// What the messages from now on are sent for ([`Metering`]); [`Metering::Exact`]
    /// until set. An engine that can do no less than measure ignores it.
    fn set_metering(&mut self, _metering: Metering) {}

    /// Attributes the instructions of the messages from now on (and of forks taken from
    /// now on) to the call stacks that spent them, in [`MessageReport::profile`]. Counts
    /// do not change. An error when the engine cannot (PocketIC's counter is not ours).
    fn set_profiling(&mut self, profiling: Profiling) -> Result<()> {
        if profiling == Profiling::Off {
            return Ok(());
        }
        anyhow::bail!(
            "the {} engine cannot profile: instruction profiles come from the embedded engine's own counter",
            self.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_code_names_and_numbers_agree_both_ways() {
        for n in [
            207u16, 301, 305, 406, 502, 503, 504, 505, 506, 507, 508, 509, 510, 512, 522, 524, 532,
            536, 537, 539,
        ] {
            let e = ErrorCode::from_code(n);
            assert!(!matches!(e, ErrorCode::Other(_)), "{n} has a name");
            assert_eq!(e.code(), n);
        }
        assert_eq!(ErrorCode::from_code(999), ErrorCode::Other(999));
        assert_eq!(ErrorCode::Other(999).reject_code(), RejectCode::SysUnknown);
        assert_eq!(ErrorCode::CanisterCalledTrap.to_string(), "IC0503");
    }
}

/// What the unit tests of this crate and of icbench share.
#[doc(hidden)]
pub mod testing {
    use std::path::PathBuf;

    /// `icbench-{what}-{pid}-{name}` under the system's temp dir, removed if a previous run
    /// left it: a directory of the test's own, not yet created.
    pub fn fresh_temp_dir(what: &str, name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("icbench-{what}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// The kB that `/proc/self/smaps` gives under `field` (`Rss`, `Anonymous`, ...) for
    /// the mapping that starts at `start`.
    #[cfg(target_os = "linux")]
    pub fn mapping_kb(start: *const u8, field: &str) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{:x}-", start as usize);
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        assert!(lines.next().is_some(), "no mapping starts at {head}");
        let field = format!("{field}:");
        let line = lines.find(|l| l.starts_with(&field)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}
