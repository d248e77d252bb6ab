//! The search: its stages (what each varies), the settings a stage reaches from a workload's
//! best so far, the cheapest of what was measured, and what the report says of it.

use super::{bounded_max_size, Config, Knob, Measured, Search, Setting};
use crate::engine::cost::Replica;
use crate::report::Status;

/// The replica measured beside `current`: the newest vintage without the memory tracker,
/// when `current` has it.
pub(super) fn beside_vintage(current: Option<Replica>) -> Option<Replica> {
    current?.memory_tracker?;
    Replica::ALL
        .into_iter()
        .rev()
        .find(|r| r.memory_tracker.is_none())
}

impl Config {
    /// The stages of the search, in order: what each varies (the first, none: the
    /// defaults).
    pub(super) fn stages(&self) -> Vec<Vec<Knob>> {
        // Only another binding's SQLite selected: no search of the bench canister's.
        if self.users.stores.is_empty() {
            return Vec::new();
        }
        let mut stages = vec![Vec::new()];
        for knob in [Knob::PageSize, Knob::CacheSize] {
            if self.knobs.contains(&knob) {
                stages.push(vec![knob]);
            }
        }
        let last: Vec<Knob> = [Knob::JournalMode, Knob::Synchronous]
            .into_iter()
            .filter(|k| self.knobs.contains(k))
            .collect();
        if !last.is_empty() {
            stages.push(last);
        }
        stages
    }

    pub(super) fn search(&self, defaults: Setting, beside: Option<Replica>) -> Search {
        let stages = self
            .stages()
            .iter()
            .enumerate()
            .map(|(i, knobs)| {
                if knobs.is_empty() {
                    return format!(
                        "{}. the canister's defaults: {}",
                        i + 1,
                        defaults.describe()
                    );
                }
                let values: Vec<String> = knobs.iter().map(|k| self.values(*k)).collect();
                format!(
                    "{}. {} at the workload's best settings so far",
                    i + 1,
                    values.join(" × ")
                )
            })
            .collect();
        let mut not_searched: Vec<String> = Knob::ALL
            .into_iter()
            .filter(|k| !self.knobs.contains(k))
            .map(|k| format!("{} (the canister's default)", k.name()))
            .collect();
        not_searched.extend([
            "locking_mode (EXCLUSIVE: WAL needs it without shared memory) and AUTOINCREMENT".to_string(),
            "stable-fs's chunk size and layout (the database file is mounted on a virtual memory of its own, not in chunks)".to_string(),
            "combinations the stages did not reach".to_string(),
            "the StableBTreeMap's bucket size: ic-rusqlite 0.5 creates the canister's only MemoryManager (buckets of 128 pages) and a bucket size changes no page a message touches (docs/tuning.md)".to_string(),
        ]);
        if self.variants.is_empty() {
            not_searched.push(
                "the tune variant (talc as the allocator, a bounded value type): --tune-variants none or its stores not in --stores".to_string(),
            );
        }
        not_searched.extend(self.variants_left_out.iter().cloned());
        let bound = bounded_max_size();
        not_searched.push(if self.value_sizes.is_empty() {
            format!(
                "value sizes: every store holds the run's {}-byte payload (--payload-size), and the bounded value type one bound ({bound} bytes)",
                self.users.payload_size
            )
        } else {
            let sizes: Vec<String> = self.value_sizes.iter().map(|s| s.to_string()).collect();
            format!(
                "value sizes other than {} and the run's {} bytes; at those, SQLite's settings (it is at the canister's defaults there), the StableBTreeMap with talc (talc moves where the module's statics fall, not the map's pages) and bounds other than {bound} bytes",
                sizes.join(", "),
                self.users.payload_size
            )
        });
        not_searched.push("allocators other than talc, and per-message arenas".to_string());
        Search {
            defaults: (defaults.store_label(), defaults.journal_mode.to_string()),
            beside: beside.map(|r| r.name.to_string()),
            stages,
            not_searched,
            variant_module: None,
            value_sizes: Vec::new(),
            bindings: Vec::new(),
        }
    }
}

impl Config {
    /// The settings `knobs` reach from `from`: every combination of their values, the
    /// others as in `from` (just `from` without knobs).
    pub(super) fn around(&self, from: Setting, knobs: &[Knob]) -> Vec<Setting> {
        let mut out = vec![from];
        for knob in knobs {
            let mut next = Vec::new();
            for s in &out {
                match knob {
                    Knob::PageSize => next.extend(
                        self.page_sizes
                            .iter()
                            .map(|&v| Setting { page_size: v, ..*s }),
                    ),
                    Knob::CacheSize => next.extend(self.cache_sizes.iter().map(|&v| Setting {
                        cache_size: v,
                        ..*s
                    })),
                    Knob::JournalMode => next.extend(self.journal_modes.iter().map(|&v| Setting {
                        journal_mode: v,
                        ..*s
                    })),
                    Knob::Synchronous => next.extend(self.synchronous.iter().map(|&v| Setting {
                        synchronous: v,
                        ..*s
                    })),
                }
            }
            out = next;
        }
        out
    }

    /// The values of `knob` searched, for the report.
    pub(super) fn values(&self, knob: Knob) -> String {
        let list: Vec<String> = match knob {
            Knob::PageSize => self.page_sizes.iter().map(|v| v.to_string()).collect(),
            Knob::CacheSize => self.cache_sizes.iter().map(|v| v.to_string()).collect(),
            Knob::JournalMode => self.journal_modes.iter().map(|v| v.to_string()).collect(),
            Knob::Synchronous => self.synchronous.iter().map(|v| v.to_string()).collect(),
        };
        format!("{} ({})", knob.name(), list.join(", "))
    }
}

/// The cheapest setting of one workload's measurements (ties: the one measured first);
/// `defaults` while none succeeded.
pub(super) fn cheapest(measured: &[Measured], defaults: Setting) -> Setting {
    measured
        .iter()
        .filter(|m| m.1.status == Status::Ok)
        .min_by_key(|m| m.1.instructions)
        .map_or(defaults, |m| m.0)
}
