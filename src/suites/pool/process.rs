//! What a suite's worker processes share with the process that forks them
//! ([`crate::engine::Engine::fork_process`]): flags saying which process takes which task,
//! the pipe a worker hands its results in on, and how a worker ends with the run.

use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{anyhow, Result};
use serde::Serialize;

use crate::engine::embedded::memory::Mapping;

/// One flag per task of a graph or a list, in memory every worker process shares: 0 while
/// no process has taken the task, else the taking worker's lane plus one. One more flag
/// says the run failed: no process takes another task then. Then one count per worker:
/// the tasks it has that no other can take.
pub struct Claims {
    flags: Mapping,
    tasks: usize,
    len: usize,
}

impl Claims {
    pub fn new(tasks: usize, workers: usize) -> Result<Claims> {
        let len = tasks + 1 + workers;
        let bytes = len * std::mem::size_of::<AtomicU32>();
        // Shared with the worker processes, zeroed: every task free.
        let flags = Mapping::anonymous(bytes, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED)
            .map_err(|e| anyhow!("mapping the worker processes' task flags: {e}"))?;
        Ok(Claims { flags, tasks, len })
    }

    fn flag(&self, i: usize) -> &AtomicU32 {
        assert!(i < self.len);
        // SAFETY: `i` is within the mapping, which holds `len` zero-initialised atomics
        // (only ever accessed atomically) and lives as long as `self`.
        unsafe { &*self.flags.as_ptr().cast::<AtomicU32>().add(i) }
    }

    /// Whether the worker `lane` runs task `task`: it does if it takes it first.
    pub fn take(&self, task: usize, lane: usize) -> bool {
        if self.failed() {
            return false;
        }
        let me = lane as u32 + 1;
        match self
            .flag(task)
            .compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(owner) => owner == me,
        }
    }

    /// A worker failed: the others take no new task.
    pub fn fail(&self) {
        self.flag(self.tasks).store(1, Ordering::Release);
    }

    fn failed(&self) -> bool {
        self.flag(self.tasks).load(Ordering::Acquire) != 0
    }

    /// Worker `lane` has `own` tasks no other can take.
    pub fn set_own(&self, lane: usize, own: usize) {
        self.flag(self.tasks + 1 + lane)
            .store(own.min(u32::MAX as usize) as u32, Ordering::Release);
    }

    /// Whether worker `lane` has no more tasks of its own than any other worker.
    pub fn may_claim(&self, lane: usize) -> bool {
        let workers = self.len - self.tasks - 1;
        let own = |l: usize| self.flag(self.tasks + 1 + l).load(Ordering::Acquire);
        let mine = own(lane);
        (0..workers).filter(|&l| l != lane).all(|l| mine <= own(l))
    }
}

/// A worker process ends with the run: Ctrl-C and SIGTERM end it at once (the parent's
/// handler, which removes the parent's temporary files and says what was not written, runs
/// in the parent's thread, which the copy does not have), and so does its parent's end,
/// however it came.
pub fn end_with_parent(parent: u32) {
    // SAFETY: resets two signals to their default action and asks the kernel to kill this
    // process when its parent ends; then checks the parent did not end before that.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        #[cfg(target_os = "linux")]
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() as u32 != parent {
            libc::_exit(1);
        }
    }
}

/// Writes `frame` as a JSON line on `out`; false if the reader is gone.
pub fn send(out: &mut std::fs::File, frame: &impl Serialize) -> bool {
    let Ok(mut line) = serde_json::to_string(frame) else {
        return false;
    };
    line.push('\n');
    out.write_all(line.as_bytes()).is_ok()
}

pub fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two new descriptors into `fds` or fails. (Nothing here execs,
    // so they need no close-on-exec.)
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(anyhow!(
            "a pipe for a worker process: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: both descriptors were just made and belong to nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

pub fn describe_status(status: libc::c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exit status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("status {status}")
    }
}

/// Waits for the worker process `pid`, a child of this one; its exit status.
pub fn wait_for(pid: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    // SAFETY: waits for our own child, writing its status into a local.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    status
}

/// Ends the worker process `pid`, a child of this one, at once (its work is not wanted).
pub fn kill(pid: libc::pid_t) {
    // SAFETY: sends a signal to our own child, which has not been waited for.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Ends this worker process now: it must not return into the suite, whose work is the
/// parent's, nor run the parent's exit handlers and destructors a second time.
pub fn exit_worker(ok: bool) -> ! {
    // SAFETY: `_exit` ends the process without running anything of the parent's.
    unsafe { libc::_exit(if ok { 0 } else { 1 }) }
}
