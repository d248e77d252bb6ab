//! The on-disk cache of work that is slow to redo and fully determined by its inputs
//! (compiled canister modules). Entries are checked before use and written atomically:
//! a corrupt, truncated or foreign file is a miss, never trusted, and a cache that cannot
//! be written costs speed, not the run.
//!
//! Location: `ICBENCH_CACHE_DIR`, else `icbench` under the platform cache directory
//! (`~/.cache/icbench` on Linux). The library leaves the disk alone until [`enable`] is
//! called (the CLI does it), so embedders and tests choose their own directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::RwLock;

use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};

mod direct;
mod stamp;
mod temp;

/// The environment variable naming the cache directory.
pub const ENV: &str = "ICBENCH_CACHE_DIR";

/// Files start with this; the version changes whenever the layout below does.
const MAGIC: &[u8; 8] = b"ICBCACHE";
const FORMAT_VERSION: u32 = 3;
/// magic, version, key, meta length, payload length, CRC-32 of meta and payload. The
/// checksum finds damage (a torn or truncated file, a flipped bit); the key is already
/// SHA-256 of the inputs. Version 1 had SHA-256 here, which cost 0.3 s on every run that
/// read a 420 MB state, against 0.05 s. Version 3 starts the payload on a page boundary.
const HEADER: usize = 8 + 4 + 32 + 8 + 8 + 4;
/// The payload starts at a multiple of this in the file (zeros after the meta part), so that
/// a state's heap pages, stored page-aligned in the payload, can be mapped from the file
/// instead of copied (`Entry::payload_file`).
pub const PAYLOAD_ALIGN: usize = 4096;

/// Where the payload of an entry with a `meta_len`-byte meta part starts in its file.
fn payload_start(meta_len: usize) -> usize {
    (HEADER + meta_len).next_multiple_of(PAYLOAD_ALIGN)
}
/// Suffix of entry files and prefix of temporary files: `clear` removes only these and
/// stamps ([`stamp::SUFFIX`]).
const ENTRY_SUFFIX: &str = ".entry";
const TEMP_PREFIX: &str = ".tmp-";

/// The kinds of entries, each in a subdirectory of its own.
pub const KINDS: [&str; 4] = [MODULES, STATES, WARM, MOPS];
/// Compiled modules (see `embedded::load_module`).
pub const MODULES: &str = "modules";
/// Canister states after a suite's prefill (see `suites::users`).
pub const STATES: &str = "states";
/// The starts the users suites make from a post-prefill state (SQLite in a journal mode,
/// SQLite's warm start: the whole table in the page cache), each kept as its changes to the
/// state it is made from (see `suites::users::kept`). The directory keeps the name it had
/// when it held warm starts alone.
pub const WARM: &str = "warm";
/// `icbench mops`' bench canisters as moc compiled them (the Wasm, before the engine
/// compiles it as a module).
pub const MOPS: &str = "mops";

/// How many entries of each kind ([`KINDS`] order) the cache keeps: writing one more
/// removes the least recently used. A compiled bench canister is tens of MB; a post-prefill
/// state is one canister's, a store's alone 100 to 250 MB at 1,000,000 rows (the seed
/// layout's bench canister about 450 MB), and a default run keeps one per store; every edit
/// of the engine or of a suite makes new keys, so without a bound a development machine's
/// cache only grows. A start made from one is about 120 MB at 1,000,000 rows: a default run
/// keeps 13 (each SQLite journal mode's start and warm start, ic-sqlite-vfs's warm start).
/// A mops bench canister is a few MB; a project has a few bench files.
pub const KEEP: [usize; 4] = [32, 8, 28, 64];

static DIR: RwLock<Option<PathBuf>> = RwLock::new(None);
static WARNED: AtomicBool = AtomicBool::new(false);
/// Per kind: hits, misses, rejected entries.
static COUNTS: [[AtomicU64; 3]; 4] = [
    [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
];

/// Whether the user chose the directory (`ICBENCH_CACHE_DIR` set and not empty): then one
/// that cannot be written is an error, not a reason to run without the cache.
pub fn dir_set_by_env() -> bool {
    std::env::var_os(ENV).is_some_and(|d| !d.is_empty())
}

/// The directory the environment selects: `ICBENCH_CACHE_DIR` if set and not empty, else
/// the platform cache directory's `icbench`.
pub fn dir_from_env() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os(ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    dirs::cache_dir()
        .map(|d| d.join("icbench"))
        .ok_or_else(|| anyhow!("no platform cache directory (no home directory?); set {ENV}"))
}

/// Creates the cache directory and its kinds' subdirectories and checks that entries can
/// be written there, before a run starts; removes the temporary files stopped writers left
/// there ([`temp`]).
pub fn prepare(dir: &Path) -> Result<()> {
    for kind in KINDS {
        let sub = dir.join(kind);
        std::fs::create_dir_all(&sub)
            .and_then(|()| {
                tempfile::Builder::new()
                    .prefix(TEMP_PREFIX)
                    .tempfile_in(&sub)
                    .map(drop)
            })
            .map_err(|e| {
                let by = if dir_set_by_env() {
                    format!("{ENV}={}", dir.display())
                } else {
                    format!("cache directory {} (the platform's)", dir.display())
                };
                anyhow!("{by}: cannot write into {}: {e}", sub.display())
            })?;
        remove_leftovers(dir, kind)?;
    }
    Ok(())
}

/// Removes the temporary files of `kind` that stopped writers left ([`temp`]).
fn remove_leftovers(dir: &Path, kind: &str) -> Result<()> {
    for path in leftovers(kind, &files(dir, kind)?) {
        remove(&path)?;
    }
    Ok(())
}

/// Of the cache's files of `kind`, those left to remove: stopped writers' temporary files
/// ([`temp`]) and, in [`MOPS`], the raw modules (`.wasm`) and half-written `.partial`
/// files of before it was a kind of entries.
fn leftovers(kind: &str, files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = temp::leftovers(files);
    out.extend(files.iter().filter(|p| legacy(kind, p)).cloned());
    out
}

fn legacy(kind: &str, path: &Path) -> bool {
    kind == MOPS
        && path
            .extension()
            .is_some_and(|e| e == "wasm" || e == "partial")
}

/// Uses `dir` (None: no disk cache) for the rest of the process.
pub fn enable(dir: Option<PathBuf>) {
    *DIR.write().unwrap() = dir;
}

/// The directory in use, if any.
pub fn dir() -> Option<PathBuf> {
    DIR.read().unwrap().clone()
}

/// Counts of this process for one kind: entries used, entries made (misses), and entries
/// found corrupt, truncated or foreign (made again).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub hits: u64,
    pub misses: u64,
    pub rejected: u64,
}

pub fn stats(kind: &str) -> Stats {
    let c = &COUNTS[kind_index(kind)];
    Stats {
        hits: c[0].load(Ordering::Relaxed),
        misses: c[1].load(Ordering::Relaxed),
        rejected: c[2].load(Ordering::Relaxed),
    }
}

/// Adds counts made elsewhere (a worker process's) to this process's for `kind`.
pub fn add_stats(kind: &str, more: Stats) {
    let c = &COUNTS[kind_index(kind)];
    c[0].fetch_add(more.hits, Ordering::Relaxed);
    c[1].fetch_add(more.misses, Ordering::Relaxed);
    c[2].fetch_add(more.rejected, Ordering::Relaxed);
}

/// Every kind's counts now, in [`KINDS`]' order.
pub fn all_stats() -> Vec<Stats> {
    KINDS.iter().map(|k| stats(k)).collect()
}

fn kind_index(kind: &str) -> usize {
    KINDS
        .iter()
        .position(|k| *k == kind)
        .unwrap_or_else(|| panic!("{kind:?} is not a cache kind"))
}

pub fn count_hit(kind: &str) {
    COUNTS[kind_index(kind)][0].fetch_add(1, Ordering::Relaxed);
}

pub fn count_miss(kind: &str) {
    COUNTS[kind_index(kind)][1].fetch_add(1, Ordering::Relaxed);
}

pub fn count_rejected(kind: &str) {
    COUNTS[kind_index(kind)][2].fetch_add(1, Ordering::Relaxed);
}

/// One warning per process when the cache cannot be used: the run goes on without it.
pub fn warn_once(what: &str, e: &anyhow::Error) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!("warning: {what}: {e:#}; going on without the cache");
    }
}

/// The path of the entry `key` of `kind`.
pub fn entry_path(dir: &Path, kind: &str, key: &[u8; 32]) -> PathBuf {
    dir.join(kind)
        .join(format!("{}{ENTRY_SUFFIX}", hex::encode(key)))
}

/// An intact entry: the file's bytes, split without copying (payloads are tens of MB; a
/// default run's state is 450 MB, mapped rather than copied into memory the process would
/// fault in page by page).
#[derive(Debug)]
pub struct Entry {
    bytes: FileBytes,
    meta_len: usize,
    /// The file, open, for [`Entry::payload_file`].
    file: std::fs::File,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.meta_len == other.meta_len && self.bytes.as_slice() == other.bytes.as_slice()
    }
}

impl Eq for Entry {}

impl Entry {
    pub fn meta(&self) -> &[u8] {
        &self.bytes.as_slice()[HEADER..HEADER + self.meta_len]
    }
    pub fn payload(&self) -> &[u8] {
        &self.bytes.as_slice()[payload_start(self.meta_len)..]
    }

    /// The file the entry was read from and where its payload starts in it (a multiple of
    /// [`PAYLOAD_ALIGN`]): pages of the payload can be mapped from it. The file never changes
    /// (a new entry is a new file renamed over the name).
    pub fn payload_file(&self) -> (&std::fs::File, u64) {
        (&self.file, payload_start(self.meta_len) as u64)
    }
}

/// A file's bytes: mapped read-only, or read into memory where it cannot be mapped.
#[derive(Debug)]
enum FileBytes {
    Read(Vec<u8>),
    Mapped { ptr: *const u8, len: usize },
}

// SAFETY: the mapping is private to this value, read-only and never changed by the process
// (entries are replaced by renaming a new file over them, which leaves the mapped one as it
// was); it is unmapped only on drop.
unsafe impl Send for FileBytes {}
// SAFETY: as above: shared references only read.
unsafe impl Sync for FileBytes {}

impl FileBytes {
    /// `file`, `len` bytes long: mapped, or read if it cannot be.
    fn open(file: &std::fs::File, len: usize) -> std::io::Result<FileBytes> {
        use std::os::fd::AsRawFd;
        if len > 0 {
            // SAFETY: a fresh read-only private mapping of a file we opened. Not populated:
            // the pages a reader uses are faulted in, and [`FileBytes::sum`] gives back the
            // ones it read.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE,
                    file.as_raw_fd(),
                    0,
                )
            };
            if ptr != libc::MAP_FAILED {
                return Ok(FileBytes::Mapped {
                    ptr: ptr as *const u8,
                    len,
                });
            }
        }
        let mut bytes = Vec::with_capacity(len);
        std::io::Read::read_to_end(&mut &*file, &mut bytes)?;
        Ok(FileBytes::Read(bytes))
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            FileBytes::Read(v) => v,
            // SAFETY: the mapping is `len` readable bytes for as long as `self` lives.
            FileBytes::Mapped { ptr, len } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }

    /// Adds the bytes `range` to `sum`. A mapping's pages are read in a chunk at a time and
    /// unmapped from the process after it (they stay in the page cache): checking a 1.5 GB
    /// state does not make it all resident in the process, where the run uses a few pages.
    fn sum(&self, range: std::ops::Range<usize>, sum: &mut crc32fast::Hasher) {
        let mapped = matches!(self, FileBytes::Mapped { .. });
        for chunk in self.as_slice()[range].chunks(SUM_CHUNK) {
            if mapped {
                advise(chunk, populate_read());
            }
            sum.update(chunk);
            if mapped {
                advise(chunk, libc::MADV_DONTNEED);
            }
        }
    }
}

/// Bytes summed between two gives-back of [`FileBytes::sum`].
const SUM_CHUNK: usize = 16 << 20;

/// `madvise` over the pages that hold `bytes`, a part of a read-only file mapping that
/// nothing writes: the mapping starts on a page and covers its last page whole, and on it
/// either advice only maps or unmaps the file's bytes (a refusal changes nothing but speed).
fn advise(bytes: &[u8], advice: libc::c_int) {
    let start = bytes.as_ptr() as usize & !(PAYLOAD_ALIGN - 1);
    let end = (bytes.as_ptr() as usize + bytes.len()).next_multiple_of(PAYLOAD_ALIGN);
    if advice != 0 && start < end {
        // SAFETY: whole pages of our own read-only file mapping (above); MADV_DONTNEED only
        // drops their page-table entries, and the next read maps the file's bytes again.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, advice) };
    }
}

impl Drop for FileBytes {
    fn drop(&mut self) {
        if let FileBytes::Mapped { ptr, len } = *self {
            // SAFETY: our own mapping, no longer borrowed.
            unsafe { libc::munmap(ptr as *mut _, len) };
        }
    }
}

/// Maps a chunk's pages in one call rather than a fault per 64 KiB (Linux 5.14 and later;
/// 0, no advice, elsewhere).
#[cfg(target_os = "linux")]
fn populate_read() -> libc::c_int {
    libc::MADV_POPULATE_READ
}

#[cfg(not(target_os = "linux"))]
fn populate_read() -> libc::c_int {
    0
}

/// What [`read`] found.
#[derive(Debug)]
pub enum Lookup {
    Found(Entry),
    Missing,
    /// A file that is not a whole, intact entry made for this key, and why: the caller
    /// recomputes and overwrites it.
    Damaged(anyhow::Error),
}

/// Whether every read of a `kind` entry sums it: code (compiled modules, moc's Wasm), small
/// beside states, which a stamp spares the sum once it passed.
fn summed_every_read(kind: &str) -> bool {
    kind == MODULES || kind == MOPS
}

/// Reads the entry `key`; `Err` when the cache cannot be read at all.
pub fn read(dir: &Path, kind: &str, key: &[u8; 32]) -> Result<Lookup> {
    read_settled(dir, kind, key, stamp::SETTLE)
}

/// [`read`], where an entry whose file last changed at least `settle` ago gets a stamp that
/// spares later reads its sum (modules excepted: wasmtime trusts their bytes).
fn read_settled(
    dir: &Path,
    kind: &str,
    key: &[u8; 32],
    settle: std::time::Duration,
) -> Result<Lookup> {
    let path = entry_path(dir, kind, key);
    // Before the `stat`: a change after it is stamped with a later ctime than this.
    let opened_at = std::time::SystemTime::now();
    let opened = std::fs::File::open(&path).and_then(|f| {
        let meta = f.metadata()?;
        Ok((FileBytes::open(&f, meta.len() as usize)?, f, meta))
    });
    let (bytes, file, meta) = match opened {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lookup::Missing),
        Err(e) => return Err(anyhow!(e).context(format!("reading {}", path.display()))),
    };
    let identity = stamp::Identity::of(&meta);
    let known = (!summed_every_read(kind))
        .then(|| stamp::read(&path))
        .flatten();
    let vouched = |crc| known.is_some_and(|s| s.vouches_for(&identity, crc));
    // A mapped state's pages come in as a run touches them: its sum reads past the page
    // cache.
    let mapped = matches!(bytes, FileBytes::Mapped { .. });
    let direct = (!summed_every_read(kind) && mapped).then_some(path.as_path());
    Ok(match check(&bytes, key, vouched, direct) {
        Ok((meta_len, crc)) => {
            // The last use, for [`prune`]; a stamp that cannot be written costs a sum and at
            // worst a recompute. The entry itself is never written after its rename. A stamp
            // that vouched for it still does, however recent the file.
            let stamp = match known.filter(|s| s.vouches_for(&identity, crc)) {
                Some(known) => known,
                None => stamp::Stamp::new(identity, crc, opened_at, settle),
            };
            let _ = stamp::write(&path, &stamp);
            Lookup::Found(Entry {
                bytes,
                meta_len,
                file,
            })
        }
        Err(e) => {
            count_rejected(kind);
            Lookup::Damaged(e.context(format!("cache entry {}", path.display())))
        }
    })
}

/// Checks an entry file, its checksum unless `vouched` for the one its header holds; returns
/// the length of its meta part and that checksum. With `direct`, the file's path, the
/// payload is summed as read past the page cache where the file system allows it.
fn check(
    file: &FileBytes,
    key: &[u8; 32],
    vouched: impl FnOnce([u8; 4]) -> bool,
    direct: Option<&Path>,
) -> Result<(usize, [u8; 4])> {
    let bytes = file.as_slice();
    if bytes.len() < HEADER {
        bail!("truncated: {} bytes, shorter than the header", bytes.len());
    }
    if &bytes[..8] != MAGIC {
        bail!("not an icbench cache entry");
    }
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if version != FORMAT_VERSION {
        bail!("format version {version}, not {FORMAT_VERSION}");
    }
    if &bytes[12..44] != key {
        bail!("made for another key");
    }
    let (meta_len, payload_len) = (u64_at(44), u64_at(52));
    // The payload's start, where the file has room for the meta part announced.
    let start = usize::try_from(meta_len)
        .ok()
        .filter(|&m| m <= bytes.len())
        .map(payload_start);
    let fits = start
        .is_some_and(|start| (start as u64).checked_add(payload_len) == Some(bytes.len() as u64));
    let Some(start) = start.filter(|_| fits) else {
        bail!(
            "truncated or padded: the header announces {meta_len} + {payload_len} bytes, the file holds {}",
            bytes.len() - HEADER
        );
    };
    let meta = &bytes[HEADER..HEADER + meta_len as usize];
    if bytes[HEADER + meta.len()..start].iter().any(|&b| b != 0) {
        bail!("nonzero bytes before the payload");
    }
    let crc: [u8; 4] = bytes[60..64].try_into().unwrap();
    if vouched(crc) {
        return Ok((meta.len(), crc));
    }
    let mut sum = crc32fast::Hasher::new();
    sum.update(meta);
    let summed = match direct {
        Some(path) => direct::sum_to_end(path, start..bytes.len(), &mut sum)
            .with_context(|| format!("reading {}", path.display()))?,
        None => false,
    };
    if !summed {
        file.sum(start..bytes.len(), &mut sum);
    }
    if sum.finalize().to_le_bytes() != crc {
        bail!("checksum mismatch");
    }
    Ok((meta.len(), crc))
}

/// Writes the entry `key` atomically: a temporary file in the same directory, renamed over
/// the entry, so a concurrent reader sees the old file, the new file or none, never a part.
pub fn write(dir: &Path, kind: &str, key: &[u8; 32], meta: &[u8], payload: &[u8]) -> Result<()> {
    write_streamed(dir, kind, key, meta, |w| w.write_all(payload))
}

/// [`write`] with the payload written by `payload` as it is made, never held whole in
/// memory (a default run's state is 420 MB).
pub fn write_streamed(
    dir: &Path,
    kind: &str,
    key: &[u8; 32],
    meta: &[u8],
    payload: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let sub = dir.join(kind);
    std::fs::create_dir_all(&sub).with_context(|| format!("creating {}", sub.display()))?;
    let temp = sub.join(temp::name(key, SEQ.fetch_add(1, Ordering::Relaxed)));
    // A signal removes the half-written file (an interrupted 450 MB state must not stay);
    // one that ends a worker process leaves it to the next run (the lock says it is
    // written).
    let start = payload_start(meta.len());
    let made = crate::interrupt::TempGuard::make(|| {
        Ok((direct::Appender::create(&temp, start)?, temp.clone()))
    });
    let (out, _guard) = made.with_context(|| format!("writing an entry into {}", sub.display()))?;
    let written = (|| -> std::io::Result<(u32, std::fs::File)> {
        let lock = temp::lock(&temp)?;
        let mut body = Summed {
            out,
            sum: crc32fast::Hasher::new(),
            len: meta.len() as u64,
        };
        // The meta part lies before the payload, in the head written last.
        body.sum.update(meta);
        payload(&mut body)?;
        if kind == STATES {
            temp::pause_for_test();
        }
        let Summed { out, sum, len } = body;
        // The lengths and the checksum are known at the end: the head goes in last.
        let mut head = Vec::with_capacity(start);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        head.extend_from_slice(key);
        head.extend_from_slice(&(meta.len() as u64).to_le_bytes());
        let crc = sum.finalize();
        head.extend_from_slice(&(len - meta.len() as u64).to_le_bytes());
        head.extend_from_slice(&crc.to_le_bytes());
        head.extend_from_slice(meta);
        // The padding up to the payload's start is not summed.
        head.resize(start, 0);
        out.finish(&head)?;
        Ok((crc, lock))
    })();
    let path = entry_path(dir, kind, key);
    // Opened before the rename: the stamp describes this file, even if another process
    // renames its own over the name.
    let renamed = written.and_then(|(crc, _lock)| {
        let ours = std::fs::File::open(&temp)?;
        std::fs::rename(&temp, &path)?;
        Ok((ours, crc))
    });
    let (ours, crc) = match renamed {
        Ok(done) => done,
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            return Err(anyhow!(e).context(format!("writing an entry into {}", sub.display())));
        }
    };
    if !summed_every_read(kind) {
        // Its first read need not sum what was summed as it was written (a state is read
        // from the disk, past the page cache, to be summed). One that cannot be written
        // costs that sum.
        if let Ok(written) = ours.metadata() {
            let stamp = stamp::Stamp::written(stamp::Identity::of(&written), crc.to_le_bytes());
            let _ = stamp::write(&path, &stamp);
        }
    }
    prune(dir, kind, KEEP[kind_index(kind)], key).map(|_| ())
}

/// A writer that counts and checksums what passes through it.
struct Summed<W: Write> {
    out: W,
    sum: crc32fast::Hasher,
    len: u64,
}

impl<W: Write> Write for Summed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.sum.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Removes the least recently used entries of `kind` (the later of an entry's modification
/// time and its stamp's, which [`read`] writes) until `keep` are left, never the entry
/// `newest`, the stamps of entries no longer there, and the temporary files stopped writers
/// left ([`temp`]). Returns how many entries it removed.
pub fn prune(dir: &Path, kind: &str, keep: usize, newest: &[u8; 32]) -> Result<usize> {
    remove_leftovers(dir, kind)?;
    let newest = entry_path(dir, kind, newest);
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let (mut entries, mut stamps) = (Vec::new(), Vec::new());
    for path in files(dir, kind)? {
        let name = path.to_string_lossy();
        if name.ends_with(ENTRY_SUFFIX) {
            entries.push(path);
        } else if name.ends_with(stamp::SUFFIX) {
            stamps.push(path);
        }
    }
    let used = |entry: &Path| {
        let stamped = modified(&stamp::path(entry)).unwrap_or(std::time::UNIX_EPOCH);
        Some(modified(entry)?.max(stamped))
    };
    let mut others: Vec<(std::time::SystemTime, PathBuf)> = entries
        .into_iter()
        .filter(|p| *p != newest)
        .filter_map(|p| Some((used(&p)?, p)))
        .collect();
    // Newest first; the path breaks ties so the outcome does not depend on listing order.
    others.sort_by(|a, b| b.cmp(a));
    let mut removed = 0;
    for (_, path) in others.iter().skip(keep.saturating_sub(1)) {
        if remove(path)? {
            removed += 1;
        }
        remove(&stamp::path(path))?;
    }
    for stamp in stamps {
        if !stamp::entry_of(&stamp).exists() {
            remove(&stamp)?;
        }
    }
    Ok(removed)
}

/// Removes a file of the cache; false if it was not there (a concurrent run removed it).
fn remove(path: &Path) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(anyhow!(e).context(format!("removing {}", path.display()))),
    }
}

/// Entries and their bytes, per kind; the temporary files stopped writers left, and theirs
/// (the next run removes them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub kinds: Vec<(&'static str, u64, u64)>,
    pub leftovers: (u64, u64),
}

/// What the cache in `dir` holds (a missing directory holds nothing).
pub fn usage(dir: &Path) -> Result<Usage> {
    let mut usage = Usage::default();
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    for kind in KINDS {
        let files = files(dir, kind)?;
        let entries: Vec<&PathBuf> = files
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(ENTRY_SUFFIX))
            .collect();
        let bytes = entries.iter().map(|p| size(p)).sum();
        usage.kinds.push((kind, entries.len() as u64, bytes));
        for path in leftovers(kind, &files) {
            usage.leftovers.0 += 1;
            usage.leftovers.1 += size(&path);
        }
    }
    Ok(usage)
}

/// Removes every entry, stamp and leftover temporary file from `dir`, and the kinds' directories
/// when that empties them; nothing else (`ICBENCH_CACHE_DIR` may name a directory that
/// holds other files). Returns how many files were removed.
pub fn clear(dir: &Path) -> Result<u64> {
    let mut removed = 0;
    for kind in KINDS {
        for path in files(dir, kind)? {
            // Gone already (a concurrent run renamed or cleared it) is what we want.
            remove(&path)?;
            removed += 1;
        }
        // Fails if something else lives there; then the directory stays.
        let _ = std::fs::remove_dir(dir.join(kind));
    }
    Ok(removed)
}

/// The cache's own files of `kind`: entries, stamps and temporary files.
fn files(dir: &Path, kind: &str) -> Result<Vec<PathBuf>> {
    let sub = dir.join(kind);
    let entries = match std::fs::read_dir(&sub) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(anyhow!(e).context(format!("listing {}", sub.display()))),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", sub.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = [ENTRY_SUFFIX, stamp::SUFFIX]
            .iter()
            .any(|s| name.ends_with(s))
            || name.starts_with(TEMP_PREFIX)
            || legacy(kind, Path::new(&name));
        if ours && entry.file_type().is_ok_and(|t| t.is_file()) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// A SHA-256 [`std::hash::Hasher`], to put values that only implement `Hash` (wasmtime's
/// compatibility hash of an engine configuration) into a key.
pub(crate) struct ShaHasher(pub Sha256);

impl std::hash::Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        // Unused: the key is the full digest.
        0
    }
}

#[cfg(test)]
mod tests;
