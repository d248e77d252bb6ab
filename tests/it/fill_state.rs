//! A store's fill sent for its state alone (`Metering::StateOnly`: no page tracked beyond
//! what a charge needs, no old bytes kept) leaves the state a measured fill leaves, byte for
//! byte: every store of the table, under a vintage with the memory tracker (whose page
//! charges `ic0.performance_counter` returns, so a fill must track them) and one before it.

use icbench::bench_canister::{BenchClient, IdSequence, Module};
use icbench::engine::cost::Replica;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::Metering;

/// Rows per message and messages: enough for the Motoko stores' collector to run.
const CHUNK: u64 = 1_000;
const MESSAGES: u64 = 3;
/// Empty messages after the fill, as `settle_collector` sends them.
const TICKS: u64 = 3;

/// The state of a canister of `wasm` after `stem`'s fill sent for `metering` under
/// `replica`: its heap, globals and stable memory's hash.
fn filled(
    wasm: &[u8],
    stem: &str,
    collected: bool,
    replica: Replica,
    metering: Metering,
) -> [u8; 32] {
    let mut engine = EmbeddedEngine::default().with_replica(replica);
    let canister = {
        let mut client = BenchClient::install(&mut engine, wasm).unwrap();
        client.set_payload_size(100).unwrap().value.unwrap();
        client.unmeasured(metering, |c| {
            for m in 0..MESSAGES {
                let out = c
                    .try_add_users(stem, IdSequence::new(m * CHUNK * 10, 10, CHUNK))
                    .unwrap();
                let reply = out.unwrap_or_else(|r| panic!("{stem}: {}", r.reject));
                assert_eq!(reply.value.unwrap().rows_inserted, CHUNK);
            }
            for _ in 0..if collected { TICKS } else { 0 } {
                c.tick().unwrap().value.unwrap();
            }
        });
        client.canister
    };
    engine.state_hash(canister).unwrap()
}

#[test]
fn a_fill_sent_for_its_state_leaves_the_measured_fills_state_for_every_store() {
    // One thread per store: the engine runs a canister per thread.
    std::thread::scope(|scope| {
        for def in icbench::stores::TABLE.iter() {
            let wasm = match def.module {
                Module::DEFAULT => crate::support::bench_wasm(),
                module => module.embedded().unwrap_or_else(|| {
                    panic!("the committed {} module is of its sources", module.name)
                }),
            };
            scope.spawn(move || {
                for replica in [Replica::R2026_07, Replica::R2025_03] {
                    let fill = |metering| filled(wasm, def.stem, def.collected, replica, metering);
                    assert_eq!(
                        fill(Metering::StateOnly),
                        fill(Metering::Exact),
                        "{} under {}",
                        def.name,
                        replica.name
                    );
                }
            });
        }
    });
}
