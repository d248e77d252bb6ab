//! A canister's install_code: install, upgrade and reinstall, each a fresh instance of the
//! new module started under one instruction limit shared by compilation and every stage,
//! rolled back as the replica rolls it back when a stage fails.

use super::*;

/// The module an install_code puts in: loaded as the engine runs it now, and the hash the
/// subnet's expected compiled modules are keyed by.
pub(super) struct NewModule {
    module: Arc<LoadedModule>,
    hash: [u8; 32],
}

impl EmbeddedEngine {
    pub(super) fn new_module(&self, wasm: &[u8]) -> Result<NewModule> {
        Ok(NewModule {
            module: self.module_of(wasm)?,
            hash: module_hash(wasm),
        })
    }

    /// Fresh instance of the `new` module over the `carried` memories, then `canister_start`
    /// and `init_export`: the rest of an install_code that already used `used_before`
    /// instructions (pre_upgrade). Compilation and every stage share one limit
    /// (`max_instructions_per_install_code`: each stage gets what is left, upgrade.rs and
    /// install_code.rs `reduce_instructions_by`), and at the end the heap must be within
    /// `wasm_memory_limit` (install_code.rs `finish`), or the whole call fails.
    #[allow(clippy::too_many_arguments)]
    fn start_module(
        &mut self,
        id: Principal,
        new: NewModule,
        carried: Carried,
        api: ApiType,
        init_export: &str,
        arg: &[u8],
        used_before: u64,
    ) -> Result<CallOutcome> {
        let NewModule { module, hash } = new;
        let limit = self.limits.max_instructions_per_install;
        let over_limit = |id: Principal| {
            reject(
                ErrorCode::CanisterInstructionLimitExceeded,
                format!("Error from Canister {id}: Canister exceeded the limit of {limit} instructions for single message execution."),
            )
        };
        let version = self.canister(id)?.version;
        let state = self.new_host_state(id, carried.stable, version);
        let mut inst = instantiate(&module, state)?;
        let heap_written = match (carried.heap, &inst.heap) {
            (Some(kept), _) => {
                let zero_from = grow_heap(&mut inst, kept.len())?;
                if let Some(h) = &inst.heap {
                    // SAFETY: no Wasm is running.
                    kept.restore_into(unsafe { h.bytes_mut()? }, zero_from)?;
                }
                kept.written().clone()
            }
            // The data segments: SAFETY: no Wasm is running.
            (None, Some(h)) => PageSet::nonzero_pages(unsafe { h.bytes_mut()? }),
            (None, None) => PageSet::default(),
        };
        let c = self.canister(id)?;
        c.since_load = None;
        c.heap_written = heap_written;
        c.module = Some(module.clone());
        c.live = Some(inst);
        let mut total = CallOutcome {
            result: Ok(Vec::new()),
            report: MessageReport::default(),
        };
        // Creating the execution state: its base cost and the compilation, reduced for a
        // module the subnet installed since its last checkpoint (as the vintage has it).
        let compilation = self.replica.compilation_charge(
            module.compile_instructions,
            self.expected_compiled_wasms.contains(&hash),
        );
        total.report.instructions = compilation;
        if self.profiling == Profiling::Messages {
            let mut profile = Profile::new();
            let base = self.replica.create_execution_state_base_cost;
            profile.add(&[profile::EXECUTION_STATE], base);
            profile.add(&[profile::COMPILATION], compilation - base);
            total.report.profile = Some(profile);
        }
        total.report.stages.push((
            InstallStage::Compilation,
            MessageReport {
                instructions: compilation,
                ..MessageReport::default()
            },
        ));
        let mut used = used_before + compilation;
        if used > limit {
            total.result = Err(over_limit(id));
            return Ok(total);
        }
        for (kind, export) in [
            (ApiType::Start, instrument::CANISTER_START_EXPORT),
            (api, init_export),
        ] {
            if !module.exports.contains(export) {
                continue;
            }
            let entry = Entry {
                api: kind,
                export,
                method: "",
                arg: if kind == ApiType::Start {
                    Vec::new()
                } else {
                    arg.to_vec()
                },
                part: Default::default(),
            };
            let out = self.execute_within(id, entry, Some(limit - used))?;
            let stage = match kind {
                ApiType::Start => InstallStage::Start,
                ApiType::PostUpgrade => InstallStage::PostUpgrade,
                _ => InstallStage::Init,
            };
            add_stage(&mut total.report, stage, &out.report);
            if out.result.is_err() {
                total.result = out.result;
                return Ok(total);
            }
            // The heap dirty-page charge comes after the run and may take the stage past
            // what was left.
            used += out.report.instructions;
            if used > limit {
                total.result = Err(over_limit(id));
                return Ok(total);
            }
        }
        let wasm_memory_limit = self.limits.wasm_memory_limit;
        let heap = total.report.heap_bytes_after;
        if wasm_memory_limit != 0 && heap > wasm_memory_limit {
            let trap = HostTrap::WasmMemoryLimit {
                peak_bytes: heap,
                limit: wasm_memory_limit,
            };
            total.result = Err(reject(
                ErrorCode::CanisterWasmMemoryLimitExceeded,
                format!("Error from Canister {id}: {trap}."),
            ));
        }
        Ok(total)
    }

    pub(super) fn install_new(
        &mut self,
        new: NewModule,
        arg: &[u8],
    ) -> Result<(Principal, CallOutcome)> {
        let id = canister_id(self.next_canister);
        self.next_canister += 1;
        self.canisters.insert(id, Canister::empty(0));
        let out = self.init_fresh(id, new, arg)?;
        if out.result.is_err() {
            // A failed install leaves an empty canister, as on the replica.
            let c = self.canister(id)?;
            *c = Canister::empty(c.version);
        }
        Ok((id, out))
    }

    pub(super) fn upgrade_canister(
        &mut self,
        id: Principal,
        new: NewModule,
        arg: &[u8],
        options: UpgradeOptions,
    ) -> Result<CallOutcome> {
        let before = self.save(id)?;
        let mut total = CallOutcome {
            result: Ok(Vec::new()),
            report: MessageReport::default(),
        };
        if !options.skip_pre_upgrade && before.module.exports.contains("canister_pre_upgrade") {
            let entry = Entry {
                api: ApiType::PreUpgrade,
                export: "canister_pre_upgrade",
                method: "",
                arg: Vec::new(),
                part: Default::default(),
            };
            let out = self.execute(id, entry)?;
            add_stage(&mut total.report, InstallStage::PreUpgrade, &out.report);
            if out.result.is_err() {
                self.load(id, &before)?;
                total.result = out.result;
                return Ok(total);
            }
        }
        // The replica decides after pre_upgrade and compiling the new module
        // (`determine_main_memory_handling`); a refusal rolls everything back.
        let keep_heap = match options.wasm_memory_persistence {
            None if before.module.enhanced_orthogonal_persistence => Err(
                "Missing upgrade option: Enhanced orthogonal persistence requires the \
                 `wasm_memory_persistence` upgrade option.",
            ),
            Some(WasmMemoryPersistence::Keep) if !new.module.enhanced_orthogonal_persistence => {
                Err(
                    "Invalid upgrade option: The `wasm_memory_persistence: opt Keep` upgrade \
                 option requires that the new canister module supports enhanced orthogonal \
                 persistence.",
                )
            }
            Some(WasmMemoryPersistence::Keep) => Ok(true),
            None | Some(WasmMemoryPersistence::Replace) => Ok(false),
        };
        let keep_heap = match keep_heap {
            Ok(keep) => keep,
            Err(message) => {
                self.load(id, &before)?;
                total.result = Err(reject(ErrorCode::CanisterContractViolation, message.into()));
                return Ok(total);
            }
        };
        let c = self.canister(id)?;
        let carried = Carried {
            stable: c
                .live
                .as_ref()
                .map(|i| i.store.data().stable.image().clone())
                .unwrap_or_default(),
            heap: if keep_heap {
                Some(match c.live.as_ref().and_then(|i| i.heap.as_ref()) {
                    // SAFETY: no Wasm runs while we copy.
                    Some(h) => HeapImage::from_pages(unsafe { h.bytes_mut()? }, &c.heap_written)?,
                    None => HeapImage::default(),
                })
            } else {
                None
            },
        };
        c.version += 1;
        let hash = new.hash;
        let started = self.start_module(
            id,
            new,
            carried,
            ApiType::PostUpgrade,
            "canister_post_upgrade",
            arg,
            total.report.instructions,
        );
        let failed = match &started {
            Ok(out) => out.result.is_err(),
            Err(_) => true,
        };
        if failed {
            self.canister(id)?.version -= 1;
            self.load(id, &before)?;
        }
        let out = started?;
        add_report(&mut total.report, &out.report);
        Profile::add_to_sum(&mut total.report.profile, out.report.profile.as_ref());
        if out.result.is_err() {
            total.result = out.result;
        }
        self.installed(&hash, &total);
        Ok(total)
    }

    pub(super) fn reinstall_canister(
        &mut self,
        id: Principal,
        new: NewModule,
        arg: &[u8],
    ) -> Result<CallOutcome> {
        let before = self.save(id).ok();
        self.canister(id)?.version += 1;
        let out = self.init_fresh(id, new, arg)?;
        if out.result.is_err() {
            if let Some(before) = before {
                self.canister(id)?.version -= 1;
                self.load(id, &before)?;
            }
        }
        Ok(out)
    }

    /// `new` started on empty memories with `canister_init(arg)`: an install or a
    /// reinstall, counted as an install_code.
    fn init_fresh(&mut self, id: Principal, new: NewModule, arg: &[u8]) -> Result<CallOutcome> {
        let hash = new.hash;
        let out = self.start_module(
            id,
            new,
            Carried {
                stable: StableImage::default(),
                heap: None,
            },
            ApiType::Init,
            "canister_init",
            arg,
            0,
        )?;
        self.installed(&hash, &out);
        Ok(out)
    }

    /// After an install_code: a successful one adds its module to the modules the subnet
    /// expects to have compiled, whatever its mode (`process_install_code_result`).
    fn installed(&mut self, module_hash: &[u8; 32], out: &CallOutcome) {
        if out.result.is_ok() {
            self.expected_compiled_wasms.insert(*module_hash);
        }
    }
}

/// Adds the report of one stage of `install_code` to the whole call's: its counts, the
/// stage itself, and its profile under the stage's frame.
fn add_stage(total: &mut MessageReport, stage: InstallStage, part: &MessageReport) {
    add_report(total, part);
    if let Some(profile) = &part.profile {
        total
            .profile
            .get_or_insert_with(Profile::new)
            .add_profile(&[stage.frame()], profile);
    }
    total.stages.push((
        stage,
        MessageReport {
            profile: None,
            ..part.clone()
        },
    ));
}

fn add_report(total: &mut MessageReport, part: &MessageReport) {
    if total.heap_bytes_before == 0 && total.stable_bytes_before == 0 {
        total.heap_bytes_before = part.heap_bytes_before;
        total.stable_bytes_before = part.stable_bytes_before;
    }
    total.instructions += part.instructions;
    total.heap_dirty_pages += part.heap_dirty_pages;
    total.stable_dirty_pages += part.stable_dirty_pages;
    total.pages = PageCounts::sum(total.pages, part.pages.as_ref());
    if part.page_map.is_some() {
        total.page_map = part.page_map.clone();
    }
    total.heap_bytes_after = part.heap_bytes_after;
    total.stable_bytes_after = part.stable_bytes_after;
    // The module that ran last: post_upgrade's, the new one.
    total.wasm64 = part.wasm64;
    total.stages.extend_from_slice(&part.stages);
}
