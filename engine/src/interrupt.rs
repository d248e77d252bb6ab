//! Ctrl-C (SIGINT) and SIGTERM. A run that is stopped must leave nothing half written that a
//! later run, `icbench merge` or `icbench compare` would take for complete, and must say
//! what it did not write. Outputs are made in two steps: a temporary file, then a rename
//! into place ([`crate::report::write_all`], the cache). So on a signal the process:
//! waits for a rename in progress to end ([`writing`]), removes the temporary files being
//! written ([`TempGuard`]), removes the directories it made that are still empty
//! ([`create_dir_all`]), prints the outputs still [`expect`]ed, and exits at once with 128 +
//! the signal's number, as a shell reports a process killed by it. A run that fails after it
//! started removes those directories too ([`remove_made_dirs`]): a stopped run leaves nothing.
//!
//! Nothing here runs until the CLI calls [`install`]: a library user keeps its own signal
//! handling.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// What the run has yet to write: (the output's path, a line saying what it is, whether an
/// earlier run's output is there), in the order announced.
static EXPECTED: Mutex<Vec<(PathBuf, String, bool)>> = Mutex::new(Vec::new());
/// The directories this run made, in the order made.
static MADE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Temporary files (and directories) being written right now: removed on a signal.
static TEMPS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Child processes working for the run right now (a compiler): killed on a signal, which
/// they would otherwise outlive (a SIGTERM reaches this process alone).
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// Held while outputs are renamed into place, so a signal never splits a set of files.
static WRITING: Mutex<()> = Mutex::new(());

/// Starts the thread that handles SIGINT and SIGTERM for the rest of the process.
pub fn install() -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                stop(signal);
            }
        })?;
    Ok(())
}

/// Announces an output the run will write at `path` (`what`, e.g. "the scaling suite's
/// results in results/scaling"), until [`written`] is called with the same path; `earlier`:
/// an earlier run's output is there (a stopped run leaves it as it was, and says so).
pub fn expect(path: &Path, what: impl Into<String>, earlier: bool) {
    lock(&EXPECTED).push((path.to_path_buf(), what.into(), earlier));
}

/// `std::fs::create_dir_all`, each directory it makes remembered: a signal, or a run that
/// fails ([`remove_made_dirs`]), removes those still empty.
pub fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(dir)?;
    lock(&MADE).extend(missing.into_iter().rev());
    Ok(())
}

/// Removes the directories this run made that are still empty, the last made first (a
/// directory holding anything, an output or a file of the user's, stays).
pub fn remove_made_dirs() {
    for dir in lock(&MADE).iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// The output at `path` is written; call it while holding [`writing`].
pub fn written(path: &Path) {
    let mut expected = lock(&EXPECTED);
    if let Some(i) = expected.iter().position(|e| e.0 == path) {
        expected.remove(i);
    }
}

/// Hold the guard while renaming a set of outputs into place (and marking them
/// [`written`]): a signal waits for it.
pub fn writing() -> MutexGuard<'static, ()> {
    lock(&WRITING)
}

/// A temporary file (or directory) that a signal removes while the guard lives.
pub struct TempGuard(PathBuf);

impl TempGuard {
    /// Makes a temporary file with `make` (the file's handle and its path) and registers
    /// it, both under the list's lock, which a signal's handler holds until the process
    /// exits: a signal removes the file or comes before it is made (a file made after the
    /// handler's sweep was left behind).
    pub fn make<T>(
        make: impl FnOnce() -> std::io::Result<(T, PathBuf)>,
    ) -> std::io::Result<(T, TempGuard)> {
        let mut temps = lock(&TEMPS);
        let (made, path) = make()?;
        temps.push(path.clone());
        Ok((made, TempGuard(path)))
    }

    /// A temporary directory (removed when the [`tempfile::TempDir`] drops) that a signal
    /// removes too, while the guard lives.
    pub fn dir() -> std::io::Result<(tempfile::TempDir, TempGuard)> {
        TempGuard::make(|| {
            let dir = tempfile::tempdir()?;
            let path = dir.path().to_path_buf();
            Ok((dir, path))
        })
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        let mut temps = lock(&TEMPS);
        if let Some(i) = temps.iter().position(|p| *p == self.0) {
            temps.remove(i);
        }
    }
}

/// `command`'s status and output, as [`std::process::Command::output`] gives them (no
/// input); a signal kills the child before the process exits.
pub fn output(command: &mut std::process::Command) -> std::io::Result<std::process::Output> {
    use std::process::Stdio;
    let child = {
        // Under the lock the handler holds until the exit: killed, or not started.
        let mut children = lock(&CHILDREN);
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        children.push(child.id());
        child
    };
    let id = child.id();
    let out = child.wait_with_output();
    lock(&CHILDREN).retain(|&c| c != id);
    out
}

/// A poisoned lock still holds the lists: a panic elsewhere must not stop the handler.
fn lock<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn stop(signal: i32) -> ! {
    let _renaming = lock(&WRITING);
    // Held until the exit: no temporary file is made after this sweep.
    let temps = lock(&TEMPS);
    let children = lock(&CHILDREN);
    for &pid in children.iter() {
        // SAFETY: kill(2) with a child's process id and a signal number has no
        // memory-safety preconditions; the child is not reaped until its waiter returns,
        // so the id is still the child's.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    }
    for path in temps.iter() {
        let _ = match path.is_dir() {
            true => std::fs::remove_dir_all(path),
            false => std::fs::remove_file(path),
        };
    }
    let name = if signal == SIGINT {
        "SIGINT"
    } else {
        "SIGTERM"
    };
    remove_made_dirs();
    let expected: Vec<(String, bool)> =
        lock(&EXPECTED).iter().map(|e| (e.1.clone(), e.2)).collect();
    eprintln!("\n{}", message(name, &expected));
    std::process::exit(128 + signal);
}

/// The line printed on a signal: each output not written, and whether what is there is an
/// earlier run's.
fn message(signal: &str, expected: &[(String, bool)]) -> String {
    if expected.is_empty() {
        return format!("interrupted by {signal}: stopped; nothing was left half written");
    }
    let each: Vec<String> = expected
        .iter()
        .map(|(what, earlier)| match earlier {
            true => format!("{what} (the files there are an earlier run's)"),
            false => what.clone(),
        })
        .collect();
    format!(
        "interrupted by {signal}: stopped; not written: {}",
        each.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_lists_what_is_still_expected() {
        assert_eq!(
            message("SIGINT", &[]),
            "interrupted by SIGINT: stopped; nothing was left half written"
        );
        assert_eq!(
            message(
                "SIGTERM",
                &[("a in x".into(), false), ("b in y".into(), true)]
            ),
            "interrupted by SIGTERM: stopped; not written: a in x; b in y (the files there are \
             an earlier run's)"
        );
    }
}
