//! The tasks that grow each store size by size: fill to the next size, snapshot, upgrade
//! there (warm calls, the upgrade, the first calls after it, the same module again); in
//! which order a free worker takes them, and how a store's outcome is collected.

use anyhow::Result;

use super::calls::{calls, configure, fill, record};
use super::install::{upgrade, upgrade_same_module};
use super::{Config, UpgradeStore, POINTS};
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::Status;
use crate::suites::canister::empty::{Empties, Empty};
use crate::suites::steps::{self, Parts};
use crate::suites::{pool, users};

/// Which ready task a free worker takes first.
///
/// On several workers the limit run (the longest task) starts first, the stores' fills go
/// on beside it one store after another, then compiling the new build (the limit run's
/// first upgrade has compiled it by then), then the upgrades. The one-worker order below
/// (with the new build compiled before the stores) made `--suite upgrade --jobs 2` take
/// 100 s instead of 62 s (2026-11-23): the compile waited 23 s on the limit run's own
/// compile of the same module, and the heap stores' upgrades met the limit run's heap of
/// gigabytes (an upgrade of 3.8 s of CPU took 15 s).
///
/// On one worker the limit run goes first too (its heap near 4 GiB is the suite's largest
/// state, best met while nothing else is held); then each store in a band of its own, the
/// first highest, where a size's upgrade goes before the fill to the next size: a store is
/// finished before the next starts, so the worker holds one store's states at a time, as
/// the memory estimate has it.
#[derive(Clone, Copy)]
pub(super) struct Order {
    pub(super) serial: bool,
    pub(super) stores: usize,
}

/// Priorities on several workers (see [`Order`]).
const FILL: i64 = 100;
const COMPILE: i64 = 90;
const UPGRADE_AT: i64 = 10;
/// On one worker: each store's band, within which its upgrades go before its fills.
const BAND: i64 = 1_000;
const SERIAL_UPGRADE_AT: i64 = 20;
const SERIAL_FILL: i64 = 10;

impl Order {
    fn band(self, store: usize) -> i64 {
        (self.stores - store) as i64 * BAND
    }
    pub(super) fn limit_run(self) -> i64 {
        match self.serial {
            true => (self.stores as i64 + 2) * BAND,
            false => FILL + self.stores as i64 + 1,
        }
    }
    pub(super) fn compile(self) -> i64 {
        match self.serial {
            true => (self.stores as i64 + 1) * BAND,
            false => COMPILE,
        }
    }
    pub(super) fn fill(self, store: usize) -> i64 {
        match self.serial {
            true => self.band(store) + SERIAL_FILL,
            false => FILL + (self.stores - store) as i64,
        }
    }
    pub(super) fn upgrade(self, store: usize) -> i64 {
        match self.serial {
            true => self.band(store) + SERIAL_UPGRADE_AT,
            false => UPGRADE_AT,
        }
    }
}

/// A store's outcome as its tasks hand it in, by size (the order one worker gives).
pub(super) type Grown = Parts<usize, pool::Outcome>;

impl Grown {
    pub(super) fn outcome(&self) -> pool::Outcome {
        let mut all = pool::Outcome::default();
        for (_, part) in self.take() {
            all.results.extend(part.results);
            for (name, items) in part.lists {
                match all.lists.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, have)) => have.extend(items),
                    None => all.lists.push((name, items)),
                }
            }
        }
        all
    }
}

/// What every task of the run shares.
pub(super) struct Shared<'s> {
    pub(super) cfg: &'s Config,
    pub(super) engine: &'s str,
    /// The installed, empty canister of each module and the new build its upgrades install.
    pub(super) empties: &'s Empties<'s>,
}

impl Shared<'_> {
    /// The empty canister `store` starts from: its module's.
    pub(super) fn empty(&self, store: UpgradeStore) -> &Empty<'_> {
        self.empties.of(store.store_kind())
    }
}

/// How a store's fill goes on: from the state `from` at the previous size (None: the empty
/// canister, to be configured), to the run's size number `size`.
pub(super) struct Step {
    pub(super) store: UpgradeStore,
    pub(super) size: usize,
    pub(super) from: Option<pool::State>,
    pub(super) fill_priority: i64,
    pub(super) upgrade_priority: i64,
}

/// The task that fills the store to the next size, snapshots it there and spawns, from the
/// snapshot, the upgrade at that size and the fill on to the next. Each size is a task of
/// its own, so that an upgrade can run (and let go of its state) before the fill goes on.
pub(super) fn grow<'s>(ctx: &'s Shared<'s>, step: Step, out: &'s Grown) -> pool::Task<'s> {
    let Step {
        store,
        size,
        from,
        fill_priority,
        upgrade_priority,
    } = step;
    let cfg = ctx.cfg;
    let n = cfg.sizes[size];
    let filled = size.checked_sub(1).map_or(0, |s| cfg.sizes[s]);
    let name = match from {
        None => format!("configure {}", store.label()),
        Some(_) => format!("go on filling {} to {} rows", store.label(), thousands(n)),
    };
    pool::Task::new(Kind::Fill, name, move |lane| {
        match &from {
            Some(from) => lane.restore(from)?,
            None => {
                lane.restore(&ctx.empty(store).state)?;
                if let Err(e) = configure(&mut lane.client, store, cfg.payload_size) {
                    let mut r = record(ctx.engine, store, 0, "upgrade");
                    r.status = Status::Refused(e.to_string());
                    out.put(0, vec![r].into());
                    return Ok(());
                }
            }
        }
        drop(from);
        let (client, ctl) = (&mut lane.client, &lane.ctl);
        fill(client, store, cfg.payload_size, filled, n, &mut |to| {
            ctl.step(Kind::Fill, users::fill_name(&store.label(), to))
        })?;
        // As the users suites do: every size starts with the collector idle.
        if store.store.store_kind().def().collected {
            ctl.step(
                Kind::Fill,
                format!("let {}'s collector finish", store.label()),
            );
            crate::stores::settle_collector(client)?;
        }
        let at_n = steps::snapshot(lane, &store.label(), n)?;
        if size + 1 < cfg.sizes.len() {
            let next = Step {
                store,
                size: size + 1,
                from: Some(at_n.clone()),
                fill_priority,
                upgrade_priority,
            };
            lane.spawn(grow(ctx, next, out));
        }
        let name = format!("upgrade {} at {} rows", store.label(), thousands(n));
        lane.spawn(
            pool::Task::new(Kind::Upgrade, name, move |lane| {
                let new_build = &ctx.empty(store).new_build;
                out.put(
                    size,
                    upgrade_at(lane, cfg, ctx.engine, new_build, store, n, &at_n)?,
                );
                Ok(())
            })
            .priority(upgrade_priority)
            .profiled(),
        );
        Ok(())
    })
    .priority(fill_priority)
}

/// At the state `at_n` of `n` rows: warm calls, the upgrade, the first calls after it, and
/// the same upgrade again from `at_n`.
fn upgrade_at(
    lane: &mut pool::Lane<'_, '_>,
    cfg: &Config,
    engine: &str,
    new_build: &[u8],
    store: UpgradeStore,
    n: u64,
    at_n: &pool::State,
) -> Result<pool::Outcome> {
    let mut results = Vec::new();
    lane.restore(at_n)?;
    let client = &mut lane.client;
    results.extend(calls(client, engine, store, n, cfg.usd_per_xdr, "warm")?);
    lane.restore(at_n)?;
    let client = &mut lane.client;
    let (records, point, failed) = upgrade(
        client,
        engine,
        store,
        n,
        cfg.payload_size,
        new_build,
        cfg.usd_per_xdr,
    )?;
    results.extend(records);
    if failed.is_none() {
        results.extend(calls(client, engine, store, n, cfg.usd_per_xdr, "first")?);
    }
    lane.restore(at_n)?;
    results.push(upgrade_same_module(
        &mut lane.client,
        engine,
        store,
        n,
        new_build,
        cfg.usd_per_xdr,
    )?);
    Ok(pool::Outcome {
        results,
        lists: vec![(POINTS, vec![serde_json::to_value(&point)?])],
    })
}
