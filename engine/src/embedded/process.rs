//! Forking the process a worker of the embedded engine runs in ([`crate::Engine::fork_process`]).
//!
//! Everything the engine holds is memory of the process (a copy-on-write copy in the child)
//! or a file both keep open: frozen heaps and cached modules are never written once made,
//! so sharing them is safe. The one thing a copy cannot use as it is, is the kernel's write
//! log: its userfaultfd and `/proc/self/pagemap` belong to the parent's address space, and
//! the child's mappings are no longer registered with any log. The child takes descriptors
//! of its own, and every heap registers again before its next message
//! ([`super::memory::write_log::WriteLog::reopen_in_child`]).

use anyhow::{anyhow, Result};

use super::memory::write_log::HeapWrites;
use crate::ProcessSide;

pub fn fork() -> Result<ProcessSide> {
    // Decided before the fork, so that both sides use the same kind of log.
    let writes = HeapWrites::configured().map_err(|e| anyhow!(e))?;
    // SAFETY: fork has no memory-safety preconditions. The child runs on one thread; the
    // caller runs no engine on another thread, and glibc's fork leaves malloc usable in
    // the child.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(anyhow!(
            "forking a worker process: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid > 0 {
        return Ok(ProcessSide::Parent(pid as u32));
    }
    if let HeapWrites::Logged(log) = writes {
        if let Err(e) = log.reopen_in_child() {
            // The child cannot find the pages its messages write: it must not run any. Its
            // parent sees it end without results and names the worker. (A plain write: the
            // standard error's lock may have been held by a thread the child does not have.)
            let line =
                format!("error: a worker process could not set up the kernel's write log: {e}\n");
            // SAFETY: writes the line's own bytes to the standard error, then ends the child
            // at once, without running the parent's exit handlers or destructors again.
            unsafe {
                libc::write(2, line.as_ptr().cast(), line.len());
                libc::_exit(2)
            };
        }
    }
    crate::worker::mark();
    Ok(ProcessSide::Child)
}
