//! The sysbench suite's workloads (seed 004, Doltlite's sysbench-style list): the host
//! draws each one's parameters and builds its tables, the canister runs it.

/// Reads or writes: seed 004's two sections per journal mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Section {
    Reads,
    Writes,
}

impl Section {
    pub fn name(self) -> &'static str {
        match self {
            Section::Reads => "reads",
            Section::Writes => "writes",
        }
    }
}

/// One workload: its name (seed 004's), section, the parameters each message takes
/// (ids, k values or range starts), and whether the map runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Workload {
    pub name: &'static str,
    pub section: Section,
    pub params: usize,
    pub on_map: bool,
}

const fn w(name: &'static str, section: Section, params: usize, on_map: bool) -> Workload {
    Workload {
        name,
        section,
        params,
        on_map,
    }
}

use Section::{Reads, Writes};

/// Seed 004's 23 workloads in its order: 15 reads, then 8 writes.
pub const WORKLOADS: [Workload; 23] = [
    w("oltp_point_select", Reads, 10, true),
    w("oltp_range_select", Reads, 1, true),
    w("oltp_sum_range", Reads, 1, true),
    w("oltp_order_range", Reads, 1, false),
    w("oltp_distinct_range", Reads, 1, false),
    w("oltp_index_scan", Reads, 10, true),
    w("select_random_points", Reads, 10, true),
    w("select_random_ranges", Reads, 1, true),
    w("covering_index_scan", Reads, 1, true),
    w("groupby_scan", Reads, 1, false),
    w("index_join", Reads, 1, false),
    w("index_join_scan", Reads, 1, false),
    w("types_table_scan", Reads, 1, false),
    w("table_scan", Reads, 1, false),
    w("oltp_read_only", Reads, 14, false),
    w("oltp_bulk_insert", Writes, 1, false),
    w("oltp_insert", Writes, 10, true),
    w("oltp_update_index", Writes, 10, true),
    w("oltp_update_non_index", Writes, 10, true),
    w("oltp_delete_insert", Writes, 5, true),
    w("oltp_write_only", Writes, 3, true),
    w("types_delete_insert", Writes, 5, false),
    w("oltp_read_write", Writes, 15, false),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_reads_come_first() {
        for (i, a) in WORKLOADS.iter().enumerate() {
            assert!(
                WORKLOADS[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
        }
        let first_write = WORKLOADS.iter().position(|w| w.section == Writes).unwrap();
        assert!(WORKLOADS[first_write..].iter().all(|w| w.section == Writes));
    }

    #[test]
    fn composite_workloads_take_the_parameters_of_their_parts() {
        let params = |name: &str| WORKLOADS.iter().find(|w| w.name == name).unwrap().params;
        // oltp_read_only: 10 point selects + 4 ranges (range, sum, order, distinct).
        assert_eq!(
            params("oltp_read_only"),
            params("oltp_point_select") + 4 * params("oltp_range_select")
        );
        // oltp_read_write: 10 point selects + 2 ranges + update index, update non-index, delete/insert.
        assert_eq!(
            params("oltp_read_write"),
            params("oltp_point_select") + 2 + params("oltp_write_only")
        );
    }
}
