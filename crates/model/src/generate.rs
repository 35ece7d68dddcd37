//! Per-request values as the engine fills them: generator kinds and the fields compiled into literal text and
//! generator slots. The spec reader compiles `{{ seq() }}`, `{{ uuid() }}`, ... into these.

use serde::{Deserialize, Serialize};

/// One source of per-request values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Generator {
    /// `start`, `start + step`, ... per worker, interleaved across workers so no two requests repeat a value.
    Seq { start: i64, step: i64 },
    /// A uniform integer in `min..=max`.
    RandomInt { min: i64, max: i64 },
    /// `len` characters from `A-Za-z0-9`.
    RandomString { len: u32 },
    /// `len` lowercase hex digits.
    RandomHex { len: u32 },
    /// A random (version 4) UUID.
    Uuid,
    /// One of `values`, uniformly.
    Pick { values: Vec<String> },
}

/// A field compiled into literal text and generator slots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Segment {
    Text(String),
    /// The index of a generator in the request's list; `encode` percent-encodes the value (query values).
    Gen {
        index: usize,
        encode: bool,
    },
    /// A session variable (a value captured by an earlier step), by its slot in the session's variables;
    /// `encode` percent-encodes it (query values).
    Var {
        slot: u16,
        encode: bool,
    },
}
