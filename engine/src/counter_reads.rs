//! What `ic0.performance_counter` reads see, for attributing pages to the intervals a
//! canister measures with it (canbench's scopes).
//!
//! A canister that measures an interval reads the counter at both ends and sums the
//! differences of the readings over its intervals in its own way (canbench-rs merges the
//! overlapping intervals of a scope and sums the rest). The engine can record, at every
//! read, the instructions and the pages touched so far in the message
//! ([`CounterReads::Record`]); run again from the same state with
//! [`CounterReads::Encode`], every read returns instead a number that packs the read's
//! index and the page counts so far ([`CounterEncoding::value`]): strictly increasing as the
//! real readings are, so a canister whose code does not depend on the values beyond their
//! order runs the same instructions and touches the same pages, and the sum it computes
//! for an interval decodes ([`CounterEncoding::decode`]) to the pages first touched while
//! the interval was open. Whether the encoded run was the same is checked by the caller:
//! its reads must be the recorded ones, instruction for instruction and page for page.

use super::PageCounts;

/// What the engine does at `ic0.performance_counter` (types 0 and 1, which are the same
/// outside callbacks).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CounterReads {
    /// Returns the instructions; nothing kept.
    #[default]
    Off,
    /// Returns the instructions and keeps a [`CounterRead`] per read.
    Record,
    /// Keeps a [`CounterRead`] per read and returns [`CounterEncoding::value`] of it.
    Encode(CounterEncoding),
}

/// One `ic0.performance_counter` read: the instructions it returned (or would have) and
/// the pages the message had touched and the page charge it had been charged until then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterRead {
    pub instructions: u64,
    pub pages: PageCounts,
}

/// The five page columns of a read, in [`PageCounts`]'s order.
fn columns(p: &PageCounts) -> [u64; 5] {
    [
        p.heap_wasm_pages_accessed,
        p.heap_wasm_pages_written,
        p.stable_wasm_pages_accessed,
        p.stable_wasm_pages_written,
        p.page_charge_instructions,
    ]
}

/// Packs a read's index and some of its page columns into one u64:
/// `index * M + Σ digit_i * W_i`, with a mixed radix (`radix[i]` is one more than the largest digit, `W_i` the
/// product of the radices before it, `M` the product of all). The page charge is encoded in
/// units of `unit` (every charge so far is a multiple of it). A column without a radix is
/// not encoded. Differences of two values, summed over disjoint intervals, stay below `M` per
/// column digit, so the sum decodes column by column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterEncoding {
    radix: [Option<u64>; 5],
    unit: u64,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl CounterEncoding {
    /// The encodings that together cover the five columns of `reads` (a recorded run): as
    /// few as fit in u64 with the reads' indices, usually one. None when one column alone
    /// does not fit (more than about 2^64 / reads pages).
    pub fn plan(reads: &[CounterRead]) -> Option<Vec<CounterEncoding>> {
        let unit = reads
            .iter()
            .fold(0, |g, r| gcd(g, r.pages.page_charge_instructions))
            .max(1);
        let mut max = [0u64; 5];
        for r in reads {
            for (m, v) in max.iter_mut().zip(columns(&r.pages)) {
                *m = (*m).max(v);
            }
        }
        max[4] /= unit;
        let indices = (reads.len() as u64).max(1);
        let mut plans = Vec::new();
        let mut current = CounterEncoding {
            radix: [None; 5],
            unit,
        };
        let mut product = indices;
        for (i, &m) in max.iter().enumerate() {
            let radix = m.checked_add(1)?;
            match product.checked_mul(radix) {
                Some(p) => product = p,
                None => {
                    product = indices.checked_mul(radix)?;
                    plans.push(std::mem::replace(
                        &mut current,
                        CounterEncoding {
                            radix: [None; 5],
                            unit,
                        },
                    ));
                }
            }
            current.radix[i] = Some(radix);
        }
        plans.push(current);
        Some(plans)
    }

    fn digits(&self, pages: &PageCounts) -> [u64; 5] {
        let mut d = columns(pages);
        d[4] /= self.unit;
        d
    }

    /// What read number `index` (from 0) returns. Wrapping: a run that strays from the
    /// recorded one (more pages, more reads) gets a wrong number, never a panic; the caller
    /// finds it out by comparing the reads.
    pub fn value(&self, index: u64, pages: &PageCounts) -> u64 {
        let mut v = 0u64;
        let mut weight = 1u64;
        for (d, r) in self.digits(pages).into_iter().zip(self.radix) {
            if let Some(r) = r {
                v = v.wrapping_add(d.min(r - 1).wrapping_mul(weight));
                weight = weight.wrapping_mul(r);
            }
        }
        index.wrapping_mul(weight).wrapping_add(v)
    }

    /// The page columns a sum of differences of [`CounterEncoding::value`]s encodes (each a
    /// later read's minus an earlier one's, over disjoint intervals): None for the columns
    /// this encoding leaves out.
    pub fn decode(&self, sum: u64) -> [Option<u64>; 5] {
        let mut rest = sum;
        let mut out = [None; 5];
        for (i, r) in self.radix.into_iter().enumerate() {
            if let Some(r) = r {
                out[i] = Some(rest % r);
                rest /= r;
            }
        }
        if let Some(c) = &mut out[4] {
            *c *= self.unit;
        }
        out
    }
}

/// The page columns of `decoded` (several encodings' decodes, each filling its columns) as
/// page counts; None unless every column was decoded.
pub fn page_counts(decoded: &[[Option<u64>; 5]]) -> Option<PageCounts> {
    let mut c = [None; 5];
    for d in decoded {
        for (slot, v) in c.iter_mut().zip(d) {
            if v.is_some() {
                *slot = *v;
            }
        }
    }
    let [a, b, s, w, charge] = c;
    Some(PageCounts {
        heap_wasm_pages_accessed: a?,
        heap_wasm_pages_written: b?,
        stable_wasm_pages_accessed: s?,
        stable_wasm_pages_written: w?,
        page_charge_instructions: charge?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(instructions: u64, c: [u64; 5]) -> CounterRead {
        CounterRead {
            instructions,
            pages: PageCounts {
                heap_wasm_pages_accessed: c[0],
                heap_wasm_pages_written: c[1],
                stable_wasm_pages_accessed: c[2],
                stable_wasm_pages_written: c[3],
                page_charge_instructions: c[4],
            },
        }
    }

    #[test]
    fn sums_of_differences_decode_to_the_pages_of_the_intervals() {
        let reads = [
            read(10, [1, 1, 0, 0, 80_000]),
            read(300, [3, 2, 0, 0, 240_000]),
            read(900, [4, 2, 1, 0, 400_000]),
            read(1_000, [6, 4, 1, 1, 560_000]),
        ];
        let plans = CounterEncoding::plan(&reads).unwrap();
        assert_eq!(plans.len(), 1);
        let e = &plans[0];
        assert_eq!(e.unit, 80_000);
        let v: Vec<u64> = (0..4)
            .map(|i| e.value(i, &reads[i as usize].pages))
            .collect();
        assert!(v.windows(2).all(|w| w[0] < w[1]), "{v:?}");
        // Intervals [0, 1) and [2, 3): what was touched between those reads.
        let sum = (v[1] - v[0]) + (v[3] - v[2]);
        let d = e.decode(sum);
        assert_eq!(
            page_counts(&[d]).unwrap(),
            read(0, [2 + 2, 1 + 2, 0, 1, 160_000 + 160_000]).pages
        );
    }

    #[test]
    fn columns_that_do_not_fit_together_go_to_further_encodings() {
        let big = u64::MAX / 16;
        let reads = [read(1, [0; 5]), read(2, [big, big, 1, 1, 0])];
        let plans = CounterEncoding::plan(&reads).unwrap();
        assert_eq!(plans.len(), 2);
        let decoded: Vec<_> = plans
            .iter()
            .map(|e| e.decode(e.value(1, &reads[1].pages) - e.value(0, &reads[0].pages)))
            .collect();
        assert_eq!(page_counts(&decoded).unwrap(), reads[1].pages);
        // A column that alone does not fit with the indices: no encoding.
        assert!(
            CounterEncoding::plan(&[read(1, [0; 5]), read(2, [u64::MAX - 1, 0, 0, 0, 0])])
                .is_none()
        );
    }
}
