//! A run's own identity ([`crate::RunResults::id`]): a UUIDv7 made when the run starts ([`new`]), so two runs
//! of one spec on one host that start in the same second are two runs; a merged run's is a UUIDv8 whose bits are
//! the SHA-256 of its shards' ids in sorted order ([`merged`]), so merging the same shards again, in any order,
//! finds the same run.

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// A new run's identity: a UUIDv7 (the time in milliseconds, then random bits), hyphenated lower case.
pub fn new() -> String {
    Uuid::now_v7().hyphenated().to_string()
}

/// The identity of a run merged from parts with these ids: a UUIDv8 of the SHA-256 of the ids sorted (each
/// trimmed and lower-cased, so one id written two ways is one). `None` when there is no id or any part lacks one
/// (a shard written before ids existed): the merge then has no id of its own, as such a file never had.
pub fn merged<'a>(ids: impl IntoIterator<Item = Option<&'a str>>) -> Option<String> {
    let mut sorted: Vec<String> =
        ids.into_iter().map(|id| id.map(|i| i.trim().to_ascii_lowercase())).collect::<Option<Vec<_>>>()?;
    if sorted.is_empty() || sorted.iter().any(String::is_empty) {
        return None;
    }
    sorted.sort();
    let mut hash = Sha256::new();
    hash.update(b"loadgate merged run\n");
    for id in &sorted {
        hash.update(id.as_bytes());
        hash.update(b"\n");
    }
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    Some(Uuid::new_v8(bytes).hyphenated().to_string())
}

/// The short form people find a run by: the last 8 hex digits of its id (a UUIDv7 begins with its time, which
/// runs started together share; its end is random), `3f2a9c01`.
pub fn short(id: &str) -> String {
    let hex: Vec<char> = id.chars().filter(char::is_ascii_hexdigit).collect();
    hex[hex.len().saturating_sub(8)..].iter().collect::<String>().to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_are_version_7_and_differ_even_when_made_together() {
        let ids: Vec<String> = (0..1000).map(|_| new()).collect();
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), ids.len());
        for id in &ids {
            let parsed = Uuid::parse_str(id).unwrap();
            assert_eq!(parsed.get_version_num(), 7);
            assert_eq!(id.len(), 36);
        }
    }

    #[test]
    fn a_merged_id_depends_on_the_set_of_shard_ids_only() {
        let (a, b, c) = (new(), new(), new());
        let one = merged([Some(a.as_str()), Some(b.as_str())]).unwrap();
        assert_eq!(merged([Some(b.as_str()), Some(a.as_str())]), Some(one.clone()), "order does not matter");
        assert_eq!(merged([Some(a.to_uppercase().as_str()), Some(b.as_str())]), Some(one.clone()), "case neither");
        assert_ne!(merged([Some(a.as_str()), Some(c.as_str())]), Some(one.clone()));
        assert_eq!(Uuid::parse_str(&one).unwrap().get_version_num(), 8);
    }

    #[test]
    fn a_merge_of_parts_without_ids_has_none() {
        let a = new();
        assert_eq!(merged([Some(a.as_str()), None]), None);
        assert_eq!(merged(std::iter::empty()), None);
        assert_eq!(merged([Some("  ")]), None);
    }

    #[test]
    fn the_short_form_is_the_random_end_of_the_id() {
        assert_eq!(short("0193a1b2-c3d4-7e5f-8a6b-1c2d3f2a9c01"), "3f2a9c01");
        let digest = "ab".repeat(32);
        assert_eq!(short(&digest), "abababab");
        assert_eq!(short("12"), "12");
    }
}
