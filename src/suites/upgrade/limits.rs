//! The upgrade suite's limits: the points each measured upgrade leaves in results.json, the
//! limit run's record, and the straight line that predicts, from the points, the largest
//! store each replica limit lets a canister upgrade.

use serde::{Deserialize, Serialize};

use super::{MAX_HEAP_BYTES, MAX_WASM64_HEAP_BYTES};
use crate::engine::cost::Limits;

/// One measured upgrade, for the limits: kept in results.json.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Point {
    /// The store's label.
    pub store: String,
    pub rows: u64,
    pub payload_size: u64,
    /// Measured at the limit run's payload size to predict its size (not a row of the
    /// upgrade table).
    pub calibration: bool,
    pub compile_instructions: u64,
    pub pre_upgrade_instructions: u64,
    pub post_upgrade_instructions: u64,
    pub upgrade_instructions: u64,
    /// Heap before the upgrade (the old module's, with the rows).
    pub heap_bytes_before: u64,
    /// Heap when pre_upgrade ends: the map and its encoded copy (Wasm memory never
    /// shrinks, so this is the peak).
    pub heap_bytes_pre_upgrade: u64,
    /// The new module's heap when post_upgrade ends (what wasm_memory_limit is checked on).
    pub heap_bytes_after: u64,
    pub stable_bytes_after: u64,
    /// The heap store's encoded size, as the canister reports it (0 for other stores).
    pub encoded_bytes: u64,
    /// Whether the module has a 64-bit heap (Motoko's enhanced orthogonal persistence): its
    /// maximum is then 6 GiB, not 4.
    #[serde(default)]
    pub wasm64: bool,
}

/// The limit run: the prediction it was made from and what happened.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct LimitRun {
    pub store: String,
    pub payload_size: u64,
    pub predicted: Predicted,
    /// The size run (None when no limit is predicted within MAX_LIMIT_RUN_ROWS).
    pub rows: Option<u64>,
    /// The upgrade's error code and message, or None if it succeeded.
    pub error_code: Option<String>,
    pub error: Option<String>,
    /// After the failed upgrade: the module (as the `stats` query sees it), the rows the
    /// store reports and the 100-key lookup's rows found.
    pub rows_after: Option<u64>,
    pub lookup_rows_found: Option<u64>,
    /// The heap when the failing upgrade's pre_upgrade ended (or trapped).
    #[serde(default)]
    pub heap_bytes_in_pre_upgrade: Option<u64>,
    pub note: String,
}

/// The largest N each limit allows, from a straight line through the two largest measured
/// sizes; None when the measured cost does not grow with N.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Predicted {
    /// install_code's 300B instructions (compilation and every hook together).
    pub instructions: Option<u64>,
    /// wasm_memory_limit (3 GiB by default): the heap while it holds the rows, and the new
    /// heap after post_upgrade.
    pub wasm_memory_limit: Option<u64>,
    /// The heap's maximum during pre_upgrade (exempt from wasm_memory_limit), map and
    /// encoded copy together: 4 GiB in wasm32, 6 GiB in wasm64.
    pub heap_4gib: Option<u64>,
}

impl Predicted {
    /// The first size predicted to fail: one past the smallest limit.
    pub fn first_failing(&self) -> Option<u64> {
        [self.instructions, self.wasm_memory_limit, self.heap_4gib]
            .into_iter()
            .flatten()
            .min()
            .map(|n| n + 1)
    }
}

/// The largest n with `a + b n <= limit` for the line through the two largest points
/// `(n, y)`; None with fewer than two points or when y does not grow.
pub fn largest_within(points: &[(u64, u64)], limit: u64) -> Option<u64> {
    let mut pts = points.to_vec();
    pts.sort_unstable();
    let [.., (n1, y1), (n2, y2)] = pts[..] else {
        return None;
    };
    if n2 <= n1 || y2 <= y1 {
        return None;
    }
    let slope = (y2 - y1) as f64 / (n2 - n1) as f64;
    let intercept = y2 as f64 - slope * n2 as f64;
    let n = ((limit as f64 - intercept) / slope).floor();
    Some(if n < 0.0 { 0 } else { n as u64 })
}

/// Predicts the limits of one store from its points.
pub fn predict(points: &[&Point], limits: &Limits) -> Predicted {
    let line = |f: &dyn Fn(&Point) -> u64| -> Vec<(u64, u64)> {
        points.iter().map(|p| (p.rows, f(p))).collect()
    };
    let memory_limit = match limits.wasm_memory_limit {
        0 => MAX_HEAP_BYTES,
        l => l,
    };
    Predicted {
        instructions: largest_within(
            &line(&|p| p.upgrade_instructions),
            limits.max_instructions_per_install,
        ),
        wasm_memory_limit: largest_within(
            &line(&|p| p.heap_bytes_before.max(p.heap_bytes_after)),
            memory_limit,
        ),
        heap_4gib: largest_within(
            &line(&|p| p.heap_bytes_pre_upgrade),
            match points.first().is_some_and(|p| p.wasm64) {
                true => MAX_WASM64_HEAP_BYTES,
                false => MAX_HEAP_BYTES,
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_within_follows_the_line_through_the_two_largest_points() {
        // y = 1,000 + 10 n: 10,000 = 1,000 + 10 n at n = 900.
        let pts = [(1, 5), (100, 2_000), (200, 3_000)];
        assert_eq!(largest_within(&pts, 10_000), Some(900));
        assert_eq!(largest_within(&pts, 500), Some(0));
        assert_eq!(largest_within(&[(10, 5), (20, 5)], 100), None);
        assert_eq!(largest_within(&[(10, 5)], 100), None);
    }

    #[test]
    fn the_first_failing_size_is_one_past_the_smallest_limit() {
        let p = Predicted {
            instructions: Some(500),
            wasm_memory_limit: None,
            heap_4gib: Some(300),
        };
        assert_eq!(p.first_failing(), Some(301));
        assert_eq!(Predicted::default().first_failing(), None);
    }
}
