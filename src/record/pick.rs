//! A few fields picked out of a JSON document by their paths, the rest checked as JSON and
//! skipped: no tree is built. It reads documents; what the fields mean is the reader's.
//!
//! Why: `report` over a fleet reads a `batch.json` and two whole record lines per batch. Parsed
//! into a `serde_json::Value`, every object became a `BTreeMap` (an allocation and a sorted
//! insert per field), and with one reading thread per CPU the allocator's lock and the
//! unmapping of its freed pages were most of the system time (10,000 batches: 231,000 futex
//! calls, 110,000 `munmap`s). A row needs about fifteen of those fields.
#![forbid(unsafe_code)]

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A picked value: a scalar, an array's elements, or the mark of an object (not kept).
#[derive(Clone, Debug, PartialEq)]
pub enum Leaf<'de> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A non-negative integer.
    U64(u64),
    /// A negative integer.
    I64(i64),
    /// A number with a fraction or an exponent.
    F64(f64),
    /// A string (borrowed from the document unless it had escapes).
    Str(Cow<'de, str>),
    /// An array's elements (objects in it become [`Leaf::Object`]).
    Array(Vec<Leaf<'de>>),
    /// An object, skipped.
    Object,
}

impl<'de> Leaf<'de> {
    /// The string, as `serde_json::Value::as_str` gives it.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Leaf::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, as `Value::as_u64` gives it (never from a float or a negative number).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Leaf::U64(n) => Some(n),
            _ => None,
        }
    }

    /// Any number as `f64`, as `Value::as_f64` gives it.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Leaf::U64(n) => Some(n as f64),
            Leaf::I64(n) => Some(n as f64),
            Leaf::F64(x) => Some(x),
            _ => None,
        }
    }

    /// The boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Leaf::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The array's elements.
    pub fn as_array(&self) -> Option<&[Leaf<'de>]> {
        match self {
            Leaf::Array(items) => Some(items),
            _ => None,
        }
    }
}

/// The values at `paths` in the JSON document `bytes` (`None` where a path is absent), in the
/// order of `paths`. A path names object keys from the top (`["context", "system", "kernel"]`);
/// one that runs into a non-object stops there, absent. A key given twice keeps only what its
/// last occurrence holds, as `serde_json::Value` does (also for the paths below it). No path
/// may be a prefix of another.
///
/// # Errors
/// The document is not valid JSON (`serde_json`'s error, with its line and column), or its
/// top level is not an object.
pub fn pick<'de>(bytes: &'de [u8], paths: &[&[&str]]) -> Result<Fields<'de>, serde_json::Error> {
    let mut found = vec![None; paths.len()];
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Node {
        paths,
        depth: 0,
        wanted: &(0..paths.len()).collect::<Vec<_>>(),
        found: &mut found,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(Fields(found))
}

/// What [`pick`] found, by the index of the path asked for, read as `serde_json::Value`'s
/// `as_*` would read it (`None`: absent, or of another type).
#[derive(Clone, Debug, PartialEq)]
pub struct Fields<'de>(Vec<Option<Leaf<'de>>>);

impl<'de> Fields<'de> {
    /// The value at path `i`.
    pub fn leaf(&self, i: usize) -> Option<&Leaf<'de>> {
        self.0.get(i)?.as_ref()
    }

    /// Every path's value, in the order the paths were given.
    pub fn leaves(&self) -> &[Option<Leaf<'de>>] {
        &self.0
    }

    pub fn str(&self, i: usize) -> Option<&str> {
        self.leaf(i)?.as_str()
    }

    pub fn string(&self, i: usize) -> Option<String> {
        self.str(i).map(str::to_owned)
    }

    pub fn u64(&self, i: usize) -> Option<u64> {
        self.leaf(i)?.as_u64()
    }

    pub fn f64(&self, i: usize) -> Option<f64> {
        self.leaf(i)?.as_f64()
    }

    pub fn bool(&self, i: usize) -> Option<bool> {
        self.leaf(i)?.as_bool()
    }

    pub fn array(&self, i: usize) -> Option<&[Leaf<'de>]> {
        self.leaf(i)?.as_array()
    }
}

/// An object at `depth` under the path prefix its `wanted` paths share.
struct Node<'p, 'f, 'de> {
    paths: &'p [&'p [&'p str]],
    depth: usize,
    /// Indices into `paths` of the paths that pass through this object.
    wanted: &'p [usize],
    found: &'f mut [Option<Leaf<'de>>],
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Node {
            paths,
            depth,
            wanted,
            found,
        } = self;
        let mut under = Vec::with_capacity(wanted.len());
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            under.clear();
            let mut ends_here = None;
            for &i in wanted {
                let path = paths[i];
                if path[depth] == key {
                    if path.len() == depth + 1 {
                        ends_here = Some(i);
                    } else {
                        under.push(i);
                    }
                }
            }
            if let Some(i) = ends_here {
                found[i] = Some(map.next_value_seed(LeafSeed)?);
            } else if under.is_empty() {
                map.next_value::<IgnoredAny>()?;
            } else {
                // A key given again replaces the whole value under it, as in a `Value`: what
                // an earlier occurrence gave the paths below is forgotten.
                for &i in &under {
                    found[i] = None;
                }
                map.next_value_seed(Inner(Node {
                    paths,
                    depth: depth + 1,
                    wanted: &under,
                    found: &mut *found,
                }))?;
            }
        }
        Ok(())
    }
}

/// A value under a key that wanted paths go through: an object is entered, anything else is
/// skipped (those paths are absent).
struct Inner<'p, 'f, 'de>(Node<'p, 'f, 'de>);

impl<'de> DeserializeSeed<'de> for Inner<'_, '_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Inner<'_, '_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        self.0.visit_map(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// A picked value.
struct LeafSeed;

impl<'de> DeserializeSeed<'de> for LeafSeed {
    type Value = Leaf<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Leaf<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LeafSeed {
    type Value = Leaf<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Bool(b))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Leaf<'de>, E> {
        Ok(Leaf::U64(n))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Leaf<'de>, E> {
        // serde_json gives non-negative integers as u64; this is a negative one.
        Ok(Leaf::I64(n))
    }
    fn visit_f64<E>(self, x: f64) -> Result<Leaf<'de>, E> {
        Ok(Leaf::F64(x))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Str(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Str(Cow::Owned(s.to_owned())))
    }
    fn visit_unit<E>(self) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Null)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Leaf<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Leaf::Object)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Leaf<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(LeafSeed)? {
            items.push(item);
        }
        Ok(Leaf::Array(items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const DOC: &str = r#"{"schema":"s/2","n":3,"neg":-4,"x":1.5,"t":true,"z":null,
        "esc":"a\"b\u00e9","arr":["p","q\n",{"k":1},[1]],"deep":{"a":{"b":7,"c":"no"},"s":"v"},
        "dup":1,"dup":2,"notobj":5,"big":18446744073709551615,
        "twice":{"a":1,"b":2},"twice":{"b":3}}"#;

    fn paths() -> Vec<&'static [&'static str]> {
        vec![
            &["schema"],
            &["n"],
            &["neg"],
            &["x"],
            &["t"],
            &["z"],
            &["esc"],
            &["arr"],
            &["deep", "a", "b"],
            &["deep", "s"],
            &["deep", "missing"],
            &["dup"],
            &["notobj", "inner"],
            &["absent"],
            &["big"],
            &["deep", "a", "c"],
            &["twice", "a"],
            &["twice", "b"],
        ]
    }

    /// What `serde_json::Value` says at the same path, in the picker's terms.
    fn from_value(v: Option<&Value>) -> Option<Leaf<'static>> {
        Some(match v? {
            Value::Null => Leaf::Null,
            Value::Bool(b) => Leaf::Bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => Leaf::U64(u),
                (None, Some(i), _) => Leaf::I64(i),
                (_, _, Some(x)) => Leaf::F64(x),
                _ => unreachable!("a JSON number is one of the three"),
            },
            Value::String(s) => Leaf::Str(Cow::Owned(s.clone())),
            Value::Array(items) => Leaf::Array(
                items
                    .iter()
                    .map(|i| match i {
                        Value::Object(_) => Leaf::Object,
                        other => from_value(Some(other)).unwrap(),
                    })
                    .collect(),
            ),
            Value::Object(_) => Leaf::Object,
        })
    }

    #[test]
    fn every_path_gives_what_the_whole_parse_gives() {
        let whole: Value = serde_json::from_str(DOC).unwrap();
        let picked = pick(DOC.as_bytes(), &paths()).unwrap();
        for (path, got) in paths().iter().zip(picked.leaves()) {
            let want = from_value(path.iter().try_fold(&whole, |v, k| v.get(k)));
            assert_eq!(got, &want, "{path:?}");
        }
        assert_eq!(
            picked.leaf(11),
            Some(&Leaf::U64(2)),
            "the last of a key given twice"
        );
        assert_eq!(
            picked.leaf(16),
            None,
            "only in the first of an object given twice"
        );
        assert_eq!(picked.u64(17), Some(3));
        assert_eq!(picked.str(6), Some("a\"bé"));
        assert_eq!(picked.f64(2), Some(-4.0));
        assert_eq!(picked.u64(2), None);
    }

    #[test]
    fn damaged_documents_are_errors_with_a_place() {
        for bad in [
            &br#"{"a":1"#[..],
            br#"{"a":1} x"#,
            br#"{"a":[1,}"#,
            br#"[1,2]"#,
            br#"{"deep":{"a":tru}}"#,
            b"",
        ] {
            let err = pick(bad, &paths()).expect_err(&String::from_utf8_lossy(bad));
            assert!(err.line() >= 1, "{err}");
        }
    }

    use proptest::prelude::*;

    /// Any JSON value a few levels deep, over a small alphabet of keys so that paths hit.
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-c\"\\\n é]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[abc]", inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn picks_agree_with_the_whole_parse(
            doc in prop::collection::vec(("[abc]", json()), 0..5),
            raw_paths in prop::collection::vec(prop::collection::vec("[abc]", 1..4), 1..6),
            pretty in any::<bool>(),
        ) {
            let doc = Value::Object(doc.into_iter().collect());
            let text = if pretty {
                serde_json::to_string_pretty(&doc).unwrap()
            } else {
                serde_json::to_string(&doc).unwrap()
            };
            // No path may be a prefix of another: keep those that are not.
            let mut kept: Vec<Vec<&str>> = Vec::new();
            for p in &raw_paths {
                let p: Vec<&str> = p.iter().map(String::as_str).collect();
                let clash = kept.iter().any(|q| q.starts_with(&p) || p.starts_with(q));
                if !clash {
                    kept.push(p);
                }
            }
            let paths: Vec<&[&str]> = kept.iter().map(Vec::as_slice).collect();
            let picked = pick(text.as_bytes(), &paths).unwrap();
            // Compared with the text parsed whole, as the reader did before (serde_json's
            // default float parsing need not give back the exact f64 that was printed).
            let doc: Value = serde_json::from_str(&text).unwrap();
            for (path, got) in paths.iter().zip(picked.leaves()) {
                let want = from_value(path.iter().try_fold(&doc, |v, k| v.get(k)));
                prop_assert_eq!(got, &want, "{:?} in {}", path, text);
            }
        }
    }
}
