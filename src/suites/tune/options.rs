//! The tune suite's flags, their checks and the plan made from them.

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args};

use super::binding;
use super::document::document;
use super::{
    check_page_size, parse_variant, value_bound, value_sizes_of, variant_base, variants, Config,
    Knob, Tune, DEFAULT_CACHE_SIZES, DEFAULT_PAGE_SIZES, DEFAULT_SYNCHRONOUS, DEFAULT_VALUE_SIZES,
    MAX_VALUE_SIZE, SEARCHED, VALUE_SIZES_OF,
};
use crate::bench_canister::Module;
use crate::report::{Document, Report};
use crate::stores;
use crate::suites::scenario::{JournalMode, Store};
use crate::suites::shared::{Define, Reads};
use crate::suites::users::{self};
use crate::suites::{CommonArgs, MEMORY_BASE};
use bench_types::pragma::Synchronous;

#[derive(Args)]
#[command(next_help_heading = "tune")]
pub struct TuneArgs {
    /// SQLite page sizes searched, in bytes (powers of two from 512 to 65,536), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_PAGE_SIZES)]
    tune_page_sizes: Vec<u32>,
    /// SQLite page cache sizes searched (`PRAGMA cache_size`: pages, or KiB when negative),
    /// comma-separated.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, default_values_t = DEFAULT_CACHE_SIZES)]
    tune_cache_sizes: Vec<i64>,
    /// `PRAGMA synchronous` values searched, comma-separated (OFF, NORMAL, FULL, EXTRA).
    #[arg(long, value_delimiter = ',', default_values = DEFAULT_SYNCHRONOUS)]
    tune_synchronous: Vec<String>,
    /// The settings the search varies, comma-separated (the others stay at the canister's
    /// defaults): page_size, cache_size, journal_mode, synchronous. Journal modes are
    /// `--journal-modes`.
    #[arg(long, value_delimiter = ',', default_values = Knob::ALL.map(|k| k.name()))]
    tune_settings: Vec<String>,
    /// The tune variant's stores measured beside the default module's, comma-separated, or
    /// `none`: heap-talc (the heap map with talc as the allocator), btree-talc (the
    /// StableBTreeMap with talc), btree-bounded (a bounded value type, with talc). Each needs
    /// its store in --stores; btree-bounded needs --payload-size 100 or less.
    #[arg(long, value_delimiter = ',', default_values = variants().into_iter().map(|v| v.name()))]
    tune_variants: Vec<String>,
    /// Value sizes in bytes (of each row's username payload) at which the StableBTreeMap,
    /// and beside it the heap map, SQLite at its defaults and the bounded value type (up to
    /// its bound), are measured besides --payload-size, comma-separated, or `none`. Each
    /// size is a fill of its own; --payload-size itself is the run's other rows.
    #[arg(long, value_delimiter = ',', default_values = DEFAULT_VALUE_SIZES)]
    tune_value_sizes: Vec<String>,
    /// The tune variant module to run (default: canisters/prebuilt/bench-tune.wasm when it is
    /// of the current sources, else `scripts/build-canister.sh tune` builds it).
    #[arg(long, value_name = "PATH")]
    tune_wasm: Option<PathBuf>,
}

impl Config {
    /// The checks of the flags: the plan's `Measure::validate`.
    pub(super) fn check(&self) -> Result<()> {
        // Without the bench canister's SQLite, the stores searched are the bindings'.
        if self.users.stores.is_empty() && !self.bindings.is_empty() {
            users::Config {
                stores: self.bindings.iter().map(|&k| Store::new(k, None)).collect(),
                ..self.users.clone()
            }
            .validate()?;
        } else {
            self.users.validate()?;
        }
        self.users.check_scan_rows("one of tune's workloads")?;
        for &size in &self.page_sizes {
            check_page_size(size)?;
        }
        for &size in &self.cache_sizes {
            if i32::try_from(size).is_err() {
                return Err(anyhow!(
                    "--tune-cache-sizes: {size} is outside SQLite's cache_size range {}..={}",
                    i32::MIN,
                    i32::MAX
                ));
            }
        }
        let lists = [
            (Knob::PageSize, self.page_sizes.is_empty()),
            (Knob::CacheSize, self.cache_sizes.is_empty()),
            (Knob::JournalMode, self.journal_modes.is_empty()),
            (Knob::Synchronous, self.synchronous.is_empty()),
        ];
        for (knob, empty) in lists {
            // Without the bench canister's SQLite nothing of its search runs.
            if empty && self.knobs.contains(&knob) && !self.users.stores.is_empty() {
                return Err(anyhow!(
                    "the search varies {} but no value of it is given",
                    knob.name()
                ));
            }
        }
        for &v in &self.variants {
            let base = variant_base(v);
            if !self.others.contains(&base) {
                return Err(anyhow!(
                    "--tune-variants {}: it is a {} (`--stores` must include {})",
                    v.name(),
                    base.label(),
                    base.store_kind().name()
                ));
            }
            if let Some(max) = value_bound(v).filter(|&m| self.users.payload_size > m) {
                return Err(anyhow!(
                    "--tune-variants {}: its value type holds at most {max} bytes, --payload-size is {}",
                    v.name(),
                    self.users.payload_size
                ));
            }
        }
        for &size in &self.value_sizes {
            check_value_size(size)?;
        }
        if !self.value_sizes.is_empty() && !self.others.contains(&value_sizes_of()) {
            return Err(anyhow!(
                "--tune-value-sizes: it measures {} (`--stores` must include {})",
                VALUE_SIZES_OF.def().noun,
                VALUE_SIZES_OF.name()
            ));
        }
        Ok(())
    }

    /// The peak: a filled store per page size held at once (each as much as one SQLite
    /// store of the users suites: its file and page cache).
    pub(super) fn peak_memory(&self, page_sizes: usize) -> u64 {
        let one = users::Config {
            stores: SEARCHED.stores(&[JournalMode::Persist]),
            ..self.users.clone()
        };
        let others = users::Config {
            stores: self.others.clone(),
            ..self.users.clone()
        };
        let others = if self.others.is_empty() {
            0
        } else {
            others.peak_memory() - MEMORY_BASE
        };
        // Each variant store is filled in a canister state of its own, as its store is.
        let variants: u64 = self
            .variants
            .iter()
            .map(|v| {
                users::Config {
                    stores: vec![variant_base(*v)],
                    ..self.users.clone()
                }
                .peak_memory()
                    - MEMORY_BASE
            })
            .sum();
        // Each binding's store is filled in a canister (and engine) of its own.
        let bindings: u64 = self
            .bindings
            .iter()
            .map(|&k| {
                users::Config {
                    stores: vec![Store::new(k, None)],
                    ..self.users.clone()
                }
                .peak_memory()
                    - MEMORY_BASE
            })
            .sum();
        let searched = if self.users.stores.is_empty() {
            0
        } else {
            (one.peak_memory() - MEMORY_BASE) * page_sizes.max(1) as u64
        };
        MEMORY_BASE + searched + others + variants + bindings + self.value_size_memory()
    }

    /// The value sizes' fills, each store alone at its size (as the variants' above).
    fn value_size_memory(&self) -> u64 {
        let mut bytes = 0;
        for &payload_size in &self.value_sizes {
            for store in self.value_size_stores(payload_size) {
                bytes += users::Config {
                    stores: vec![store],
                    payload_size,
                    ..self.users.clone()
                }
                .peak_memory()
                    - MEMORY_BASE;
            }
        }
        bytes
    }
}

impl Define for Tune {
    type Args = TuneArgs;
    type Plan = Config;

    fn plan(args: TuneArgs, common: &CommonArgs, matches: &ArgMatches) -> Result<Config> {
        let bindings = binding::selected(&common.stores);
        if !common.has(SEARCHED) && bindings.is_empty() {
            let names: Vec<&str> = std::iter::once(SEARCHED)
                .chain(binding::all())
                .map(|k| k.name())
                .collect();
            return Err(anyhow!(
                "the tune suite searches SQLite's settings: --stores must include {}",
                names.join(" or ")
            ));
        }
        let mut knobs = args
            .tune_settings
            .iter()
            .map(|name| Knob::parse(name))
            .collect::<Result<Vec<_>>>()?;
        knobs.sort();
        if !common.has(SEARCHED) {
            let given = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
            binding::refuse_fixed(&bindings, &knobs, given)?;
        }
        let synchronous = args
            .tune_synchronous
            .iter()
            .map(|s| {
                Synchronous::from_name(s.trim()).ok_or_else(|| {
                    anyhow!(
                        "--tune-synchronous: unknown value {s:?}; accepted: {}",
                        Synchronous::ALL.map(|v| v.as_str()).join(", ")
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut page_sizes = args.tune_page_sizes;
        page_sizes.sort_unstable();
        let mut cache_sizes = args.tune_cache_sizes;
        cache_sizes.sort_unstable();
        let mut users = users::Config::from_args(common, "tune")?;
        // Its stores fill canisters of their own, whatever --layout says (it does not read it).
        users.layout = users::Layout::default();
        let all = users::stores(common);
        // The stores without journal modes that the tune suite measures beside the search
        // (another binding's SQLite, as ic-sqlite-vfs's, is searched on its own).
        let others = all
            .iter()
            .copied()
            .filter(|s| {
                s.journal_mode().is_none()
                    && s.store_kind().measured_by("tune")
                    && !binding::is_binding(s.store_kind())
            })
            .collect();
        users.stores = all
            .into_iter()
            .filter(|s| s.journal_mode().is_some())
            .collect();
        let others: Vec<Store> = others;
        let mut variants = Vec::new();
        if !(args.tune_variants.len() == 1
            && args.tune_variants[0].trim().eq_ignore_ascii_case("none"))
        {
            for name in &args.tune_variants {
                variants.push(parse_variant(name)?);
            }
        }
        variants.sort();
        // By default each variant whose store is measured; one asked for by name must run.
        let mut variants_left_out = Vec::new();
        if matches.value_source("tune_variants") == Some(ValueSource::DefaultValue) {
            variants.retain(|&v| {
                if !others.contains(&variant_base(v)) {
                    return false;
                }
                if let Some(max) = value_bound(v).filter(|&m| users.payload_size > m) {
                    variants_left_out.push(format!(
                        "{} (it holds at most {max} bytes; the payload is {})",
                        v.def().noun,
                        users.payload_size
                    ));
                    return false;
                }
                true
            });
        }
        let value_sizes = value_sizes(
            &args.tune_value_sizes,
            users.payload_size,
            matches.value_source("tune_value_sizes") == Some(ValueSource::DefaultValue)
                && !others.contains(&value_sizes_of()),
        )?;
        // A module that is not there or not a bench canister stops the run before any work.
        if let Some(path) = &args.tune_wasm {
            stores::read_module("--tune-wasm", Module::TUNE, path)?;
        }
        Ok(Config {
            variants,
            variant_wasm: args.tune_wasm,
            variants_left_out,
            value_sizes,
            others,
            journal_modes: users
                .stores
                .iter()
                .filter_map(|s| s.journal_mode())
                .collect(),
            users,
            page_sizes,
            cache_sizes,
            synchronous,
            knobs,
            bindings,
        })
    }

    const DOCUMENT: fn(&Report) -> Document = document;
    // Its stores are filled in canisters of their own: no --layout.
    const READS: Reads = Reads::Except(&["layout"]);
}

/// A size `set_payload_size` takes, other than an empty payload.
pub fn check_value_size(size: u64) -> Result<()> {
    if size == 0 {
        return Err(anyhow!(
            "--tune-value-sizes: 0 is not a value size (at least 1 byte)"
        ));
    }
    if size > MAX_VALUE_SIZE {
        return Err(anyhow!(
            "--tune-value-sizes: {size} bytes is more than the canister's set_payload_size accepts ({MAX_VALUE_SIZE} bytes, 1 MiB)"
        ));
    }
    Ok(())
}

/// `--tune-value-sizes`: ascending, without the run's `payload_size` (its rows
/// are the run's others); none when `skip` (the default list without the StableBTreeMap).
fn value_sizes(list: &[String], payload_size: u64, skip: bool) -> Result<Vec<u64>> {
    if skip || (list.len() == 1 && list[0].trim().eq_ignore_ascii_case("none")) {
        return Ok(Vec::new());
    }
    let mut sizes = Vec::new();
    for item in list {
        let size: u64 = item.trim().parse().map_err(|_| {
            anyhow!("--tune-value-sizes: {item:?} is not a number of bytes (or none)")
        })?;
        check_value_size(size)?;
        sizes.push(size);
    }
    sizes.sort_unstable();
    sizes.retain(|&s| s != payload_size);
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn value_sizes_are_ascending_without_the_runs_own() {
        let sizes = |items: &[&str], skip| value_sizes(&list(items), 100, skip);
        assert_eq!(sizes(&DEFAULT_VALUE_SIZES, false).unwrap(), [10, 1_000]);
        assert_eq!(sizes(&[" 1000", "10", "100"], false).unwrap(), [10, 1_000]);
        assert_eq!(sizes(&["100"], false).unwrap(), Vec::<u64>::new());
        assert_eq!(sizes(&["none"], false).unwrap(), Vec::<u64>::new());
        assert_eq!(
            sizes(&DEFAULT_VALUE_SIZES, true).unwrap(),
            Vec::<u64>::new()
        );
        assert_eq!(
            sizes(&["1048576"], false).unwrap(),
            [MAX_VALUE_SIZE],
            "the largest payload the canister takes"
        );
        for (bad, line) in [
            (
                &["0"][..],
                "--tune-value-sizes: 0 is not a value size (at least 1 byte)",
            ),
            (
                &["10", "none"],
                "--tune-value-sizes: \"none\" is not a number of bytes (or none)",
            ),
            (
                &["-5"],
                "--tune-value-sizes: \"-5\" is not a number of bytes (or none)",
            ),
        ] {
            assert_eq!(sizes(bad, false).unwrap_err().to_string(), line);
        }
    }
}
