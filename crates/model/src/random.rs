//! SplitMix64 (Steele, Lea and Flood): the one 64-bit mixer every part of loadgate derives seeds and draws
//! from (the plan's phase seeds, the engine's keyed sources, the run's A/B order, the tests' noise).

/// One step of SplitMix64: advances `state` by the golden-ratio increment and returns its mixed value. Applied
/// to a copy of a number, it is a hash of it into 64 well-mixed bits (neighbouring inputs give unrelated outputs).
#[inline]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_gives_the_reference_sequence() {
        // The first outputs from state 1234567 of the reference implementation (Vigna's splitmix64.c).
        let mut s = 1_234_567u64;
        assert_eq!(splitmix64(&mut s), 6_457_827_717_110_365_317);
        assert_eq!(splitmix64(&mut s), 3_203_168_211_198_807_973);
        assert_eq!(splitmix64(&mut s), 9_817_491_932_198_370_423);
    }
}
