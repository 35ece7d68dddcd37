//! loadgate's results model: measurements, validity, verdicts, and their versioned JSON form.

pub mod model;

pub use model::*;

/// Serde for histograms as base64 of the compressed V2 encoding, the `HISTFAAA...` form of HdrHistogram
/// interval logs that other HdrHistogram libraries decode.
pub mod histogram_serde {
    use base64::Engine as _;
    use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
    use hdrhistogram::Histogram;

    pub fn encode(h: &Histogram<u64>) -> Result<String, String> {
        let mut buf = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut buf).map_err(|e| format!("cannot encode histogram: {e:?}"))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(buf))
    }

    pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        Deserializer::new().deserialize(&mut &bytes[..]).map_err(|e| format!("cannot decode histogram: {e:?}"))
    }

    pub fn serialize<S: serde::Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(h).map_err(serde::ser::Error::custom)?)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        decode(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_round_trip_through_histfaaa() {
        let mut h = new_histogram();
        for v in [1u64, 250, 999, 20_000, 900_000] {
            h.record(v).unwrap();
        }
        let text = histogram_serde::encode(&h).unwrap();
        assert!(text.starts_with("HISTFAAA"), "{text}");
        let back = histogram_serde::decode(&text).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.max(), h.max());
    }
}
