//! Per-request data: the random source keyed by a request's global index, the generators that fill `{{ seq() }}`-style slots, and
//! the weighted choice of a mix entry.
//!
//! Everything here runs on the worker thread and writes into buffers the caller reuses: filling a slot never
//! allocates once the buffers have grown to their working size.

use loadgate_model::splitmix64;
use loadgate_plan::Generator;

/// xoshiro256**: small, fast, and good enough for test data (not for secrets).
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A source seeded from `seed` through splitmix64 (never the all-zero state).
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let mut s = [0u64; 4];
        for x in &mut s {
            *x = splitmix64(&mut sm);
        }
        if s == [0; 4] {
            s[0] = 1;
        }
        Rng { s }
    }

    /// The source of stream `stream` (a call site: the mix choice, the generated values) of the request with
    /// global index `index`: a pure function of (seed, index, stream), so a request draws the same values
    /// whichever worker or shard sends it. Seven splitmix64 steps on the stack: nothing allocates.
    pub fn keyed(seed: u64, index: u64, stream: u64) -> Self {
        let mut sm = seed;
        let a = splitmix64(&mut sm);
        let mut sm = a ^ index.wrapping_mul(0xd6e8_feb8_6659_fd93);
        let b = splitmix64(&mut sm);
        let mut sm = b ^ stream.wrapping_mul(0xa076_1d64_78bd_642f);
        Rng::new(splitmix64(&mut sm))
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform value in `0..n` (`n > 0`), by Lemire's multiply-and-reject.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

const ALNUM: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &[u8; 16] = b"0123456789abcdef";

/// A generator with its per-worker state.
#[derive(Debug, Clone)]
pub(crate) enum Gen {
    /// The worker's next value and the distance to its following one (`step` times the worker count).
    Seq {
        next: i64,
        stride: i64,
    },
    /// `min` and `max - min` as an unsigned span.
    RandomInt {
        min: i64,
        span: u64,
    },
    RandomString {
        len: usize,
    },
    RandomHex {
        len: usize,
    },
    Uuid,
    Pick {
        values: Vec<String>,
    },
}

impl Gen {
    /// The state of `g` in worker `worker` of `workers`: sequences interleave so that no two workers repeat a
    /// value (worker `w` of `n` gives `start + (w + k n) step` for `k = 0, 1, ...`).
    pub fn new(g: &Generator, worker: usize, workers: usize) -> Gen {
        match g {
            Generator::Seq { start, step } => Gen::Seq {
                next: start.wrapping_add((worker as i64).wrapping_mul(*step)),
                stride: (workers.max(1) as i64).wrapping_mul(*step),
            },
            Generator::RandomInt { min, max } => {
                let (lo, hi) = if min <= max { (*min, *max) } else { (*max, *min) };
                Gen::RandomInt { min: lo, span: hi.wrapping_sub(lo) as u64 }
            }
            Generator::RandomString { len } => Gen::RandomString { len: *len as usize },
            Generator::RandomHex { len } => Gen::RandomHex { len: *len as usize },
            Generator::Uuid => Gen::Uuid,
            Generator::Pick { values } => Gen::Pick { values: values.clone() },
        }
    }

    /// Whether some value may contain a byte for which `bad` holds (checked once, before the load starts).
    pub fn may_produce(g: &Generator, bad: impl Fn(u8) -> bool) -> Option<String> {
        match g {
            Generator::Pick { values } => values.iter().find(|v| v.bytes().any(&bad)).cloned(),
            _ => None,
        }
    }

    /// Appends the next value to `out`; `encode` percent-encodes it (only picked values can need it: every
    /// other generator writes unreserved characters only).
    pub fn fill(&mut self, rng: &mut Rng, encode: bool, out: &mut Vec<u8>) {
        match self {
            Gen::Seq { next, stride } => {
                let v = *next;
                *next = next.wrapping_add(*stride);
                write_i64(out, v);
            }
            Gen::RandomInt { min, span } => {
                let off = if *span == u64::MAX { rng.next_u64() } else { rng.below(*span + 1) };
                write_i64(out, min.wrapping_add(off as i64));
            }
            Gen::RandomString { len } => {
                // Four characters per draw, each from 16 bits by multiply-shift (no character is more than 0.1%
                // likelier than another), written straight into the buffer.
                let start = out.len();
                out.resize(start + *len, 0);
                for chunk in out[start..].chunks_mut(4) {
                    let mut x = rng.next_u64();
                    for c in chunk {
                        *c = ALNUM[(((x & 0xffff) * 62) >> 16) as usize];
                        x >>= 16;
                    }
                }
            }
            Gen::RandomHex { len } => {
                let start = out.len();
                out.resize(start + *len, 0);
                for chunk in out[start..].chunks_mut(16) {
                    let mut x = rng.next_u64();
                    for c in chunk {
                        *c = HEX[(x & 15) as usize];
                        x >>= 4;
                    }
                }
            }
            Gen::Uuid => {
                let hi = (rng.next_u64() & !0xf000) | 0x4000; // version 4
                let lo = (rng.next_u64() & !(0xc << 60)) | (0x8 << 60); // variant 10xx
                let bytes = [hi.to_be_bytes(), lo.to_be_bytes()];
                for (i, b) in bytes.iter().flatten().enumerate() {
                    if matches!(i, 4 | 6 | 8 | 10) {
                        out.push(b'-');
                    }
                    out.push(HEX[usize::from(b >> 4)]);
                    out.push(HEX[usize::from(b & 15)]);
                }
            }
            Gen::Pick { values } => {
                let n = values.len() as u64;
                if n == 0 {
                    return;
                }
                let i = usize::try_from(rng.below(n)).unwrap_or(0);
                if let Some(v) = values.get(i) {
                    if encode {
                        percent_encode(v.as_bytes(), out);
                    } else {
                        out.extend_from_slice(v.as_bytes());
                    }
                }
            }
        }
    }
}

/// Percent-encodes everything but the unreserved characters `A-Za-z0-9-._~`.
pub(crate) fn percent_encode(value: &[u8], out: &mut Vec<u8>) {
    for &b in value {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX_UPPER[usize::from(b >> 4)], HEX_UPPER[usize::from(b & 15)]]);
        }
    }
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Writes `v` in decimal without allocating.
pub(crate) fn write_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn write_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    write_u64(out, v.unsigned_abs());
}

/// The weighted choice of a mix entry: cumulative weights and one draw per request.
#[derive(Debug, Clone)]
pub(crate) struct Picker {
    cumulative: Vec<u64>,
    total: u64,
}

impl Picker {
    /// `None` when the weights sum to zero.
    pub fn new(weights: &[u32]) -> Option<Picker> {
        let mut total = 0u64;
        let cumulative = weights
            .iter()
            .map(|&w| {
                total += u64::from(w);
                total
            })
            .collect();
        (total > 0).then_some(Picker { cumulative, total })
    }

    pub fn pick(&self, rng: &mut Rng) -> usize {
        let r = rng.below(self.total);
        self.cumulative.partition_point(|&c| c <= r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(g: &mut Gen, rng: &mut Rng, encode: bool) -> String {
        let mut out = Vec::new();
        g.fill(rng, encode, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rng_is_reproducible_and_streams_differ() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::keyed(7, 0, 0);
                move |_| r.next_u64()
            })
            .collect();
        let mut r = Rng::keyed(7, 0, 0);
        assert_eq!(a, (0..4).map(|_| r.next_u64()).collect::<Vec<_>>());
        let mut other = Rng::keyed(7, 1, 0);
        assert_ne!(a[0], other.next_u64());
        let mut other = Rng::keyed(7, 0, 1);
        assert_ne!(a[0], other.next_u64());
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut r = Rng::new(1);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[r.below(7) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
    }

    #[test]
    fn sequences_interleave_across_workers() {
        let g = Generator::Seq { start: 10, step: 5 };
        let mut rng = Rng::new(0);
        let mut all: Vec<String> = Vec::new();
        for w in 0..3 {
            let mut s = Gen::new(&g, w, 3);
            for _ in 0..4 {
                all.push(fill(&mut s, &mut rng, false));
            }
        }
        let mut values: Vec<i64> = all.iter().map(|v| v.parse().unwrap()).collect();
        values.sort_unstable();
        assert_eq!(values, (0..12).map(|k| 10 + 5 * k).collect::<Vec<_>>());
    }

    #[test]
    fn values_follow_their_contracts() {
        let mut rng = Rng::new(3);
        let mut int = Gen::new(&Generator::RandomInt { min: -3, max: 3 }, 0, 1);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..500 {
            let v: i64 = fill(&mut int, &mut rng, false).parse().unwrap();
            assert!((-3..=3).contains(&v));
            seen.insert(v);
        }
        assert_eq!(seen.len(), 7);
        let mut full = Gen::new(&Generator::RandomInt { min: i64::MIN, max: i64::MAX }, 0, 1);
        fill(&mut full, &mut rng, false).parse::<i64>().unwrap();
        for len in [0, 1, 2, 3, 17, 256] {
            let s = fill(&mut Gen::new(&Generator::RandomString { len }, 0, 1), &mut rng, false);
            assert_eq!(s.len(), len as usize);
            assert!(s.bytes().all(|b| b.is_ascii_alphanumeric()));
            let h = fill(&mut Gen::new(&Generator::RandomHex { len }, 0, 1), &mut rng, false);
            assert_eq!(h.len(), len as usize);
            assert!(h.bytes().all(|b| HEX.contains(&b)));
        }
        let u = fill(&mut Gen::Uuid, &mut rng, false);
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!("89ab".contains(&u[19..20]), "{u}");
        assert_eq!(u.split('-').map(str::len).collect::<Vec<_>>(), [8, 4, 4, 4, 12]);
        let mut pick = Gen::new(&Generator::Pick { values: vec!["a b".into()] }, 0, 1);
        assert_eq!(fill(&mut pick, &mut rng, true), "a%20b");
        assert_eq!(fill(&mut pick, &mut rng, false), "a b");
    }

    #[test]
    fn numbers_and_encoding() {
        let mut out = Vec::new();
        write_u64(&mut out, 0);
        out.push(b' ');
        write_u64(&mut out, u64::MAX);
        out.push(b' ');
        write_i64(&mut out, i64::MIN);
        assert_eq!(String::from_utf8(out).unwrap(), format!("0 {} {}", u64::MAX, i64::MIN));
        let mut out = Vec::new();
        percent_encode("a-Z_0.~/é&=".as_bytes(), &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), "a-Z_0.~%2F%C3%A9%26%3D");
    }

    #[test]
    fn picker_follows_weights() {
        let p = Picker::new(&[1, 0, 3]).unwrap();
        let mut rng = Rng::new(9);
        let mut counts = [0u32; 3];
        for _ in 0..4000 {
            counts[p.pick(&mut rng)] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!((800..1200).contains(&counts[0]), "{counts:?}");
        assert!(Picker::new(&[0, 0]).is_none());
    }
}
