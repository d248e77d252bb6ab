//! A canister's saved states: saving and loading them (sharing the frozen heap and
//! copying back only what changed where it can), snapshots, and forks of the engine that
//! start from one.

use super::*;

impl EmbeddedEngine {
    /// [`Self::load`] after a message: a fresh state for the instance, but the message's log
    /// stays the last one.
    pub(super) fn load_keeping_log(&mut self, id: Principal, saved: &SavedState) -> Result<()> {
        let log = self.last_log(id);
        self.load(id, saved)?;
        if let Some(inst) = &mut self.canister(id)?.live {
            inst.store.data_mut().log = log;
        }
        Ok(())
    }

    pub(super) fn save(&mut self, id: Principal) -> Result<SavedState> {
        let c = self.canister(id)?;
        let module = c
            .module
            .clone()
            .ok_or_else(|| anyhow!("canister {id} has no module installed"))?;
        let inst = match c.live.as_mut() {
            Some(inst) => inst,
            None => return Err(no_instance(id, &c.lost)),
        };
        let globals = inst.global_values();
        let len = heap_bytes(inst) as usize;
        let heap = match (shared_or_layered(&c.since_load, inst, len)?, &inst.heap) {
            (Some(heap), _) => heap,
            (None, Some(h)) if !module.fresh_instance_per_message => {
                // SAFETY: between messages the live heap is the committed one, not armed.
                let (frozen, view) =
                    unsafe { FrozenHeap::moved_from(h.bytes_mut()?, &c.heap_written)? };
                let frozen = Arc::new(frozen);
                if view != 0 {
                    // As after a restore: the live heap is a view of the state saved.
                    h.set_view_of(view, std::iter::empty());
                    c.since_load = Some(SinceLoad {
                        heap: frozen.clone(),
                        pages: HashSet::new(),
                    });
                }
                frozen
            }
            (None, _) => Arc::new(FrozenHeap::of(committed(inst, len)?, &c.heap_written)?),
        };
        let data = inst.store.data();
        Ok(SavedState {
            module,
            heap,
            globals,
            stable: data.stable.image().clone(),
            certified_data: data.certified_data.clone(),
            global_timer: data.global_timer,
            time_ns: self.time_ns,
        })
    }

    pub(super) fn load(&mut self, id: Principal, saved: &SavedState) -> Result<()> {
        let version = self.canister(id)?.version;
        let state = self.new_host_state(id, saved.stable.clone(), version);
        let module = variant(&saved.module, self.profiling)?;
        let Some(state) = self.reload_in_place(id, saved, &module, state)? else {
            return Ok(());
        };
        let inst = restore_instance(saved, &module, state)?;
        let c = self.canister(id)?;
        c.heap_written = saved.heap.written_pages().collect();
        c.module = Some(module);
        c.live = Some(inst);
        c.lost = None;
        c.since_load = Some(SinceLoad {
            heap: saved.heap.clone(),
            pages: HashSet::new(),
        });
        Ok(())
    }

    /// Loads `saved` into the live instance when that instance was loaded from the same
    /// state and its heap has not grown since: only the pages committed since are copied
    /// back. A fresh instance (the other path) maps and copies the whole heap, which for a
    /// 1M-row canister was an eighth of a benchmark run. Hands `state` back if this does
    /// not apply.
    fn reload_in_place(
        &mut self,
        id: Principal,
        saved: &SavedState,
        module: &Arc<LoadedModule>,
        state: HostState,
    ) -> Result<Option<HostState>> {
        let c = self.canister(id)?;
        // The live instance must run the variant (profiled or not) wanted now.
        let same_module = c.module.as_ref().is_some_and(|m| Arc::ptr_eq(m, module));
        let (Some(since), Some(inst)) = (&mut c.since_load, &mut c.live) else {
            return Ok(Some(state));
        };
        let same_state = same_module
            && Arc::ptr_eq(&since.heap, &saved.heap)
            && !saved.module.fresh_instance_per_message
            && heap_bytes(inst) == saved.heap.len() as u64;
        if !same_state {
            return Ok(Some(state));
        }
        let mut pages: Vec<u32> = since.pages.drain().collect();
        pages.sort_unstable();
        if let Some(h) = &inst.heap {
            // Dropping a view's copies touches no byte: the heap may stay closed.
            let live = if saved.heap.reverts_by_dropping(h.view_of()) {
                // SAFETY: no Wasm is running, and only `madvise` reaches these bytes.
                unsafe { h.bytes_as_they_are() }
            } else {
                // SAFETY: no Wasm is running.
                unsafe { h.bytes_mut()? }
            };
            // SAFETY: no Wasm is running; the heap has the saved length (checked above),
            // and its view id is the one `map_into` gave when it was loaded.
            if unsafe { saved.heap.revert_live(live, h.view_of(), &pages)? } {
                h.mark_clean(
                    pages
                        .iter()
                        .copied()
                        .filter(|&p| !saved.heap.is_own_page(p)),
                );
            }
        }
        for (g, v) in inst.globals.iter().zip(&saved.globals) {
            g.set(&mut inst.store, *v)?;
        }
        // The instance's handles stay; everything else is the state as loaded.
        let old = std::mem::replace(inst.store.data_mut(), state);
        let data = inst.store.data_mut();
        data.counter = old.counter;
        data.memory = old.memory;
        data.heap = old.heap;
        // Its marks too: the next message clears them.
        data.native_stable = old.native_stable;
        data.certified_data = saved.certified_data.clone();
        data.global_timer = saved.global_timer;
        Ok(None)
    }

    pub(super) fn take_snapshot(&mut self, id: Principal) -> Result<SnapshotId> {
        let saved = self.save(id)?;
        self.snapshots.push(Some((id, Arc::new(saved))));
        Ok(SnapshotId(self.snapshots.len() as u64 - 1))
    }

    pub(super) fn restore_snapshot(&mut self, id: Principal, snapshot: SnapshotId) -> Result<()> {
        let (owner, saved) = match self.snapshots.get(snapshot.0 as usize) {
            Some(Some(s)) => s.clone(),
            Some(None) => bail!("snapshot {} was forgotten", snapshot.0),
            None => bail!("snapshot {} does not exist", snapshot.0),
        };
        if owner != id {
            bail!(
                "snapshot {} belongs to canister {owner}, not {id}",
                snapshot.0
            );
        }
        self.load(id, &saved)?;
        self.time_ns = saved.time_ns;
        Ok(())
    }

    pub(super) fn share_snapshot(
        &mut self,
        snapshot: SnapshotId,
    ) -> Result<Option<SharedSnapshot>> {
        let (owner, saved) = match self.snapshots.get(snapshot.0 as usize) {
            Some(Some(s)) => s.clone(),
            Some(None) => bail!("snapshot {} was forgotten", snapshot.0),
            None => bail!("snapshot {} does not exist", snapshot.0),
        };
        let version = self.canister(owner)?.version;
        Ok(Some(SharedSnapshot {
            canister: owner,
            state: Arc::new(Shared { saved, version }),
        }))
    }

    pub(super) fn adopt_snapshot(&mut self, shared: &SharedSnapshot) -> Result<SnapshotId> {
        let Some(state) = shared.state.downcast_ref::<Shared>() else {
            bail!("the snapshot was shared by another kind of engine");
        };
        // A fork of another canister's engine gets the canister as the state left it.
        self.canisters
            .entry(shared.canister)
            .or_insert_with(|| Canister::empty(state.version));
        self.snapshots
            .push(Some((shared.canister, state.saved.clone())));
        Ok(SnapshotId(self.snapshots.len() as u64 - 1))
    }

    pub(super) fn forget_snapshot(&mut self, snapshot: SnapshotId) -> Result<()> {
        match self.snapshots.get_mut(snapshot.0 as usize) {
            Some(slot) => {
                *slot = None;
                Ok(())
            }
            None => bail!("snapshot {} does not exist", snapshot.0),
        }
    }

    /// [`Engine::fork`] with the concrete type, for callers that use the embedded
    /// engine's own methods (canbench sets the clock).
    pub fn fork_at(&mut self, id: Principal, snapshot: SnapshotId) -> Result<EmbeddedEngine> {
        let version = self.canister(id)?.version;
        let mut fork = EmbeddedEngine {
            limits: self.limits,
            canisters: HashMap::new(),
            // Shared, not copied: stable pages are `Arc`s replaced on write, and a frozen
            // heap is only read (each engine maps it copy-on-write).
            snapshots: self.snapshots.clone(),
            time_ns: self.time_ns,
            next_canister: self.next_canister,
            print_log: self.print_log,
            counter: self.counter,
            profiling: self.profiling,
            replica: self.replica,
            host: self.host,
            counter_reads: self.counter_reads.clone(),
            last_counter_reads: Vec::new(),
            sent: Vec::new(),
            answer: None,
            trapped: false,
            tree: Vec::new(),
            metering: self.metering,
            expected_compiled_wasms: self.expected_compiled_wasms.clone(),
            caller: self.caller.clone(),
            replies: self.replies.clone(),
            settings: self.settings.clone(),
        };
        fork.canisters.insert(id, Canister::empty(version));
        fork.restore_snapshot(id, snapshot)?;
        Ok(fork)
    }
}

/// A canister's committed heap (the live heap's first `len` bytes, whose pages other than
/// `written` are zero), frozen. Since the last load, with nothing committed: the
/// loaded state's frozen heap itself, shared (a snapshot or an upgrade right after a
/// restore of a 10,000,000-row heap map would otherwise copy gigabytes); with a few pages
/// committed and the heap not grown: that frozen heap plus copies of those pages; else a
/// copy of the whole heap. Every form has the same bytes.
pub(super) fn frozen_committed(
    since_load: &Option<SinceLoad>,
    inst: &Instance,
    len: usize,
    written: &PageSet,
) -> Result<Arc<FrozenHeap>> {
    if let Some(heap) = shared_or_layered(since_load, inst, len)? {
        return Ok(heap);
    }
    Ok(Arc::new(FrozenHeap::of(committed(inst, len)?, written)?))
}

/// The live heap's first `len` bytes: between messages (or rolled back, up to `len`: a
/// failed message that grew the heap) the committed heap.
fn committed(inst: &Instance, len: usize) -> Result<&[u8]> {
    Ok(match &inst.heap {
        // SAFETY: no Wasm runs while the caller reads (between messages).
        Some(h) => unsafe { &h.bytes_mut()?[..len] },
        None => &[],
    })
}

/// [`frozen_committed`]'s forms that share the loaded state's frozen heap, when one
/// applies; `None`: the heap needs a whole copy.
fn shared_or_layered(
    since_load: &Option<SinceLoad>,
    inst: &Instance,
    len: usize,
) -> Result<Option<Arc<FrozenHeap>>> {
    let Some(since) = since_load else {
        return Ok(None);
    };
    let pages = since.heap.len() / OS_PAGE;
    if since.heap.len() != len || pages == 0 {
        return Ok(None);
    }
    if since.pages.is_empty() {
        return Ok(Some(since.heap.clone()));
    }
    // A layer pays off while it holds a small part of the heap.
    if (since.pages.len() + since.heap.layer_pages()) * 4 < pages {
        let mut changed: Vec<u32> = since.pages.iter().copied().collect();
        changed.sort_unstable();
        return Ok(Some(Arc::new(FrozenHeap::layered(
            &since.heap,
            committed(inst, len)?,
            changed.into_iter(),
        )?)));
    }
    Ok(None)
}

fn restore_instance(
    saved: &SavedState,
    module: &LoadedModule,
    state: HostState,
) -> Result<Instance> {
    let mut inst = instantiate(module, state)?;
    let zero_from = grow_heap(&mut inst, saved.heap.len())?;
    if let Some(h) = &inst.heap {
        // SAFETY: the slice is the instance's own heap mapping, not armed; no Wasm runs.
        let view = unsafe { saved.heap.map_into(h.bytes_mut()?, zero_from)? };
        h.set_view_of(view, saved.heap.own_pages());
    }
    for (g, v) in inst.globals.clone().iter().zip(&saved.globals) {
        g.set(&mut inst.store, *v)?;
    }
    let state = inst.store.data_mut();
    state.certified_data = saved.certified_data.clone();
    state.global_timer = saved.global_timer;
    Ok(inst)
}
