//! The `ic0` System API, registered in one place ([`link`]).
//!
//! Every host function charges its fee from [`cost::SYSTEM_API_FEES`] first, before doing
//! any work, exactly as the replica's linker does (`charge_for_cpu`), then acts on the
//! message context in [`HostState`]. Functions the embedded engine cannot honour (inter-
//! canister calls, ...) link, so modules that merely import them run, and trap when called.

use std::fmt;
use std::mem::MaybeUninit;
use std::sync::Arc;

use wasmtime::{bail, format_err as anyhow, Error, Result};
use wasmtime::{
    Caller, ExternType, FuncType, Global, Linker, Memory, Module, Val, ValRaw, ValType,
};

use super::memory::charges::{self, PageCharges, Tracker};
use super::memory::heap::HeapRegion;
use super::memory::stable::{StableError, StableMemory, WASM_PAGE};
use super::memory::OS_PAGE;
use crate::engine::cost::{self, ApiFee, Limits};
use crate::engine::counter_reads::{CounterRead, CounterReads};
use crate::engine::instrument::{self, Counter};
use crate::engine::PageCounts;

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
        }
    }
    fn can_reply(self) -> bool {
        matches!(
            self,
            ApiType::Update | ApiType::ReplicatedQuery | ApiType::Query | ApiType::CompositeQuery
        )
    }
    /// Whether growing the heap past `wasm_memory_limit` traps (the replica exempts
    /// queries, so data can still be read out, and pre_upgrade, so a canister can still
    /// be upgraded to a leaner version).
    fn enforces_wasm_memory_limit(self) -> bool {
        matches!(
            self,
            ApiType::Start | ApiType::Init | ApiType::PostUpgrade | ApiType::Update
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
    /// [`crate::engine::instrument::Counter::Global`], and where a failing call leaves it.
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

/// The host's side of the native stable accesses (see [`instrument::STABLE_CACHE_EXPORT`]):
/// after each of its own stable memory accesses the host marks the pages and keeps the
/// cache of marked pages equal to stable memory. Pages marked written may be written by
/// the injected function, in the cache only: the host copies them back into stable memory
/// before it accesses them itself and when the message ends.
pub struct NativeStable {
    /// Base addresses of the cache and the marks (memories of fixed size, which never
    /// move while the instance lives).
    cache: usize,
    marks: usize,
    /// The global holding the stable memory's size for the injected function.
    bytes: Global,
    /// Pages marked in the current message, and those of them marked written.
    marked: Vec<u64>,
    written: Vec<u64>,
    /// Cache pages filled since the cache was last given back, and the end of the highest.
    filled: usize,
    filled_end: usize,
}

/// Past this many cache pages filled (4 MiB) the cache is given back to the kernel when
/// the message ends: an idle canister (a snapshot's, a fork's) keeps no second copy of the
/// stable pages its last message used.
const CACHE_KEPT_PAGES: usize = 1_024;
/// At most this many pages (128 MiB) are cached at once; the accesses to pages past it stay
/// host calls. A message that inserts half a million rows touches more stable memory than
/// that, and two such messages run side by side on two workers.
const CACHE_MAX_PAGES: usize = 32_768;

impl NativeStable {
    pub fn new(
        store: &mut wasmtime::Store<HostState>,
        instance: &wasmtime::Instance,
    ) -> Option<Self> {
        let cache = instance.get_memory(&mut *store, instrument::STABLE_CACHE_EXPORT)?;
        let marks = instance.get_memory(&mut *store, instrument::STABLE_MARKS_EXPORT)?;
        let bytes = instance.get_global(&mut *store, instrument::STABLE_BYTES_EXPORT)?;
        Some(NativeStable {
            cache: cache.data_ptr(&*store) as usize,
            marks: marks.data_ptr(&*store) as usize,
            bytes,
            marked: Vec::new(),
            written: Vec::new(),
            filled: 0,
            filled_end: 0,
        })
    }

    /// A message starts: no page is marked.
    pub fn begin(&mut self) {
        for &page in &self.marked {
            // SAFETY: every marked page lies inside the marks memory (see `note`).
            unsafe { *((self.marks + page as usize) as *mut u8) = 0 };
        }
        self.marked.clear();
        self.written.clear();
    }

    /// The message's code has ended (whether it replied or trapped): stable memory gets the
    /// pages written in the cache, before it is committed or rolled back, and a large
    /// cache goes back to the kernel.
    pub fn finish(&mut self, stable: &mut StableMemory) {
        self.write_back_all(stable);
        if self.filled > CACHE_KEPT_PAGES {
            // Unmark first: a cached page's mark says its bytes are current.
            self.begin();
            // SAFETY: the cache's own pages, which only marked pages' accesses use, and
            // none is marked now. Failing to give them back only costs memory.
            unsafe { libc::madvise(self.cache as *mut _, self.filled_end, libc::MADV_DONTNEED) };
            self.filled = 0;
            self.filled_end = 0;
        }
    }

    fn mark(&self, page: u64) -> *mut u8 {
        (self.marks + page as usize) as *mut u8
    }

    fn cached(&self, page: u64) -> &[u8] {
        // SAFETY: only called for marked pages, which lie inside the cache; no Wasm runs
        // while the host holds the slice.
        unsafe {
            std::slice::from_raw_parts((self.cache + page as usize * OS_PAGE) as *const u8, OS_PAGE)
        }
    }

    /// Copies the pages of the range that the injected function may have written back into
    /// `stable`, before the host accesses them.
    fn write_back_range(&self, stable: &mut StableMemory, offset: u64, len: u64) {
        if self.written.is_empty() || len == 0 {
            return;
        }
        let end = offset
            .saturating_add(len)
            .min(instrument::STABLE_CACHE_BYTES);
        let page_size = OS_PAGE as u64;
        for page in offset / page_size..end.div_ceil(page_size) {
            // SAFETY: `page` lies inside the cache, so its mark inside the marks.
            if unsafe { *self.mark(page) } as i32 == instrument::MARK_WRITTEN {
                stable.write_back(page, self.cached(page));
            }
        }
    }

    /// Copies every page the injected function may have written back into `stable`: the
    /// message has ended.
    fn write_back_all(&self, stable: &mut StableMemory) {
        for &page in &self.written {
            stable.write_back(page, self.cached(page));
        }
    }

    /// The host read (`written` = `None`) or wrote `len` bytes at `offset`, successfully:
    /// counts the range's accesses to each page, caches a page at its
    /// [`instrument::MARK_SEEN`]th (its bytes from `stable`), and writes `written` into the
    /// cache of pages cached before.
    fn note(&mut self, stable: &StableMemory, offset: u64, len: u64, written: Option<&[u8]>) {
        // The part of the range the cache covers (a write across its end changes cached
        // bytes too).
        let end = (offset + len).min(instrument::STABLE_CACHE_BYTES);
        if offset >= end {
            return;
        }
        const SEEN: u8 = instrument::MARK_SEEN as u8;
        const CACHED: u8 = instrument::MARK_CACHED as u8;
        const WRITTEN: u8 = instrument::MARK_WRITTEN as u8;
        let page_size = OS_PAGE as u64;
        for page in offset / page_size..=(end - 1) / page_size {
            let mark = self.mark(page);
            let cached = (self.cache + page as usize * OS_PAGE) as *mut u8;
            // SAFETY: `end` is within the cache, and the marks hold a byte per cache page;
            // no Wasm runs during a host call.
            unsafe {
                match *mark {
                    0..SEEN => {
                        if *mark == 0 {
                            self.marked.push(page);
                        }
                        *mark += 1;
                    }
                    SEEN if self.filled >= CACHE_MAX_PAGES => {}
                    SEEN => {
                        match stable.page_bytes(page) {
                            Some(bytes) => {
                                std::ptr::copy_nonoverlapping(bytes.as_ptr(), cached, OS_PAGE)
                            }
                            None => std::ptr::write_bytes(cached, 0, OS_PAGE),
                        }
                        *mark = CACHED;
                        self.filled += 1;
                        self.filled_end = self.filled_end.max((page as usize + 1) * OS_PAGE);
                    }
                    _ => {
                        if let Some(data) = written {
                            let from = (page * page_size).max(offset);
                            let to = ((page + 1) * page_size).min(end);
                            let src = &data[(from - offset) as usize..(to - offset) as usize];
                            std::ptr::copy_nonoverlapping(
                                src.as_ptr(),
                                (self.cache + from as usize) as *mut u8,
                                src.len(),
                            );
                        }
                    }
                }
                if written.is_some() && *mark == CACHED {
                    *mark = WRITTEN;
                    self.written.push(page);
                }
            }
        }
    }
}

impl HostState {
    /// The Wasm pages of the heap and of stable memory accessed and written so far in this
    /// message (counted under every vintage), with `charge` as the instructions charged
    /// for pages. Stable memory's are readable until the message commits or rolls back.
    pub fn page_counts(&self, charge: u64) -> PageCounts {
        charges::page_counts(self.pages_touched(), charge)
    }

    /// [`HostState::page_counts`] so far in this message, with what the vintage charged for
    /// pages so far: the tracker's charges, or before it stable memory's written 4 KiB pages
    /// (the heap's are charged after the message, outside any counter read).
    pub fn page_counts_so_far(&self) -> PageCounts {
        let charge = if self.tracker.charges_pages() {
            self.page_charges().total()
        } else {
            self.stable.dirty_pages() * self.limits.dirty_page_overhead
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
    "msg_reject_code",
    "msg_reject_msg_size",
    "msg_reject_msg_copy",
    "msg_deadline",
    "msg_cycles_available",
    "msg_cycles_refunded",
    "msg_cycles_accept",
    "cycles_burn128",
    "subnet_self_size",
    "subnet_self_copy",
    "call_new",
    "call_on_cleanup",
    "call_data_append",
    "call_with_best_effort_response",
    "call_cycles_add",
    "call_cycles_add128",
    "call_perform",
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
];

type C<'a> = Caller<'a, HostState>;

fn fee(name: &str) -> ApiFee {
    cost::system_api_fee(name).unwrap_or(ApiFee {
        base: 0,
        per_byte: 0,
    })
}

/// Subtracts `amount` from the instruction counter, as the replica's `charge_direct_fee`.
fn charge(caller: &mut C<'_>, amount: u64) -> Result<()> {
    let state = caller.data_mut();
    if state.left < 0 {
        bail!(HostTrap::OutOfInstructions);
    }
    state.left = state
        .left
        .saturating_sub(amount.min(i64::MAX as u64) as i64);
    if state.left < 0 {
        bail!(HostTrap::OutOfInstructions);
    }
    Ok(())
}

/// Instructions used so far in this message (performance counter type 0).
pub fn instructions_used(caller: &mut C<'_>) -> u64 {
    let limit = caller.data().msg.limit;
    (limit as i64).saturating_sub(caller.data().left).max(0) as u64
}

/// What a `performance_counter` read returns: the instructions so far, or with
/// [`CounterReads::Encode`] the read's index and pages packed (the read kept either way
/// unless [`CounterReads::Off`]).
fn counter_read(caller: &mut C<'_>) -> u64 {
    let instructions = instructions_used(caller);
    let state = caller.data_mut();
    if state.counter_reads == CounterReads::Off {
        return instructions;
    }
    let read = CounterRead {
        instructions,
        pages: state.page_counts_so_far(),
    };
    let index = state.reads.len() as u64;
    state.reads.push(read);
    match &state.counter_reads {
        CounterReads::Encode(e) => e.value(index, &read.pages),
        _ => instructions,
    }
}

fn violation(msg: String) -> Error {
    Error::new(HostTrap::ContractViolation(msg))
}

fn heap_range(heap_len: usize, api: &str, ptr: u64, len: u64) -> Result<std::ops::Range<usize>> {
    match ptr.checked_add(len) {
        Some(end) if end <= heap_len as u64 => Ok(ptr as usize..end as usize),
        _ => Err(violation(format!(
            "{api}: heap range [{ptr}, {ptr} + {len}) is out of bounds of the {heap_len}-byte heap"
        ))),
    }
}

/// The heap and the host state at once. The engine's own heap mapping is used directly (two
/// atomic loads); wasmtime's `Memory` lookup walks the store's instance tables, a few cache
/// misses on every stable memory call.
fn heap_and_state<'a>(
    caller: &'a mut C<'_>,
    api: &str,
) -> Result<(&'a mut [u8], &'a mut HostState)> {
    if let Some(region) = &caller.data().heap {
        let (base, len) = (region.base(), region.len());
        // SAFETY: the mapping is this instance's heap, live while the instance is; no Wasm
        // runs during a host call, and the slice cannot outlive the borrow of `caller`.
        let bytes = unsafe { std::slice::from_raw_parts_mut(base, len) };
        return Ok((bytes, caller.data_mut()));
    }
    let memory = caller
        .data()
        .memory
        .ok_or_else(|| violation(format!("{api}: the module has no memory")))?;
    Ok(memory.data_and_store_mut(caller))
}

fn read_heap(caller: &mut C<'_>, api: &str, ptr: u64, len: u64) -> Result<Vec<u8>> {
    let (data, _) = heap_and_state(caller, api)?;
    let r = heap_range(data.len(), api, ptr, len)?;
    Ok(data[r].to_vec())
}

fn write_heap(caller: &mut C<'_>, api: &str, ptr: u64, bytes: &[u8]) -> Result<()> {
    let (data, _) = heap_and_state(caller, api)?;
    let r = heap_range(data.len(), api, ptr, bytes.len() as u64)?;
    data[r].copy_from_slice(bytes);
    Ok(())
}

/// `*_copy(dst, offset, size)` from a host-side byte string.
fn copy_out(
    caller: &mut C<'_>,
    api: &str,
    src: &[u8],
    dst: u64,
    offset: u64,
    size: u64,
) -> Result<()> {
    let end = offset
        .checked_add(size)
        .filter(|&e| e <= src.len() as u64)
        .ok_or_else(|| {
            violation(format!(
                "{api}: range [{offset}, {offset} + {size}) is out of bounds of the {}-byte source",
                src.len()
            ))
        })?;
    let chunk = src[offset as usize..end as usize].to_vec();
    write_heap(caller, api, dst, &chunk)
}

fn require(caller: &C<'_>, api: &str, ok: bool) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(violation(format!(
            "\"ic0.{api}\" cannot be executed in {} mode",
            caller.data().msg.api.name()
        )))
    }
}

/// The replica's wording (its `internal_trap` handler) names the limits of every message
/// kind, whichever kind ran; `HostTrap::MemoryAccessLimit` adds the common prefix.
fn stable_err(e: StableError, api: &str, limits: &Limits) -> Error {
    const KB_PER_PAGE: u64 = cost::OS_PAGE_SIZE / 1024;
    match e {
        StableError::OutOfBounds => Error::new(HostTrap::ContractViolation(format!("{api}: stable memory out of bounds"))),
        StableError::DirtyPageLimit(_) => Error::new(HostTrap::MemoryAccessLimit(format!(
            "Exceeded the limit for the number of modified pages in the stable memory in a single execution: limit {} KB for regular messages, {} KB for upgrade messages and {} KB for queries",
            limits.stable_dirty_pages_update * KB_PER_PAGE,
            limits.stable_dirty_pages_install * KB_PER_PAGE,
            limits.stable_dirty_pages_query * KB_PER_PAGE,
        ))),
        StableError::AccessedPageLimit(_) => Error::new(HostTrap::MemoryAccessLimit(format!(
            "Exceeded the limit for the number of accessed pages in the stable memory in a single message execution: limit {} KB for regular messages and {} KB for queries",
            limits.stable_accessed_pages_update * KB_PER_PAGE,
            limits.stable_accessed_pages_query * KB_PER_PAGE,
        ))),
    }
}

/// `fee` is the API's fee, looked up once at link time (a name lookup per call cost 5% of a
/// SQLite benchmark run).
fn stable_read_impl(
    caller: &mut C<'_>,
    api: &str,
    fee: ApiFee,
    dst: u64,
    offset: u64,
    size: u64,
) -> Result<()> {
    charge(caller, fee.charge(size))?;
    let (data, state) = heap_and_state(caller, api)?;
    let r = heap_range(data.len(), api, dst, size)?;
    if let Some(native) = &state.native_stable {
        native.write_back_range(&mut state.stable, offset, size);
    }
    state
        .stable
        .read(offset, &mut data[r])
        .map_err(|e| stable_err(e, api, &state.limits))?;
    if let Some(native) = &mut state.native_stable {
        native.note(&state.stable, offset, size, None);
    }
    Ok(())
}

fn stable_write_impl(
    caller: &mut C<'_>,
    api: &str,
    fee: ApiFee,
    offset: u64,
    src: u64,
    size: u64,
) -> Result<()> {
    charge(caller, fee.charge(size))?;
    let (data, state) = heap_and_state(caller, api)?;
    let r = heap_range(data.len(), api, src, size)?;
    if let Some(native) = &state.native_stable {
        native.write_back_range(&mut state.stable, offset, size);
    }
    let newly_dirty = state
        .stable
        .write(offset, &data[r.clone()])
        .map_err(|e| stable_err(e, api, &state.limits))?;
    if let Some(native) = &mut state.native_stable {
        native.note(&state.stable, offset, size, Some(&data[r]));
    }
    if caller.data().tracker.charges_pages() {
        // The memory tracker charges the pages instead (at the end of this call).
        return Ok(());
    }
    let overhead = caller.data().limits.dirty_page_overhead;
    charge(caller, newly_dirty * overhead)
}

/// Tells the native stable accesses' injected functions the stable memory's size (as far as
/// the cache covers it): after every grow and when a message starts.
pub fn sync_native_size(mut ctx: impl wasmtime::AsContextMut<Data = HostState>) -> Result<()> {
    let data = ctx.as_context().data();
    let size = data.stable.image().size_bytes();
    let Some(bytes) = data.native_stable.as_ref().map(|n| n.bytes) else {
        return Ok(());
    };
    let visible = size.min(instrument::STABLE_CACHE_BYTES);
    bytes.set(&mut ctx, Val::I64(visible as i64))
}

/// The reply functions need an entry point that can reply and a call not yet answered.
fn require_open_reply(caller: &C<'_>, api: &str) -> Result<()> {
    require(caller, api, caller.data().msg.api.can_reply())?;
    if caller.data().msg.response.is_some() {
        return Err(violation(format!("ic0.{api}: the call is already replied")));
    }
    Ok(())
}

const MAX_32BIT_STABLE_PAGES: u64 = 65536;

fn check_32bit_stable(caller: &C<'_>, api: &str) -> Result<()> {
    if caller.data().stable.size_wasm_pages() > MAX_32BIT_STABLE_PAGES {
        return Err(violation(format!(
            "{api}: stable memory is larger than 4 GiB; use the 64-bit API"
        )));
    }
    Ok(())
}

fn u128_bytes(v: u128) -> [u8; 16] {
    v.to_le_bytes()
}

/// A heap address or byte count as the System API passes it: `i32` in a wasm32 module and
/// `i64` in a wasm64 one (the replica links its functions generically over this type). The
/// 32-bit stable memory API, counter types and flags stay `i32` in both.
pub trait Addr: Raw {
    /// The unsigned value.
    fn get(self) -> u64;
    /// A host-side length; the data behind every `*_size` is far below 2 GiB.
    fn from_len(n: usize) -> Self;
}

impl Addr for i32 {
    fn get(self) -> u64 {
        self as u32 as u64
    }
    fn from_len(n: usize) -> Self {
        n as i32
    }
}

impl Addr for i64 {
    fn get(self) -> u64 {
        self as u64
    }
    fn from_len(n: usize) -> Self {
        n as i64
    }
}

/// A value System API functions take or return (`i32` or `i64`), moved through wasmtime's
/// raw value slots.
pub trait Raw: Copy + Send + Sync + 'static {
    const TY: ValType;
    /// # Safety
    /// `v` holds an initialised value of type [`Self::TY`].
    unsafe fn read(v: &MaybeUninit<ValRaw>) -> Self;
    fn raw(self) -> ValRaw;
}

impl Raw for i32 {
    const TY: ValType = ValType::I32;
    unsafe fn read(v: &MaybeUninit<ValRaw>) -> Self {
        unsafe { v.assume_init_ref() }.get_i32()
    }
    fn raw(self) -> ValRaw {
        ValRaw::i32(self)
    }
}

impl Raw for i64 {
    const TY: ValType = ValType::I64;
    unsafe fn read(v: &MaybeUninit<ValRaw>) -> Self {
        unsafe { v.assume_init_ref() }.get_i64()
    }
    fn raw(self) -> ValRaw {
        ValRaw::i64(self)
    }
}

/// What a System API function returns: nothing or one value.
trait Results: Sized {
    fn types() -> Vec<ValType>;
    /// Writes the results to the start of `out`; returns how many.
    fn write(self, out: &mut [MaybeUninit<ValRaw>]) -> usize;
}

impl Results for () {
    fn types() -> Vec<ValType> {
        Vec::new()
    }
    fn write(self, _: &mut [MaybeUninit<ValRaw>]) -> usize {
        0
    }
}

impl<T: Raw> Results for T {
    fn types() -> Vec<ValType> {
        vec![T::TY]
    }
    fn write(self, out: &mut [MaybeUninit<ValRaw>]) -> usize {
        out[0] = MaybeUninit::new(self.raw());
        1
    }
}

/// A System API function body, `Fn(&mut Caller, args...) -> Result<R>`, callable on
/// wasmtime's raw argument slots. `Args` is the tuple of argument types.
trait HostFn<Args, R>: Send + Sync + 'static {
    fn params() -> Vec<ValType>;
    /// # Safety
    /// `args` starts with initialised values of the types [`Self::params`] gives.
    unsafe fn call(&self, caller: &mut C<'_>, args: &[MaybeUninit<ValRaw>]) -> Result<R>;
}

macro_rules! host_fn {
    ($($a:ident $i:tt),*) => {
        impl<F, R, $($a: Raw),*> HostFn<($($a,)*), R> for F
        where
            F: Fn(&mut C<'_>, $($a),*) -> Result<R> + Send + Sync + 'static,
        {
            fn params() -> Vec<ValType> {
                vec![$($a::TY),*]
            }
            #[allow(unused_variables)]
            unsafe fn call(&self, caller: &mut C<'_>, args: &[MaybeUninit<ValRaw>]) -> Result<R> {
                self(caller, $(unsafe { $a::read(&args[$i]) }),*)
            }
        }
    };
}
host_fn!();
host_fn!(A0 0);
host_fn!(A0 0, A1 1);
host_fn!(A0 0, A1 1, A2 2);

/// How the instrumented code hands the instruction counter to System API functions (see
/// [`instrument::Counter`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum CounterPassing {
    /// In the exported counter global, read and written through wasmtime's `Global` API
    /// (the replica's code).
    Global,
    /// As an extra last argument and an extra last result: a plain value, no store lookups.
    Argument,
    /// Not at all: the module is not instrumented (see [`link_unmetered`]).
    Unmetered,
}

/// Defines `ic0.name` as `f`, with the counter passed as `passing` says; `import` is the
/// function type the module imports it with, checked against the System API's.
fn define_api<Args, R: Results, F: HostFn<Args, R>>(
    l: &mut Linker<HostState>,
    name: &str,
    passing: CounterPassing,
    import: &FuncType,
    f: F,
) -> Result<()> {
    let (mut params, mut results) = (F::params(), R::types());
    let expected = FuncType::new(l.engine(), params.clone(), results.clone());
    if passing == CounterPassing::Argument {
        params.push(ValType::I64);
        results.push(ValType::I64);
    }
    let ty = FuncType::new(l.engine(), params.clone(), results.clone());
    if !FuncType::eq(import, &ty) {
        // Name the signature the module wrote, without the counter the instrumentation added.
        let strip = |types: Vec<ValType>| -> Vec<ValType> {
            let n = types.len() - (passing == CounterPassing::Argument) as usize;
            types.into_iter().take(n).collect()
        };
        let found = FuncType::new(
            l.engine(),
            strip(import.params().collect()),
            strip(import.results().collect()),
        );
        bail!("the module imports it as {found}, but its signature is {expected}");
    }
    let counter_arg = params.len().saturating_sub(1);
    let counter_result = results.len().saturating_sub(1);
    let body = move |mut c: C<'_>, slots: &mut [MaybeUninit<ValRaw>]| -> Result<()> {
        let left = match passing {
            // SAFETY: wasmtime checked the call against `ty`, whose last parameter is i64.
            CounterPassing::Argument => unsafe { i64::read(&slots[counter_arg]) },
            CounterPassing::Global => match c.data().counter {
                Some(g) => g.get(&mut c).unwrap_i64(),
                None => bail!("instruction counter missing"),
            },
            CounterPassing::Unmetered => i64::MAX,
        };
        c.data_mut().left = left;
        c.data_mut().fold_page_charges();
        // SAFETY: the slots hold the arguments of type `ty` (checked by wasmtime).
        let result = unsafe { f.call(&mut c, slots) };
        // Pages the call itself touched (copies into and out of the heap, stable memory).
        c.data_mut().fold_page_charges();
        match result {
            Ok(value) => {
                value.write(slots);
                let left = c.data().left;
                match passing {
                    CounterPassing::Argument => {
                        slots[counter_result] = MaybeUninit::new(ValRaw::i64(left))
                    }
                    CounterPassing::Global => set_counter(&mut c, left)?,
                    CounterPassing::Unmetered => {}
                }
                Ok(())
            }
            Err(e) => {
                // The message ends here: leave the charged counter where the host reads it.
                if passing != CounterPassing::Unmetered {
                    let left = c.data().left;
                    set_counter(&mut c, left)?;
                }
                Err(e)
            }
        }
    };
    // SAFETY: `body` writes exactly the results of `ty` (the function's result, if any,
    // then the counter with `CounterPassing::Argument`), and reads only its parameters.
    unsafe { l.func_new_unchecked("ic0", name, ty, body)? };
    Ok(())
}

fn set_counter(c: &mut C<'_>, left: i64) -> Result<()> {
    match c.data().counter {
        Some(g) => g.set(c, Val::I64(left)),
        None => bail!("instruction counter missing"),
    }
}

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
            let defined = if wasm64 {
                define::<i64>(linker, name, passing, &ty)
            } else {
                define::<i32>(linker, name, passing, &ty)
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

fn define<A: Addr>(
    l: &mut Linker<HostState>,
    name: &str,
    passing: CounterPassing,
    ty: &FuncType,
) -> Result<()> {
    let f = fee(name);
    match name {
        "msg_arg_data_size" => {
            define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<A> {
                charge(c, f.base)?;
                require(c, "msg_arg_data_size", c.data().msg.api.has_arg())?;
                Ok(A::from_len(c.data().msg.arg.len()))
            })?
        }
        "msg_arg_data_copy" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, dst: A, off: A, size: A| -> Result<()> {
                charge(c, f.charge(size.get()))?;
                require(c, "msg_arg_data_copy", c.data().msg.api.has_arg())?;
                let arg = std::mem::take(&mut c.data_mut().msg.arg);
                let r = copy_out(
                    c,
                    "msg_arg_data_copy",
                    &arg,
                    dst.get(),
                    off.get(),
                    size.get(),
                );
                c.data_mut().msg.arg = arg;
                r
            },
        )?,
        "msg_caller_size" => define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<A> {
            charge(c, f.base)?;
            Ok(A::from_len(c.data().msg.caller.len()))
        })?,
        "msg_caller_copy" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, dst: A, off: A, size: A| -> Result<()> {
                charge(c, f.charge(size.get()))?;
                let caller = c.data().msg.caller.clone();
                copy_out(
                    c,
                    "msg_caller_copy",
                    &caller,
                    dst.get(),
                    off.get(),
                    size.get(),
                )
            },
        )?,
        "msg_method_name_size" => {
            define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<A> {
                charge(c, f.base)?;
                Ok(A::from_len(c.data().msg.method.len()))
            })?
        }
        "msg_method_name_copy" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, dst: A, off: A, size: A| -> Result<()> {
                charge(c, f.charge(size.get()))?;
                let method = c.data().msg.method.clone().into_bytes();
                copy_out(
                    c,
                    "msg_method_name_copy",
                    &method,
                    dst.get(),
                    off.get(),
                    size.get(),
                )
            },
        )?,
        "msg_reply_data_append" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, src: A, size: A| -> Result<()> {
                charge(c, f.charge(size.get()))?;
                require_open_reply(c, "msg_reply_data_append")?;
                let bytes = read_heap(c, "msg_reply_data_append", src.get(), size.get())?;
                let buf = &mut c.data_mut().msg.reply_buf;
                if buf.len() + bytes.len() > MAX_RESPONSE_BYTES {
                    return Err(violation(format!("ic0.msg_reply_data_append: application payload size ({}) cannot be larger than {MAX_RESPONSE_BYTES}", buf.len() + bytes.len())));
                }
                buf.extend_from_slice(&bytes);
                Ok(())
            },
        )?,
        "msg_reply" => define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<()> {
            charge(c, f.base)?;
            require_open_reply(c, "msg_reply")?;
            let reply = std::mem::take(&mut c.data_mut().msg.reply_buf);
            c.data_mut().msg.response = Some(Response::Reply(reply));
            Ok(())
        })?,
        "msg_reject" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, src: A, size: A| -> Result<()> {
                charge(c, f.charge(size.get()))?;
                require_open_reply(c, "msg_reject")?;
                let bytes = read_heap(c, "msg_reject", src.get(), size.get())?;
                c.data_mut().msg.response = Some(Response::Reject(
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
                Ok(())
            },
        )?,
        "msg_cycles_available128" | "msg_cycles_refunded128" => {
            let api = name.to_string();
            define_api(
                l,
                name,
                passing,
                ty,
                move |c: &mut C<'_>, dst: A| -> Result<()> {
                    charge(c, f.base)?;
                    write_heap(c, &api, dst.get(), &u128_bytes(0))
                },
            )?
        }
        "msg_cycles_accept128" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, _hi: i64, _lo: i64, dst: A| -> Result<()> {
                charge(c, f.base)?;
                write_heap(c, "msg_cycles_accept128", dst.get(), &u128_bytes(0))
            },
        )?,
        "canister_self_size" => {
            define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<A> {
                charge(c, f.base)?;
                Ok(A::from_len(c.data().canister_id.len()))
            })?
        }
        "canister_self_copy" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, dst: A, off: A, size: A| -> Result<()> {
                charge(c, f.charge(size.get()))?;
                let id = c.data().canister_id.clone();
                copy_out(
                    c,
                    "canister_self_copy",
                    &id,
                    dst.get(),
                    off.get(),
                    size.get(),
                )
            },
        )?,
        "canister_cycle_balance" => {
            define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<i64> {
                charge(c, f.base)?;
                Ok(c.data().cycles_balance.min(i64::MAX as u128) as i64)
            })?
        }
        "canister_cycle_balance128" | "canister_liquid_cycle_balance128" => {
            let api = name.to_string();
            define_api(
                l,
                name,
                passing,
                ty,
                move |c: &mut C<'_>, dst: A| -> Result<()> {
                    charge(c, f.base)?;
                    let balance = c.data().cycles_balance;
                    write_heap(c, &api, dst.get(), &u128_bytes(balance))
                },
            )?
        }
        "canister_status" => {
            define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<i32> {
                charge(c, f.base)?;
                Ok(1) // running
            })?
        }
        "canister_version" => {
            define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<i64> {
                charge(c, f.base)?;
                Ok(c.data().canister_version as i64)
            })?
        }
        "stable_size" => define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<i32> {
            charge(c, f.base)?;
            check_32bit_stable(c, "stable_size")?;
            Ok(c.data().stable.size_wasm_pages() as i32)
        })?,
        "stable64_size" => define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<i64> {
            charge(c, f.base)?;
            Ok(c.data().stable.size_wasm_pages() as i64)
        })?,
        "stable_grow" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, delta: i32| -> Result<i32> {
                charge(c, f.base)?;
                let stable = &mut c.data_mut().stable;
                // The 32-bit API cannot address past 4 GiB.
                if stable.size_wasm_pages() + delta as u32 as u64 > MAX_32BIT_STABLE_PAGES {
                    return Ok(-1);
                }
                let old = stable.grow(delta as u32 as u64) as i32;
                sync_native_size(&mut *c)?;
                Ok(old)
            },
        )?,
        "stable64_grow" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, delta: i64| -> Result<i64> {
                charge(c, f.base)?;
                let old = c.data_mut().stable.grow(delta as u64);
                sync_native_size(&mut *c)?;
                Ok(old)
            },
        )?,
        "stable_read" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, dst: i32, off: i32, size: i32| -> Result<()> {
                check_32bit_stable(c, "stable_read")?;
                stable_read_impl(
                    c,
                    "stable_read",
                    f,
                    dst as u32 as u64,
                    off as u32 as u64,
                    size as u32 as u64,
                )
            },
        )?,
        "stable64_read" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, dst: i64, off: i64, size: i64| -> Result<()> {
                stable_read_impl(c, "stable64_read", f, dst as u64, off as u64, size as u64)
            },
        )?,
        "stable_write" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, off: i32, src: i32, size: i32| -> Result<()> {
                check_32bit_stable(c, "stable_write")?;
                stable_write_impl(
                    c,
                    "stable_write",
                    f,
                    off as u32 as u64,
                    src as u32 as u64,
                    size as u32 as u64,
                )
            },
        )?,
        "stable64_write" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, off: i64, src: i64, size: i64| -> Result<()> {
                stable_write_impl(c, "stable64_write", f, off as u64, src as u64, size as u64)
            },
        )?,
        "certified_data_set" => {
            define_api(
                l,
                name,
                passing,
                ty,
                move |c: &mut C<'_>, src: A, size: A| -> Result<()> {
                    charge(c, f.charge(size.get()))?;
                    if size.get() > 32 {
                        return Err(violation(format!("ic0.certified_data_set: certified data can be at most 32 bytes, got {}", size.get())));
                    }
                    let bytes = read_heap(c, "certified_data_set", src.get(), size.get())?;
                    c.data_mut().certified_data = bytes;
                    Ok(())
                },
            )?
        }
        "data_certificate_present" => {
            define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<i32> {
                charge(c, f.base)?;
                Ok(0)
            })?
        }
        "time" => define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<i64> {
            charge(c, f.base)?;
            Ok(c.data().time_ns as i64)
        })?,
        "global_timer_set" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, ts: i64| -> Result<i64> {
                charge(c, f.base)?;
                let old = std::mem::replace(&mut c.data_mut().global_timer, ts as u64);
                Ok(old as i64)
            },
        )?,
        "performance_counter" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, kind: i32| -> Result<i64> {
                charge(c, f.base)?;
                match kind {
                    // Type 1 adds the call context's earlier instructions: none outside callbacks.
                    0 | 1 => Ok(counter_read(c) as i64),
                    _ => Err(violation(format!(
                        "ic0.performance_counter: unknown counter type {kind}"
                    ))),
                }
            },
        )?,
        "is_controller" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, src: A, size: A| -> Result<i32> {
                charge(c, f.charge(size.get()))?;
                let bytes = read_heap(c, "is_controller", src.get(), size.get())?;
                if bytes.len() > 29 {
                    return Err(violation(format!(
                        "ic0.is_controller: {} bytes is not a principal",
                        bytes.len()
                    )));
                }
                // The canister was installed by the anonymous principal, its only controller.
                Ok((bytes == [0x04]) as i32)
            },
        )?,
        "in_replicated_execution" => {
            define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<i32> {
                charge(c, f.base)?;
                Ok(!matches!(c.data().msg.api, ApiType::Query | ApiType::CompositeQuery) as i32)
            })?
        }
        "accept_message" => define_api(l, name, passing, ty, move |c: &mut C<'_>| -> Result<()> {
            charge(c, f.base)?;
            Err(violation(format!(
                "\"ic0.accept_message\" cannot be executed in {} mode",
                c.data().msg.api.name()
            )))
        })?,
        "debug_print" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, src: A, size: A| -> Result<()> {
                let len = size.get();
                let remaining = cost::LOG_BUFFER_CAPACITY.saturating_sub(c.data().msg.logged_bytes);
                let print_bytes = if c.data().limits.charge_debug_print_bytes {
                    len
                } else {
                    0
                };
                charge(
                    c,
                    f.base + cost::logging_charge(len, remaining) + print_bytes,
                )?;
                let bytes = read_heap(c, "debug_print", src.get(), len)?;
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let state = c.data_mut();
                state.msg.logged_bytes += len;
                if state.print_log {
                    eprintln!("[canister] {text}");
                }
                state.log.push(text);
                Ok(())
            },
        )?,
        "trap" => define_api(
            l,
            name,
            passing,
            ty,
            move |c: &mut C<'_>, src: A, size: A| -> Result<()> {
                let len = size.get();
                let remaining = cost::LOG_BUFFER_CAPACITY.saturating_sub(c.data().msg.logged_bytes);
                charge(c, f.charge(len) + cost::logging_charge(len, remaining))?;
                let bytes = read_heap(c, "trap", src.get(), len)?;
                Err(Error::new(HostTrap::CalledTrap(
                    String::from_utf8_lossy(&bytes).into_owned(),
                )))
            },
        )?,
        other => bail!("ic0.{other} is listed as supported but has no definition"),
    };
    Ok(())
}

/// The largest reply a canister may produce (`MAX_INTER_CANISTER_PAYLOAD_IN_BYTES` is
/// 2 MiB; ingress replies may be up to this size as well).
pub const MAX_RESPONSE_BYTES: usize = 2 * 1024 * 1024;

/// Stable memory the replica allows (`MAX_STABLE_MEMORY_IN_BYTES`).
pub const MAX_STABLE_BYTES: u64 = 400 << 30;

/// Wasm pages of stable memory per OS page, for reports.
pub const STABLE_WASM_PAGE: u64 = WASM_PAGE;
