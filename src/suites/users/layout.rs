//! Which canisters a users suite's run fills, and which stores each holds: each store in a
//! canister of its own, or seed 003's one canister per module (`--layout`).

use super::Config;
use crate::stores::{Layout, Prefill};
use crate::suites::canister::Canister;
use crate::suites::scenario::StoreKind;

/// The canisters of `cfg`'s run in its layout, in the order they are made: the longest fill
/// first. Alone, one per store measured; shared, one per module its stores live in (the
/// default module's always, as seed 003's run installed it), each with the stores of that
/// module.
pub(super) fn canisters(cfg: &Config) -> Vec<Canister> {
    let mut kinds: Vec<StoreKind> = cfg.stores.iter().map(|s| s.store_kind()).collect();
    kinds.sort();
    kinds.dedup();
    let mut out: Vec<Canister> = match cfg.layout {
        Layout::Alone => kinds
            .iter()
            .map(|&kind| Canister {
                module: kind.module(),
                filled: vec![kind],
                after: Vec::new(),
                name: kind.name(),
            })
            .collect(),
        Layout::Shared => cfg
            .modules()
            .into_iter()
            .map(|need| {
                let of = |prefill| -> Vec<StoreKind> {
                    kinds
                        .iter()
                        .copied()
                        .filter(|k| k.module() == need.module && k.def().prefill == prefill)
                        .collect()
                };
                Canister {
                    module: need.module,
                    filled: of(Prefill::Shared),
                    after: of(Prefill::Alone),
                    name: need.module.name,
                }
            })
            .collect(),
    };
    // Stable: canisters of equal cost stay in table order.
    out.sort_by_key(|c| std::cmp::Reverse(c.fill_cost()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::scenario::Store;

    #[test]
    fn alone_a_canister_per_store_shared_one_per_module() {
        let cfg = Config::default();
        let names = |layout| -> Vec<(&str, Vec<&str>, Vec<&str>)> {
            let cfg = Config {
                layout,
                ..cfg.clone()
            };
            canisters(&cfg)
                .into_iter()
                .map(|c| {
                    let stems = |kinds: &[StoreKind]| kinds.iter().map(|k| k.name()).collect();
                    (c.name, stems(&c.filled), stems(&c.after))
                })
                .collect()
        };
        // The longest fill first: Motoko's pure/Map, the StableBTreeMap's, Motoko's other
        // two, then SQLite's two bindings.
        assert_eq!(
            names(Layout::Alone),
            [
                ("mo-pure-map", vec!["mo-pure-map"], vec![]),
                ("btree", vec!["btree"], vec![]),
                ("mo-map", vec!["mo-map"], vec![]),
                ("mo-region", vec!["mo-region"], vec![]),
                ("sqlite", vec!["sqlite"], vec![]),
                ("sqlite-vfs", vec!["sqlite-vfs"], vec![]),
                ("heap", vec!["heap"], vec![]),
            ]
        );
        assert_eq!(
            names(Layout::Shared),
            [
                ("motoko", vec!["mo-map", "mo-pure-map", "mo-region"], vec![]),
                ("bench", vec!["btree", "sqlite"], vec!["heap"]),
                ("sqlite-vfs", vec!["sqlite-vfs"], vec![]),
            ]
        );
        // Seed 003's run installed the bench canister whatever the stores.
        let vfs = Config {
            stores: vec![Store::new(StoreKind::SqliteVfs, None)],
            layout: Layout::Shared,
            ..cfg.clone()
        };
        let shared: Vec<&str> = canisters(&vfs).iter().map(|c| c.name).collect();
        assert_eq!(shared, ["sqlite-vfs", "bench"]);
        let alone: Vec<&str> = canisters(&Config {
            layout: Layout::Alone,
            ..vfs
        })
        .iter()
        .map(|c| c.name)
        .collect();
        assert_eq!(alone, ["sqlite-vfs"]);
        assert_eq!(Layout::by_name("shared"), Some(Layout::Shared));
        assert_eq!(Layout::by_name("seed"), None);
    }
}
