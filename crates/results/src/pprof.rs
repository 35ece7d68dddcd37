//! Go's pprof profiles (`/debug/pprof/profile`, `heap`, `allocs`, `mutex`, `block`: a gzipped protobuf
//! `perftools.profiles.Profile`) read into [`Stacks`] for one sample type.
//!
//! **The format** (github.com/google/pprof `proto/profile.proto`): a profile lists its sample types (`samples/count`
//! and `cpu/nanoseconds` for CPU; `alloc_objects`, `alloc_space`, `inuse_objects`, `inuse_space` for the heap;
//! `contentions/count` and `delay/nanoseconds` for mutex and block), samples each with location ids (leaf first)
//! and one value per sample type, locations with their lines (the innermost, inlined function first), functions
//! with their names in the string table, and the sampling period. Only the fields read here are declared (prost
//! skips the others). A location without lines (not symbolized) is named by its address, `0x4a2b10`.
//!
//! **Bounds.** The input is refused above [`MAX_COMPRESSED_BYTES`], and its decompressed protobuf above
//! [`MAX_DECODED_BYTES`]; ids that point nowhere, values that do not match the sample types, a string index out of
//! range are located errors. Input that is not gzip is read as a plain protobuf (`pprof -proto` writes it
//! gzipped, `go tool pprof -raw` too; some agents do not compress); anything else fails to decode, never panics.

use std::collections::HashMap;
use std::io::Read;

use prost::Message;

use crate::stacks::{Stacks, DEFAULT_MAX_STACKS, MAX_DEPTH};

/// The largest pprof input read, compressed (a profile of a minute of a busy Go server is a few hundred KB).
pub const MAX_COMPRESSED_BYTES: usize = 32 << 20;
/// The largest decompressed protobuf read.
pub const MAX_DECODED_BYTES: usize = 256 << 20;

#[derive(Clone, PartialEq, Message)]
struct Profile {
    #[prost(message, repeated, tag = "1")]
    sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    string_table: Vec<String>,
    #[prost(int64, tag = "10")]
    duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    period: i64,
    #[prost(int64, tag = "14")]
    default_sample_type: i64,
}

#[derive(Clone, PartialEq, Message)]
struct ValueType {
    #[prost(int64, tag = "1")]
    r#type: i64,
    #[prost(int64, tag = "2")]
    unit: i64,
}

#[derive(Clone, PartialEq, Message)]
struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    value: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
struct Location {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(uint64, tag = "3")]
    address: u64,
    #[prost(message, repeated, tag = "4")]
    line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
struct Line {
    #[prost(uint64, tag = "1")]
    function_id: u64,
}

#[derive(Clone, PartialEq, Message)]
struct Function {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(int64, tag = "2")]
    name: i64,
    #[prost(int64, tag = "3")]
    system_name: i64,
}

/// A pprof profile read for one sample type.
#[derive(Debug, Clone, PartialEq)]
pub struct PprofStacks {
    /// The chosen sample type's values, summed per stack (root first).
    pub stacks: Stacks,
    /// The chosen sample type (`samples`, `cpu`, `alloc_space`, `inuse_space`, `contentions`, `delay`, ...).
    pub sample_type: String,
    /// Its unit (`count`, `nanoseconds`, `bytes`).
    pub unit: String,
    /// What the profile's period counts (`cpu`, `space`, `contentions`), with its unit (`nanoseconds`, `bytes`,
    /// `count`); empty when the profile has none.
    pub period_type: String,
    pub period_unit: String,
    /// The sampling period in `period_unit` (10,000,000 ns for Go's 100 Hz CPU profiler).
    pub period: i64,
    /// How long the profile ran (0 when it does not say: heap profiles).
    pub duration_nanos: i64,
    /// Samples whose value was negative (a difference of profiles): left out.
    pub negative_samples: u64,
    /// All sample types of the profile, as `type/unit`, in its order.
    pub sample_types: Vec<String>,
}

impl PprofStacks {
    /// CPU nanoseconds each counted unit stands for: 1 for a `nanoseconds` sample type, the period for a
    /// `samples/count` type of a profile whose period is in nanoseconds, `None` otherwise (bytes, contentions).
    pub fn ns_per_unit(&self) -> Option<f64> {
        if self.unit == "nanoseconds" {
            Some(1.0)
        } else if self.unit == "count" && self.period_unit == "nanoseconds" && self.period > 0 {
            Some(self.period as f64)
        } else {
            None
        }
    }
}

/// Why a pprof profile could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PprofError {
    #[error("the pprof profile has {size} bytes, more than the {max} read")]
    TooLarge { size: usize, max: usize },
    #[error("the pprof profile decompresses to more than {max} bytes")]
    TooLargeDecoded { max: usize },
    #[error("the pprof profile is not valid gzip: {0}")]
    Gzip(String),
    #[error("not a pprof profile (a gzipped perftools.profiles.Profile protobuf): {reason}; it starts with `{start}`")]
    NotPprof { reason: String, start: String },
    #[error("the pprof profile has no sample type `{asked}`; it has {}", .available.join(", "))]
    NoSuchSampleType { asked: String, available: Vec<String> },
    #[error("the pprof profile has no sample types")]
    NoSampleTypes,
    #[error("pprof sample {sample} has {found} values for {expected} sample types")]
    ValueCount { sample: usize, found: usize, expected: usize },
    #[error("pprof sample {sample} refers to location {id}, which the profile does not have")]
    NoLocation { sample: usize, id: u64 },
    #[error("pprof location {location} refers to function {id}, which the profile does not have")]
    NoFunction { location: u64, id: u64 },
    #[error("pprof {what} refers to string {index}; the string table has {len}")]
    NoString { what: String, index: i64, len: usize },
}

/// Reads a pprof profile (gzipped or not) for `sample_type` (`None`: the profile's default sample type, else its
/// last, as `go tool pprof` does). Every stack lands in a table of [`DEFAULT_MAX_STACKS`].
pub fn decode(bytes: &[u8], sample_type: Option<&str>) -> Result<PprofStacks, PprofError> {
    if bytes.len() > MAX_COMPRESSED_BYTES {
        return Err(PprofError::TooLarge { size: bytes.len(), max: MAX_COMPRESSED_BYTES });
    }
    let raw = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        let mut reader = flate2::read::MultiGzDecoder::new(bytes).take(MAX_DECODED_BYTES as u64 + 1);
        reader.read_to_end(&mut out).map_err(|e| PprofError::Gzip(e.to_string()))?;
        if out.len() > MAX_DECODED_BYTES {
            return Err(PprofError::TooLargeDecoded { max: MAX_DECODED_BYTES });
        }
        std::borrow::Cow::Owned(out)
    } else {
        std::borrow::Cow::Borrowed(bytes)
    };
    let profile = Profile::decode(raw.as_ref())
        .map_err(|e| PprofError::NotPprof { reason: e.to_string(), start: start_of(bytes) })?;
    read(&profile, sample_type, bytes)
}

fn read(p: &Profile, asked: Option<&str>, bytes: &[u8]) -> Result<PprofStacks, PprofError> {
    let string = |index: i64, what: &dyn Fn() -> String| -> Result<&str, PprofError> {
        usize::try_from(index)
            .ok()
            .and_then(|i| p.string_table.get(i))
            .map(String::as_str)
            .ok_or_else(|| PprofError::NoString { what: what(), index, len: p.string_table.len() })
    };
    if p.sample_type.is_empty() {
        if p.string_table.is_empty() {
            return Err(PprofError::NotPprof {
                reason: "no sample types and no strings".into(),
                start: start_of(bytes),
            });
        }
        return Err(PprofError::NoSampleTypes);
    }
    let mut types = Vec::with_capacity(p.sample_type.len());
    for (i, t) in p.sample_type.iter().enumerate() {
        let name = string(t.r#type, &|| format!("sample type {i}"))?;
        let unit = string(t.unit, &|| format!("sample type {i}'s unit"))?;
        types.push((name.to_owned(), unit.to_owned()));
    }
    let chosen = match asked {
        Some(a) => types.iter().position(|(t, _)| t == a).ok_or_else(|| PprofError::NoSuchSampleType {
            asked: a.to_owned(),
            available: types.iter().map(|(t, _)| t.clone()).collect(),
        })?,
        None => {
            let default = (p.default_sample_type != 0)
                .then(|| string(p.default_sample_type, &|| "default sample type".into()).ok())
                .flatten()
                .and_then(|d| types.iter().position(|(t, _)| t == d));
            default.unwrap_or(types.len() - 1)
        }
    };
    let functions: HashMap<u64, &Function> = p.function.iter().map(|f| (f.id, f)).collect();
    let locations: HashMap<u64, &Location> = p.location.iter().map(|l| (l.id, l)).collect();
    // Each location's frames, root-most first (pprof lists a location's lines innermost first).
    let mut frames_of: HashMap<u64, Vec<String>> = HashMap::with_capacity(locations.len());
    for l in &p.location {
        let mut frames = Vec::with_capacity(l.line.len().max(1));
        for line in l.line.iter().rev() {
            let f = functions
                .get(&line.function_id)
                .ok_or(PprofError::NoFunction { location: l.id, id: line.function_id })?;
            let mut name = string(f.name, &|| format!("function {}", f.id))?;
            if name.is_empty() {
                name = string(f.system_name, &|| format!("function {}", f.id))?;
            }
            frames.push(if name.is_empty() { format!("0x{:x}", l.address) } else { name.to_owned() });
        }
        if frames.is_empty() {
            frames.push(format!("0x{:x}", l.address));
        }
        frames_of.insert(l.id, frames);
    }
    let mut stacks = Stacks::with_max_stacks(DEFAULT_MAX_STACKS);
    let mut negative = 0u64;
    let mut stack: Vec<&str> = Vec::new();
    for (i, s) in p.sample.iter().enumerate() {
        if s.value.len() != types.len() {
            return Err(PprofError::ValueCount { sample: i, found: s.value.len(), expected: types.len() });
        }
        let value = s.value.get(chosen).copied().unwrap_or(0);
        if value < 0 {
            negative += 1;
            continue;
        }
        stack.clear();
        for id in s.location_id.iter().rev() {
            let frames = frames_of.get(id).ok_or(PprofError::NoLocation { sample: i, id: *id })?;
            stack.extend(frames.iter().map(String::as_str));
            if stack.len() > MAX_DEPTH {
                break;
            }
        }
        stacks.add(&stack, value as u64);
    }
    let (period_type, period_unit) = match &p.period_type {
        Some(t) => (
            string(t.r#type, &|| "period type".into())?.to_owned(),
            string(t.unit, &|| "period unit".into())?.to_owned(),
        ),
        None => (String::new(), String::new()),
    };
    let (sample_type, unit) = types.get(chosen).cloned().unwrap_or_default();
    Ok(PprofStacks {
        stacks,
        sample_type,
        unit,
        period_type,
        period_unit,
        period: p.period,
        duration_nanos: p.duration_nanos,
        negative_samples: negative,
        sample_types: types.iter().map(|(t, u)| format!("{t}/{u}")).collect(),
    })
}

/// The first bytes of an input, printable, for an error message.
fn start_of(bytes: &[u8]) -> String {
    bytes
        .iter()
        .take(24)
        .map(|&b| if b.is_ascii_graphic() || b == b' ' { char::from(b).to_string() } else { format!("\\x{b:02x}") })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A CPU profile as Go writes it: samples/count and cpu/nanoseconds, period 10 ms, `main.slowPath` inlined
    /// into `main.handler` at one location.
    fn cpu_profile() -> Profile {
        let strings =
            ["", "samples", "count", "cpu", "nanoseconds", "main.main", "main.handler", "main.slowPath", "main.burn"];
        let vt = |t, u| ValueType { r#type: t, unit: u };
        let f = |id: u64| Function { id, name: id as i64 + 4, system_name: 0 };
        let loc = |id, fns: &[u64]| Location {
            id,
            address: 0x1000 + id,
            line: fns.iter().map(|&function_id| Line { function_id }).collect(),
        };
        Profile {
            sample_type: vec![vt(1, 2), vt(3, 4)],
            sample: vec![
                Sample { location_id: vec![3, 2, 1], value: vec![7, 70_000_000] },
                Sample { location_id: vec![2, 1], value: vec![2, 20_000_000] },
                Sample { location_id: vec![9_000, 1], value: vec![1, 10_000_000] },
            ],
            location: vec![loc(1, &[1]), loc(2, &[3, 2]), loc(3, &[4]), loc(9_000, &[])],
            function: vec![f(1), f(2), f(3), f(4)],
            string_table: strings.iter().map(|s| s.to_string()).collect(),
            duration_nanos: 1_000_000_000,
            period_type: Some(vt(3, 4)),
            period: 10_000_000,
            default_sample_type: 0,
        }
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn a_cpu_profile_reads_as_stacks_root_first_with_inlined_frames() {
        let bytes = gzip(&cpu_profile().encode_to_vec());
        let p = decode(&bytes, Some("samples")).unwrap();
        assert_eq!(p.stacks.total(), 10);
        let folded = p.stacks.to_folded();
        assert!(folded.contains("main.main;main.handler;main.slowPath;main.burn 7\n"), "{folded}");
        assert!(folded.contains("main.main;main.handler;main.slowPath 2\n"), "{folded}");
        assert!(folded.contains("main.main;0x3328 1\n"), "{folded}");
        assert_eq!(p.ns_per_unit(), Some(10_000_000.0));
        assert_eq!(p.sample_types, vec!["samples/count", "cpu/nanoseconds"]);
        let cpu = decode(&bytes, None).unwrap();
        assert_eq!((cpu.sample_type.as_str(), cpu.stacks.total(), cpu.ns_per_unit()), ("cpu", 100_000_000, Some(1.0)));
    }

    #[test]
    fn an_uncompressed_profile_is_read_too() {
        let p = decode(&cpu_profile().encode_to_vec(), Some("cpu")).unwrap();
        assert_eq!(p.duration_nanos, 1_000_000_000);
    }

    #[test]
    fn a_missing_sample_type_names_those_there_are() {
        let err = decode(&cpu_profile().encode_to_vec(), Some("inuse_space")).unwrap_err().to_string();
        assert_eq!(err, "the pprof profile has no sample type `inuse_space`; it has samples, cpu");
    }

    #[test]
    fn dangling_ids_and_mismatched_values_are_located_errors() {
        let mut p = cpu_profile();
        p.sample[1].location_id.push(77);
        assert_eq!(decode(&p.encode_to_vec(), None), Err(PprofError::NoLocation { sample: 1, id: 77 }));
        let mut p = cpu_profile();
        p.sample[2].value.pop();
        assert_eq!(decode(&p.encode_to_vec(), None), Err(PprofError::ValueCount { sample: 2, found: 1, expected: 2 }));
        let mut p = cpu_profile();
        p.location[0].line[0].function_id = 55;
        assert_eq!(decode(&p.encode_to_vec(), None), Err(PprofError::NoFunction { location: 1, id: 55 }));
        let mut p = cpu_profile();
        p.function[0].name = 1_000;
        assert!(matches!(decode(&p.encode_to_vec(), None), Err(PprofError::NoString { index: 1_000, .. })));
    }

    #[test]
    fn text_and_html_are_not_pprof() {
        let err = decode(b"<html><body>404 page not found</body></html>", None).unwrap_err().to_string();
        assert!(err.starts_with("not a pprof profile"), "{err}");
        assert!(err.ends_with("it starts with `<html><body>404 page not`"), "{err}");
        let err = decode(&[0x1f, 0x8b, 0x08, 0, 1, 2, 3], None).unwrap_err();
        assert!(matches!(err, PprofError::Gzip(_)), "{err}");
        assert_eq!(
            decode(&[], None).unwrap_err().to_string().split(':').next(),
            Some("not a pprof profile (a gzipped perftools.profiles.Profile protobuf)")
        );
    }

    #[test]
    fn input_beyond_the_cap_is_refused_before_reading() {
        let big = vec![0u8; MAX_COMPRESSED_BYTES + 1];
        assert_eq!(
            decode(&big, None),
            Err(PprofError::TooLarge { size: MAX_COMPRESSED_BYTES + 1, max: MAX_COMPRESSED_BYTES })
        );
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            let _ = decode(&bytes, None);
            let _ = decode(&gzip(&bytes), Some("cpu"));
        }

        #[test]
        fn a_mutated_real_profile_never_panics(at in 0usize..400, byte in proptest::num::u8::ANY) {
            let mut bytes = cpu_profile().encode_to_vec();
            let len = bytes.len().max(1);
            if let Some(b) = bytes.get_mut(at % len) {
                *b = byte;
            }
            let _ = decode(&bytes, None);
        }
    }
}
