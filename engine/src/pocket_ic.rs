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

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use candid::Principal;

use super::cost::CyclesFees;
use super::{UpgradeOptions, WasmMemoryPersistence};

// The client is the `pocket-ic` cargo feature (reqwest, rustls, tokio...). What finds and
// checks a server and what turns cycles and options into the replica's terms is not, so
// that the default build's tests cover it; clippy checks the client with the feature.
#[cfg(feature = "pocket-ic")]
mod client;
#[cfg(feature = "pocket-ic")]
pub use client::{map_reject, PocketIcEngine};

/// The server version the pocket-ic crate (16.1.0) downloads, its `LATEST_SERVER_VERSION`
/// (checked against it where the crate is compiled in: `client.rs`); it accepts servers
/// `>=16.0.0, <17` (the crate's `MIN_SERVER_VERSION`/`MAX_SERVER_VERSION`, which are private).
pub const SERVER_VERSION: &str = "16.1.0";
/// Major version of the server the pocket-ic crate 16.x talks to.
pub const SERVER_MAJOR: u64 = 16;
/// Set to `1` to let the pocket-ic crate download the server (needs internet access).
pub const DOWNLOAD_ENV: &str = "ICBENCH_POCKET_IC_DOWNLOAD";

/// A server that prints no version within this time is not usable.
const VERSION_TIMEOUT: Duration = Duration::from_secs(20);

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

/// Instructions of an update from its cycles: see the module comment.
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
             {fixed} of the 13-node fee table (engine/src/cost.rs): the server's fees differ, \
             so instructions cannot be derived from cycles"
        )
    })?;
    // One cycle per 10 / ten_update_instructions_execution_fee instructions (Wasm32).
    let per_ten = fees.ten_update_instructions_execution_fee * fees.subnet_size as u128
        / fees.reference_subnet_size as u128;
    u64::try_from(variable * 10 / per_ten).context("instruction count overflows u64")
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
}
