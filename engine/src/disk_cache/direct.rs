//! An entry's file written, and first summed, past the page cache (Linux `O_DIRECT`) where
//! the file system allows it. A state is written once and read by later runs, hundreds of MB
//! to GB each (mo:core's pure/Map at 1,000,000 rows: 1.5 GB), of which a run uses the pages
//! its scenarios touch; through the page cache every byte is first copied into pages the
//! kernel allocates for it. On the project's 2-core VM those pages cost 3.3 s of CPU a GB
//! (`dd` into a new file: 5.1 s for 1.5 GB, 1.1 s and 0.14 s of CPU with `oflag=direct`),
//! paid by the run that writes them or by the first read that sums them. Direct I/O moves
//! the bytes between the disk and a buffer of the process; the pages a run maps come in as
//! it touches them. A file system that refuses direct I/O gets the page cache, as before.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Direct I/O moves whole blocks from and to addresses aligned to them; 4 KiB is the
/// largest logical block size of common disks and the page size.
const BLOCK: usize = 4096;
/// Bytes gathered before one write.
const CHUNK: usize = 1 << 20;

/// A buffer of `CHUNK` bytes aligned to a block, and what holds it.
fn aligned_chunk() -> (Vec<u8>, usize) {
    let buf = vec![0u8; CHUNK + BLOCK];
    let aligned = buf.as_ptr().align_offset(BLOCK);
    (buf, aligned)
}

/// Opens `path` with `O_DIRECT` for reading or (`new`) for creating; None where the file
/// system refuses the flag (tmpfs) or the platform has none.
fn open_direct(path: &Path, new: bool) -> io::Result<Option<File>> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut options = OpenOptions::new();
        if new {
            options.write(true).create_new(true);
        } else {
            options.read(true);
        }
        match options.custom_flags(libc::O_DIRECT).open(path) {
            Ok(file) => Ok(Some(file)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(None),
            Err(e) => Err(e),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (path, new);
        Ok(None)
    }
}

/// Adds the bytes `range` of `path` (from a block boundary to the file's end) to `sum`,
/// read past the page cache; false, nothing summed, where direct I/O cannot be had.
pub(super) fn sum_to_end(
    path: &Path,
    range: Range<usize>,
    sum: &mut crc32fast::Hasher,
) -> io::Result<bool> {
    debug_assert!(range.start.is_multiple_of(BLOCK));
    let Some(file) = open_direct(path, false)? else {
        return Ok(false);
    };
    let (mut buf, aligned) = aligned_chunk();
    let chunk = &mut buf[aligned..aligned + CHUNK];
    let mut at = range.start;
    while at < range.end {
        let n = match file.read_at(chunk, at as u64) {
            Ok(n) => n,
            // A file system that took the flag but refuses the read.
            Err(e) if at == range.start && e.raw_os_error() == Some(libc::EINVAL) => {
                return Ok(false)
            }
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let n = n.min(range.end - at);
        sum.update(&chunk[..n]);
        at += n;
    }
    Ok(true)
}

/// A new file written in order from `start` (a multiple of [`BLOCK`]) through `write`; what
/// lies before `start` (an entry's header, known last) is given to [`Appender::finish`].
pub(super) struct Appender<'a> {
    path: &'a Path,
    file: File,
    direct: bool,
    /// `CHUNK + BLOCK` bytes, of which `aligned..aligned + CHUNK` start on a block.
    buf: Vec<u8>,
    aligned: usize,
    /// Bytes of the chunk gathered so far.
    filled: usize,
    /// Where the chunk goes in the file.
    offset: u64,
    /// Where the data written through `write` starts.
    start: usize,
}

impl<'a> Appender<'a> {
    /// Creates `path` (which must not exist).
    pub(super) fn create(path: &'a Path, start: usize) -> io::Result<Self> {
        assert!(
            start.is_multiple_of(BLOCK),
            "{start} is not a block boundary"
        );
        let (file, direct) = match open_direct(path, true)? {
            Some(file) => (file, true),
            None => (
                OpenOptions::new().write(true).create_new(true).open(path)?,
                false,
            ),
        };
        let (buf, aligned) = aligned_chunk();
        Ok(Appender {
            path,
            file,
            direct,
            buf,
            aligned,
            filled: 0,
            offset: start as u64,
            start,
        })
    }

    fn chunk(&mut self) -> &mut [u8] {
        &mut self.buf[self.aligned..self.aligned + CHUNK]
    }

    /// Writes `len` bytes of the chunk (a multiple of [`BLOCK`] when direct) at `at`. A file
    /// system that took the flag but refuses a direct write gets this and every later write
    /// through the page cache, on a descriptor without the flag.
    fn put(&mut self, len: usize, at: u64) -> io::Result<()> {
        let range = self.aligned..self.aligned + len;
        match self.file.write_all_at(&self.buf[range.clone()], at) {
            Err(e) if self.direct && e.raw_os_error() == Some(libc::EINVAL) => {
                self.file = OpenOptions::new().write(true).open(self.path)?;
                self.direct = false;
                self.file.write_all_at(&self.buf[range], at)
            }
            other => other,
        }
    }

    /// Writes the gathered bytes; a partial block only at the end (`last`), padded with
    /// zeros past the data when direct (`finish` cuts the file back).
    fn flush_chunk(&mut self, last: bool) -> io::Result<()> {
        let mut len = self.filled;
        if self.direct && last {
            len = len.next_multiple_of(BLOCK);
            let filled = self.filled;
            self.chunk()[filled..len].fill(0);
        }
        debug_assert!(!self.direct || len.is_multiple_of(BLOCK));
        self.put(len, self.offset)?;
        self.offset += self.filled as u64;
        self.filled = 0;
        Ok(())
    }

    /// Writes `head` (every byte before `start`) at the file's start and ends the file
    /// where the data written through `write` ends.
    pub(super) fn finish(mut self, head: &[u8]) -> io::Result<()> {
        assert_eq!(
            head.len(),
            self.start,
            "the head is what lies before the data"
        );
        self.flush_chunk(true)?;
        let end = self.offset;
        for (i, part) in head.chunks(CHUNK).enumerate() {
            self.chunk()[..part.len()].copy_from_slice(part);
            self.put(part.len(), (i * CHUNK) as u64)?;
        }
        self.file.set_len(end)
    }
}

impl Write for Appender<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let filled = self.filled;
            let n = rest.len().min(CHUNK - filled);
            self.chunk()[filled..filled + n].copy_from_slice(&rest[..n]);
            self.filled += n;
            rest = &rest[n..];
            if self.filled == CHUNK {
                self.flush_chunk(false)?;
            }
        }
        Ok(bytes.len())
    }

    /// Nothing: the chunk is written when full and at [`Appender::finish`], whole blocks
    /// only, as direct I/O needs.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(start: usize, head: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut a = Appender::create(&path, start).unwrap();
        for part in parts {
            a.write_all(part).unwrap();
        }
        a.finish(head).unwrap();
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn the_head_comes_first_and_the_file_ends_with_the_data() {
        let head = vec![7u8; BLOCK];
        let odd: Vec<u8> = (0..CHUNK + 12_345).map(|i| (i % 251) as u8).collect();
        let bytes = written(BLOCK, &head, &[b"abc", &odd, &[], b"z"]);
        assert_eq!(bytes.len(), BLOCK + 3 + odd.len() + 1);
        assert_eq!(&bytes[..BLOCK], &head[..]);
        assert_eq!(&bytes[BLOCK..BLOCK + 3], b"abc");
        assert_eq!(&bytes[BLOCK + 3..bytes.len() - 1], &odd[..]);
        assert_eq!(bytes.last(), Some(&b'z'));
    }

    #[test]
    fn whole_chunks_and_no_data_end_where_they_should() {
        let chunk = vec![1u8; CHUNK];
        assert_eq!(
            written(2 * BLOCK, &[3; 2 * BLOCK], &[&chunk]).len(),
            2 * BLOCK + CHUNK
        );
        assert_eq!(written(BLOCK, &[3; BLOCK], &[]), vec![3; BLOCK]);
    }

    #[test]
    fn a_sum_read_past_the_page_cache_is_the_sum_of_the_bytes() {
        let payload: Vec<u8> = (0..CHUNK + 777).map(|i| (i % 253) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut a = Appender::create(&path, BLOCK).unwrap();
        a.write_all(&payload).unwrap();
        a.finish(&[9; BLOCK]).unwrap();
        let mut sum = crc32fast::Hasher::new();
        let end = BLOCK + payload.len();
        if sum_to_end(&path, BLOCK..end, &mut sum).unwrap() {
            assert_eq!(sum.finalize(), crc32fast::hash(&payload));
        }
        // Past the end: the file is shorter than the range says.
        let mut sum = crc32fast::Hasher::new();
        match sum_to_end(&path, BLOCK..end + 1, &mut sum) {
            Ok(direct) => assert!(!direct, "a sum past the file's end"),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof),
        }
    }

    #[test]
    fn the_file_must_be_new() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"old").unwrap();
        let e = Appender::create(&path, BLOCK).err().expect("refused");
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
    }
}
