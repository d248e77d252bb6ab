//! What the canister accepts per call, per suite: the canister refuses more, so the host
//! splits its work to fit. Sizes the host draws against are here too.

/// The `users` stores (`add_users_*`, `get_users_*`, `scan_users_*`).
pub mod users {
    /// Most rows one `(offset, step, count)` call may insert or read. Not a cost bound: the
    /// replica's per-message limits decide what fits (the scaling suite's capacity search
    /// finds it), and no store inserts 100-byte rows cheaply enough to reach this within
    /// 40B instructions; it only refuses absurd counts before any work.
    pub const MAX_ROWS_PER_CALL: u64 = 100_000_000;
    /// Most ids in one explicit id list (`*_ids` methods): the caller sends them, 8 bytes
    /// each, and the ingress message limit (2 MiB) already keeps lists far below a million.
    pub const MAX_IDS_PER_CALL: u64 = 100_000;
}

/// The dbbench suite (`dbbench_*`).
pub mod dbbench {
    /// db_bench's keys are `%016d`: 16 ASCII digits.
    pub const KEY_SIZE: u64 = 16;
    /// The largest key 16 digits hold.
    pub const MAX_KEY: u64 = 9_999_999_999_999_999;
    /// Most keys per call: the keys travel in the argument, as the users stores' id lists.
    pub const MAX_OPS_PER_CALL: u64 = super::users::MAX_IDS_PER_CALL;
    /// Largest value: db_bench's value buffer is 1 MiB.
    pub const MAX_VALUE_SIZE: u64 = 1 << 20;
    /// Most key + value bytes one write call may store: keeps a call far below the
    /// instruction limit (100 writes of 100 KB are 10 MB).
    pub const MAX_BYTES_PER_CALL: u64 = 64 << 20;

    // A full call of db_bench's 100-byte values fits the byte cap, and so does one value
    // of the largest size.
    const _: () = assert!(MAX_OPS_PER_CALL * (KEY_SIZE + 100) <= MAX_BYTES_PER_CALL);
    const _: () = assert!(KEY_SIZE + MAX_VALUE_SIZE <= MAX_BYTES_PER_CALL);
}

/// The keys suite (`keys_*`).
pub mod keys {
    /// Most keys per call.
    pub const MAX_KEYS_PER_CALL: u64 = 10_000;
    /// Largest value: rows here are small (seed 002's are under 100 bytes).
    pub const MAX_VALUE_SIZE: u64 = 4_096;
}

/// The sysbench suite (`sysbench_*`).
pub mod sysbench {
    /// Most rows in sbtest1 (ids 1..=MAX_ROWS).
    pub const MAX_ROWS: u64 = 1_000_000;
    /// Most rows per prefill message.
    pub const MAX_PREFILL: u64 = 10_000;
    /// Rows of sbtest2 and sysbench_types (Doltlite's classic 1,000).
    pub const SIDE_ROWS: u64 = 1_000;
    /// Largest id or k a workload may name (inserts go above the prefilled ids).
    pub const MAX_ID: u64 = 1 << 40;

    const _: () = assert!(SIDE_ROWS <= MAX_ROWS && MAX_PREFILL <= MAX_ROWS);
    // oltp_insert names ids above the largest table; ids and k are SQLite INTEGERs.
    const _: () = assert!(MAX_ROWS < MAX_ID && MAX_ID <= i64::MAX as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dbbench_key_fits_its_16_digits() {
        assert_eq!(dbbench::MAX_KEY.to_string().len() as u64, dbbench::KEY_SIZE);
        assert_eq!(
            (dbbench::MAX_KEY + 1).to_string().len() as u64,
            dbbench::KEY_SIZE + 1
        );
    }
}
