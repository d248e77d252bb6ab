//! The PocketIC client: the [`Engine`] trait on a PocketIC server, through the `pocket-ic`
//! crate's blocking API (the cargo feature `pocket-ic`). What it measures: `super`'s comment.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use candid::Principal;
use pocket_ic::common::rest::RawEffectivePrincipal;
use pocket_ic::{PocketIc, PocketIcBuilder, RejectResponse};

use super::super::cost::CyclesFees;
use super::super::{
    CallOutcome, Engine, ErrorCode, InstallCode, InstallMode, MessageReport, Reject, RejectCode,
    SnapshotId, TaskOutcome, UpgradeOptions, WasmMemoryPersistence,
};
use super::{
    how_to_provide_server, install_code_upgrade, instructions_from_cycles, server_source_from_env,
    ServerSource,
};

// The default build does not see the crate: its version is stated in `super`, checked here
// (clippy in .ci/run compiles this with the feature).
const _: () = assert!(
    super::super::same_str(super::SERVER_VERSION, pocket_ic::LATEST_SERVER_VERSION),
    "pocket_ic::SERVER_VERSION is not the pocket-ic crate's LATEST_SERVER_VERSION"
);

/// Cycles given to the bench canister: far more than a full suite burns.
const CANISTER_CYCLES: u128 = 1_000_000_000_000_000;
/// A server that prints no port within this time is not usable.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

fn panic_text(payload: Box<dyn Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

/// The pocket-ic crate panics on server and transport failures: turn them into errors so
/// the CLI reports them instead of aborting.
fn guard<T>(what: &str, f: impl FnOnce() -> T) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|p| anyhow!("PocketIC {what} failed: {}", panic_text(p)))
}

/// PocketIC's reject in our terms. The reject code keeps every case the crate knows; the
/// error code keeps its number when we have no name for it.
pub fn map_reject(r: &RejectResponse) -> Reject {
    let code = match r.reject_code {
        pocket_ic::RejectCode::SysFatal => RejectCode::SysFatal,
        pocket_ic::RejectCode::SysTransient => RejectCode::SysTransient,
        pocket_ic::RejectCode::DestinationInvalid => RejectCode::DestinationInvalid,
        pocket_ic::RejectCode::CanisterReject => RejectCode::CanisterReject,
        pocket_ic::RejectCode::CanisterError => RejectCode::CanisterError,
        pocket_ic::RejectCode::SysUnknown => RejectCode::SysUnknown,
    };
    Reject {
        code,
        error_code: ErrorCode::from_code(r.error_code as u16),
        message: r.reject_message.clone(),
    }
}

/// A PocketIC instance with one application subnet.
pub struct PocketIcEngine {
    /// Dropped before the server is stopped (it deletes its instance on drop).
    pic: Option<PocketIc>,
    /// The server we started from POCKET_IC_BIN (None: the crate's own download).
    server: Option<Child>,
    /// `SnapshotId(i)` is `snapshots[i]`: PocketIC's snapshot id bytes and its canister.
    snapshots: Vec<(Principal, Vec<u8>)>,
    fees: CyclesFees,
}

impl PocketIcEngine {
    /// A server from the environment (see [`server_source_from_env`]).
    pub fn from_env() -> Result<Self> {
        Self::start(server_source_from_env()?)
    }

    pub fn start(source: ServerSource) -> Result<Self> {
        let (builder, server) = match source {
            ServerSource::Binary(bin) => {
                let (child, url) = start_server(&bin)?;
                (PocketIcBuilder::new().with_server_url(url), Some(child))
            }
            ServerSource::Download => (PocketIcBuilder::new(), None),
        };
        let mut engine = Self {
            pic: None,
            server,
            snapshots: Vec::new(),
            fees: CyclesFees::APPLICATION_13,
        };
        // Drop kills the server if the instance cannot be created.
        engine.pic = Some(guard("instance creation", || {
            builder.with_application_subnet().build()
        })?);
        Ok(engine)
    }

    fn pic(&self) -> &PocketIc {
        self.pic
            .as_ref()
            .expect("the instance lives as long as the engine")
    }

    fn memory(&self, canister: Principal) -> Result<Memory> {
        let status = guard("canister_status", || {
            self.pic().canister_status(canister, None)
        })?
        .map_err(|r| anyhow!("canister_status of {canister}: {}", map_reject(&r)))?;
        let m = &status.memory_metrics;
        let bytes = |n: &candid::Nat, what: &str| {
            u64::try_from(n.0.clone()).map_err(|_| anyhow!("{what} {n} does not fit u64"))
        };
        Ok(Memory {
            heap: bytes(&m.wasm_memory_size, "wasm memory size")?,
            stable: bytes(&m.stable_memory_size, "stable memory size")?,
        })
    }

    fn balance(&self, canister: Principal) -> Result<u128> {
        guard("cycle_balance", || self.pic().cycle_balance(canister))
    }

    /// Stopped around snapshot operations: the interface spec and dfx require a stopped
    /// canister for a consistent snapshot.
    fn stopped<T>(
        &self,
        canister: Principal,
        what: &str,
        f: impl FnOnce(&PocketIc) -> Result<T>,
    ) -> Result<T> {
        guard("stop_canister", || self.pic().stop_canister(canister, None))?
            .map_err(|r| anyhow!("stopping {canister} for {what}: {}", map_reject(&r)))?;
        let out = f(self.pic());
        guard("start_canister", || {
            self.pic().start_canister(canister, None)
        })?
        .map_err(|r| anyhow!("starting {canister} after {what}: {}", map_reject(&r)))?;
        out
    }
}

/// A canister's heap and stable memory sizes in bytes, as canister_status reports them.
#[derive(Clone, Copy)]
struct Memory {
    heap: u64,
    stable: u64,
}

impl Memory {
    /// The report of a call that ran `instructions` between this and `after`.
    fn report(self, instructions: u64, after: Memory) -> MessageReport {
        MessageReport {
            instructions,
            heap_bytes_before: self.heap,
            heap_bytes_after: after.heap,
            stable_bytes_before: self.stable,
            stable_bytes_after: after.stable,
            ..MessageReport::default()
        }
    }
}

/// Starts `bin` on a free port and waits (bounded) for the port it writes.
fn start_server(bin: &Path) -> Result<(Child, url::Url)> {
    let dir = std::env::temp_dir().join(format!(
        "icbench-pocket-ic-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let port_file = dir.join("port");
    let log_path = dir.join("server.log");
    let log = std::fs::File::create(&log_path)?;
    let mut child = Command::new(bin)
        .arg("--port-file")
        .arg(&port_file)
        // The server exits by itself this long after the last request, should we die.
        .args(["--ttl", "300"])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting the PocketIC server {}", bin.display()))?;
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(&port_file) {
            if text.contains('\n') {
                let port: u16 = text
                    .trim()
                    .parse()
                    .with_context(|| format!("the server wrote port {text:?}"))?;
                let url = url::Url::parse(&format!("http://127.0.0.1:{port}/"))?;
                return Ok((child, url));
            }
        }
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            bail!(
                "the PocketIC server {} exited ({status}) before it listened: {}\n{}",
                bin.display(),
                log.trim(),
                how_to_provide_server()
            );
        }
        if started.elapsed() > STARTUP_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "the PocketIC server {} wrote no port within {STARTUP_TIMEOUT:?} (log: {})",
                bin.display(),
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for PocketIcEngine {
    fn drop(&mut self) {
        // The crate deletes the instance on drop; a panic there must not abort the process.
        if let Some(pic) = self.pic.take() {
            let _ = catch_unwind(AssertUnwindSafe(|| drop(pic)));
        }
        if let Some(mut child) = self.server.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Engine for PocketIcEngine {
    fn name(&self) -> &'static str {
        "pocket-ic"
    }

    fn install(&mut self, wasm: &[u8], arg: &[u8]) -> Result<(Principal, CallOutcome)> {
        let canister = guard("create_canister", || self.pic().create_canister())?;
        guard("add_cycles", || {
            self.pic().add_cycles(canister, CANISTER_CYCLES)
        })?;
        let out = self.reinstall(canister, wasm, arg)?;
        Ok((canister, out))
    }

    fn install_code(&mut self, canister: Principal, code: InstallCode<'_>) -> Result<CallOutcome> {
        let InstallCode { mode, wasm, arg } = code;
        let memory_before = self.memory(canister)?;
        let pic = self.pic();
        let keep = UpgradeOptions {
            skip_pre_upgrade: false,
            wasm_memory_persistence: Some(WasmMemoryPersistence::Keep),
        };
        let result = match mode {
            // The crate's install_canister panics on a reject; reinstall on an empty canister
            // runs canister_init exactly as install does and returns the reject.
            InstallMode::Reinstall => guard("reinstall_canister", || {
                pic.reinstall_canister(canister, wasm.to_vec(), arg.to_vec(), None)
            })?,
            InstallMode::Upgrade(options) if options == UpgradeOptions::default() => {
                guard("upgrade_canister", || {
                    pic.upgrade_canister(canister, wasm.to_vec(), arg.to_vec(), None)
                })?
            }
            InstallMode::Upgrade(options) if options == keep => {
                guard("upgrade_eop_canister", || {
                    pic.upgrade_eop_canister(canister, wasm.to_vec(), arg.to_vec(), None)
                })?
            }
            InstallMode::Upgrade(options) => {
                let payload = install_code_upgrade(canister, wasm, arg, options)?;
                guard("install_code", || {
                    pic.update_call_with_effective_principal(
                        Principal::management_canister(),
                        RawEffectivePrincipal::CanisterId(canister.as_slice().to_vec()),
                        Principal::anonymous(),
                        "install_code",
                        payload,
                    )
                })?
                .map(|_| ())
            }
        };
        let memory_after = self.memory(canister)?;
        Ok(CallOutcome {
            result: result.map(|()| Vec::new()).map_err(|r| map_reject(&r)),
            report: memory_before.report(0, memory_after),
        })
    }

    fn update(&mut self, canister: Principal, method: &str, arg: &[u8]) -> Result<CallOutcome> {
        let memory_before = self.memory(canister)?;
        let before = self.balance(canister)?;
        let pic = self.pic();
        let result = guard("update_call", || {
            pic.update_call(canister, Principal::anonymous(), method, arg.to_vec())
        })?;
        let after = self.balance(canister)?;
        let memory_after = self.memory(canister)?;
        let charged = before.checked_sub(after).ok_or_else(|| {
            anyhow!("the cycles balance of {canister} grew during {method} ({before} -> {after})")
        })?;
        let instructions = match &result {
            Ok(_) => instructions_from_cycles(&self.fees, charged, method, arg.len())?,
            // A reject may be refused before execution (no execution fee): what it cost is
            // not reported anywhere, so it is not derived.
            Err(_) => 0,
        };
        Ok(CallOutcome {
            result: result.map_err(|r| map_reject(&r)),
            report: memory_before.report(instructions, memory_after),
        })
    }

    fn query(&mut self, canister: Principal, method: &str, arg: &[u8]) -> Result<CallOutcome> {
        let pic = self.pic();
        let result = guard("query_call", || {
            pic.query_call(canister, Principal::anonymous(), method, arg.to_vec())
        })?;
        Ok(CallOutcome {
            result: result.map_err(|r| map_reject(&r)),
            report: MessageReport::default(),
        })
    }

    fn advance_time(&mut self, by: Duration) -> Result<()> {
        guard("advance_time", || self.pic().advance_time(by))
    }

    /// The server's round runs the due global timers and the heartbeats, but says neither
    /// which ran nor what they cost: no outcomes.
    fn tick(&mut self) -> Result<Vec<TaskOutcome>> {
        guard("tick", || self.pic().tick())?;
        Ok(Vec::new())
    }

    fn snapshot(&mut self, canister: Principal) -> Result<SnapshotId> {
        let snapshot = self.stopped(canister, "take_canister_snapshot", |pic| {
            guard("take_canister_snapshot", || {
                pic.take_canister_snapshot(canister, None, None)
            })?
            .map_err(|r| anyhow!("take_canister_snapshot of {canister}: {}", map_reject(&r)))
        })?;
        self.snapshots.push((canister, snapshot.id));
        Ok(SnapshotId(self.snapshots.len() as u64 - 1))
    }

    fn restore(&mut self, canister: Principal, snapshot: SnapshotId) -> Result<()> {
        let (owner, id) = self
            .snapshots
            .get(snapshot.0 as usize)
            .cloned()
            .ok_or_else(|| anyhow!("unknown snapshot {}", snapshot.0))?;
        if owner != canister {
            bail!("snapshot {} belongs to {owner}, not {canister}", snapshot.0);
        }
        self.stopped(canister, "load_canister_snapshot", |pic| {
            guard("load_canister_snapshot", || {
                pic.load_canister_snapshot(canister, None, id)
            })?
            .map_err(|r| anyhow!("load_canister_snapshot of {canister}: {}", map_reject(&r)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ours of a certified PocketIC reject.
    fn mapped(
        reject_code: pocket_ic::RejectCode,
        reject_message: &str,
        error_code: pocket_ic::ErrorCode,
    ) -> Reject {
        map_reject(&RejectResponse {
            reject_code,
            reject_message: reject_message.into(),
            error_code,
            certified: true,
        })
    }

    #[test]
    fn rejects_keep_their_codes() {
        let ours = mapped(
            pocket_ic::RejectCode::CanisterError,
            "no method",
            pocket_ic::ErrorCode::CanisterMethodNotFound,
        );
        assert_eq!(ours.code, RejectCode::CanisterError);
        assert_eq!(ours.error_code, ErrorCode::CanisterMethodNotFound);
        assert_eq!(ours.message, "no method");
        // A code we have no name for keeps its number.
        let ours = mapped(
            pocket_ic::RejectCode::SysTransient,
            "slow down",
            pocket_ic::ErrorCode::CanisterHeapDeltaRateLimited,
        );
        assert_eq!(ours.code, RejectCode::SysTransient);
        assert_eq!(ours.error_code, ErrorCode::Other(210));
        assert_eq!(ours.error_code.to_string(), "IC0210");
        assert_eq!(ours.error_code.reject_code(), RejectCode::SysTransient);
    }
}
