//! Setting a store up on a canister before it is measured: SQLite's journal mode, set on a
//! fresh connection (`configure_sqlite`), which every suite measuring SQLite in a journal
//! mode does the same way.

use anyhow::Result;

use super::JournalMode;
use crate::bench_canister::{BenchClient, SqliteConfig};

/// Sets SQLite's journal `mode` on a fresh connection, on the canister's state now; the
/// reason, when the canister refuses it or SQLite keeps another mode, as the inner error.
pub fn set_journal_mode(
    client: &mut BenchClient<'_>,
    mode: JournalMode,
) -> Result<Result<(), String>> {
    let config = SqliteConfig {
        journal_mode: Some(mode.to_string()),
        ..SqliteConfig::default()
    };
    Ok(match client.configure_sqlite(&config)?.value {
        Ok(settings) if settings.journal_mode.eq_ignore_ascii_case(mode.as_str()) => Ok(()),
        Ok(settings) => Err(format!(
            "asked for {mode}, SQLite uses {}",
            settings.journal_mode
        )),
        Err(e) => Err(e),
    })
}
