//! The few fields of a run record that a `report` row needs from every line, parsed without
//! building the whole record: the rest of the line is checked as JSON and skipped. It reads one
//! line; deciding what the fields mean for the row is the reader's.
//!
//! Why: `report` over a fleet's records reads a million lines, and a record parsed into a
//! `serde_json::Value` costs a map node and an allocation per field (~30 µs a line here; the
//! fields a row needs are five). Anything this parser does not expect — an escaped string
//! where a plain one belongs, a field of another type — is left to the full parse, which
//! gives the precise error.
#![forbid(unsafe_code)]

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The fields of a record that every line contributes to a report row.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RecordHead<'a> {
    /// `schema`.
    pub schema: Option<&'a str>,
    /// `role`.
    pub role: Option<&'a str>,
    /// `counted`.
    pub counted: Option<bool>,
    /// `wall_ns` (`None` when absent or null).
    pub wall_ns: Option<f64>,
    /// How many entries `anomalies` has (`None` when the field is absent or null).
    pub anomalies: Option<u64>,
}

impl<'a> RecordHead<'a> {
    /// The head of one line of `runs.jsonl`; `None` when the line is not a JSON object whose
    /// fields have the expected types (the caller then parses it fully).
    pub fn parse(line: &'a [u8]) -> Option<RecordHead<'a>> {
        serde_json::from_slice(line).ok()
    }
}

impl<'de> Deserialize<'de> for RecordHead<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(HeadVisitor)
    }
}

struct HeadVisitor;

impl<'de> Visitor<'de> for HeadVisitor {
    type Value = RecordHead<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a run record")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RecordHead<'de>, A::Error> {
        let mut head = RecordHead::default();
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "schema" => head.schema = map.next_value()?,
                "role" => head.role = map.next_value()?,
                "counted" => head.counted = map.next_value()?,
                "wall_ns" => head.wall_ns = map.next_value()?,
                "anomalies" => head.anomalies = map.next_value::<Option<Count>>()?.map(|c| c.0),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(head)
    }
}

/// The length of a JSON array, its elements checked and skipped.
struct Count(u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> Visitor<'de> for CountVisitor {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Count, S::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
        }
        d.deserialize_seq(CountVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn the_head_is_what_the_full_parse_says() {
        let line = br#"{"schema":"coldtrace.run/1","index":3,"role":"warm","label":"a\"b","argv":["x"],"outcome":{"kind":"exited","code":0},"counted":true,"wall_ns":1234,"rusage":{"user_us":1},"anomalies":[{"kind":"storage_reads"},{"kind":"x"}],"slot":null}
"#;
        let head = RecordHead::parse(line).unwrap();
        let full: Value = serde_json::from_slice(line).unwrap();
        assert_eq!(head.schema, full["schema"].as_str());
        assert_eq!(head.role, full["role"].as_str());
        assert_eq!(head.counted, full["counted"].as_bool());
        assert_eq!(head.wall_ns, full["wall_ns"].as_f64());
        assert_eq!(head.anomalies, Some(2));
        let nulls = RecordHead::parse(br#"{"wall_ns":null,"anomalies":null,"role":"first"}"#);
        assert_eq!(nulls.unwrap().wall_ns, None);
    }

    #[test]
    fn what_it_does_not_expect_is_left_to_the_full_parse() {
        for bad in [
            &br#"{"role":"w\u0061rm"}"#[..],
            br#"{"counted":"yes"}"#,
            br#"{"schema":"coldtrace.run/1","wall_ns":1"#,
            br#"[1,2]"#,
            br#"{"a":1} trailing"#,
        ] {
            assert_eq!(
                RecordHead::parse(bad),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
