//! The PocketIC backend: the same [`Engine`] trait, executed by a PocketIC server (the
//! replica's own execution environment) through the `pocket-ic` crate's blocking API.
//!
//! What is measured here, and how it differs from the embedded engine:
//! - The canister's own `InsertReport`/`ReadReport` `instructions` (`ic0.performance_counter`
//!   inside the canister) come back in the reply, so store instructions are exact on both.
//! - PocketIC does not return per-message instruction counts. For an update, the charged
//!   instructions are derived from the canister's cycles balance, read just before and just
//!   after the call: `delta - 5,000,000 (update fee) - ingress fee`, on a 13-node application
//!   subnet where one instruction costs one cycle (`CyclesFees::APPLICATION_13`). The ingress
//!   fee is `1,200,000 + 2,000 * (method name + argument bytes)`; a replica that charges the
//!   whole signed envelope instead bills a few hundred bytes more, which this figure then
//!   includes (at most 2,000 "instructions" per byte of envelope overhead).
//! - Queries, installs and upgrades report 0 instructions: queries are free and PocketIC
//!   reports no cost for them, and install cycles include compilation charges we cannot split.
//! - Dirty pages are not visible outside the replica: `heap_dirty_pages` and
//!   `stable_dirty_pages` are 0. Heap and stable sizes come from `canister_status`.
//! - `advance_time` and `tick` are the server's; a round's global timers and heartbeats run
//!   there unseen (`tick` gives no outcomes).

use std::any::Any;
use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use candid::Principal;
use pocket_ic::common::rest::RawEffectivePrincipal;
use pocket_ic::{PocketIc, PocketIcBuilder, RejectResponse};

use super::cost::CyclesFees;
use super::{
    CallOutcome, Engine, ErrorCode, MessageReport, Reject, RejectCode, SnapshotId, TaskOutcome,
    UpgradeOptions, WasmMemoryPersistence,
};

/// The server version this crate version downloads; it accepts servers `>=16.0.0, <17`
/// (the pocket-ic crate's `MIN_SERVER_VERSION`/`MAX_SERVER_VERSION`, which are private).
pub const SERVER_VERSION: &str = pocket_ic::LATEST_SERVER_VERSION;
/// Major version of the server the pocket-ic crate 16.x talks to.
pub const SERVER_MAJOR: u64 = 16;
/// Set to `1` to let the pocket-ic crate download the server (needs internet access).
pub const DOWNLOAD_ENV: &str = "ICBENCH_POCKET_IC_DOWNLOAD";

/// Cycles given to the bench canister: far more than a full suite burns.
const CANISTER_CYCLES: u128 = 1_000_000_000_000_000;
/// A server that prints no version or no port within this time is not usable.
const VERSION_TIMEOUT: Duration = Duration::from_secs(20);
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// How to get a server, for every error that lacks one.
pub fn how_to_provide_server() -> String {
    format!(
        "the pocket-ic engine needs a PocketIC server {SERVER_MAJOR}.x (the pocket-ic crate used here accepts \
         >=16.0.0, <17). Download pocket-ic-x86_64-linux.gz (or pocket-ic-arm64-darwin.gz, ...) from \
         https://github.com/dfinity/pocketic/releases/tag/{SERVER_VERSION}, gunzip it, chmod +x it, and run with \
         POCKET_IC_BIN=/path/to/pocket-ic. Or set {DOWNLOAD_ENV}=1 to let the pocket-ic crate download \
         server {SERVER_VERSION} itself (needs internet access to github.com)"
    )
}

/// Where the server comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerSource {
    /// A server binary (POCKET_IC_BIN), started and stopped by this engine.
    Binary(PathBuf),
    /// The pocket-ic crate's own download into the temp directory ({DOWNLOAD_ENV}=1).
    Download,
}

/// Reads `POCKET_IC_BIN` and `ICBENCH_POCKET_IC_DOWNLOAD`, and checks the binary at once so
/// that a missing or wrong server fails here, not after a hang.
pub fn server_source_from_env() -> Result<ServerSource> {
    server_source(
        std::env::var_os("POCKET_IC_BIN"),
        std::env::var(DOWNLOAD_ENV).ok(),
    )
}

fn server_source(
    bin: Option<std::ffi::OsString>,
    download: Option<String>,
) -> Result<ServerSource> {
    match bin {
        Some(path) if !path.is_empty() => {
            let path = PathBuf::from(path);
            check_server_binary(&path).map_err(|e| {
                anyhow!(
                    "POCKET_IC_BIN={}: {e:#}.\nHow to fix: {}",
                    path.display(),
                    how_to_provide_server()
                )
            })?;
            Ok(ServerSource::Binary(path))
        }
        Some(_) => bail!(
            "POCKET_IC_BIN is set but empty.\nHow to fix: {}",
            how_to_provide_server()
        ),
        None => match download.as_deref() {
            Some("1") => Ok(ServerSource::Download),
            None | Some("") | Some("0") => {
                bail!(
                    "POCKET_IC_BIN is not set.\nHow to fix: {}",
                    how_to_provide_server()
                )
            }
            Some(other) => bail!("{DOWNLOAD_ENV} must be 1 or 0, got {other:?}"),
        },
    }
}

/// Checks that `path` is an executable PocketIC server of the supported major version, and
/// returns the version it prints.
pub fn check_server_binary(path: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).context("no such file")?;
    if !meta.is_file() {
        bail!("not a file");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            bail!("not executable (chmod +x it)");
        }
    }
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run it")?;
    let status = wait_with_deadline(&mut child, VERSION_TIMEOUT)
        .with_context(|| format!("`--version` did not answer within {VERSION_TIMEOUT:?}"))?;
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout is piped")
        .read_to_string(&mut out)
        .context("reading its `--version` output")?;
    if !status.success() {
        bail!("`--version` failed ({status})");
    }
    parse_server_version(out.trim())
}

/// `pocket-ic-server 16.1.0` -> `16.1.0`, if the major version is supported.
pub fn parse_server_version(line: &str) -> Result<String> {
    let Some(("pocket-ic-server", version)) = line.split_once(' ') else {
        bail!("`--version` printed {line:?}, not `pocket-ic-server X.Y.Z`: is this a PocketIC server?");
    };
    let major: u64 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| anyhow!("unreadable server version {version:?}"))?;
    if major != SERVER_MAJOR {
        bail!("server version {version} is not supported: this build needs {SERVER_MAJOR}.x");
    }
    Ok(version.to_string())
}

/// `Some(status)` once the child exits; an error (after killing it) past the deadline.
fn wait_with_deadline(child: &mut Child, deadline: Duration) -> Result<std::process::ExitStatus> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("timed out");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

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

/// Instructions of an update from its cycles: see the module comment.
/// Modules this large go to `install_code` gzipped: an ingress message may carry 2 MB
/// (the pocket-ic crate's own threshold for chunked installs), and the replica accepts
/// gzipped modules.
const INSTALL_CODE_INLINE_LIMIT: usize = 2_000_000;

/// The candid argument of `install_code` for an upgrade with `options` (the pocket-ic
/// crate has calls only for a plain upgrade and for `Keep` alone).
pub fn install_code_upgrade(
    canister: Principal,
    wasm: &[u8],
    arg: &[u8],
    options: UpgradeOptions,
) -> Result<Vec<u8>> {
    use ic_management_canister_types as mgmt;
    let wasm_module = if wasm.len() + arg.len() >= INSTALL_CODE_INLINE_LIMIT
        && !wasm.starts_with(&[0x1f, 0x8b])
    {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut gz, wasm).context("gzipping the module")?;
        gz.finish().context("gzipping the module")?
    } else {
        wasm.to_vec()
    };
    let persistence = options.wasm_memory_persistence.map(|p| match p {
        WasmMemoryPersistence::Keep => mgmt::WasmMemoryPersistence::Keep,
        WasmMemoryPersistence::Replace => mgmt::WasmMemoryPersistence::Replace,
    });
    let args = mgmt::InstallCodeArgs {
        mode: mgmt::CanisterInstallMode::Upgrade(Some(mgmt::UpgradeFlags {
            skip_pre_upgrade: Some(options.skip_pre_upgrade),
            wasm_memory_persistence: persistence,
        })),
        canister_id: canister,
        wasm_module,
        arg: arg.to_vec(),
        sender_canister_version: None,
    };
    Ok(candid::encode_one(args)?)
}

pub fn instructions_from_cycles(
    fees: &CyclesFees,
    cycles_charged: u128,
    method: &str,
    arg_len: usize,
) -> Result<u64> {
    let fixed = fees.execution_cost(0, false) + fees.ingress_cost((method.len() + arg_len) as u64);
    let variable = cycles_charged.checked_sub(fixed).ok_or_else(|| {
        anyhow!(
            "PocketIC charged {cycles_charged} cycles for {method}, less than the fixed fees \
             {fixed} of the 13-node fee table (src/engine/cost.rs): the server's fees differ, \
             so instructions cannot be derived from cycles"
        )
    })?;
    // One cycle per 10 / ten_update_instructions_execution_fee instructions (Wasm32).
    let per_ten = fees.ten_update_instructions_execution_fee * fees.subnet_size as u128
        / fees.reference_subnet_size as u128;
    u64::try_from(variable * 10 / per_ten).context("instruction count overflows u64")
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

    fn memory(&self, canister: Principal) -> Result<(u64, u64)> {
        let status = guard("canister_status", || {
            self.pic().canister_status(canister, None)
        })?
        .map_err(|r| anyhow!("canister_status of {canister}: {}", map_reject(&r)))?;
        let m = &status.memory_metrics;
        let bytes = |n: &candid::Nat, what: &str| {
            u64::try_from(n.0.clone()).map_err(|_| anyhow!("{what} {n} does not fit u64"))
        };
        Ok((
            bytes(&m.wasm_memory_size, "wasm memory size")?,
            bytes(&m.stable_memory_size, "stable memory size")?,
        ))
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

    /// A reinstall (`upgrade` None) or an upgrade with the given options.
    fn install_mode(
        &mut self,
        canister: Principal,
        wasm: &[u8],
        arg: &[u8],
        upgrade: Option<UpgradeOptions>,
    ) -> Result<CallOutcome> {
        let (heap_before, stable_before) = self.memory(canister)?;
        let pic = self.pic();
        let keep = UpgradeOptions {
            skip_pre_upgrade: false,
            wasm_memory_persistence: Some(WasmMemoryPersistence::Keep),
        };
        let result = match upgrade {
            // The crate's install_canister panics on a reject; reinstall on an empty canister
            // runs canister_init exactly as install does and returns the reject.
            None => guard("reinstall_canister", || {
                pic.reinstall_canister(canister, wasm.to_vec(), arg.to_vec(), None)
            })?,
            Some(options) if options == UpgradeOptions::default() => {
                guard("upgrade_canister", || {
                    pic.upgrade_canister(canister, wasm.to_vec(), arg.to_vec(), None)
                })?
            }
            Some(options) if options == keep => guard("upgrade_eop_canister", || {
                pic.upgrade_eop_canister(canister, wasm.to_vec(), arg.to_vec(), None)
            })?,
            Some(options) => {
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
        let (heap_after, stable_after) = self.memory(canister)?;
        Ok(CallOutcome {
            result: result.map(|()| Vec::new()).map_err(|r| map_reject(&r)),
            report: MessageReport {
                heap_bytes_before: heap_before,
                heap_bytes_after: heap_after,
                stable_bytes_before: stable_before,
                stable_bytes_after: stable_after,
                ..MessageReport::default()
            },
        })
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
        let out = self.install_mode(canister, wasm, arg, None)?;
        Ok((canister, out))
    }

    fn upgrade_with(
        &mut self,
        canister: Principal,
        wasm: &[u8],
        arg: &[u8],
        options: UpgradeOptions,
    ) -> Result<CallOutcome> {
        self.install_mode(canister, wasm, arg, Some(options))
    }

    fn reinstall(&mut self, canister: Principal, wasm: &[u8], arg: &[u8]) -> Result<CallOutcome> {
        self.install_mode(canister, wasm, arg, None)
    }

    fn update(&mut self, canister: Principal, method: &str, arg: &[u8]) -> Result<CallOutcome> {
        let (heap_before, stable_before) = self.memory(canister)?;
        let before = self.balance(canister)?;
        let pic = self.pic();
        let result = guard("update_call", || {
            pic.update_call(canister, Principal::anonymous(), method, arg.to_vec())
        })?;
        let after = self.balance(canister)?;
        let (heap_after, stable_after) = self.memory(canister)?;
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
            report: MessageReport {
                instructions,
                heap_bytes_before: heap_before,
                heap_bytes_after: heap_after,
                stable_bytes_before: stable_before,
                stable_bytes_after: stable_after,
                ..MessageReport::default()
            },
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

    #[test]
    fn install_code_upgrade_carries_the_options_and_gzips_large_modules() {
        use ic_management_canister_types as mgmt;
        let canister = Principal::from_slice(&[1, 2, 3]);
        let options = UpgradeOptions {
            skip_pre_upgrade: true,
            wasm_memory_persistence: Some(WasmMemoryPersistence::Replace),
        };
        let small = b"\0asm\x01\0\0\0".to_vec();
        let bytes = install_code_upgrade(canister, &small, b"arg", options).unwrap();
        let args: mgmt::InstallCodeArgs = candid::decode_one(&bytes).unwrap();
        assert_eq!(args.canister_id, canister);
        assert_eq!(args.wasm_module, small);
        assert_eq!(args.arg, b"arg");
        let mgmt::CanisterInstallMode::Upgrade(Some(flags)) = args.mode else {
            panic!("not an upgrade with flags: {:?}", args.mode);
        };
        assert_eq!(flags.skip_pre_upgrade, Some(true));
        assert_eq!(
            flags.wasm_memory_persistence,
            Some(mgmt::WasmMemoryPersistence::Replace)
        );

        let large = vec![7u8; INSTALL_CODE_INLINE_LIMIT];
        let bytes = install_code_upgrade(canister, &large, &[], options).unwrap();
        let args: mgmt::InstallCodeArgs = candid::decode_one(&bytes).unwrap();
        assert!(args.wasm_module.starts_with(&[0x1f, 0x8b]));
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&args.wasm_module[..])
            .read_to_end(&mut unzipped)
            .unwrap();
        assert_eq!(unzipped, large);
    }

    #[test]
    fn without_a_binary_or_opt_in_the_error_says_how_to_get_one() {
        let e = server_source(None, None).unwrap_err().to_string();
        assert!(e.contains("POCKET_IC_BIN is not set"), "{e}");
        assert!(e.contains("POCKET_IC_BIN=/path/to/pocket-ic"), "{e}");
        assert!(e.contains("github.com/dfinity/pocketic/releases"), "{e}");
        assert!(e.contains(SERVER_VERSION), "{e}");
        assert_eq!(
            server_source(None, Some("1".into())).unwrap(),
            ServerSource::Download
        );
        let e = server_source(None, Some("yes".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(DOWNLOAD_ENV) && e.contains("yes"), "{e}");
        let e = server_source(Some("".into()), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty"), "{e}");
    }

    #[test]
    fn a_bad_binary_is_refused_at_once_naming_the_problem() {
        let started = Instant::now();
        let e = server_source(Some("/nonexistent/pocket-ic".into()), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/nonexistent/pocket-ic") && e.contains("no such file"),
            "{e}"
        );
        // A file that is not executable, and an executable that is not a PocketIC server.
        let dir = std::env::temp_dir().join(format!("icbench-pic-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("plain");
        std::fs::write(&plain, "not a program").unwrap();
        let e = check_server_binary(&plain).unwrap_err().to_string();
        assert!(e.contains("not executable"), "{e}");
        let e = check_server_binary(Path::new("/bin/echo"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not `pocket-ic-server X.Y.Z`"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn server_versions_outside_16_are_refused() {
        assert_eq!(
            parse_server_version("pocket-ic-server 16.1.0").unwrap(),
            "16.1.0"
        );
        assert_eq!(
            parse_server_version("pocket-ic-server 16.0.0").unwrap(),
            "16.0.0"
        );
        let e = parse_server_version("pocket-ic-server 15.0.0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("15.0.0") && e.contains("16.x"), "{e}");
        assert!(parse_server_version("pocket-ic-server 17.0.0").is_err());
        assert!(parse_server_version("dfx 0.29.0").is_err());
    }

    #[test]
    fn instructions_are_the_cycles_left_after_the_fixed_fees() {
        let fees = CyclesFees::APPLICATION_13;
        // add_users_btree with a 3 x nat64 argument: 15 + 35 bytes of ingress.
        let fixed = 5_000_000 + 1_200_000 + 2_000 * 50;
        let i = instructions_from_cycles(&fees, fixed + 54_176, "add_users_btree", 35).unwrap();
        assert_eq!(i, 54_176);
        assert_eq!(
            instructions_from_cycles(&fees, fixed, "add_users_btree", 35).unwrap(),
            0
        );
        let e = instructions_from_cycles(&fees, fixed - 1, "add_users_btree", 35)
            .unwrap_err()
            .to_string();
        assert!(e.contains("fixed fees"), "{e}");
    }

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
