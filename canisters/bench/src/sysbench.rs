//! sysbench OLTP (seed 004): sysbench's `sbtest` table — `id INTEGER PRIMARY KEY,
//! k INTEGER, c CHAR(120), pad CHAR(60)` with an index on `k` — and the 23 workloads of
//! Doltlite's sysbench-style suite, one sysbench "event" per update message.
//!
//! Stores:
//! - `sqlite`: tables `sysbench_sbtest1` (+ index on k), `sysbench_sbtest2` (the join
//!   partner, at most 1,000 rows), `sysbench_types` (at most 1,000 rows) and
//!   `sysbench_bulk`, created only by `sysbench_reset`, in whatever journal mode the
//!   connection is in (`configure_sqlite`).
//! - `btree`: the key-value subset on two maps of their own: id -> row (virtual memory 7)
//!   and (k, id) -> () as the index on k (virtual memory 8).
//!
//! The caller draws every id, k and range start (so drawing is not measured); the
//! canister generates c and pad from them outside the measurement and counts
//! `ic0.performance_counter(0)` around the store work alone (BEGIN/COMMIT included).

use std::cell::RefCell;

use bench_types::DbBenchReport;
use bench_types::limits::sysbench::{MAX_ID, MAX_PREFILL, MAX_ROWS, SIDE_ROWS};
use bench_types::names::SysbenchStore as Store;
use bench_types::rng::mix;
use bench_types::sysbench::{WORKLOADS, Workload};
use ic_rusqlite::rusqlite::{Connection, params};
use ic_stable_structures::StableBTreeMap;

use crate::memory::{self, Memory};
use crate::report;
use crate::sqlite;

const ROW_LEN: usize = 8 + 120 + 60;

type Rows = StableBTreeMap<u64, Vec<u8>, Memory>;
type Index = StableBTreeMap<[u8; 16], (), Memory>;

thread_local! {
    static ROWS: RefCell<Rows> = RefCell::new(Rows::init(memory::get(memory::SYSBENCH_ROWS)));
    static INDEX: RefCell<Index> = RefCell::new(Index::init(memory::get(memory::SYSBENCH_K_INDEX)));
}

/// Parsed by the shared macro in this module's own function: the canister's counts depend
/// on where the code is compiled (see `bench_types::names`).
fn parse_store(name: &str) -> Result<Store, String> {
    bench_types::parse_sysbench_store!(name)
}

/// Rows of the bulk insert per message.
const BULK_ROWS: u64 = 100;

/// sysbench's c/pad: groups of 11 digits joined by '-' (10 groups = 119 chars for c,
/// 5 = 59 for pad), padded to CHAR(120)/CHAR(60) with a space.
fn text(seed: u64, groups: usize) -> String {
    let mut s = String::with_capacity(groups * 12);
    let mut x = seed;
    for g in 0..groups {
        if g > 0 {
            s.push('-');
        }
        for _ in 0..11 {
            x = mix(x);
            s.push(char::from(b'0' + (x % 10) as u8));
        }
    }
    s.push(' ');
    s
}

fn k_of(id: u64, rows: u64) -> u64 {
    mix(id ^ 0x6B) % rows.max(1) + 1
}

fn row_bytes(k: u64, c: &str, pad: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(ROW_LEN);
    v.extend_from_slice(&k.to_be_bytes());
    v.extend_from_slice(c.as_bytes());
    v.extend_from_slice(pad.as_bytes());
    v
}

fn index_key(k: u64, id: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&k.to_be_bytes());
    b[8..].copy_from_slice(&id.to_be_bytes());
    b
}

fn row_k(v: &[u8]) -> u64 {
    u64::from_be_bytes(v[..8].try_into().expect("rows start with k"))
}

const SCHEMA: &str = "
DROP TABLE IF EXISTS sysbench_sbtest1;
DROP TABLE IF EXISTS sysbench_sbtest2;
DROP TABLE IF EXISTS sysbench_types;
DROP TABLE IF EXISTS sysbench_bulk;
CREATE TABLE sysbench_sbtest1 (id INTEGER PRIMARY KEY, k INTEGER NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '');
CREATE INDEX sysbench_k_1 ON sysbench_sbtest1(k);
CREATE TABLE sysbench_sbtest2 (id INTEGER PRIMARY KEY, k INTEGER NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '');
CREATE INDEX sysbench_k_2 ON sysbench_sbtest2(k);
CREATE TABLE sysbench_types (id INTEGER PRIMARY KEY, ival INTEGER, rval REAL, tval TEXT);
CREATE TABLE sysbench_bulk (id INTEGER PRIMARY KEY, k INTEGER, c CHAR(120), pad CHAR(60));
";

fn sql(context: &'static str) -> impl Fn(ic_rusqlite::rusqlite::Error) -> String {
    move |e| format!("{context}: {e}")
}

fn letters(seed: u64, n: usize) -> String {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = mix(x);
            char::from(b'a' + (x % 26) as u8)
        })
        .collect()
}

/// Empties the store; for SQLite (re)creates the tables and fills sbtest2 and
/// sysbench_types with min(rows, 1,000) rows, k drawn in 1..=rows. Returns rows written.
pub fn reset(store: &str, rows: u64) -> Result<u64, String> {
    let store = parse_store(store)?;
    check_rows(rows)?;
    match store {
        Store::BTree => {
            ROWS.with_borrow_mut(|m| m.clear_new());
            INDEX.with_borrow_mut(|m| m.clear_new());
            Ok(0)
        }
        Store::Sqlite => sqlite::with_connection(|conn| {
            conn.execute_batch(SCHEMA)
                .map_err(sql("creating sysbench tables"))?;
            let side = rows.min(SIDE_ROWS);
            let tx = conn.transaction().map_err(sql("BEGIN"))?;
            {
                let mut s2 = tx
                    .prepare("INSERT INTO sysbench_sbtest2 VALUES (?1, ?2, ?3, ?4)")
                    .map_err(sql("preparing sbtest2 insert"))?;
                let mut t = tx
                    .prepare("INSERT INTO sysbench_types VALUES (?1, ?2, ?3, ?4)")
                    .map_err(sql("preparing types insert"))?;
                for id in 1..=side {
                    let k = mix(id ^ 0x5B2) % rows + 1;
                    s2.execute(params![
                        id as i64,
                        k as i64,
                        text(id ^ 0xC2, 10),
                        text(id ^ 0xA2, 5)
                    ])
                    .map_err(sql("filling sbtest2"))?;
                    let r = mix(id ^ 0x7E);
                    t.execute(params![
                        (r % 2_000_001) as i64 - 1_000_000,
                        ((r >> 20) % 200_000_001) as f64 / 100.0 - 1_000_000.0,
                        letters(r, 50),
                        id as i64
                    ])
                    .map_err(sql("filling sysbench_types"))?;
                }
            }
            tx.commit().map_err(sql("COMMIT"))?;
            Ok(2 * side)
        }),
    }
}

fn check_rows(rows: u64) -> Result<(), String> {
    if rows == 0 || rows > MAX_ROWS {
        return Err(format!("rows must be in 1..={MAX_ROWS}, got {rows}"));
    }
    Ok(())
}

fn require_tables(conn: &Connection) -> Result<(), String> {
    let n: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sysbench_sbtest1'",
            [],
            |r| r.get(0),
        )
        .map_err(sql("looking for sysbench_sbtest1"))?;
    if n == 0 {
        return Err("no sysbench tables: call sysbench_reset(\"sqlite\", rows) first".into());
    }
    Ok(())
}

/// Writes sbtest1 rows `first..first+count` (ids), k drawn in 1..=rows, one transaction.
pub fn prefill(store: &str, first: u64, count: u64, rows: u64) -> Result<u64, String> {
    let store = parse_store(store)?;
    check_rows(rows)?;
    if count == 0 || count > MAX_PREFILL {
        return Err(format!("count must be in 1..={MAX_PREFILL}, got {count}"));
    }
    if first == 0 || first.saturating_add(count - 1) > rows {
        return Err(format!(
            "ids {first}..{} are outside 1..={rows}",
            first.saturating_add(count)
        ));
    }
    let ids = first..first + count;
    match store {
        Store::BTree => {
            ROWS.with_borrow_mut(|m| {
                INDEX.with_borrow_mut(|ix| {
                    for id in ids {
                        let k = k_of(id, rows);
                        m.insert(id, row_bytes(k, &text(id, 10), &text(!id, 5)));
                        ix.insert(index_key(k, id), ());
                    }
                })
            });
            Ok(count)
        }
        Store::Sqlite => sqlite::with_connection(|conn| {
            require_tables(conn)?;
            let tx = conn.transaction().map_err(sql("BEGIN"))?;
            {
                let mut st = tx
                    .prepare_cached("INSERT INTO sysbench_sbtest1 VALUES (?1, ?2, ?3, ?4)")
                    .map_err(sql("preparing the prefill insert"))?;
                for id in ids {
                    st.execute(params![
                        id as i64,
                        k_of(id, rows) as i64,
                        text(id, 10),
                        text(!id, 5)
                    ])
                    .map_err(|e| format!("prefilling id {id}: {e}"))?;
                }
            }
            tx.commit().map_err(sql("COMMIT"))?;
            Ok(count)
        }),
    }
}

/// Counts of what one workload message did.
#[derive(Default)]
struct Done {
    /// Statements (SQLite) or map operations at the statement level (B-tree).
    ops: u64,
    /// Rows returned or changed.
    found: u64,
    bytes: u64,
}

/// Runs one event of `workload` with the drawn `params` (ids, k values or range starts;
/// how many each workload takes is in `WORKLOADS`).
pub fn run(store: &str, workload: &str, params: Vec<u64>) -> Result<DbBenchReport, String> {
    let store = parse_store(store)?;
    let Workload {
        name,
        params: want,
        on_map,
        ..
    } = WORKLOADS
        .iter()
        .copied()
        .find(|w| w.name == workload)
        .ok_or_else(|| {
            format!(
                "unknown sysbench workload {workload:?}; accepted: {}",
                WORKLOADS.map(|w| w.name).join(", ")
            )
        })?;
    if params.len() != want {
        return Err(format!(
            "{name} takes {want} parameters, got {}",
            params.len()
        ));
    }
    if let Some(bad) = params.iter().find(|&&p| p == 0 || p > MAX_ID) {
        return Err(format!("parameter {bad} is outside 1..={MAX_ID}"));
    }
    let (done, instructions) = match store {
        Store::BTree => {
            if !on_map {
                return Err(format!(
                    "{name} is not in the map's key-value subset ({})",
                    WORKLOADS
                        .iter()
                        .filter(|w| w.on_map)
                        .map(|w| w.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            run_map(name, &params)?
        }
        Store::Sqlite => sqlite::with_connection(|conn| {
            require_tables(conn)?;
            run_sql(conn, name, &params)
        })?,
    };
    Ok(DbBenchReport {
        ops: done.ops,
        found: done.found,
        bytes: done.bytes,
        instructions,
        heap_pages: report::heap_pages(),
        stable_pages: report::stable_pages(),
    })
}

/// New row contents for an update or insert at `id` (salted by `p`), made before measuring.
fn new_row(id: u64, p: u64) -> (u64, String, String) {
    let s = mix(id ^ p.rotate_left(17));
    (s % MAX_ROWS + 1, text(s, 10), text(!s, 5))
}

fn run_map(name: &str, p: &[u64]) -> Result<(Done, u64), String> {
    // Prepared outside the measurement: the rows any write will store.
    let fresh: Vec<(u64, String, String)> = p.iter().map(|&x| new_row(x, 0x5EED)).collect();
    ROWS.with_borrow_mut(|m| {
        INDEX.with_borrow_mut(|ix| {
            report::measure(|| {
                let mut d = Done::default();
                let read = |d: &mut Done, v: Option<Vec<u8>>, from: usize, to: usize| {
                    if let Some(v) = v {
                        d.found += 1;
                        d.bytes += (to - from) as u64;
                        std::hint::black_box(&v[from..to]);
                    }
                };
                let range = |m: &Rows, d: &mut Done, s: u64, n: u64, sum: bool| {
                    d.ops += 1;
                    let mut total = 0u64;
                    for (_, v) in m.range(s..s + n).map(|e| e.into_pair()) {
                        d.found += 1;
                        if sum {
                            total += row_k(&v);
                            d.bytes += 8;
                        } else {
                            d.bytes += 120;
                            std::hint::black_box(&v[8..128]);
                        }
                    }
                    std::hint::black_box(total);
                };
                // Replaces `id`'s row (and its index entry) by (k, c, pad); false if absent.
                let delete = |m: &mut Rows, ix: &mut Index, id: u64| -> bool {
                    match m.remove(&id) {
                        Some(old) => {
                            ix.remove(&index_key(row_k(&old), id));
                            true
                        }
                        None => false,
                    }
                };
                match name {
                    "oltp_point_select" => {
                        for &id in p {
                            d.ops += 1;
                            read(&mut d, m.get(&id), 8, 128);
                        }
                    }
                    "oltp_range_select" => range(m, &mut d, p[0], 100, false),
                    "oltp_sum_range" => range(m, &mut d, p[0], 100, true),
                    "select_random_points" => {
                        d.ops += 1;
                        for &id in p {
                            read(&mut d, m.get(&id), 0, ROW_LEN);
                        }
                    }
                    "select_random_ranges" => {
                        d.ops += 1;
                        let n = m.range(p[0]..p[0] + 10).count() as u64;
                        d.found += n;
                    }
                    "oltp_index_scan" => {
                        for &k in p {
                            d.ops += 1;
                            let ids: Vec<u64> = ix
                                .keys_range(index_key(k, 0)..index_key(k + 1, 0))
                                .map(|key| u64::from_be_bytes(key[8..].try_into().unwrap()))
                                .collect();
                            for id in ids {
                                read(&mut d, m.get(&id), 8, 128);
                            }
                        }
                    }
                    "covering_index_scan" => {
                        d.ops += 1;
                        d.found += ix
                            .keys_range(index_key(p[0], 0)..index_key(p[0] + 100, 0))
                            .count() as u64;
                    }
                    "oltp_insert" => {
                        // All or nothing, as SQLite's transaction: check every id first.
                        if let Some(id) = p.iter().find(|id| m.contains_key(id)) {
                            return Err(format!("oltp_insert: id {id} already exists"));
                        }
                        for (i, &id) in p.iter().enumerate() {
                            d.ops += 1;
                            let (k, c, pad) = &fresh[i];
                            m.insert(id, row_bytes(*k, c, pad));
                            ix.insert(index_key(*k, id), ());
                            d.found += 1;
                            d.bytes += ROW_LEN as u64;
                        }
                    }
                    "oltp_update_index" => {
                        for &id in p {
                            d.ops += 1;
                            update_k(m, ix, id, &mut d);
                        }
                    }
                    "oltp_update_non_index" => {
                        for (i, &id) in p.iter().enumerate() {
                            d.ops += 1;
                            update_c(m, id, &fresh[i].1, &mut d);
                        }
                    }
                    "oltp_delete_insert" => {
                        for (i, &id) in p.iter().enumerate() {
                            d.ops += 2;
                            delete(m, ix, id);
                            let (k, c, pad) = &fresh[i];
                            m.insert(id, row_bytes(*k, c, pad));
                            ix.insert(index_key(*k, id), ());
                            d.found += 1;
                            d.bytes += ROW_LEN as u64;
                        }
                    }
                    "oltp_write_only" => {
                        d.ops += 4;
                        update_k(m, ix, p[0], &mut d);
                        update_c(m, p[1], &fresh[1].1, &mut d);
                        delete(m, ix, p[2]);
                        let (k, c, pad) = &fresh[2];
                        m.insert(p[2], row_bytes(*k, c, pad));
                        ix.insert(index_key(*k, p[2]), ());
                        d.found += 1;
                        d.bytes += ROW_LEN as u64;
                    }
                    other => return Err(format!("{other} has no map version")),
                }
                Ok(d)
            })
        })
    })
}

/// `UPDATE SET k = k + 1 WHERE id = ?` on the map: move the index entry, rewrite the row.
fn update_k(m: &mut Rows, ix: &mut Index, id: u64, d: &mut Done) {
    if let Some(mut v) = m.get(&id) {
        let k = row_k(&v);
        ix.remove(&index_key(k, id));
        ix.insert(index_key(k + 1, id), ());
        v[..8].copy_from_slice(&(k + 1).to_be_bytes());
        m.insert(id, v);
        d.found += 1;
        d.bytes += 8;
    }
}

/// `UPDATE SET c = ? WHERE id = ?` on the map: rewrite the row.
fn update_c(m: &mut Rows, id: u64, c: &str, d: &mut Done) {
    if let Some(mut v) = m.get(&id) {
        v[8..128].copy_from_slice(c.as_bytes());
        m.insert(id, v);
        d.found += 1;
        d.bytes += 120;
    }
}

const POINT: &str = "SELECT c FROM sysbench_sbtest1 WHERE id = ?1";
const RANGE: &str = "SELECT c FROM sysbench_sbtest1 WHERE id BETWEEN ?1 AND ?2";
const SUM: &str = "SELECT SUM(k) FROM sysbench_sbtest1 WHERE id BETWEEN ?1 AND ?2";
const ORDER: &str = "SELECT c FROM sysbench_sbtest1 WHERE id BETWEEN ?1 AND ?2 ORDER BY c";
const DISTINCT: &str =
    "SELECT DISTINCT c FROM sysbench_sbtest1 WHERE id BETWEEN ?1 AND ?2 ORDER BY c";
const UPDATE_K: &str = "UPDATE sysbench_sbtest1 SET k = k + 1 WHERE id = ?1";
const UPDATE_C: &str = "UPDATE sysbench_sbtest1 SET c = ?1 WHERE id = ?2";
const DELETE: &str = "DELETE FROM sysbench_sbtest1 WHERE id = ?1";
const INSERT: &str = "INSERT INTO sysbench_sbtest1 (id, k, c, pad) VALUES (?1, ?2, ?3, ?4)";
const INDEX_SCAN: &str = "SELECT id, c FROM sysbench_sbtest1 WHERE k = ?1";
const RANDOM_POINTS: &str = "SELECT id, k, c, pad FROM sysbench_sbtest1 WHERE id IN (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
const RANDOM_RANGE: &str = "SELECT count(k) FROM sysbench_sbtest1 WHERE id BETWEEN ?1 AND ?2";
const COVERING_SCAN: &str = "SELECT count(k) FROM sysbench_sbtest1 WHERE k BETWEEN ?1 AND ?2";
const GROUP_BY: &str =
    "SELECT k, count(*) FROM sysbench_sbtest1 WHERE id BETWEEN ?1 AND ?2 GROUP BY k ORDER BY k";
const JOIN: &str = "SELECT a.id, b.id FROM sysbench_sbtest1 a JOIN sysbench_sbtest2 b ON a.k = b.k WHERE a.id BETWEEN ?1 AND ?2";
const JOIN_SCAN: &str = "SELECT count(*) FROM sysbench_sbtest1 a JOIN sysbench_sbtest2 b ON a.k = b.k WHERE b.id BETWEEN ?1 AND ?2";
const TYPES_LIKE: &str = "SELECT count(*) FROM sysbench_types WHERE tval LIKE ?1";
const C_LIKE: &str = "SELECT count(*) FROM sysbench_sbtest1 WHERE c LIKE ?1";
const BULK_INSERT: &str = "INSERT INTO sysbench_bulk (k, c, pad) VALUES (?1, ?2, ?3)";
const TYPES_DELETE: &str = "DELETE FROM sysbench_types WHERE id = ?1";
const TYPES_REPLACE: &str = "INSERT OR REPLACE INTO sysbench_types VALUES (?1, ?2, ?3, ?4)";

/// Runs `sql` with integer parameters, reading every column of every row.
fn query(conn: &Connection, sql: &str, args: &[i64], d: &mut Done) -> Result<(), String> {
    let mut st = conn
        .prepare_cached(sql)
        .map_err(|e| format!("preparing {sql}: {e}"))?;
    let n = st.column_count();
    let mut rows = st
        .query(ic_rusqlite::rusqlite::params_from_iter(args.iter()))
        .map_err(|e| format!("{sql}: {e}"))?;
    d.ops += 1;
    while let Some(row) = rows.next().map_err(|e| format!("{sql}: {e}"))? {
        d.found += 1;
        for i in 0..n {
            match row.get_ref(i).map_err(|e| format!("{sql}: {e}"))? {
                ic_rusqlite::rusqlite::types::ValueRef::Text(t) => d.bytes += t.len() as u64,
                _ => d.bytes += 8,
            }
        }
    }
    Ok(())
}

fn exec(
    conn: &Connection,
    sql: &str,
    args: impl ic_rusqlite::rusqlite::Params,
    d: &mut Done,
) -> Result<(), String> {
    let mut st = conn
        .prepare_cached(sql)
        .map_err(|e| format!("preparing {sql}: {e}"))?;
    let n = st.execute(args).map_err(|e| format!("{sql}: {e}"))?;
    d.ops += 1;
    d.found += n as u64;
    Ok(())
}

/// The SQLite workloads that write, and so run in a transaction: a pattern (a macro, so
/// that `run_sql`'s match compiles as it always has).
macro_rules! writing_workloads {
    () => {
        "oltp_bulk_insert"
            | "oltp_insert"
            | "oltp_update_index"
            | "oltp_update_non_index"
            | "oltp_delete_insert"
            | "oltp_write_only"
            | "types_delete_insert"
            | "oltp_read_write"
    };
}

fn run_sql(conn: &Connection, name: &str, p: &[u64]) -> Result<(Done, u64), String> {
    let fresh: Vec<(u64, String, String)> = p.iter().map(|&x| new_row(x, 0x5EED)).collect();
    let i = |x: u64| x as i64;
    let pattern = |x: u64| format!("%{}%", letters(x, 3));
    let like = pattern(p[0]);
    let bulk: Vec<(u64, String, String)> = (0..BULK_ROWS).map(|j| new_row(p[0], j + 1)).collect();
    let ranges = |conn: &Connection, d: &mut Done, starts: &[u64], all: bool| {
        query(conn, RANGE, &[i(starts[0]), i(starts[0] + 99)], d)?;
        query(conn, SUM, &[i(starts[1]), i(starts[1] + 99)], d)?;
        if all {
            query(conn, ORDER, &[i(starts[2]), i(starts[2] + 99)], d)?;
            query(conn, DISTINCT, &[i(starts[3]), i(starts[3] + 99)], d)?;
        }
        Ok::<(), String>(())
    };
    let write = matches!(name, writing_workloads!());
    let delete_insert = |conn: &Connection, d: &mut Done, id: u64, row: &(u64, String, String)| {
        exec(conn, DELETE, [i(id)], d)?;
        exec(conn, INSERT, params![i(id), i(row.0), row.1, row.2], d)
    };
    report::measure(|| {
        let mut d = Done::default();
        if write {
            conn.execute_batch("BEGIN").map_err(sql("BEGIN"))?;
        }
        let body = (|| {
            let d = &mut d;
            match name {
                "oltp_point_select" => {
                    for &id in p {
                        query(conn, POINT, &[i(id)], d)?;
                    }
                }
                "oltp_range_select" => query(conn, RANGE, &[i(p[0]), i(p[0] + 99)], d)?,
                "oltp_sum_range" => query(conn, SUM, &[i(p[0]), i(p[0] + 99)], d)?,
                "oltp_order_range" => query(conn, ORDER, &[i(p[0]), i(p[0] + 99)], d)?,
                "oltp_distinct_range" => query(conn, DISTINCT, &[i(p[0]), i(p[0] + 99)], d)?,
                "oltp_index_scan" => {
                    for &k in p {
                        query(conn, INDEX_SCAN, &[i(k)], d)?;
                    }
                }
                "select_random_points" => {
                    let args: Vec<i64> = p.iter().map(|&x| i(x)).collect();
                    query(conn, RANDOM_POINTS, &args, d)?
                }
                "select_random_ranges" => query(conn, RANDOM_RANGE, &[i(p[0]), i(p[0] + 9)], d)?,
                "covering_index_scan" => query(conn, COVERING_SCAN, &[i(p[0]), i(p[0] + 99)], d)?,
                "groupby_scan" => query(conn, GROUP_BY, &[i(p[0]), i(p[0] + 999)], d)?,
                "index_join" => query(conn, JOIN, &[i(p[0]), i(p[0] + 9)], d)?,
                "index_join_scan" => query(conn, JOIN_SCAN, &[i(p[0]), i(p[0] + 49)], d)?,
                "types_table_scan" => {
                    let mut st = conn
                        .prepare_cached(TYPES_LIKE)
                        .map_err(sql("preparing types_table_scan"))?;
                    let n: i64 = st
                        .query_row([&like], |r| r.get(0))
                        .map_err(sql("types_table_scan"))?;
                    d.ops += 1;
                    d.found += n as u64;
                }
                "table_scan" => {
                    let mut st = conn
                        .prepare_cached(C_LIKE)
                        .map_err(sql("preparing table_scan"))?;
                    let n: i64 = st
                        .query_row([&like], |r| r.get(0))
                        .map_err(sql("table_scan"))?;
                    d.ops += 1;
                    d.found += n as u64;
                }
                "oltp_read_only" => {
                    for &id in &p[..10] {
                        query(conn, POINT, &[i(id)], d)?;
                    }
                    ranges(conn, d, &p[10..14], true)?;
                }
                "oltp_bulk_insert" => {
                    for row in &bulk {
                        exec(conn, BULK_INSERT, params![i(row.0), row.1, row.2], d)?;
                    }
                }
                "oltp_insert" => {
                    for (j, &id) in p.iter().enumerate() {
                        let row = &fresh[j];
                        exec(conn, INSERT, params![i(id), i(row.0), row.1, row.2], d)?;
                    }
                }
                "oltp_update_index" => {
                    for &id in p {
                        exec(conn, UPDATE_K, [i(id)], d)?;
                    }
                }
                "oltp_update_non_index" => {
                    for (j, &id) in p.iter().enumerate() {
                        exec(conn, UPDATE_C, params![fresh[j].1, i(id)], d)?;
                    }
                }
                "oltp_delete_insert" => {
                    for (j, &id) in p.iter().enumerate() {
                        delete_insert(conn, d, id, &fresh[j])?;
                    }
                }
                "oltp_write_only" => {
                    exec(conn, UPDATE_K, [i(p[0])], d)?;
                    exec(conn, UPDATE_C, params![fresh[1].1, i(p[1])], d)?;
                    delete_insert(conn, d, p[2], &fresh[2])?;
                }
                "types_delete_insert" => {
                    for &id in p {
                        let id = (id - 1) % SIDE_ROWS + 1;
                        let r = mix(id ^ 0x7D);
                        exec(conn, TYPES_DELETE, [i(id)], d)?;
                        exec(
                            conn,
                            TYPES_REPLACE,
                            params![
                                i(id),
                                (r % 2_000_001) as i64 - 1_000_000,
                                (r >> 20) as f64 / 1e6,
                                like
                            ],
                            d,
                        )?;
                    }
                }
                "oltp_read_write" => {
                    for &id in &p[..10] {
                        query(conn, POINT, &[i(id)], d)?;
                    }
                    ranges(conn, d, &p[10..12], false)?;
                    exec(conn, UPDATE_K, [i(p[12])], d)?;
                    exec(conn, UPDATE_C, params![fresh[13].1, i(p[13])], d)?;
                    delete_insert(conn, d, p[14], &fresh[14])?;
                }
                other => return Err(format!("{other} has no SQLite version")),
            }
            Ok::<(), String>(())
        })();
        if write {
            let end = if body.is_ok() { "COMMIT" } else { "ROLLBACK" };
            conn.execute_batch(end)
                .map_err(sql("ending the transaction"))?;
        }
        body.map(|()| d)
    })
}
