//! The page-in ledger in a run's record (`page_ins`): what the run's processes brought into the
//! page cache, split into the files under the `--evict` roots, those under the `--watch` roots
//! only, and the rest, with the files that gained the most. One type both ways: the batch
//! writes it ([`PageInsRecord::of`]), and whoever reads a record back — the verdict giving an
//! older batch its causes, `report` — takes it back with [`PageInsRecord::read`].
//!
//! Every figure is exact or absent: without the privilege (root or CAP_PERFMON), with
//! `--minimal`, or when records were lost, `bytes`, `files` and the parts are `null` and
//! `unknown_reason` says why. The split alone can be unknown (`split_unknown_reason`): where the
//! watched files' device is not the one the page cache names them by (btrfs subvolumes,
//! overlayfs), a page-in cannot be put in a watched tree.
#![forbid(unsafe_code)]

use crate::measure::page_ins::{FileKey, Ledger};
use crate::serialize_struct;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use std::path::PathBuf;

/// The files the record lists, largest first.
pub const TOP: usize = 20;

/// The source of every figure, as records name it.
pub const SOURCE: &str = "filemap:mm_filemap_add_to_page_cache";

/// Which watched tree a file is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Under {
    /// Under an `--evict` root.
    Evict,
    /// Under a `--watch` root, and no `--evict` one.
    Watch,
}

impl Under {
    /// The name in records.
    pub fn name(self) -> &'static str {
        match self {
            Under::Evict => "evict",
            Under::Watch => "watch",
        }
    }
}

/// Files and bytes of one part of the split.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageInPart {
    /// Files that gained pages.
    pub files: u64,
    /// Bytes they gained.
    pub bytes: u64,
}
serialize_struct!(PageInPart { files, bytes });

impl PageInPart {
    fn add(&mut self, bytes: u64) {
        self.files += 1;
        self.bytes = self.bytes.saturating_add(bytes);
    }

    fn read(v: &Value) -> Option<PageInPart> {
        Some(PageInPart {
            files: v.get("files")?.as_u64()?,
            bytes: v.get("bytes")?.as_u64()?,
        })
    }
}

/// One file of the ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageInFile {
    /// Its path, when the walk of the watched trees found it (`None` elsewhere).
    pub path: Option<PathBuf>,
    /// Its device (major, minor) and inode, as the page cache names it.
    pub key: FileKey,
    /// Bytes it gained.
    pub bytes: u64,
    /// The watched tree it is in (`None`: elsewhere, or the split is unknown).
    pub under: Option<Under>,
}

impl Serialize for PageInFile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("bytes", &self.bytes)?;
        let device = format!("{}:{}", self.key.major, self.key.minor);
        m.serialize_entry("device", &device)?;
        m.serialize_entry("inode", &self.key.ino)?;
        m.serialize_entry("under", &self.under.map(Under::name))?;
        m.serialize_entry("path", &self.path.as_ref().map(|p| p.to_string_lossy()))?;
        m.end()
    }
}

impl PageInFile {
    fn read(v: &Value) -> Option<PageInFile> {
        let (major, minor) = v.get("device")?.as_str()?.split_once(':')?;
        Some(PageInFile {
            path: v.get("path")?.as_str().map(PathBuf::from),
            key: FileKey {
                major: major.parse().ok()?,
                minor: minor.parse().ok()?,
                ino: v.get("inode")?.as_u64()?,
            },
            bytes: v.get("bytes")?.as_u64()?,
            under: match v.get("under")?.as_str() {
                Some("evict") => Some(Under::Evict),
                Some("watch") => Some(Under::Watch),
                _ => None,
            },
        })
    }
}

/// What a run's processes brought into the page cache (see the module's note).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageInsRecord {
    /// [`SOURCE`], or `None` when there is no ledger.
    pub source: Option<&'static str>,
    /// Bytes brought in, over every file.
    pub bytes: Option<u64>,
    /// Files that gained pages.
    pub files: Option<u64>,
    /// Of those, the files under the `--evict` roots.
    pub evicted: Option<PageInPart>,
    /// Under the `--watch` roots and no `--evict` one.
    pub watched: Option<PageInPart>,
    /// In no watched tree.
    pub elsewhere: Option<PageInPart>,
    /// The files that gained the most, largest first (at most [`TOP`]).
    pub top: Vec<PageInFile>,
    /// Why there are no figures.
    pub unknown_reason: Option<String>,
    /// Why there is no split (while there are figures).
    pub split_unknown_reason: Option<String>,
}
serialize_struct!(PageInsRecord {
    source,
    bytes,
    files,
    evicted,
    watched,
    elsewhere,
    top,
    unknown_reason,
    split_unknown_reason
});

/// Where a file of the ledger is: its path and tree when the walk found it.
pub type Locate<'a> = dyn FnMut(FileKey) -> Option<(PathBuf, Under)> + 'a;

impl PageInsRecord {
    /// The record of a run's `ledger`, in pages of `page_bytes`; `locate` finds a file in the
    /// watched trees, and `split_unknown` says why it cannot (then nothing is located).
    /// `each` sees every file, with the bytes it gained.
    pub fn of(
        ledger: &Ledger,
        page_bytes: u64,
        split_unknown: Option<&str>,
        locate: &mut Locate<'_>,
        each: &mut dyn FnMut(&PageInFile),
    ) -> PageInsRecord {
        let ins = match ledger {
            Ok(ins) => ins,
            Err(why) => {
                return PageInsRecord {
                    source: Some(SOURCE),
                    unknown_reason: Some(why.clone()),
                    ..PageInsRecord::default()
                }
            }
        };
        let mut record = PageInsRecord {
            source: Some(SOURCE),
            bytes: Some(0),
            files: Some(0),
            split_unknown_reason: split_unknown.map(str::to_string),
            ..PageInsRecord::default()
        };
        let mut parts = [PageInPart::default(); 3];
        let mut all = Vec::with_capacity(ins.files.len());
        for (&key, &pages) in &ins.files {
            let bytes = pages.saturating_mul(page_bytes);
            let found = split_unknown.is_none().then(|| locate(key)).flatten();
            let under = found.as_ref().map(|f| f.1);
            parts[under.map_or(2, |u| u as usize)].add(bytes);
            let file = PageInFile {
                path: found.map(|f| f.0),
                key,
                bytes,
                under,
            };
            each(&file);
            all.push(file);
        }
        all.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.key.cmp(&b.key)));
        all.truncate(TOP);
        record.top = all;
        record.files = Some(parts.iter().map(|p| p.files).sum());
        record.bytes = Some(parts.iter().fold(0, |a, p| a.saturating_add(p.bytes)));
        if split_unknown.is_none() {
            [record.evicted, record.watched, record.elsewhere] = parts.map(Some);
        }
        record
    }

    /// The record of a run without a ledger, and why.
    pub fn unknown(why: &str) -> PageInsRecord {
        PageInsRecord {
            unknown_reason: Some(why.to_string()),
            ..PageInsRecord::default()
        }
    }

    /// The `page_ins` of a run record read back (`None`: the record has none, as records
    /// before schema version 6 and `--minimal` runs).
    pub fn read(record: &Value) -> Option<PageInsRecord> {
        let v = record.get("page_ins").filter(|v| v.is_object())?;
        let part = |name: &str| v.get(name).and_then(PageInPart::read);
        let text = |name: &str| v.get(name).and_then(Value::as_str).map(str::to_string);
        Some(PageInsRecord {
            source: v.get("source").and_then(Value::as_str).map(|_| SOURCE),
            bytes: v.get("bytes").and_then(Value::as_u64),
            files: v.get("files").and_then(Value::as_u64),
            evicted: part("evicted"),
            watched: part("watched"),
            elsewhere: part("elsewhere"),
            top: v
                .get("top")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(PageInFile::read).collect())
                .unwrap_or_default(),
            unknown_reason: text("unknown_reason"),
            split_unknown_reason: text("split_unknown_reason"),
        })
    }

    /// Bytes from the watched trees (evicted and watched), when the split is known.
    pub fn watched_bytes(&self) -> Option<u64> {
        Some(self.evicted?.bytes.saturating_add(self.watched?.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::page_ins::PageIns;

    fn key(ino: u64) -> FileKey {
        FileKey {
            major: 254,
            minor: 0,
            ino,
        }
    }

    fn ledger() -> Ledger {
        let mut ins = PageIns::default();
        ins.add(key(1), 10);
        ins.add(key(2), 3);
        ins.add(key(3), 100);
        ins.add(key(1), 2);
        Ok(ins)
    }

    fn locate(k: FileKey) -> Option<(PathBuf, Under)> {
        match k.ino {
            1 => Some(("/py/lib/a.so".into(), Under::Evict)),
            2 => Some(("/data/b".into(), Under::Watch)),
            _ => None,
        }
    }

    #[test]
    fn page_ins_are_split_into_evicted_watched_and_elsewhere() {
        let mut seen = 0;
        let r = PageInsRecord::of(&ledger(), 4096, None, &mut locate, &mut |_| seen += 1);
        assert_eq!(seen, 3);
        assert_eq!((r.bytes, r.files), (Some(115 * 4096), Some(3)));
        assert_eq!(
            r.evicted,
            Some(PageInPart {
                files: 1,
                bytes: 12 * 4096
            })
        );
        assert_eq!(
            r.watched,
            Some(PageInPart {
                files: 1,
                bytes: 3 * 4096
            })
        );
        assert_eq!(
            r.elsewhere,
            Some(PageInPart {
                files: 1,
                bytes: 100 * 4096
            })
        );
        assert_eq!(r.watched_bytes(), Some(15 * 4096));
        let order: Vec<u64> = r.top.iter().map(|f| f.key.ino).collect();
        assert_eq!(order, [3, 1, 2], "largest first");
        assert_eq!(r.top[0].path, None);
        assert_eq!(r.top[1].under, Some(Under::Evict));
    }

    #[test]
    fn what_is_written_reads_back_the_same() {
        let r = PageInsRecord::of(&ledger(), 4096, None, &mut locate, &mut |_| {});
        let json = serde_json::json!({ "page_ins": serde_json::to_value(&r).unwrap() });
        assert_eq!(PageInsRecord::read(&json), Some(r));
        assert_eq!(json["page_ins"]["top"][1]["device"], "254:0");
        assert_eq!(json["page_ins"]["top"][0]["path"], Value::Null);
        assert_eq!(
            PageInsRecord::read(&serde_json::json!({"page_ins": null})),
            None
        );
    }

    #[test]
    fn without_a_ledger_or_a_split_the_figures_are_absent_with_the_reason() {
        let lost = PageInsRecord::of(
            &Err("the kernel dropped page-in records".into()),
            4096,
            None,
            &mut locate,
            &mut |_| {},
        );
        assert_eq!((lost.bytes, lost.evicted, lost.top.len()), (None, None, 0));
        assert_eq!(
            lost.unknown_reason.as_deref(),
            Some("the kernel dropped page-in records")
        );
        let overlay = "on overlayfs";
        let r = PageInsRecord::of(&ledger(), 4096, Some(overlay), &mut locate, &mut |_| {});
        assert_eq!(r.bytes, Some(115 * 4096));
        assert_eq!(
            (r.evicted, r.elsewhere, r.watched_bytes()),
            (None, None, None)
        );
        assert!(r.top.iter().all(|f| f.under.is_none() && f.path.is_none()));
        assert_eq!(r.split_unknown_reason.as_deref(), Some(overlay));
        let none = PageInsRecord::unknown("needs root");
        assert_eq!((none.source, none.bytes), (None, None));
    }
}
