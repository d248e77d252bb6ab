//! A canister's state exported to bytes and imported into a fresh engine (the disk cache
//! of installed canisters), keyed by what decides the state.

use std::io::Write;

use super::memory::heap::page_range;
use super::*;

impl EmbeddedEngine {
    pub(super) fn exported_state_key(&self, wasm: &[u8]) -> Result<Option<[u8; 32]>> {
        if disk_cache::dir().is_none() || !self.is_fresh() {
            return Ok(None);
        }
        let raw = decompress(wasm)?;
        let hash: [u8; 32] = Sha256::digest(&raw).into();
        let mut h = Sha256::new();
        h.update(STATE_FORMAT);
        // The module entry's key covers the module, the counter, wasmtime and the engine's
        // sources; the limits decide what a message may do.
        h.update(module_key(&hash, self.counter, false));
        h.update(format!("{:?}", self.limits).as_bytes());
        h.update(self.replica.name.as_bytes());
        // The host's page decides the stable page limits' granularity; the default's key is
        // the one every earlier state was kept under.
        if self.host != Host::default() {
            h.update(self.host.name().as_bytes());
        }
        Ok(Some(h.finalize().into()))
    }

    pub(super) fn export(&mut self, id: Principal) -> Result<ExportedState> {
        self.check_exportable(id)?;
        let version = self.canister(id)?.version;
        let saved = self.save(id)?;
        // Everything that can fail, and everything the engine must give, is taken here;
        // the pages are shared with the engine (frozen) and written out later.
        let parts = Parts::new(
            self,
            &saved.module,
            version,
            &saved.globals,
            &saved.certified_data,
            saved.global_timer,
        )?;
        let (heap, stable) = (saved.heap, saved.stable);
        Ok(ExportedState::new(move |w| {
            let pages: Vec<u32> = heap.written_pages().collect();
            parts.write(w, heap.len(), &pages, &|p| heap.page(p), &stable)
        }))
    }

    /// [`Self::export`]'s bytes written now from the live canister, with no frozen copy
    /// of its heap to share (a 1.44 GiB heap's copy costs a second of CPU and its memory):
    /// for a process that writes the state and ends. Where the live heap is a view of a
    /// loaded state, or its module needs a fresh instance per message, the state is
    /// exported and written as `export` gives it.
    pub(super) fn write_live(&mut self, id: Principal, w: &mut dyn std::io::Write) -> Result<()> {
        self.check_exportable(id)?;
        let c = self.canister(id)?;
        let plain = c.since_load.is_none()
            && c.module
                .as_ref()
                .is_some_and(|m| !m.fresh_instance_per_message);
        if !plain {
            return Ok(self.export(id)?.write_to(w)?);
        }
        let version = c.version;
        let module = c.module.clone().ok_or_else(|| no_instance(id, &c.lost))?;
        let inst = match c.live.as_mut() {
            Some(inst) => inst,
            None => return Err(no_instance(id, &c.lost)),
        };
        let globals = inst.global_values();
        let len = heap_bytes(inst) as usize;
        let data = inst.store.data();
        let (certified_data, global_timer) = (data.certified_data.clone(), data.global_timer);
        let c = &self.canisters[&id];
        let inst = c.live.as_ref().expect("checked above");
        let parts = Parts::new(
            self,
            &module,
            version,
            &globals,
            &certified_data,
            global_timer,
        )?;
        let heap: &[u8] = match &inst.heap {
            // SAFETY: between messages the live heap is the committed one and no Wasm runs
            // while it is read.
            Some(h) => unsafe { &h.bytes_mut()?[..len] },
            None => &[],
        };
        let pages: Vec<u32> = c
            .heap_written
            .iter()
            .take_while(|&p| page_range(p).end <= len)
            .collect();
        let stable = inst.store.data().stable.image();
        parts.write(w, len, &pages, &|p| &heap[page_range(p)], stable)?;
        Ok(())
    }

    /// Only a fresh engine's one canister can be exported: its state is the engine's.
    fn check_exportable(&self, id: Principal) -> Result<()> {
        if self.canisters.len() != 1 || id != canister_id(0) {
            bail!("only the first and only canister of an engine can be exported");
        }
        Ok(())
    }

    pub(super) fn import(&mut self, wasm: &[u8], state: StateBytes<'_>) -> Result<Principal> {
        if !self.is_fresh() {
            bail!("a state can only be imported into a fresh engine");
        }
        let module = self.module_of(wasm)?;
        let mut r = StateReader(state.bytes);
        if r.bytes(STATE_FORMAT.len())? != STATE_FORMAT {
            bail!("not a canister state of this format");
        }
        if r.bytes(32)? != module.wasm_hash {
            bail!("the state was made with another module");
        }
        let (time_ns, next_canister, version) = (r.u64()?, r.u64()?, r.u64()?);
        if next_canister != 1 {
            bail!("the state holds {next_canister} canisters, not 1");
        }
        // The pages are only located here; the heap and stable memory (each mapped from a
        // cache entry, or copied) are made side by side below.
        let heap_len = usize::try_from(r.u64()?)?;
        let numbers = r.page_numbers(heap_len)?;
        let pages_at = r.skip_to_page(state.bytes.len())?;
        let bytes = r.bytes(numbers.len() * OS_PAGE)?;
        let globals = decode_globals(&mut r)?;
        let stable_size = r.u64()?;
        let stable_numbers = r.stable_page_numbers()?;
        let stable_at = r.skip_to_page(state.bytes.len())?;
        let stable_bytes = r.bytes(stable_numbers.len() * OS_PAGE)?;
        let stable_file = state
            .file
            .map(|(file, offset)| (file, offset + stable_at as u64));
        let (heap, stable) = std::thread::scope(|scope| {
            let stable = scope
                .spawn(|| stable_image(stable_size, &stable_numbers, stable_bytes, stable_file));
            // From the cache entry's file where it can be: no copy.
            let mapped = match state.file {
                Some((file, offset)) => {
                    FrozenHeap::in_file(file, offset + pages_at as u64, heap_len, &numbers)
                }
                None => Ok(None),
            };
            let heap = mapped.and_then(|mapped| match mapped {
                Some(heap) => Ok(heap),
                None => FrozenHeap::from_pages(
                    heap_len,
                    numbers.iter().copied().zip(bytes.chunks(OS_PAGE)),
                ),
            });
            let stable = stable
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (heap, stable)
        });
        let (heap, stable) = (heap?, stable?);
        let certified_len = usize::try_from(r.u64()?)?;
        let certified_data = r.bytes(certified_len)?.to_vec();
        let global_timer = r.u64()?;
        if !r.0.is_empty() {
            bail!("{} bytes after the state", r.0.len());
        }
        let saved = SavedState {
            module: module.clone(),
            heap: Arc::new(heap),
            globals,
            stable,
            certified_data,
            global_timer,
            time_ns,
        };
        let id = canister_id(0);
        self.canisters.insert(
            id,
            Canister {
                module: Some(module),
                ..Canister::empty(version)
            },
        );
        let loaded = self.load(id, &saved).and_then(|()| {
            let c = self.canister(id)?;
            let have = c.live.as_ref().map_or(0, |i| i.globals.len());
            if have != saved.globals.len() {
                bail!(
                    "the state has {} mutable globals, the module {have}",
                    saved.globals.len()
                );
            }
            Ok(())
        });
        if let Err(e) = loaded {
            self.canisters.clear();
            return Err(e);
        }
        self.time_ns = time_ns;
        self.next_canister = next_canister;
        // The exporting engine installed this module, successfully, and nothing else.
        self.expected_compiled_wasms.insert(module_hash(wasm));
        Ok(id)
    }
}

impl EmbeddedEngine {
    /// The snapshot `state` as its differences from the snapshot `base` of the same
    /// canister and module: the heap pages and stable pages that differ, the mutable
    /// globals, certified data, timer and clock; [`Self::import_delta`] makes it a snapshot again
    /// on top of the same `base` (a warm start state kept beside the cold one it came from).
    pub(super) fn export_delta(
        &mut self,
        state: SnapshotId,
        base: SnapshotId,
    ) -> Result<ExportedState> {
        let (owner, saved) = self.snapshot_state(state)?;
        let (base_owner, base) = self.snapshot_state(base)?;
        if owner != base_owner || saved.module.wasm_hash != base.module.wasm_hash {
            bail!("a state can only be kept as changes to a state of its canister and module");
        }
        let mut head = Vec::new();
        head.extend_from_slice(DELTA_FORMAT);
        head.extend_from_slice(&saved.module.wasm_hash);
        let globals = encode_globals(&saved.globals)?;
        let mut tail = Vec::new();
        tail.extend_from_slice(&(saved.certified_data.len() as u64).to_le_bytes());
        tail.extend_from_slice(&saved.certified_data);
        tail.extend_from_slice(&saved.global_timer.to_le_bytes());
        tail.extend_from_slice(&saved.time_ns.to_le_bytes());
        Ok(ExportedState::new(move |w| {
            let w = &mut Counted { w, n: 0 };
            let put = |w: &mut dyn std::io::Write, n: u64| w.write_all(&n.to_le_bytes());
            w.write_all(&head)?;
            let (heap, base_heap) = (&saved.heap, &base.heap);
            let len = heap.len();
            let in_base = |p: u32| page_range(p).end <= base_heap.len();
            let base_written: std::collections::BTreeSet<u32> =
                base_heap.written_pages().filter(|&p| in_base(p)).collect();
            let written: std::collections::BTreeSet<u32> = heap.written_pages().collect();
            let changed: Vec<u32> = written
                .iter()
                .copied()
                .filter(|&p| !base_written.contains(&p) || heap.page(p) != base_heap.page(p))
                .collect();
            let dropped: Vec<u32> = base_written
                .iter()
                .copied()
                .filter(|&p| page_range(p).end <= len && !written.contains(&p))
                .collect();
            put(w, len as u64)?;
            put(w, changed.len() as u64)?;
            for &p in &changed {
                put(w, p as u64)?;
            }
            put(w, dropped.len() as u64)?;
            for p in dropped {
                put(w, p as u64)?;
            }
            // The changed pages start on a page boundary, as a state's pages do.
            pad_to_page(w)?;
            for p in changed {
                w.write_all(heap.page(p))?;
            }
            w.write_all(&globals)?;
            let stable = saved.stable.changes_from(&base.stable);
            put(w, saved.stable.size_wasm_pages())?;
            put(w, stable.len() as u64)?;
            for (n, bytes) in stable {
                put(w, n)?;
                match bytes {
                    Some(bytes) => {
                        w.write_all(&[1])?;
                        w.write_all(bytes)?;
                    }
                    None => w.write_all(&[0])?,
                }
            }
            w.write_all(&tail)
        }))
    }

    /// A snapshot of `base`'s canister: `base` with the differences [`Self::export_delta`]
    /// wrote. On an error nothing changed.
    pub(super) fn import_delta(
        &mut self,
        base: SnapshotId,
        delta: StateBytes<'_>,
    ) -> Result<SnapshotId> {
        let (owner, base) = self.snapshot_state(base)?;
        let mut r = StateReader(delta.bytes);
        if r.bytes(DELTA_FORMAT.len())? != DELTA_FORMAT {
            bail!("not a canister state delta of this format");
        }
        if r.bytes(32)? != base.module.wasm_hash {
            bail!("the delta was made with another module");
        }
        let len = usize::try_from(r.u64()?)?;
        let numbers = r.page_numbers(len)?;
        let mut dropped = std::collections::BTreeSet::new();
        for _ in 0..r.u64()? {
            dropped.insert(r.u64()? as u32);
        }
        let pages_at = r.skip_to_page(delta.bytes.len())?;
        let changed: std::collections::BTreeMap<u32, &[u8]> = numbers
            .iter()
            .copied()
            .zip(r.bytes(numbers.len() * OS_PAGE)?.chunks(OS_PAGE))
            .collect();
        let globals = decode_globals(&mut r)?;
        let stable_size = r.u64()?;
        let mut stable = Vec::new();
        for _ in 0..r.u64()? {
            let n = r.u64()?;
            stable.push(match r.bytes(1)?[0] {
                1 => (n, Some(r.bytes(OS_PAGE)?)),
                0 => (n, None),
                other => bail!("stable page {n} has an unknown kind {other}"),
            });
        }
        let certified_len = usize::try_from(r.u64()?)?;
        let certified_data = r.bytes(certified_len)?.to_vec();
        let global_timer = r.u64()?;
        let time_ns = r.u64()?;
        if !r.0.is_empty() {
            bail!("{} bytes after the delta", r.0.len());
        }
        // The base's pages where the delta names none, its own where it does, in order.
        let kept: Vec<u32> = base
            .heap
            .written_pages()
            .filter(|&p| {
                page_range(p).end <= len && !changed.contains_key(&p) && !dropped.contains(&p)
            })
            .collect();
        let (heap, stable) = std::thread::scope(|scope| {
            let stable = scope.spawn(|| base.stable.with_changes(stable_size, &stable));
            // The base's pages from its files and the changed ones from the delta's where
            // both are files: no copy.
            let heap = mapped_delta(&base.heap, &kept, delta, pages_at, &numbers, len).and_then(
                |mapped| match mapped {
                    Some(heap) => Ok(heap),
                    None => {
                        let mut all: Vec<(u32, &[u8])> =
                            kept.iter().map(|&p| (p, base.heap.page(p))).collect();
                        all.extend(changed.iter().map(|(&p, &bytes)| (p, bytes)));
                        all.sort_by_key(|&(p, _)| p);
                        FrozenHeap::from_pages(len, all.into_iter())
                    }
                },
            );
            let stable = stable
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (heap, stable)
        });
        let saved = SavedState {
            module: base.module.clone(),
            heap: Arc::new(heap?),
            globals,
            stable: stable?,
            certified_data,
            global_timer,
            time_ns,
        };
        self.snapshots.push(Some((owner, Arc::new(saved))));
        Ok(SnapshotId(self.snapshots.len() as u64 - 1))
    }

    /// A snapshot's canister and state; an error for one forgotten or never taken.
    fn snapshot_state(&self, snapshot: SnapshotId) -> Result<(Principal, Arc<SavedState>)> {
        match self.snapshots.get(snapshot.0 as usize) {
            Some(Some((owner, saved))) => Ok((*owner, saved.clone())),
            Some(None) => bail!("snapshot {} was forgotten", snapshot.0),
            None => bail!("snapshot {} does not exist", snapshot.0),
        }
    }
}

/// The mutable globals as exported states write them: their count, then a tag and 16 bytes
/// each.
/// What an exported state holds besides its heap's pages and stable memory, encoded:
/// the engine's and the canister's own values before the heap, its mutable globals, and
/// its certified data and timer after stable memory.
struct Parts {
    head: Vec<u8>,
    globals: Vec<u8>,
    tail: Vec<u8>,
}

impl Parts {
    fn new(
        engine: &EmbeddedEngine,
        module: &LoadedModule,
        version: u64,
        globals: &[Val],
        certified_data: &[u8],
        global_timer: u64,
    ) -> Result<Parts> {
        let put = |w: &mut Vec<u8>, n: u64| w.extend_from_slice(&n.to_le_bytes());
        let mut head = Vec::new();
        head.extend_from_slice(STATE_FORMAT);
        head.extend_from_slice(&module.wasm_hash);
        put(&mut head, engine.time_ns);
        put(&mut head, engine.next_canister);
        put(&mut head, version);
        let mut tail = Vec::new();
        put(&mut tail, certified_data.len() as u64);
        tail.extend_from_slice(certified_data);
        put(&mut tail, global_timer);
        Ok(Parts {
            head,
            globals: encode_globals(globals)?,
            tail,
        })
    }

    /// The state's bytes: these parts around a heap of `heap_len` bytes whose `pages`
    /// (every other page zero) are `page(p)`, and `stable`.
    fn write<'h>(
        &self,
        w: &mut dyn std::io::Write,
        heap_len: usize,
        pages: &[u32],
        page: &dyn Fn(u32) -> &'h [u8],
        stable: &StableImage,
    ) -> std::io::Result<()> {
        let w = &mut Counted { w, n: 0 };
        let put = |w: &mut dyn std::io::Write, n: u64| w.write_all(&n.to_le_bytes());
        w.write_all(&self.head)?;
        put(w, heap_len as u64)?;
        put(w, pages.len() as u64)?;
        for &p in pages {
            put(w, p as u64)?;
        }
        pad_to_page(w)?;
        for &p in pages {
            w.write_all(page(p))?;
        }
        w.write_all(&self.globals)?;
        put(w, stable.size_wasm_pages())?;
        put(w, stable.stored_pages() as u64)?;
        let mut numbers = Vec::with_capacity(stable.stored_pages());
        stable.for_each_page(|n, _| numbers.push(n));
        for n in numbers {
            put(w, n)?;
        }
        // Stable pages start on a page boundary too, so that they can be mapped.
        pad_to_page(w)?;
        let mut written = Ok(());
        stable.for_each_page(|_, bytes| {
            if written.is_ok() {
                written = w.write_all(bytes);
            }
        });
        written?;
        w.write_all(&self.tail)
    }
}

fn encode_globals(globals: &[Val]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    out.extend_from_slice(&(globals.len() as u64).to_le_bytes());
    for g in globals {
        let (tag, bits): (u64, u128) = match g {
            Val::I32(v) => (0, *v as u32 as u128),
            Val::I64(v) => (1, *v as u64 as u128),
            Val::F32(v) => (2, *v as u128),
            Val::F64(v) => (3, *v as u128),
            Val::V128(v) => (4, v.as_u128()),
            other => bail!("a mutable global holds a reference ({other:?}): not exportable"),
        };
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&bits.to_le_bytes());
    }
    Ok(out)
}

/// The globals [`encode_globals`] wrote.
fn decode_globals(r: &mut StateReader<'_>) -> Result<Vec<Val>> {
    let mut globals = Vec::new();
    for _ in 0..r.u64()? {
        let tag = r.u64()?;
        let bits = u128::from_le_bytes(r.bytes(16)?.try_into().unwrap());
        globals.push(match tag {
            0 => Val::I32(bits as u32 as i32),
            1 => Val::I64(bits as u64 as i64),
            2 => Val::F32(bits as u32),
            3 => Val::F64(bits as u64),
            4 => Val::V128(bits.into()),
            _ => bail!("unknown global type tag {tag}"),
        });
    }
    Ok(globals)
}

/// The first bytes of a state kept as changes to another ([`EmbeddedEngine::export_delta`]).
const DELTA_FORMAT: &[u8; 24] = b"icbench canister delta 3";

/// The first bytes of an exported canister state; the number changes with the layout.
const STATE_FORMAT: &[u8; 24] = b"icbench canister state 3";

/// Zeros up to the next page boundary of what `w` wrote: the pages that follow can be
/// mapped from a cache entry's file (whose payload starts on a page boundary).
fn pad_to_page(w: &mut Counted<'_>) -> std::io::Result<()> {
    let pad = w.n.next_multiple_of(OS_PAGE as u64) - w.n;
    w.write_all(&vec![0; pad as usize])
}

/// A state's stable pages `numbers`, whose bytes are `bytes` and lie in `file` from the
/// offset given with it when the state is a cache entry's file: mapped from the file on
/// Linux (no copy), else copied.
fn stable_image(
    size_wasm_pages: u64,
    numbers: &[u64],
    bytes: &[u8],
    file: Option<(&std::fs::File, u64)>,
) -> Result<StableImage> {
    #[cfg(target_os = "linux")]
    if let Some((file, at)) = file {
        return StableImage::in_file(size_wasm_pages, numbers, file, at);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
    let pages: Vec<(u64, &[u8])> = numbers.iter().copied().zip(bytes.chunks(OS_PAGE)).collect();
    StableImage::from_pages(size_wasm_pages, &pages)
}

/// `base`'s pages `kept` and the delta's pages `changed`, which lie one after another from
/// byte `pages_at` of `delta`, as a heap of `len` bytes mapped from their files: None when
/// either is not in a file, or off Linux (the caller copies them).
fn mapped_delta(
    base: &FrozenHeap,
    kept: &[u32],
    delta: StateBytes<'_>,
    pages_at: usize,
    changed: &[u32],
    len: usize,
) -> Result<Option<FrozenHeap>> {
    #[cfg(target_os = "linux")]
    if let (Some((file, offset)), Some(mut all)) = (delta.file, base.sources(kept)) {
        let file = std::sync::Arc::new(std::os::fd::OwnedFd::from(file.try_clone()?));
        let at = offset + pages_at as u64;
        all.extend(
            changed
                .iter()
                .enumerate()
                .map(|(i, &p)| (p, file.clone(), at + (i * OS_PAGE) as u64)),
        );
        all.sort_unstable_by_key(|s| s.0);
        return FrozenHeap::from_sources(len, all);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (base, kept, delta, pages_at, changed, len);
    Ok(None)
}

/// A writer that counts the bytes written through it.
struct Counted<'a> {
    w: &'a mut dyn std::io::Write,
    n: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.w.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// Reads an exported state, refusing to read past its end.
struct StateReader<'a>(&'a [u8]);

impl<'a> StateReader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            bail!("the state ends early");
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(8)?.try_into().unwrap()))
    }
    /// A count and as many heap page numbers, each inside a heap of `len` bytes and above
    /// the one before.
    fn page_numbers(&mut self, len: usize) -> Result<Vec<u32>> {
        let pages = (len / OS_PAGE) as u64;
        let mut numbers: Vec<u32> = Vec::new();
        for _ in 0..self.u64()? {
            let p = self.u64()?;
            if p >= pages {
                bail!("heap page {p} is past the heap's {pages} pages");
            }
            if numbers.last().is_some_and(|&last| last >= p as u32) {
                bail!("heap page {p} is out of order");
            }
            numbers.push(p as u32);
        }
        Ok(numbers)
    }
    /// A count and as many stable page numbers, each above the one before.
    fn stable_page_numbers(&mut self) -> Result<Vec<u64>> {
        let mut numbers: Vec<u64> = Vec::new();
        for _ in 0..self.u64()? {
            let n = self.u64()?;
            if numbers.last().is_some_and(|&last| last >= n) {
                bail!("stable page {n} is out of order");
            }
            numbers.push(n);
        }
        Ok(numbers)
    }
    /// Skips the zeros [`pad_to_page`] wrote, of a state or delta `total` bytes long;
    /// returns where the pages after them start.
    fn skip_to_page(&mut self, total: usize) -> Result<usize> {
        let at = total - self.0.len();
        if self
            .bytes(at.next_multiple_of(OS_PAGE) - at)?
            .iter()
            .any(|&b| b != 0)
        {
            bail!("the pages are not where the layout puts them");
        }
        Ok(total - self.0.len())
    }
}
