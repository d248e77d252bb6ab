//! The search for the largest size one message carries: from a size that fits and a first
//! guess, each next size predicted from the calls that fit so far, to three significant
//! digits, until a size that fits and the size one step above it, which fails, are both
//! known (or the call budget is spent). The calls are the caller's: real ones in
//! `confirm.rs`, a model in the tests.

use anyhow::Result;

use super::MAX_CALLS;

/// A call that fit: its rows, the instructions it was charged and how much the heap grew.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fit {
    pub rows: u64,
    pub instructions: u64,
    pub heap_growth: u64,
}

/// What bounds a search besides the instruction limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub instruction_limit: u64,
    /// Bytes the heap may still grow before the canister's `wasm_memory_limit` (updates).
    pub heap_room: Option<u64>,
    /// Most rows a call can name: the stored rows, for lookups.
    pub max_rows: Option<u64>,
}

/// Sizes are searched to three significant digits of the estimate: 654,321 gives steps of
/// 1,000, so the answer is "654,000 fits, 655,000 does not".
pub fn step_for(estimate: u64) -> u64 {
    let digits = estimate.max(1).ilog10() + 1;
    10u64.pow(digits.saturating_sub(3))
}

/// The size one message can carry, predicted from the calls that fit: a straight line
/// through the two largest (one through the origin when there is one), and, for the heap,
/// its room over the bytes per row; whichever limit comes first.
pub fn predict(bounds: &Bounds, best: &Fit, previous: Option<&Fit>) -> u64 {
    let limit = bounds.instruction_limit as f64;
    let (x, y) = (best.rows as f64, best.instructions as f64);
    let by_instructions = match previous {
        Some(p) if p.rows < best.rows && p.instructions < best.instructions => {
            let slope = (y - p.instructions as f64) / (x - p.rows as f64);
            x + (limit - y) / slope
        }
        _ => x * limit / y.max(1.0),
    };
    let by_memory = match bounds.heap_room {
        Some(room) if best.heap_growth > 0 => x * room as f64 / best.heap_growth as f64,
        _ => f64::INFINITY,
    };
    let rows = by_instructions.min(by_memory).max(0.0);
    let rows = if rows >= u64::MAX as f64 {
        u64::MAX
    } else {
        rows as u64
    };
    bounds.max_rows.map_or(rows, |m| rows.min(m))
}

/// Where a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub estimate: u64,
    pub step: u64,
    /// The largest size that fit.
    pub fits: Fit,
    /// The smallest size the replica rejected, if one was tried.
    pub fails: Option<u64>,
    /// Real calls made.
    pub calls: u32,
}

impl Found {
    /// The largest fitting size and a rejected one are one step apart, or every row fit.
    pub fn converged(&self, bounds: &Bounds) -> bool {
        match self.fails {
            Some(h) => h - self.fits.rows <= self.step,
            None => bounds.max_rows == Some(self.fits.rows),
        }
    }
}

/// Searches the largest size that fits, starting from `known` (a call that fit, e.g. the
/// measured batch) and the first guess `estimate`. `call(rows)` makes the real call from the
/// same state: `Some` if it fit, `None` if the replica rejected it.
pub fn search(
    bounds: &Bounds,
    known: Fit,
    estimate: u64,
    call: &mut dyn FnMut(u64) -> Result<Option<Fit>>,
) -> Result<Found> {
    let step = step_for(estimate);
    let round = |rows: u64| rows / step * step;
    let mut found = Found {
        estimate,
        step,
        fits: known,
        fails: None,
        calls: 0,
    };
    let mut previous: Option<Fit> = None;
    let mut guess = round(estimate);
    while found.calls < MAX_CALLS && !found.converged(bounds) {
        let lo = found.fits.rows;
        // Never below what fit nor at or above what failed; bisect when the prediction
        // points past a size that failed.
        let mut next = guess.max(round(lo) + step);
        if let Some(max) = bounds.max_rows {
            next = next.min(max);
        }
        if let Some(hi) = found.fails {
            if next >= hi {
                next = round(lo + (hi - lo) / 2).max(round(lo) + step);
            }
            if next >= hi {
                break;
            }
        }
        if next <= lo {
            break;
        }
        found.calls += 1;
        match call(next)? {
            Some(fit) => {
                previous = Some(found.fits);
                found.fits = fit;
            }
            None => found.fails = Some(next),
        }
        guess = round(predict(bounds, &found.fits, previous.as_ref()));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_keep_three_significant_digits() {
        assert_eq!(step_for(0), 1);
        assert_eq!(step_for(999), 1);
        assert_eq!(step_for(1_000), 10);
        assert_eq!(step_for(654_321), 1_000);
        assert_eq!(step_for(12_345_678), 100_000);
    }

    fn fit(rows: u64, instructions: u64, heap_growth: u64) -> Fit {
        Fit {
            rows,
            instructions,
            heap_growth,
        }
    }

    /// Bounds of the instruction limit alone.
    fn limit(instruction_limit: u64) -> Bounds {
        Bounds {
            instruction_limit,
            heap_room: None,
            max_rows: None,
        }
    }

    /// [`search`] from `known` on a store whose message costs `fixed + per_row * rows`
    /// instructions and grows the heap by `heap_per_row` bytes per row: what it found and
    /// the sizes it called.
    fn search_linear(
        bounds: Bounds,
        known: Fit,
        estimate: u64,
        (fixed, per_row, heap_per_row): (u64, u64, u64),
    ) -> (Found, Vec<u64>) {
        let mut calls = Vec::new();
        let found = search(&bounds, known, estimate, &mut |rows| {
            calls.push(rows);
            let instructions = fixed + per_row * rows;
            let heap_growth = heap_per_row * rows;
            let fits = instructions <= bounds.instruction_limit
                && bounds.heap_room.is_none_or(|room| heap_growth <= room);
            Ok(fits.then_some(fit(rows, instructions, heap_growth)))
        })
        .unwrap();
        (found, calls)
    }

    /// [`search_linear`] from [`predict`]'s first guess, as a capacity search starts.
    fn search_predicted(bounds: Bounds, known: Fit, cost: (u64, u64, u64)) -> (Found, Vec<u64>) {
        let estimate = predict(&bounds, &known, None);
        search_linear(bounds, known, estimate, cost)
    }

    #[test]
    fn finds_the_instruction_limit_to_one_step() {
        let bounds = limit(40_000_000_000);
        // 61,234 instructions per row and 2M fixed: 653,199 rows fit.
        let known = fit(1_000, 2_000_000 + 61_234_000, 0);
        let (found, calls) = search_predicted(bounds, known, (2_000_000, 61_234, 0));
        assert_eq!(found.step, 1_000);
        assert_eq!(found.fits.rows, 653_000);
        assert_eq!(found.fails, Some(654_000));
        assert!(found.converged(&bounds));
        assert_eq!(calls.len() as u32, found.calls);
        assert!(found.calls <= 3, "{calls:?}");
    }

    #[test]
    fn the_heap_room_can_stop_a_message_first() {
        let bounds = Bounds {
            heap_room: Some(3_000_000_000),
            ..limit(40_000_000_000)
        };
        let known = fit(1_000, 1_500_000, 131_072);
        // The batch's heap growth is page-rounded (131 B/row against 150 real): the first
        // guess overshoots and is rejected; the search still ends one step apart.
        let (found, _) = search_predicted(bounds, known, (100_000, 1_400, 150));
        assert_eq!(found.fits.rows, 20_000_000);
        assert_eq!(found.fails, Some(20_100_000));
        assert!(found.calls <= MAX_CALLS);
    }

    #[test]
    fn lookups_stop_at_the_rows_stored() {
        let bounds = Bounds {
            max_rows: Some(1_000_000),
            ..limit(5_000_000_000)
        };
        let (found, calls) = search_predicted(bounds, fit(100, 100_000, 0), (0, 1_000, 0));
        assert_eq!((found.fits.rows, found.fails), (1_000_000, None));
        assert!(found.converged(&bounds));
        assert_eq!(calls, vec![1_000_000]);
    }

    #[test]
    fn a_batch_already_at_the_limit_needs_only_the_call_above() {
        let known = fit(100, 1_000_000, 0);
        let (found, calls) = search_linear(limit(1_000_000), known, 100, (0, 10_000, 0));
        assert_eq!((found.fits.rows, found.fails), (100, Some(101)));
        assert_eq!(calls, vec![101]);
    }
}
