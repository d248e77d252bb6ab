//! Which ids a call touches, checked before any store work.
//!
//! `count` is a number of rows, never a loop bound: the forum benchmark looped over
//! `(0..count).step_by(step)` and so wrote `count / step` rows while reporting `count`.

pub use bench_types::limits::users::{MAX_IDS_PER_CALL, MAX_ROWS_PER_CALL};

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
        check_count(count, MAX_ROWS_PER_CALL, "MAX_ROWS_PER_CALL")?;
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

/// The ids one call touches: an arithmetic sequence (offset, step, count) or an explicit
/// list (random positions, drawn by the caller so the drawing is not measured).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ids {
    Sequence(IdSequence),
    List(Vec<u64>),
}

impl Ids {
    pub fn sequence(offset: u64, step: u64, count: u64, max_id: u64) -> Result<Self, String> {
        IdSequence::new(offset, step, count, max_id).map(Ids::Sequence)
    }

    pub fn list(ids: Vec<u64>, max_id: u64) -> Result<Self, String> {
        check_count(ids.len() as u64, MAX_IDS_PER_CALL, "MAX_IDS_PER_CALL")?;
        if let Some(id) = ids.iter().find(|&&id| id > max_id) {
            return Err(format!(
                "id {id} exceeds the largest id this store accepts, {max_id}"
            ));
        }
        Ok(Ids::List(ids))
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        match self {
            Ids::Sequence(seq) => Either::Left(seq.iter()),
            Ids::List(ids) => Either::Right(ids.iter().copied()),
        }
    }
}

/// One iterator type for both kinds of ids, without boxing in the measured loop.
enum Either<L, R> {
    Left(L),
    Right(R),
}

impl<L: Iterator<Item = u64>, R: Iterator<Item = u64>> Iterator for Either<L, R> {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        match self {
            Either::Left(l) => l.next(),
            Either::Right(r) => r.next(),
        }
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
        check_count(count, MAX_ROWS_PER_CALL, "MAX_ROWS_PER_CALL")?;
        if offset > max_id {
            return Err(format!(
                "offset {offset} exceeds the largest id this store accepts, {max_id}"
            ));
        }
        Ok(Scan { offset, count })
    }
}

fn check_count(count: u64, max: u64, name: &str) -> Result<(), String> {
    if count > max {
        return Err(format!(
            "count {count} exceeds {name} = {max}; split the work into several calls"
        ));
    }
    Ok(())
}
