//! Engines run canisters. Scenarios talk to [`Engine`] only, so the same suite runs on the
//! embedded engine (wasmtime with the replica's metering) and on PocketIC.

pub mod cost;
pub mod embedded;
pub mod instrument;

use std::fmt;

use anyhow::Result;
use candid::Principal;

/// The replica's reject codes (interface spec).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectCode {
    SysFatal = 1,
    SysTransient = 2,
    DestinationInvalid = 3,
    CanisterReject = 4,
    CanisterError = 5,
}

/// The replica's error codes, as shown `IC0nnn` to users.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    CanisterRejectedMessage = 406,
    CanisterTrapped = 502,
    CanisterCalledTrap = 503,
    CanisterContractViolation = 504,
    CanisterInvalidWasm = 505,
    CanisterDidNotReply = 506,
    CanisterInstructionLimitExceeded = 522,
    CanisterMemoryAccessLimitExceeded = 524,
    CanisterMethodNotFound = 536,
    CanisterWasmModuleNotFound = 537,
    CanisterWasmMemoryLimitExceeded = 539,
}

impl ErrorCode {
    pub fn reject_code(self) -> RejectCode {
        match self {
            ErrorCode::CanisterRejectedMessage => RejectCode::CanisterReject,
            ErrorCode::CanisterMethodNotFound | ErrorCode::CanisterWasmModuleNotFound => {
                RejectCode::DestinationInvalid
            }
            _ => RejectCode::CanisterError,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IC{:04}", *self as u32)
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
/// Wasm, System API fees, stable-memory charges and the after-execution heap dirty-page
/// charge (which `performance_counter` cannot see).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageReport {
    pub instructions: u64,
    pub heap_dirty_pages: u64,
    pub stable_dirty_pages: u64,
    pub heap_bytes_before: u64,
    pub heap_bytes_after: u64,
    pub stable_bytes_before: u64,
    pub stable_bytes_after: u64,
}

/// The outcome of one message: reply bytes or a reject, plus what it cost.
#[derive(Clone, Debug)]
pub struct CallOutcome {
    pub result: Result<Vec<u8>, Reject>,
    pub report: MessageReport,
}

impl CallOutcome {
    /// The reply bytes, or the reject as an error.
    pub fn into_reply(self) -> Result<Vec<u8>, Reject> {
        self.result
    }
}

/// A saved canister state, restorable any number of times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SnapshotId(pub u64);

/// One canister execution environment. Errors (`Err`) are failures of the engine or of
/// the request (unknown canister, invalid module); a canister's own failure is a
/// [`Reject`] inside the [`CallOutcome`].
pub trait Engine {
    /// Short name for reports: `embedded` or `pocket-ic`.
    fn name(&self) -> &'static str;
    /// Creates a canister and installs `wasm` (raw or gzipped) with `arg` for `canister_init`.
    fn install(&mut self, wasm: &[u8], arg: &[u8]) -> Result<(Principal, CallOutcome)>;
    /// `canister_pre_upgrade`, new module, `canister_post_upgrade(arg)`; stable memory kept.
    fn upgrade(&mut self, canister: Principal, wasm: &[u8], arg: &[u8]) -> Result<CallOutcome>;
    /// A fresh install over an existing canister: heap and stable memory are wiped.
    fn reinstall(&mut self, canister: Principal, wasm: &[u8], arg: &[u8]) -> Result<CallOutcome>;
    /// A replicated update call from the anonymous principal.
    fn update(&mut self, canister: Principal, method: &str, arg: &[u8]) -> Result<CallOutcome>;
    /// A non-replicated query call; nothing it does persists.
    fn query(&mut self, canister: Principal, method: &str, arg: &[u8]) -> Result<CallOutcome>;
    /// Saves the canister's whole state.
    fn snapshot(&mut self, canister: Principal) -> Result<SnapshotId>;
    /// Puts the canister back to a saved state.
    fn restore(&mut self, canister: Principal, snapshot: SnapshotId) -> Result<()>;
}
