//! The empty canister of each module a run's stores live in, set up and snapshotted: the
//! upgrade and scaling suites grow each store in a copy of its module's.

use anyhow::Result;

use crate::bench_canister::{BenchClient, Module};
use crate::report::work::Kind;
use crate::stores::Modules;
use crate::suites::pool::{self, Recorder, State, UnitId};
use crate::suites::scenario::StoreKind;

/// The empty canister of one module, set up, which the stores of that module start from.
pub(in crate::suites) struct Empty<'m> {
    pub(in crate::suites) module: Module,
    pub(in crate::suites) wasm: &'m [u8],
    /// What the upgrades install: a new build of `wasm` (the upgrade suite's `new_build`).
    pub(in crate::suites) new_build: Vec<u8>,
    pub(in crate::suites) state: State,
}

/// The empty canisters of a run, one per module: the default module's first.
pub(in crate::suites) struct Empties<'m>(pub(in crate::suites) Vec<Empty<'m>>);

impl<'m> Empties<'m> {
    /// The empty canister `kind`'s store starts from: its module's.
    pub(in crate::suites) fn of(&self, kind: StoreKind) -> &Empty<'m> {
        self.0
            .iter()
            .find(|e| e.module == kind.module())
            .expect("a run makes the canister of every module its stores live in")
    }
}

/// The empty canisters of the modules `kinds` live in besides the default one, each set up
/// by `setup` and snapshotted, as the users suites make theirs: on a fresh engine of its own
/// where the run's engine can make one (`Engine::fresh`: the canister is then its
/// engine's first, as in the users suites), else beside the default canister on the run's
/// engine (`client`'s). Each is a unit of `work` after `after`, with the new build
/// `new_build` makes of its module; returns them, their units and the instructions their
/// setup executed.
#[allow(clippy::too_many_arguments)]
pub(in crate::suites) fn other_empties<'m>(
    client: &mut BenchClient<'_>,
    modules: &'m Modules<'_>,
    kinds: &[StoreKind],
    work: &Recorder,
    after: &[UnitId],
    setup: &dyn Fn(&mut BenchClient<'_>) -> Result<()>,
    new_build: fn(&[u8]) -> Result<Vec<u8>>,
) -> Result<(Vec<Empty<'m>>, Vec<UnitId>, u64)> {
    let (mut empties, mut units, mut executed) = (Vec::new(), Vec::new(), 0);
    for need in crate::stores::needs(kinds.iter().copied()) {
        let module = need.module;
        if module == Module::DEFAULT {
            continue;
        }
        let (wasm, name) = (modules.get(module)?, module.name);
        let mut fresh = client.engine.fresh();
        let engine = match fresh.as_mut() {
            Some(own) => own.as_mut() as &mut dyn crate::engine::Engine,
            None => &mut *client.engine,
        };
        let (ready, compiled) = work.unit(
            Kind::Compile,
            format!("compile the {name} module"),
            after,
            || engine.prepare(wasm),
        );
        ready?;
        let (made, unit) = work.unit(
            Kind::Install,
            format!("install the {name} canister"),
            &[compiled],
            || -> Result<(State, u64)> {
                let mut own = BenchClient::install(engine, wasm)?;
                setup(&mut own)?;
                let state = pool::graph::snapshot(own.engine, own.canister)?;
                Ok((state, own.executed_instructions))
            },
        );
        let (state, ran) = made?;
        empties.push(Empty {
            module,
            wasm,
            new_build: new_build(wasm)?,
            state,
        });
        units.push(unit);
        executed += ran;
    }
    Ok((empties, units, executed))
}
