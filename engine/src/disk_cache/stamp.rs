//! A stamp beside an entry: when the entry was last used (for [`super::prune`]), and whether
//! its checksum already passed for the file as it is now. Summing every entry at every read
//! cost a cached default run 4.5 GB of reading (8.7% of its CPU); a stamp lets the next read
//! of an unchanged file skip the sum.
//!
//! "Unchanged" is what the file system reports: the same device, inode and size, and the same
//! change time (ctime), which every write, truncation or rename of the file moves and no
//! program can set back. An entry is never written after it is renamed into place (a new one
//! is a new file), so a stamp that matches describes the very bytes that were summed, by the
//! read that stamped it or by the writer as it wrote them. What a
//! stamp cannot see is damage below the file system (a disk returning other bytes); modules,
//! which wasmtime deserializes without checks of its own, are summed at every read anyway.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Suffix of stamp files; the entry's name with [`super::ENTRY_SUFFIX`] replaced.
pub(super) const SUFFIX: &str = ".checked";

/// How long before a read's `stat` an entry must have last changed for its sum to be
/// recorded. Linux sets ctime from a clock that ticks every few milliseconds (before 6.13 a
/// change in the same tick as a `stat` leaves ctime as it was), some file systems keep whole
/// seconds: a stamp of a file that had just changed could vouch for bytes it never saw.
/// Entries are read from one run to the next, seconds to days apart; one read within this
/// long of its writing is summed again at the next read.
pub(super) const SETTLE: Duration = Duration::from_secs(2);

/// Starts a stamp file; the version changes whenever the layout below does.
const MAGIC: &[u8; 8] = b"ICBSTMP1";
/// magic, device, inode, size, ctime seconds and nanoseconds, the entry's CRC-32, checked.
const LEN: usize = 8 + 8 * 5 + 4 + 1;

/// What the file system says about an entry file's contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    ctime: i64,
    ctime_nsec: i64,
}

impl Identity {
    pub(super) fn of(meta: &std::fs::Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        }
    }

    /// Whether the file last changed at least `settle` before `now`.
    fn settled(&self, now: SystemTime, settle: Duration) -> bool {
        let now = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(i128::MIN, |d| d.as_nanos() as i128);
        let changed = self.ctime as i128 * 1_000_000_000 + self.ctime_nsec as i128;
        now - changed >= settle.as_nanos() as i128
    }
}

/// A stamp: the entry file it describes, the checksum its header holds, and whether that
/// checksum passed over the file as `identity` describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp {
    pub identity: Identity,
    pub crc: [u8; 4],
    pub checked: bool,
}

impl Stamp {
    /// A stamp for an entry whose checksum just passed (or a matching stamp vouched for it),
    /// `identity` as the file system reported it after `seen`; it vouches for the file if the
    /// file had settled by then (a sum can take seconds: a change during it must not share
    /// the ctime recorded).
    pub(super) fn new(
        identity: Identity,
        crc: [u8; 4],
        seen: SystemTime,
        settle: Duration,
    ) -> Stamp {
        Stamp {
            identity,
            crc,
            checked: identity.settled(seen, settle),
        }
    }

    /// A stamp for an entry file this process summed as it wrote it and then renamed into
    /// place (`identity` as the file system reported it after the rename): it vouches for
    /// the file at once, since nothing writes an entry after its rename.
    pub(super) fn written(identity: Identity, crc: [u8; 4]) -> Stamp {
        Stamp {
            identity,
            crc,
            checked: true,
        }
    }

    /// Whether this stamp spares the sum of the entry file `identity` whose header holds `crc`.
    pub(super) fn vouches_for(&self, identity: &Identity, crc: [u8; 4]) -> bool {
        self.checked && self.identity == *identity && self.crc == crc
    }

    fn encode(&self) -> [u8; LEN] {
        let i = &self.identity;
        let mut out = [0u8; LEN];
        let fields = [i.dev, i.ino, i.size, i.ctime as u64, i.ctime_nsec as u64];
        out[..8].copy_from_slice(MAGIC);
        for (n, field) in fields.iter().enumerate() {
            out[8 + 8 * n..16 + 8 * n].copy_from_slice(&field.to_le_bytes());
        }
        out[48..52].copy_from_slice(&self.crc);
        out[52] = self.checked as u8;
        out
    }

    /// A stamp's bytes; anything else (torn, foreign, another version) is no stamp.
    fn decode(bytes: &[u8]) -> Option<Stamp> {
        if bytes.len() != LEN || &bytes[..8] != MAGIC || bytes[52] > 1 {
            return None;
        }
        let field = |n: usize| u64::from_le_bytes(bytes[8 + 8 * n..16 + 8 * n].try_into().unwrap());
        Some(Stamp {
            identity: Identity {
                dev: field(0),
                ino: field(1),
                size: field(2),
                ctime: field(3) as i64,
                ctime_nsec: field(4) as i64,
            },
            crc: bytes[48..52].try_into().unwrap(),
            checked: bytes[52] == 1,
        })
    }
}

/// The stamp file of the entry file `entry`.
pub(super) fn path(entry: &Path) -> PathBuf {
    let name = entry.file_name().unwrap_or_default().to_string_lossy();
    let stem = name.strip_suffix(super::ENTRY_SUFFIX).unwrap_or(&name);
    entry.with_file_name(format!("{stem}{SUFFIX}"))
}

/// The entry file a stamp file `stamp` belongs to.
pub(super) fn entry_of(stamp: &Path) -> PathBuf {
    let name = stamp.file_name().unwrap_or_default().to_string_lossy();
    let stem = name.strip_suffix(SUFFIX).unwrap_or(&name);
    stamp.with_file_name(format!("{stem}{}", super::ENTRY_SUFFIX))
}

/// The stamp of `entry`, if it has a readable one.
pub(super) fn read(entry: &Path) -> Option<Stamp> {
    Stamp::decode(&std::fs::read(path(entry)).ok()?)
}

/// Records `stamp` for `entry`: written whole under a temporary name and renamed, so a
/// concurrent reader finds an old stamp, a new one or none. Its modification time is the
/// entry's last use.
pub(super) fn write(entry: &Path, stamp: &Stamp) -> std::io::Result<()> {
    let dir = entry.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new()
        .prefix(super::TEMP_PREFIX)
        .tempfile_in(dir)?;
    temp.write_all(&stamp.encode())?;
    temp.persist(path(entry)).map(drop).map_err(|e| e.error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_round_trips_and_anything_else_is_none() {
        let stamp = Stamp {
            identity: Identity {
                dev: 1,
                ino: 2,
                size: 3,
                ctime: -4,
                ctime_nsec: 5,
            },
            crc: [6, 7, 8, 9],
            checked: true,
        };
        let bytes = stamp.encode();
        assert_eq!(Stamp::decode(&bytes), Some(stamp));
        assert_eq!(Stamp::decode(&bytes[..LEN - 1]), None);
        let mut other = bytes;
        other[7] = b'2';
        assert_eq!(Stamp::decode(&other), None);
        other = bytes;
        other[52] = 2;
        assert_eq!(Stamp::decode(&other), None);
        assert!(stamp.vouches_for(&stamp.identity, stamp.crc));
        assert!(!stamp.vouches_for(&stamp.identity, [0; 4]));
        let moved = Identity {
            ctime_nsec: 6,
            ..stamp.identity
        };
        assert!(!stamp.vouches_for(&moved, stamp.crc));
        let unchecked = Stamp {
            checked: false,
            ..stamp
        };
        assert!(!unchecked.vouches_for(&stamp.identity, stamp.crc));
    }

    #[test]
    fn only_a_settled_file_is_vouched_for() {
        let now = SystemTime::UNIX_EPOCH + Duration::new(1_000, 500);
        let at = |ctime, ctime_nsec| Identity {
            dev: 0,
            ino: 0,
            size: 0,
            ctime,
            ctime_nsec,
        };
        assert!(at(998, 500).settled(now, SETTLE));
        assert!(!at(998, 501).settled(now, SETTLE));
        assert!(at(1_000, 500).settled(now, Duration::ZERO));
        assert!(!at(1_001, 0).settled(now, Duration::ZERO));
    }

    #[test]
    fn stamp_and_entry_paths_name_each_other() {
        let entry = Path::new("/c/states/ab12.entry");
        assert_eq!(path(entry), Path::new("/c/states/ab12.checked"));
        assert_eq!(entry_of(&path(entry)), entry);
    }
}
