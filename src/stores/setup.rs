//! Setting a store up on a canister before it is measured: SQLite's journal mode, set on a
//! fresh connection (`configure_sqlite`), which every suite measuring SQLite in a journal
//! mode does the same way; and a SQLite store without journal modes on a newly opened
//! connection, as measured SQLite always is; a garbage-collected store's canister with its
//! collector idle.

use anyhow::Result;

use super::JournalMode;
use super::StoreKind;
use crate::bench_canister::{BenchClient, SqliteConfig};
use crate::engine::Metering;

/// Sets SQLite's journal `mode` on a fresh connection, on the canister's state now; the
/// reason, when the canister refuses it or SQLite keeps another mode, as the inner error.
pub fn set_journal_mode(
    client: &mut BenchClient<'_>,
    mode: JournalMode,
) -> Result<Result<(), String>> {
    Ok(
        match client.configure_sqlite(&journal_mode_config(mode))?.value {
            Ok(settings) if settings.journal_mode.eq_ignore_ascii_case(mode.as_str()) => Ok(()),
            Ok(settings) => Err(format!(
                "asked for {mode}, SQLite uses {}",
                settings.journal_mode
            )),
            Err(e) => Err(e),
        },
    )
}

/// The settings [`set_journal_mode`] asks for: `mode` on a fresh connection.
pub fn journal_mode_config(mode: JournalMode) -> SqliteConfig {
    SqliteConfig {
        journal_mode: Some(mode.to_string()),
        ..SqliteConfig::default()
    }
}

/// Reopens the connections of `kind`, a SQLite store without journal modes (its
/// `configure_{stem}` with nothing to change), so that its next call is the first on a newly
/// opened connection with no page of the table cached, as a journal mode set on a fresh
/// connection leaves the bench canister's SQLite; the reason, when the canister refuses, as
/// the inner error.
pub fn reopen_sqlite(client: &mut BenchClient<'_>, kind: StoreKind) -> Result<Result<(), String>> {
    let reply = client.configure_sqlite_of(kind.stem(), &SqliteConfig::default())?;
    Ok(reply.value.map(|_| ()))
}

/// A collector increment's instructions below which no collection was under way or due:
/// an idle `message_cleanup` costs a few hundred (330 and 412 measured on the Motoko
/// canister), any increment of a collection millions.
const IDLE_COLLECTOR: u64 = 100_000;
/// The empty messages `settle_collector` sends at most: a collection of the largest heap
/// a run fills ends in a few dozen increments. A module that never settles (moc's
/// `--force-gc` starts a collection after every message) is told within seconds.
const MAX_TICKS: u64 = 1_000;

/// Sends the Motoko canister empty update messages (`tick`) until the collector's increment
/// after one finds no collection under way or due, so that its state now starts every
/// scenario with the collector idle; returns the messages sent.
pub fn settle_collector(client: &mut BenchClient<'_>) -> Result<u64> {
    let mut last = 0;
    for sent in 1..=MAX_TICKS {
        client
            .unmeasured(Metering::StateOnly, |c| c.tick())?
            .value
            .map_err(|e| anyhow::anyhow!("tick failed: {e}"))?;
        last = client.motoko_stats()?.collector_instructions;
        if last < IDLE_COLLECTOR {
            return Ok(sent);
        }
    }
    anyhow::bail!(
        "the collector was still busy after {MAX_TICKS} empty messages (the last one's \
         increment: {last} instructions), where a collection of the heaps icbench fills ends within a few dozen: \
         a module built with moc's --force-gc starts a collection after every message, and its \
         figures would be the collector's, not the store's"
    )
}
