//! The `users` methods every store has, said once for the stores of both canisters (the
//! sqlite-vfs canister compiles this file too, as it does ids.rs and report.rs).

/// Defines the eight `users` methods of the store `$stem` (e.g. `btree`: `add_users_btree`,
/// `add_users_btree_ids`, `get_users_btree`, `get_users_btree_update`, `get_users_btree_ids`,
/// `get_users_btree_ids_update`, `scan_users_btree`, `scan_users_btree_update`) on the
/// module `$store`, which has `MAX_ID`, `insert`, `get` and `scan`. Each checks its
/// arguments, readies the payload, and reports the instructions the store's work alone
/// counted. Reads are queries with `_update` twins: replicated reads are what costs cycles.
macro_rules! users_methods {
    ($stem:ident, $store:ident) => {
        paste::paste! {
            #[ic_cdk::update]
            fn [<add_users_ $stem>](
                offset: u64,
                step: u64,
                count: u64,
            ) -> Result<bench_types::InsertReport, String> {
                let ids = crate::ids::Ids::sequence(offset, step, count, $store::MAX_ID)?;
                let (rows, instructions) =
                    crate::state::with_payload(|payload| $store::insert(&ids, payload))?;
                Ok(crate::report::insert_report(rows, instructions))
            }

            /// Inserts at explicit ids (random positions): the caller draws them, so drawing
            /// is not part of the measurement.
            #[ic_cdk::update]
            fn [<add_users_ $stem _ids>](ids: Vec<u64>) -> Result<bench_types::InsertReport, String> {
                let ids = crate::ids::Ids::list(ids, $store::MAX_ID)?;
                let (rows, instructions) =
                    crate::state::with_payload(|payload| $store::insert(&ids, payload))?;
                Ok(crate::report::insert_report(rows, instructions))
            }

            fn [<get_ $stem>](
                offset: u64,
                step: u64,
                count: u64,
            ) -> Result<bench_types::ReadReport, String> {
                let ids = crate::ids::Ids::sequence(offset, step, count, $store::MAX_ID)?;
                let (rows, instructions) = $store::get(&ids)?;
                Ok(crate::report::read_report(rows, instructions))
            }

            fn [<get_ $stem _ids>](ids: Vec<u64>) -> Result<bench_types::ReadReport, String> {
                let ids = crate::ids::Ids::list(ids, $store::MAX_ID)?;
                let (rows, instructions) = $store::get(&ids)?;
                Ok(crate::report::read_report(rows, instructions))
            }

            fn [<scan_ $stem>](offset: u64, count: u64) -> Result<bench_types::ReadReport, String> {
                let scan = crate::ids::Scan::new(offset, count, $store::MAX_ID)?;
                let (rows, instructions) = $store::scan(&scan)?;
                Ok(crate::report::read_report(rows, instructions))
            }

            #[ic_cdk::query]
            fn [<get_users_ $stem>](
                offset: u64,
                step: u64,
                count: u64,
            ) -> Result<bench_types::ReadReport, String> {
                [<get_ $stem>](offset, step, count)
            }

            #[ic_cdk::update]
            fn [<get_users_ $stem _update>](
                offset: u64,
                step: u64,
                count: u64,
            ) -> Result<bench_types::ReadReport, String> {
                [<get_ $stem>](offset, step, count)
            }

            #[ic_cdk::query]
            fn [<get_users_ $stem _ids>](ids: Vec<u64>) -> Result<bench_types::ReadReport, String> {
                [<get_ $stem _ids>](ids)
            }

            #[ic_cdk::update]
            fn [<get_users_ $stem _ids_update>](
                ids: Vec<u64>,
            ) -> Result<bench_types::ReadReport, String> {
                [<get_ $stem _ids>](ids)
            }

            #[ic_cdk::query]
            fn [<scan_users_ $stem>](
                offset: u64,
                count: u64,
            ) -> Result<bench_types::ReadReport, String> {
                [<scan_ $stem>](offset, count)
            }

            #[ic_cdk::update]
            fn [<scan_users_ $stem _update>](
                offset: u64,
                count: u64,
            ) -> Result<bench_types::ReadReport, String> {
                [<scan_ $stem>](offset, count)
            }
        }
    };
}
