//! The `ic0` System API: the message context a canister instance runs in ([`HostState`])
//! and [`link`], which registers each function the module imports.
//!
//! Every host function charges its fee from [`cost::SYSTEM_API_FEES`] first, before doing
//! any work, exactly as the replica's linker does (`charge_for_cpu`), then acts on the
//! message context. Functions the embedded engine cannot honour (inter-canister calls, ...)
//! link, so modules that merely import them run, and trap when called.
//!
//! Its parts: [`registration`] is the one way a function is registered (the counter passed
//! in and out, the page charges folded), [`heap_access`] the heap as the functions see it,
//! [`native_stable`] the host's side of the native stable accesses; each area registers
//! its own functions: [`message`], [`canister`], [`cycles`], [`stable`], [`counters`]
//! (and time), [`logging`].
//!
//! [`cost::SYSTEM_API_FEES`]: crate::cost::SYSTEM_API_FEES

mod calls;
mod canister;
mod counters;
mod cycles;
mod heap_access;
mod logging;
mod message;
mod native_stable;
mod registration;
mod stable;

use std::fmt;
use std::sync::Arc;

use wasmtime::{bail, format_err as anyhow, Error, Result};
use wasmtime::{ExternType, Global, Linker, Memory, Module};

use self::registration::{Addr, CounterPassing, Def};
use super::memory::charges::{self, PageCharges, Tracker};
use super::memory::heap::HeapRegion;
use super::memory::stable::StableMemory;
use crate::cost::Limits;
use crate::counter_reads::{CounterRead, CounterReads};
use crate::instrument::{self, Counter};
use crate::PageCounts;

pub use self::calls::{Closure, OutCall};
pub use self::message::MAX_RESPONSE_BYTES;
pub use self::native_stable::{sync_native_size, NativeStable};

/// The kind of entry point running, which decides what the API allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiType {
    Start,
    Init,
    PreUpgrade,
    PostUpgrade,
    Update,
    /// A query method called as an update: replicated, state discarded.
    ReplicatedQuery,
    /// A non-replicated query call.
    Query,
    /// A `canister_composite_query` method called as a query: state discarded, but, unlike
    /// a query, run with modification tracking (see [`ApiType::ignores_modifications`]).
    CompositeQuery,
    /// `canister_heartbeat`, run every round ([`crate::Engine::tick`]): a system
    /// task, replicated and tracked as an update, with nothing to reply to.
    Heartbeat,
    /// `canister_global_timer`, run in the first round at or past the deadline the
    /// canister set with `ic0.global_timer_set`: a system task as the heartbeat.
    GlobalTimer,
    /// The reply callback of a call the canister made: an update's part, its argument the
    /// reply.
    ReplyCallback,
    /// The reject callback of a call the canister made: the reject's code and message.
    RejectCallback,
    /// The cleanup closure of a call whose callback trapped: it may only clean up.
    Cleanup,
}

impl ApiType {
    fn name(self) -> &'static str {
        match self {
            ApiType::Start => "start",
            ApiType::Init => "init",
            ApiType::PreUpgrade => "pre_upgrade",
            ApiType::PostUpgrade => "post_upgrade",
            ApiType::Update => "update",
            ApiType::ReplicatedQuery => "replicated query",
            ApiType::Query => "query",
            ApiType::CompositeQuery => "composite query",
            // The replica's `ApiType::as_str` for its system tasks.
            ApiType::Heartbeat => "heartbeat",
            ApiType::GlobalTimer => "global timer",
            ApiType::ReplyCallback => "reply callback",
            ApiType::RejectCallback => "reject callback",
            ApiType::Cleanup => "cleanup",
        }
    }
    /// Whether `ic0.global_timer_set` may run: not in start, nor in a query of any kind
    /// (`ic0_global_timer_set` in rs/embedders/src/wasmtime_embedder/system_api.rs, index
    /// id 2457547428: an error in `Start`, `NonReplicatedQuery`, `ReplicatedQuery` and
    /// `InspectMessage`).
    fn can_set_timer(self) -> bool {
        !matches!(
            self,
            ApiType::Start
                | ApiType::ReplicatedQuery
                | ApiType::Query
                | ApiType::CompositeQuery
                | ApiType::Cleanup
        )
    }
    fn can_reply(self) -> bool {
        matches!(
            self,
            ApiType::Update
                | ApiType::ReplicatedQuery
                | ApiType::Query
                | ApiType::CompositeQuery
                | ApiType::ReplyCallback
                | ApiType::RejectCallback
        )
    }
    /// A response's callback (reply or reject), run in its call's context.
    pub fn is_callback(self) -> bool {
        matches!(self, ApiType::ReplyCallback | ApiType::RejectCallback)
    }
    /// Whether growing the heap past `wasm_memory_limit` traps (the replica exempts
    /// queries, so data can still be read out, pre_upgrade, so a canister can still be
    /// upgraded to a leaner version, and system tasks, "TODO(RUN-957)": `MemoryUsage::
    /// effective_wasm_memory_limit`, index id 2942983593).
    fn enforces_wasm_memory_limit(self) -> bool {
        matches!(
            self,
            ApiType::Start
                | ApiType::Init
                | ApiType::PostUpgrade
                | ApiType::Update
                | ApiType::ReplyCallback
                | ApiType::RejectCallback
        )
    }
    /// The replica runs these without modification tracking
    /// (`ApiType::modification_tracking` in rs/embedders/src/wasmtime_embedder/system_api.rs
    /// is `Ignore` for replicated and non-replicated queries and inspect_message): their
    /// writes are neither charged nor kept. Composite queries (and their callbacks) are
    /// `Track`: the memory tracker charges their first writes, though their state is
    /// discarded as a query's is.
    pub fn ignores_modifications(self) -> bool {
        matches!(self, ApiType::ReplicatedQuery | ApiType::Query)
    }
    /// Whether the message's changes are thrown away when it ends.
    pub fn discards_state(self) -> bool {
        matches!(
            self,
            ApiType::ReplicatedQuery | ApiType::Query | ApiType::CompositeQuery
        )
    }
    fn has_arg(self) -> bool {
        matches!(
            self,
            ApiType::Init
                | ApiType::PostUpgrade
                | ApiType::Update
                | ApiType::ReplicatedQuery
                | ApiType::Query
                | ApiType::CompositeQuery
                | ApiType::ReplyCallback
        )
    }
}

/// How the message ended, as far as the API saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    Reply(Vec<u8>),
    Reject(String),
}

/// The current message.
pub struct Message {
    pub api: ApiType,
    pub arg: Vec<u8>,
    pub caller: Vec<u8>,
    pub method: String,
    pub limit: u64,
    pub reply_buf: Vec<u8>,
    pub response: Option<Response>,
    /// The call context was answered by an earlier part (a callback may not answer again).
    pub replied: bool,
    /// The call being assembled, and the calls sent, which the engine delivers once the
    /// message has committed.
    pub building: Option<OutCall>,
    pub calls: Vec<OutCall>,
    /// In a reject callback, the reject's code and message.
    pub reject: Option<(u32, String)>,
    pub logged_bytes: u64,
}

impl Message {
    pub fn new(api: ApiType, method: &str, arg: Vec<u8>, limit: u64) -> Self {
        Self {
            api,
            arg,
            // The anonymous principal: what `dfx canister call` without identity, canbench
            // and our CLI send as.
            caller: vec![0x04],
            method: method.to_string(),
            limit,
            reply_buf: Vec::new(),
            response: None,
            replied: false,
            building: None,
            calls: Vec::new(),
            reject: None,
            logged_bytes: 0,
        }
    }
}

/// Why a host function stopped the message. Each maps to a replica error code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostTrap {
    /// `ic0.trap(msg)`: IC0503.
    CalledTrap(String),
    /// The instruction counter went below zero: IC0522.
    OutOfInstructions,
    /// An API used where the interface spec forbids it, or with bad arguments: IC0504.
    ContractViolation(String),
    /// Stable memory page limits: IC0524.
    MemoryAccessLimit(String),
    /// Something the IC has that this engine does not: IC0504 with a plain message.
    Unsupported(String),
    /// `memory.grow` past the canister's `wasm_memory_limit`: IC0539.
    WasmMemoryLimit { peak_bytes: u64, limit: u64 },
}

impl fmt::Display for HostTrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostTrap::CalledTrap(m) => write!(f, "Canister called `ic0.trap` with message: '{m}'"),
            HostTrap::OutOfInstructions => write!(f, "out of instructions"),
            HostTrap::ContractViolation(m) => write!(f, "Canister violated contract: {m}"),
            // The replica's `MemoryAccessLimitExceeded` description.
            HostTrap::MemoryAccessLimit(m) => {
                write!(f, "Canister exceeded memory access limits: {m}")
            }
            HostTrap::Unsupported(name) => {
                write!(f, "ic0.{name} is not supported by the embedded engine")
            }
            // The replica's wording (HypervisorError::WasmMemoryLimitExceeded).
            HostTrap::WasmMemoryLimit { peak_bytes, limit } => write!(
                f,
                "Canister exceeded its current Wasm memory limit of {limit} bytes. The peak \
                 Wasm memory usage was {peak_bytes} bytes. If the canister reaches 4GiB, then \
                 it may stop functioning and may become unrecoverable. Please reach out to \
                 the canister owner to investigate the reason for the increased memory \
                 usage. It might be necessary to move data from the Wasm memory to the \
                 stable memory. If such high Wasm memory usage is expected and safe, then \
                 the developer can increase the Wasm memory limit in the canister settings."
            ),
        }
    }
}

impl std::error::Error for HostTrap {}

/// Store data of a canister instance.
pub struct HostState {
    /// The instruction counter global: where the counter is outside System API calls with
    /// [`crate::instrument::Counter::Global`], and where a failing call leaves it.
    pub counter: Option<Global>,
    /// The counter while a System API function runs: instructions left (negative = out).
    pub left: i64,
    pub memory: Option<Memory>,
    /// The engine's mapping of that memory, when the engine created it ([`super::memory::heap::HeapCreator`]).
    pub heap: Option<Arc<HeapRegion>>,
    pub stable: StableMemory,
    pub msg: Message,
    pub limits: Limits,
    pub canister_id: Vec<u8>,
    pub time_ns: u64,
    pub canister_version: u64,
    pub cycles_balance: u128,
    /// The canister's controllers' principals (`ic0.is_controller`).
    pub controllers: Vec<Vec<u8>>,
    pub certified_data: Vec<u8>,
    pub global_timer: u64,
    /// `debug_print` output of the current message.
    pub log: Vec<String>,
    pub print_log: bool,
    /// The current message's profile in the making, when it is profiled.
    pub profiler: Option<super::profiler::Profiler>,
    /// The memory tracker's charges of the current message.
    pub tracker: Tracker,
    /// The host's side of the native stable accesses, when the module has them.
    pub native_stable: Option<NativeStable>,
    /// What `ic0.performance_counter` returns and keeps in this message, and its reads.
    pub counter_reads: CounterReads,
    pub reads: Vec<CounterRead>,
}

impl HostState {
    /// The Wasm pages of the heap and of stable memory accessed and written so far in this
    /// message (counted under every vintage), with `charge` as the instructions charged
    /// for pages. Stable memory's are readable until the message commits or rolls back.
    pub fn page_counts(&self, charge: u64) -> PageCounts {
        charges::page_counts(self.pages_touched(), charge)
    }

    /// [`HostState::page_counts`] so far in this message, with what the vintage charged for
    /// pages so far: the tracker's charges, or before it stable memory's written OS pages
    /// (the heap's are charged after the message, outside any counter read).
    pub fn page_counts_so_far(&self) -> PageCounts {
        let charge = if self.tracker.charges_pages() {
            self.page_charges().total()
        } else {
            self.stable.dirty_os_pages() * self.limits.dirty_page_overhead
        };
        self.page_counts(charge)
    }

    /// The Wasm pages touched so far in this message: heap accessed, heap written, stable
    /// accessed, stable written.
    pub fn pages_touched(&self) -> [u64; 4] {
        charges::pages_touched(self.heap.as_deref(), &self.stable)
    }

    /// What the memory tracker charged so far in this message, by kind.
    pub fn page_charges(&self) -> PageCharges {
        self.tracker.charges(self.pages_touched())
    }

    /// Takes the page charges not taken yet from the counter (see [`Tracker::fold`]).
    #[inline]
    pub fn fold_page_charges(&mut self) {
        let (heap, stable) = (self.heap.as_deref(), &self.stable);
        let new = self.tracker.fold(heap, stable);
        if new > 0 {
            self.left = self.left.saturating_sub(new.min(i64::MAX as u64) as i64);
        }
    }
}

/// The replica checks `memory.grow` after the native grow (`try_grow_wasm_memory`): a grow
/// the Wasm maximum refuses returns -1 as usual, one past `wasm_memory_limit` traps.
impl wasmtime::ResourceLimiter for HostState {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> Result<bool> {
        if maximum.is_some_and(|max| desired > max) {
            return Ok(false);
        }
        let limit = self.limits.wasm_memory_limit;
        if self.msg.api.enforces_wasm_memory_limit() && limit != 0 && desired as u64 > limit {
            bail!(HostTrap::WasmMemoryLimit {
                peak_bytes: desired as u64,
                limit,
            });
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _max: Option<usize>,
    ) -> Result<bool> {
        Ok(true)
    }
}

/// The rest of the IC System API: linked, and trapping when called.
const UNSUPPORTED: &[&str] = &[
    "msg_deadline",
    "msg_cycles_available",
    "msg_cycles_refunded",
    "msg_cycles_accept",
    "cycles_burn128",
    "subnet_self_size",
    "subnet_self_copy",
    "call_with_best_effort_response",
    "root_key_size",
    "root_key_copy",
    "data_certificate_size",
    "data_certificate_copy",
    "cost_call",
    "cost_create_canister",
    "cost_http_request",
    "cost_http_request_v2",
    "cost_sign_with_ecdsa",
    "cost_sign_with_schnorr",
    "cost_vetkd_derive_key",
    "env_var_count",
    "env_var_name_size",
    "env_var_name_copy",
    "env_var_name_exists",
    "env_var_value_size",
    "env_var_value_copy",
    "mint_cycles",
    "mint_cycles128",
];

/// The ic0 functions the embedded engine implements; docs/engine.md lists the same.
pub const SUPPORTED: &[&str] = &[
    "msg_arg_data_size",
    "msg_arg_data_copy",
    "msg_caller_size",
    "msg_caller_copy",
    "msg_reply_data_append",
    "msg_reply",
    "msg_reject",
    "msg_method_name_size",
    "msg_method_name_copy",
    "msg_cycles_available128",
    "msg_cycles_refunded128",
    "msg_cycles_accept128",
    "canister_self_size",
    "canister_self_copy",
    "canister_cycle_balance",
    "canister_cycle_balance128",
    "canister_liquid_cycle_balance128",
    "canister_status",
    "canister_version",
    "stable_size",
    "stable_grow",
    "stable_write",
    "stable_read",
    "stable64_size",
    "stable64_grow",
    "stable64_write",
    "stable64_read",
    "certified_data_set",
    "data_certificate_present",
    "time",
    "global_timer_set",
    "performance_counter",
    "is_controller",
    "in_replicated_execution",
    "debug_print",
    "trap",
    "accept_message",
    "msg_reject_code",
    "msg_reject_msg_size",
    "msg_reject_msg_copy",
    "call_new",
    "call_on_cleanup",
    "call_data_append",
    "call_cycles_add",
    "call_cycles_add128",
    "call_perform",
];

/// Defines every import of `module` in `linker`, or says which import cannot be provided.
/// `wasm64` gives addresses and sizes the type of the module's 64-bit heap.
/// `counter` is where the instrumented code keeps the instruction counter: with
/// [`Counter::Local`] every ic0 import takes it as an extra last argument and returns it.
pub fn link(
    linker: &mut Linker<HostState>,
    module: &Module,
    wasm64: bool,
    counter: Counter,
) -> Result<()> {
    let passing = match counter {
        Counter::Global => CounterPassing::Global,
        Counter::Local => CounterPassing::Argument,
    };
    link_with(linker, module, wasm64, passing)
}

/// The same System API for a module that is not instrumented (it has no counter): charges
/// start from an unlimited counter and are dropped. For comparing the engine with plain
/// wasmtime running the same module on the same host functions (benches/engine_speed.rs).
pub fn link_unmetered(linker: &mut Linker<HostState>, module: &Module, wasm64: bool) -> Result<()> {
    link_with(linker, module, wasm64, CounterPassing::Unmetered)
}

fn link_with(
    linker: &mut Linker<HostState>,
    module: &Module,
    wasm64: bool,
    passing: CounterPassing,
) -> Result<()> {
    let mut linked = std::collections::HashSet::new();
    for import in module.imports() {
        let (m, name) = (import.module(), import.name());
        let ExternType::Func(ty) = import.ty() else {
            bail!("the module imports {m}.{name}, which is not a function; the IC provides only ic0 functions");
        };
        if m == instrument::SYSTEM_MODULE {
            continue; // defined by the engine (out_of_instructions)
        }
        if m != "ic0" {
            bail!(
                "the module imports {m}.{name}, which the IC does not provide{}",
                if m.starts_with("wasi") {
                    " (a WASI module must go through wasi2ic first)"
                } else {
                    ""
                }
            );
        }
        if !SUPPORTED.contains(&name) && !UNSUPPORTED.contains(&name) {
            bail!("the module imports ic0.{name}, which is not part of the IC System API");
        }
        if !linked.insert(name.to_string()) {
            continue; // the same function imported twice
        }
        if SUPPORTED.contains(&name) {
            let mut def = Def::new(linker, name, passing, &ty);
            let defined = if wasm64 {
                define::<i64>(&mut def)
            } else {
                define::<i32>(&mut def)
            };
            defined.map_err(|e| anyhow!("linking ic0.{name}: {e}"))?;
        } else {
            let owned = name.to_string();
            linker.func_new("ic0", name, ty, move |_c, _a, _r| {
                Err(Error::new(HostTrap::Unsupported(owned.clone())))
            })?;
        }
    }
    Ok(())
}

/// Defines the supported function `d` names, by the area that has it.
fn define<A: Addr>(d: &mut Def<'_>) -> Result<()> {
    let areas: [fn(&mut Def<'_>) -> Result<bool>; 7] = [
        message::define::<A>,
        calls::define::<A>,
        canister::define::<A>,
        cycles::define::<A>,
        stable::define,
        counters::define,
        logging::define::<A>,
    ];
    for area in areas {
        if area(d)? {
            return Ok(());
        }
    }
    bail!(
        "ic0.{} is listed as supported but has no definition",
        d.name
    )
}

/// Stable memory the replica allows (`MAX_STABLE_MEMORY_IN_BYTES`).
pub const MAX_STABLE_BYTES: u64 = 400 << 30;
