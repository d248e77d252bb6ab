//! The deterministic generators both sides draw from: the host draws ids, keys and
//! parameters, the canister builds values and rows from them, and the same seed must give
//! the same stream on each.

/// SplitMix64 (Steele, Lea and Flood): the same seed draws the same numbers on every
/// machine, without a dependency.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

/// SplitMix64's increment (the golden ratio in 64 bits).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's next output from state `z`, statelessly: `SplitMix64::new(z).next_u64()`.
/// The canister hashes ids into row contents with it.
pub fn mix(z: u64) -> u64 {
    let mut z = z.wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        let out = mix(self.0);
        self.0 = self.0.wrapping_add(GAMMA);
        out
    }
    /// Uniform-ish in `0..n` (modulo; `n` small next to 2^64).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// LevelDB's `Random`: the Park–Miller minimal standard generator, as db_bench draws its
/// keys (host) and its value buffer (canister) with it.
#[derive(Clone, Debug)]
pub struct LevelDbRandom(u32);

impl LevelDbRandom {
    pub fn new(seed: u32) -> Self {
        let s = seed & 0x7fff_ffff;
        // Seeds 0 and 2^31 - 1 would stick; LevelDB replaces them with 1.
        LevelDbRandom(if s == 0 || s == 2_147_483_647 { 1 } else { s })
    }
    pub fn next_u32(&mut self) -> u32 {
        const M: u64 = 2_147_483_647;
        let product = u64::from(self.0) * 16_807;
        let mut seed = (product >> 31) + (product & M);
        if seed > M {
            seed -= M;
        }
        self.0 = seed as u32;
        self.0
    }
    /// LevelDB's `Uniform(n)`: `0..n`.
    pub fn uniform(&mut self, n: u32) -> u32 {
        self.next_u32() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_seed_0_gives_the_reference_outputs() {
        // Vigna's splitmix64.c with x = 0 (also xoshiro's published seeding example).
        let mut r = SplitMix64::new(0);
        assert_eq!(
            [r.next_u64(), r.next_u64(), r.next_u64(), r.next_u64()],
            [
                0xE220_A839_7B1D_CDAF,
                0x6E78_9E6A_A1B9_65F4,
                0x06C4_5D18_8009_454F,
                0xF88B_B8A8_724C_81EC
            ]
        );
    }

    #[test]
    fn mix_is_one_step_of_splitmix64_from_that_state() {
        for seed in [0, 1, 0x5EED, u64::MAX] {
            assert_eq!(mix(seed), SplitMix64::new(seed).next_u64());
        }
        let mut r = SplitMix64::new(7);
        r.next_u64();
        assert_eq!(r.next_u64(), mix(7u64.wrapping_add(GAMMA)));
    }

    #[test]
    fn below_stays_below() {
        let mut r = SplitMix64::new(2026);
        assert!((0..1_000).all(|_| r.below(10) < 10));
    }

    #[test]
    fn leveldb_random_is_the_minimal_standard_generator() {
        // Park and Miller's published check: seed 1, the 10,000th value is 1043618065.
        let mut r = LevelDbRandom::new(1);
        let last = (0..10_000).map(|_| r.next_u32()).last();
        assert_eq!(last, Some(1_043_618_065));
        // db_bench's Random(301): 301 * 16807, then on.
        let mut r = LevelDbRandom::new(301);
        assert_eq!(
            [r.next_u32(), r.next_u32(), r.next_u32()],
            [5_058_907, 1_273_187_716, 938_884_104]
        );
        assert_eq!(LevelDbRandom::new(0).next_u32(), 16_807);
        assert_eq!(LevelDbRandom::new(0x7fff_ffff).next_u32(), 16_807);
        let mut a = LevelDbRandom::new(301);
        let mut b = LevelDbRandom::new(301);
        assert_eq!(a.uniform(95), b.next_u32() % 95);
    }
}
