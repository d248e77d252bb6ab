//! Which ids a call touches, checked before any store work.
//!
//! `count` is a number of rows, never a loop bound: the forum benchmark looped over
//! `(0..count).step_by(step)` and so wrote `count / step` rows while reporting `count`.

/// Most rows one call may insert or read: keeps a call well inside the IC's
/// per-message instruction limit with the default 100-byte payload.
pub const MAX_ROWS_PER_CALL: u64 = 100_000;

/// Ids `offset, offset + step, …` — exactly `count` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdSequence {
    offset: u64,
    step: u64,
    count: u64,
}

impl IdSequence {
    /// Checks the arguments. `count = 0` is allowed and touches no row: the report then
    /// measures the fixed cost of a call (for SQLite: an empty transaction).
    /// `step = 0` is refused even for one row, so a typo cannot silently hit one id.
    /// `max_id` is the largest id the store accepts.
    pub fn new(offset: u64, step: u64, count: u64, max_id: u64) -> Result<Self, String> {
        check_count(count)?;
        if step == 0 {
            return Err("step must be at least 1".to_string());
        }
        if let Some(last) = count.checked_sub(1) {
            let last_id = step
                .checked_mul(last)
                .and_then(|span| offset.checked_add(span))
                .ok_or_else(|| {
                    format!(
                        "ids overflow u64: offset {offset} + step {step} * (count {count} - 1) > {}",
                        u64::MAX
                    )
                })?;
            if last_id > max_id {
                return Err(format!(
                    "last id {last_id} (offset {offset} + step {step} * (count {count} - 1)) exceeds the largest id this store accepts, {max_id}"
                ));
            }
        }
        Ok(IdSequence {
            offset,
            step,
            count,
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + use<> {
        let IdSequence {
            offset,
            step,
            count,
        } = *self;
        // Cannot overflow: `new` checked the last id.
        (0..count).map(move |i| offset + i * step)
    }
}

/// A range scan: up to `count` rows with id >= `offset`, in id order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    pub offset: u64,
    pub count: u64,
}

impl Scan {
    pub fn new(offset: u64, count: u64, max_id: u64) -> Result<Self, String> {
        check_count(count)?;
        if offset > max_id {
            return Err(format!(
                "offset {offset} exceeds the largest id this store accepts, {max_id}"
            ));
        }
        Ok(Scan { offset, count })
    }
}

fn check_count(count: u64) -> Result<(), String> {
    if count > MAX_ROWS_PER_CALL {
        return Err(format!(
            "count {count} exceeds MAX_ROWS_PER_CALL = {MAX_ROWS_PER_CALL}; split the work into several calls"
        ));
    }
    Ok(())
}
