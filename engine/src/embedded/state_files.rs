//! A canister made from a downloaded snapshot's files, and its state written back in the
//! same shape ([`crate::state_files`]). The memories are mapped from the files, not read:
//! a message pays for, and the process holds, only the pages it touches.

use std::fs::File;

use super::*;
use crate::state_files::{
    engine_globals, snapshot_globals, GlobalValue, MemoryFile, StateFiles, SystemState,
    WrittenState,
};

impl EmbeddedEngine {
    /// Makes a fresh engine's first canister of a downloaded snapshot's files (the module,
    /// its memories mapped from their files, its globals, timer and clock); returns it. On
    /// an error nothing changed.
    pub fn load_state_files(&mut self, files: &StateFiles<'_>) -> Result<Principal> {
        if !self.is_fresh() {
            bail!("a snapshot can only be loaded into a fresh engine");
        }
        let module = self.module_of(files.wasm)?;
        let system = files.system;
        let listed = snapshot_globals(&module.raw)?;
        if listed.len() != system.globals.len() {
            bail!(
                "the snapshot lists {} globals, the module has {} (its exported globals and its other mutable ones): the snapshot is of another module",
                system.globals.len(),
                listed.len()
            );
        }
        let mut by_index = HashMap::new();
        for (i, (g, v)) in listed.iter().zip(&system.globals).enumerate() {
            if g.type_name != v.type_name() {
                bail!(
                    "global {i} of the snapshot is {}, the module's is {}: the snapshot is of another module",
                    v.type_name(),
                    g.type_name
                );
            }
            by_index.insert(g.index, *v);
        }
        let globals: Vec<Val> = engine_globals(&listed)
            .iter()
            .map(|i| to_val(by_index[i]))
            .collect();
        let heap_len = memory_len(files.heap, "wasm memory")?;
        if !module.wasm64 && files.heap.len > MAX_WASM32_HEAP {
            bail!(
                "the wasm memory is {} bytes, more than the 4 GiB a 32-bit heap can hold",
                files.heap.len
            );
        }
        let heap = heap_from_file(files.heap.file, heap_len)?;
        let stable = match files.stable {
            Some(s) => stable_from_file(s)?,
            None => StableImage::default(),
        };
        let saved = SavedState {
            module: module.clone(),
            heap: Arc::new(heap),
            globals,
            stable,
            certified_data: system.certified_data.clone(),
            global_timer: system.global_timer.unwrap_or(0),
            time_ns: system.time_ns,
        };
        let id = files.canister_id.unwrap_or_else(|| canister_id(0));
        self.canisters.insert(
            id,
            Canister {
                module: Some(module),
                ..Canister::empty(system.canister_version)
            },
        );
        if let Err(e) = self.load(id, &saved) {
            self.canisters.clear();
            return Err(e);
        }
        self.time_ns = system.time_ns;
        self.next_canister = 1;
        Ok(id)
    }

    /// Writes canister `id`'s heap and stable memory into `heap_file` and `stable_file` as a
    /// downloaded snapshot holds them (raw, holes where pages are zero) and gives the rest
    /// of its state.
    pub fn write_state_files(
        &mut self,
        id: Principal,
        heap_file: &mut File,
        stable_file: &mut File,
    ) -> Result<WrittenState> {
        let version = self.canister(id)?.version;
        let saved = self.save(id)?;
        let listed = snapshot_globals(&saved.module.raw)?;
        let c = self.canister(id)?;
        let inst = c.instance(id)?;
        let order = engine_globals(&listed);
        if order.len() != saved.globals.len() {
            bail!(
                "the canister holds {} mutable globals, its module {}",
                saved.globals.len(),
                order.len()
            );
        }
        let by_index: HashMap<u32, Val> = order
            .into_iter()
            .zip(saved.globals.iter().copied())
            .collect();
        let mut globals = Vec::with_capacity(listed.len());
        for g in &listed {
            let v = if g.mutable {
                by_index[&g.index]
            } else {
                let name = g
                    .export
                    .as_deref()
                    .expect("an immutable global is listed by its export");
                inst.instance
                    .get_global(&mut inst.store, name)
                    .ok_or_else(|| anyhow!("the instance has no global export {name}"))?
                    .get(&mut inst.store)
            };
            globals.push(from_val(v)?);
        }
        let heap = &saved.heap;
        write_pages(
            heap_file,
            heap.len() as u64,
            heap.written_pages().map(|p| (p as u64, heap.page(p))),
        )?;
        let stable_bytes = saved.stable.size_wasm_pages() * WASM_PAGE;
        write_pages(stable_file, stable_bytes, std::iter::empty())?;
        let mut written = Ok(());
        saved.stable.for_each_page(|n, bytes| {
            if written.is_ok() {
                written = write_at(stable_file, bytes, n * OS_PAGE as u64);
            }
        });
        written?;
        Ok(WrittenState {
            heap_bytes: heap.len() as u64,
            stable_bytes,
            system: SystemState {
                globals,
                certified_data: saved.certified_data.clone(),
                global_timer: (saved.global_timer != 0).then_some(saved.global_timer),
                time_ns: self.time_ns,
                canister_version: version,
            },
        })
    }
}

/// A 32-bit heap's most: 4 GiB.
const MAX_WASM32_HEAP: u64 = 4 << 30;

/// `memory`'s length, which must be whole Wasm pages and within the file.
fn memory_len(memory: MemoryFile<'_>, what: &str) -> Result<usize> {
    if !memory.len.is_multiple_of(WASM_PAGE) {
        bail!(
            "the {what} is {} bytes, not a whole number of 64 KiB Wasm pages",
            memory.len
        );
    }
    let have = memory.file.metadata()?.len();
    if have < memory.len {
        bail!(
            "the {what}'s file holds {have} bytes, fewer than its {}",
            memory.len
        );
    }
    Ok(usize::try_from(memory.len)?)
}

/// A heap of `len` bytes, the first `len` bytes of `file`: its pages mapped from the file
/// where they may hold data (a sparse file's holes stay zero pages of no file).
fn heap_from_file(file: &File, len: usize) -> Result<FrozenHeap> {
    let runs = data_runs(file, len as u64, OS_PAGE as u64)?;
    #[cfg(target_os = "linux")]
    {
        let fd: std::sync::Arc<std::os::fd::OwnedFd> =
            std::sync::Arc::new(file.try_clone()?.into());
        let sources = runs.iter().flat_map(|&(first, count)| {
            let fd = fd.clone();
            (first..first + count).map(move |p| (p as u32, fd.clone(), p * OS_PAGE as u64))
        });
        if let Some(heap) = FrozenHeap::from_sources(len, sources)? {
            return Ok(heap);
        }
    }
    // Too scattered to map, or off Linux: the pages are read.
    let mut pages = Vec::new();
    for (first, count) in runs {
        let mut bytes = vec![0; count as usize * OS_PAGE];
        read_at(file, &mut bytes, first * OS_PAGE as u64)?;
        pages.push((first, bytes));
    }
    FrozenHeap::from_pages(
        len,
        pages.iter().flat_map(|(first, bytes)| {
            bytes
                .chunks(OS_PAGE)
                .enumerate()
                .map(move |(i, page)| ((*first as usize + i) as u32, page))
        }),
    )
}

fn stable_from_file(stable: MemoryFile<'_>) -> Result<StableImage> {
    memory_len(stable, "stable memory")?;
    let size = stable.len / WASM_PAGE;
    let runs = data_runs(stable.file, stable.len, OS_PAGE as u64)?;
    #[cfg(target_os = "linux")]
    {
        StableImage::in_raw_file(size, stable.file, &runs)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let mut pages = Vec::new();
        for (first, count) in runs {
            let mut bytes = vec![0; count as usize * OS_PAGE];
            read_at(stable.file, &mut bytes, first * OS_PAGE as u64)?;
            pages.push((first, bytes));
        }
        let all: Vec<(u64, &[u8])> = pages
            .iter()
            .flat_map(|(first, bytes)| {
                bytes
                    .chunks(OS_PAGE)
                    .enumerate()
                    .map(move |(i, page)| (first + i as u64, page))
            })
            .collect();
        StableImage::from_pages(size, &all)
    }
}

fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, at)
    }
    #[cfg(not(unix))]
    {
        std::os::windows::fs::FileExt::seek_read(file, buf, at).map(|_| ())
    }
}

/// A raw memory of `len` bytes in `file` (emptied first) holding `pages`: every other byte
/// is zero, left as a hole where the filesystem has them.
fn write_pages<'a>(
    file: &mut File,
    len: u64,
    pages: impl Iterator<Item = (u64, &'a [u8])>,
) -> Result<()> {
    file.set_len(0)?;
    file.set_len(len)?;
    for (n, bytes) in pages {
        write_at(file, bytes, n * OS_PAGE as u64)?;
    }
    Ok(())
}

fn write_at(file: &File, bytes: &[u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, bytes, at)
    }
    #[cfg(not(unix))]
    {
        std::os::windows::fs::FileExt::seek_write(file, bytes, at).map(|_| ())
    }
}

fn to_val(v: GlobalValue) -> Val {
    match v {
        GlobalValue::I32(x) => Val::I32(x),
        GlobalValue::I64(x) => Val::I64(x),
        GlobalValue::F32(x) => Val::F32(x),
        GlobalValue::F64(x) => Val::F64(x),
        GlobalValue::V128(x) => Val::V128(x.into()),
    }
}

fn from_val(v: Val) -> Result<GlobalValue> {
    Ok(match v {
        Val::I32(x) => GlobalValue::I32(x),
        Val::I64(x) => GlobalValue::I64(x),
        Val::F32(x) => GlobalValue::F32(x),
        Val::F64(x) => GlobalValue::F64(x),
        Val::V128(x) => GlobalValue::V128(x.as_u128()),
        other => bail!("a global holds a reference ({other:?}), which no snapshot holds"),
    })
}

/// The runs of `file`'s first `len` bytes that may hold data, as (first page, pages) in
/// pages of `page` bytes: a sparse file's holes are left out, so a 64 GiB stable memory
/// of which a few MB were ever written is read as those few MB. Where the system cannot
/// say, the whole range.
fn data_runs(file: &File, len: u64, page: u64) -> std::io::Result<Vec<(u64, u64)>> {
    let pages = len.div_ceil(page);
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut at: i64 = 0;
        while (at as u64) < len {
            // SAFETY: lseek on an open descriptor; it only moves the file's offset.
            let data = unsafe { libc::lseek(fd, at, libc::SEEK_DATA) };
            if data < 0 {
                let e = std::io::Error::last_os_error();
                return match e.raw_os_error() {
                    // No data from here to the end.
                    Some(libc::ENXIO) => Ok(runs),
                    // The filesystem cannot say: all of it.
                    Some(libc::EINVAL) => Ok(vec![(0, pages)]),
                    _ => Err(e),
                };
            }
            // SAFETY: as above.
            let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
            if hole < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let first = data as u64 / page;
            let end = (hole as u64).min(len).div_ceil(page);
            match runs.last_mut() {
                Some(last) if last.0 + last.1 >= first => {
                    last.1 = end.max(last.0 + last.1) - last.0
                }
                _ if end > first => runs.push((first, end - first)),
                _ => {}
            }
            at = hole;
        }
        Ok(runs)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        Ok(if pages == 0 { vec![] } else { vec![(0, pages)] })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_file_is_read_where_it_holds_data() {
        use std::io::{Seek, SeekFrom, Write};
        let dir = crate::testing::fresh_temp_dir("data-runs", "sparse");
        std::fs::create_dir_all(&dir).unwrap();
        let mut f = File::create(dir.join("f")).unwrap();
        f.set_len(64 << 20).unwrap();
        f.seek(SeekFrom::Start(8 << 20)).unwrap();
        f.write_all(&[1; 4096]).unwrap();
        f.sync_all().unwrap();
        let runs = data_runs(&f, 64 << 20, 4096).unwrap();
        // The filesystem decides the extent's size; the page written is in it and the run
        // is far shorter than the file.
        assert!(
            runs.iter().any(|&(p, n)| p <= 2048 && 2048 < p + n),
            "{runs:?}"
        );
        assert!(
            runs.iter().map(|r| r.1).sum::<u64>() < 16384 / 2,
            "{runs:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
