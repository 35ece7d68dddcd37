//! What loadgate's tests share (a dev-dependency only, never a dependency of a crate that ships): a small
//! deterministic generator, so that a test's noisy series are the same on every machine and every run.

/// SplitMix64 (Steele, Lea and Flood), with uniform and Gaussian (Box-Muller) draws from it.
#[derive(Debug, Clone)]
pub struct Noise(pub u64);

impl Noise {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        loadgate_model::splitmix64(&mut self.0)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in (0, 1): never 0, so its logarithm is finite.
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Standard normal (Box-Muller over two [`Noise::uniform`] draws).
    pub fn gaussian(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::Noise;

    #[test]
    fn draws_are_in_range_and_repeat_with_the_seed() {
        let mut a = Noise(7);
        let draws: Vec<f64> = (0..1000).map(|_| a.uniform()).collect();
        assert!(draws.iter().all(|u| *u > 0.0 && *u < 1.0));
        let mut b = Noise(7);
        assert_eq!(draws, (0..1000).map(|_| b.uniform()).collect::<Vec<_>>());
        let mean = (0..20_000).map(|_| a.gaussian()).sum::<f64>() / 20_000.0;
        assert!(mean.abs() < 0.05, "{mean}");
        assert!((0..1000).all(|_| a.below(3) < 3));
    }
}
