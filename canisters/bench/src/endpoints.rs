//! The methods every users store has, in the bench canister and (compiled from this file)
//! the sqlite-vfs canister: the two canisters check arguments, count and report alike.
//!
//! `store_endpoints!(store: ADD, ADD_IDS, GET, GET_UPDATE, GET_IDS, GET_IDS_UPDATE, SCAN,
//! SCAN_UPDATE; READ_FNS)` defines, for the module `store` (its `MAX_ID`, `insert`, `get` and
//! `scan`), the inserts `add_users_STEM` and `add_users_STEM_ids` and the reads
//! `get_users_STEM`, `get_users_STEM_ids` and `scan_users_STEM`, each read a query with an
//! `_update` twin since replicated reads are what costs cycles; a query and its twin call one
//! function of the three READ_FNS. Every name is given whole, as bench.did spells it. The
//! caller's crate has the modules `state` (`with_payload`), `report` and `ids`, and imports
//! `Ids`, `Scan`, `InsertReport` and `ReadReport`.

macro_rules! store_endpoints {
    ($store:ident:
        $add:ident, $add_ids:ident,
        $get:ident, $get_update:ident, $get_ids:ident, $get_ids_update:ident,
        $scan:ident, $scan_update:ident;
        $get_fn:ident, $get_ids_fn:ident, $scan_fn:ident $(,)?) => {
        fn $get_fn(offset: u64, step: u64, count: u64) -> Result<ReadReport, String> {
            let ids = Ids::sequence(offset, step, count, $store::MAX_ID)?;
            let (rows, instructions) = $store::get(&ids)?;
            Ok(report::read_report(rows, instructions))
        }

        fn $get_ids_fn(ids: Vec<u64>) -> Result<ReadReport, String> {
            let ids = Ids::list(ids, $store::MAX_ID)?;
            let (rows, instructions) = $store::get(&ids)?;
            Ok(report::read_report(rows, instructions))
        }

        fn $scan_fn(offset: u64, count: u64) -> Result<ReadReport, String> {
            let scan = Scan::new(offset, count, $store::MAX_ID)?;
            let (rows, instructions) = $store::scan(&scan)?;
            Ok(report::read_report(rows, instructions))
        }

        #[ic_cdk::update]
        fn $add(offset: u64, step: u64, count: u64) -> Result<InsertReport, String> {
            let ids = Ids::sequence(offset, step, count, $store::MAX_ID)?;
            let (rows, instructions) =
                state::with_payload(|payload| $store::insert(&ids, payload))?;
            Ok(report::insert_report(rows, instructions))
        }

        /// Inserts at explicit ids (random positions): the caller draws them, so drawing is
        /// not part of the measurement.
        #[ic_cdk::update]
        fn $add_ids(ids: Vec<u64>) -> Result<InsertReport, String> {
            let ids = Ids::list(ids, $store::MAX_ID)?;
            let (rows, instructions) =
                state::with_payload(|payload| $store::insert(&ids, payload))?;
            Ok(report::insert_report(rows, instructions))
        }

        #[ic_cdk::query]
        fn $get(offset: u64, step: u64, count: u64) -> Result<ReadReport, String> {
            $get_fn(offset, step, count)
        }

        #[ic_cdk::update]
        fn $get_update(offset: u64, step: u64, count: u64) -> Result<ReadReport, String> {
            $get_fn(offset, step, count)
        }

        #[ic_cdk::query]
        fn $get_ids(ids: Vec<u64>) -> Result<ReadReport, String> {
            $get_ids_fn(ids)
        }

        #[ic_cdk::update]
        fn $get_ids_update(ids: Vec<u64>) -> Result<ReadReport, String> {
            $get_ids_fn(ids)
        }

        #[ic_cdk::query]
        fn $scan(offset: u64, count: u64) -> Result<ReadReport, String> {
            $scan_fn(offset, count)
        }

        #[ic_cdk::update]
        fn $scan_update(offset: u64, count: u64) -> Result<ReadReport, String> {
            $scan_fn(offset, count)
        }
    };
}
