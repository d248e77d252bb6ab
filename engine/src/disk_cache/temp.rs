//! The temporary files entries are written in before their rename, and those a writer left
//! behind. A writer stopped in the middle (Ctrl-C or SIGKILL reaching a fill worker that
//! writes a 400 MB post-prefill state: the worker has no signal handler that could remove
//! it) leaves its file; nothing else would ever remove it. Each writer holds a lock on its
//! file while it writes (`flock`, which the kernel drops when the process ends however it
//! ends) and names its process in the file's name (`.tmp-KEY-PID-SEQ`), so a file whose
//! process is gone (as this process sees it) and that no one holds is a leftover: every run
//! removes those ([`super::prepare`]), and so does each pruning. The lock covers what the
//! process id cannot: a writer in another PID namespace sharing the cache directory.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::TEMP_PREFIX;

/// The name of a writer's temporary file for the entry `key` (its first 8 bytes), the
/// `seq`-th of this process.
pub(super) fn name(key: &[u8; 32], seq: u64) -> String {
    format!(
        "{TEMP_PREFIX}{}-{}-{seq}",
        hex::encode(&key[..8]),
        std::process::id()
    )
}

/// Locks the temporary file `path` just made, for as long as the returned file lives.
pub(super) fn lock(path: &Path) -> std::io::Result<File> {
    let file = File::open(path)?;
    file.lock()?;
    Ok(file)
}

/// Whether the temporary file `path` is a leftover: its writer's process is not alive (or
/// its name gives none) and no one holds its lock.
fn leftover(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let pid = name
        .strip_prefix(TEMP_PREFIX)
        .and_then(|rest| rest.split('-').nth(1))
        .and_then(|pid| pid.parse::<libc::pid_t>().ok());
    if pid.is_some_and(alive) {
        return false;
    }
    // Held by a writer we cannot see (another PID namespace, another host's process).
    File::open(path).is_ok_and(|f| f.try_lock().is_ok())
}

/// Whether the process `pid` exists, as this process sees it, and is not a zombie: a
/// stopped run's worker outlives its parent as one until init reaps it, which a container's
/// init may never do, and a zombie writes nothing and holds no lock.
fn alive(pid: libc::pid_t) -> bool {
    if pid <= 0 {
        return false;
    }
    #[cfg(target_os = "linux")]
    if state(pid).is_some_and(|s| matches!(s, 'Z' | 'X')) {
        return false;
    }
    // SAFETY: signal 0 sends nothing; it only checks that the process exists (EPERM: it
    // does, and is another user's).
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The state letter of process `pid` in `/proc/PID/stat` (`R`, `S`, `Z`, ...), if it exists.
#[cfg(target_os = "linux")]
fn state(pid: libc::pid_t) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `PID (COMMAND) STATE ...`: the state follows the command's closing parenthesis.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.trim_start().chars().next()
}

/// The leftover temporary files among `files` (a kind's files of the cache).
pub(super) fn leftovers(files: &[PathBuf]) -> Vec<PathBuf> {
    files
        .iter()
        .filter(|p| is_temp(p) && leftover(p))
        .cloned()
        .collect()
}

/// Whether `path` is a temporary file of the cache.
pub(super) fn is_temp(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(TEMP_PREFIX))
}

/// The test hook of a stopped writer (tests/it/cache_leftovers.rs): with
/// `ICBENCH_TEST_PAUSE_STATE_WRITE=FILE`, a worker process that writes a post-prefill state
/// creates FILE (its process id inside) once part of the state is in its temporary file,
/// then waits up to a minute, so that a test can stop it there by a signal. Nothing else
/// reads the variable; unset, this costs one lookup per state written.
pub(super) fn pause_for_test() {
    let Some(marker) = std::env::var_os("ICBENCH_TEST_PAUSE_STATE_WRITE") else {
        return;
    };
    if !crate::worker::in_worker() {
        return;
    }
    if std::fs::write(&marker, std::process::id().to_string()).is_ok() {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_zombie_writer_is_gone() {
        // SAFETY: the child only exits; the parent reaps it below.
        let child = unsafe { libc::fork() };
        if child == 0 {
            // SAFETY: the forked child ends at once, touching nothing of the test's.
            unsafe { libc::_exit(0) };
        }
        assert!(child > 0);
        while state(child) != Some('Z') {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(!alive(child));
        assert!(alive(std::process::id() as libc::pid_t));
        let mut status = 0;
        // SAFETY: reaps the child forked above.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
    }

    #[test]
    fn a_file_is_a_leftover_when_its_writer_is_gone_and_no_one_holds_it() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path();
        // This process's: alive, whether it holds the lock or not.
        let ours = dir.join(name(&[7; 32], 0));
        // A process id above any the kernel gives (pid_max is at most 2^22).
        let gone = dir.join(format!("{TEMP_PREFIX}0707070707070707-99999999-0"));
        for path in [&ours, &gone] {
            std::fs::write(path, b"part of a state").unwrap();
        }
        assert!(is_temp(&ours) && !is_temp(&dir.join("x.entry")));
        let expected = vec![gone.clone()];
        assert_eq!(leftovers(&[ours, gone.clone()]), expected);
        // Held by a writer this process cannot see as alive: not a leftover.
        let held = lock(&gone).unwrap();
        assert!(leftovers(std::slice::from_ref(&gone)).is_empty());
        drop(held);
        assert_eq!(leftovers(std::slice::from_ref(&gone)), expected);
    }
}
