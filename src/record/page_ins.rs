//! The page-in ledger in a run's record (`page_ins`): what the run's processes read into the
//! page cache, split into the files under the `--evict` roots, those under the `--watch` roots
//! only, and the rest, with the files that gained the most; and, apart (`written`), the pages
//! they created by writing — a new file, an append, a written `.pyc` —, which were never read.
//! One type both ways: the batch writes it ([`PageInsRecord::of`]), and whoever reads a record
//! back — the verdict giving an older batch its causes, `report` — takes it back with
//! [`PageInsRecord::read`].
//!
//! Every figure is exact or absent: without the privilege (root or CAP_PERFMON), with
//! `--minimal`, or when records were lost, `bytes`, `files` and the parts are `null` and
//! `unknown_reason` says why. The split alone can be unknown (`split_unknown_reason`): where the
//! watched files' device is not the one the page cache names them by (btrfs subvolumes,
//! overlayfs), a page-in cannot be put in a watched tree.
//!
//! A file written is named where the walk of the watched trees found it, and, after the first
//! run, where a search of the watched trees and the command's working directory found it
//! (files the run created are in no walk made before it); that search also reads each named
//! file's birth time, to tell the files the run created from those it appended to.
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
    /// Under the command's working directory, and no watched root (files written only).
    Cwd,
}

impl Under {
    /// The name in records.
    pub fn name(self) -> &'static str {
        match self {
            Under::Evict => "evict",
            Under::Watch => "watch",
            Under::Cwd => "cwd",
        }
    }

    fn parse(name: Option<&str>) -> Option<Under> {
        match name? {
            "evict" => Some(Under::Evict),
            "watch" => Some(Under::Watch),
            "cwd" => Some(Under::Cwd),
            _ => None,
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
    /// Bytes it gained (read in, or written: as the list it is in says).
    pub bytes: u64,
    /// The tree it is in (`None`: elsewhere, or the split is unknown).
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
            under: Under::parse(v.get("under")?.as_str()),
        })
    }
}

/// A file written, and whether the run created it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenFile {
    /// The file, with the bytes the run created by writing.
    pub file: PageInFile,
    /// It was born during the run (`None`: not named, not looked at, or its file system keeps
    /// no birth time).
    pub created: Option<bool>,
}

impl Serialize for WrittenFile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = &self.file;
        let mut m = s.serialize_map(Some(6))?;
        m.serialize_entry("bytes", &f.bytes)?;
        m.serialize_entry("device", &format!("{}:{}", f.key.major, f.key.minor))?;
        m.serialize_entry("inode", &f.key.ino)?;
        m.serialize_entry("under", &f.under.map(Under::name))?;
        m.serialize_entry("path", &f.path.as_ref().map(|p| p.to_string_lossy()))?;
        m.serialize_entry("created", &self.created)?;
        m.end()
    }
}

impl WrittenFile {
    fn read(v: &Value) -> Option<WrittenFile> {
        Some(WrittenFile {
            file: PageInFile::read(v)?,
            created: v.get("created").and_then(Value::as_bool),
        })
    }
}

/// What a run created in the page cache by writing (see the module's note).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WrittenRecord {
    /// Bytes created by writing, over every file.
    pub bytes: u64,
    /// Files that gained pages by writing.
    pub files: u64,
    /// Of those, the files under the `--evict` roots (`None`: the split is unknown).
    pub evicted: Option<PageInPart>,
    /// Under the `--watch` roots and no `--evict` one.
    pub watched: Option<PageInPart>,
    /// Under the command's working directory and no watched root, as the search after the
    /// first run found them (`None` on the other runs: not looked for).
    pub cwd: Option<PageInPart>,
    /// The rest: in no watched tree nor, where `cwd` is given, under the working directory.
    pub elsewhere: Option<PageInPart>,
    /// Of the files named, those born during the run (`None` where not looked at: every run
    /// but the first).
    pub created: Option<PageInPart>,
    /// The files that gained the most by writing, largest first (at most [`TOP`]).
    pub top: Vec<WrittenFile>,
    /// Why some written files have no name though they were looked for (the search's bound).
    pub names_reason: Option<String>,
}
serialize_struct!(WrittenRecord {
    bytes,
    files,
    evicted,
    watched,
    cwd,
    elsewhere,
    created,
    top,
    names_reason
});

impl WrittenRecord {
    fn read(v: &Value) -> Option<WrittenRecord> {
        let part = |name: &str| v.get(name).and_then(PageInPart::read);
        Some(WrittenRecord {
            bytes: v.get("bytes")?.as_u64()?,
            files: v.get("files")?.as_u64()?,
            evicted: part("evicted"),
            watched: part("watched"),
            cwd: part("cwd"),
            elsewhere: part("elsewhere"),
            created: part("created"),
            top: v
                .get("top")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(WrittenFile::read).collect())
                .unwrap_or_default(),
            names_reason: v
                .get("names_reason")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }
}

/// What a run's processes read into the page cache, and what they created in it by writing
/// (see the module's note).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageInsRecord {
    /// [`SOURCE`], or `None` when there is no ledger.
    pub source: Option<&'static str>,
    /// Bytes read in, over every file.
    pub bytes: Option<u64>,
    /// Files that gained pages read in.
    pub files: Option<u64>,
    /// Of those, the files under the `--evict` roots.
    pub evicted: Option<PageInPart>,
    /// Under the `--watch` roots and no `--evict` one.
    pub watched: Option<PageInPart>,
    /// In no watched tree.
    pub elsewhere: Option<PageInPart>,
    /// The files that gained the most pages read in, largest first (at most [`TOP`]).
    pub top: Vec<PageInFile>,
    /// The pages created by writing (`None` when there are no figures).
    pub written: Option<WrittenRecord>,
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
    written,
    unknown_reason,
    split_unknown_reason
});

/// Where a file of the ledger is: its path, its tree, and whether the run created it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// Its path.
    pub path: PathBuf,
    /// The tree it was found under.
    pub under: Under,
    /// It was born during the run (`None`: not looked at, or no birth time).
    pub created: Option<bool>,
}

/// Where a file of the ledger is, when it was found.
pub type Locate<'a> = dyn FnMut(FileKey) -> Option<Place> + 'a;

/// How a file's pages came: read in or created by writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// Read into the page cache (from storage, readahead, a fault).
    Read,
    /// Created by writing.
    Written,
}

impl How {
    /// The name in `page_ins.tsv`.
    pub fn name(self) -> &'static str {
        match self {
            How::Read => "read",
            How::Written => "written",
        }
    }
}

/// One line of the ledger: a file's pages that came one way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerLine {
    /// How they came.
    pub how: How,
    /// The file and their bytes.
    pub file: PageInFile,
    /// Whether the run created the file (written lines only).
    pub created: Option<bool>,
}

/// How the files of a ledger are placed in its record.
pub struct Placing<'a, 'l> {
    /// Bytes per page.
    pub page_bytes: u64,
    /// Why the files cannot be put in the watched trees (then nothing is located).
    pub split_unknown: Option<&'a str>,
    /// The working directory was looked in for the written files, and their birth times read
    /// (the first run).
    pub searched: bool,
    /// Why some written files were looked for and not named.
    pub names_reason: Option<&'a str>,
    /// Finds a file.
    pub locate: &'a mut Locate<'l>,
}

/// The parts of a split, by [`Under`] (`None`: elsewhere).
#[derive(Default)]
struct Parts {
    evicted: PageInPart,
    watched: PageInPart,
    cwd: PageInPart,
    elsewhere: PageInPart,
    created: PageInPart,
}

impl Parts {
    fn add(&mut self, under: Option<Under>, bytes: u64) {
        match under {
            Some(Under::Evict) => self.evicted.add(bytes),
            Some(Under::Watch) => self.watched.add(bytes),
            Some(Under::Cwd) => self.cwd.add(bytes),
            None => self.elsewhere.add(bytes),
        }
    }

    fn total(&self) -> PageInPart {
        let parts = [self.evicted, self.watched, self.cwd, self.elsewhere];
        PageInPart {
            files: parts.iter().map(|p| p.files).sum(),
            bytes: parts.iter().fold(0, |a, p| a.saturating_add(p.bytes)),
        }
    }
}

/// Largest first, then by device and inode.
fn largest_first(a: &PageInFile, b: &PageInFile) -> std::cmp::Ordering {
    b.bytes.cmp(&a.bytes).then_with(|| a.key.cmp(&b.key))
}

/// A ledger's files as they are placed: what was read in and what was written, each split.
#[derive(Default)]
struct Split {
    read: Parts,
    written: Parts,
    read_top: Vec<PageInFile>,
    written_top: Vec<WrittenFile>,
}

impl Split {
    /// The file `key`, at `place`, with `pages` read in and written (of `page_bytes` each);
    /// `each` sees its lines.
    fn place(
        &mut self,
        key: FileKey,
        place: Option<Place>,
        (read, written): (u64, u64),
        page_bytes: u64,
        each: &mut dyn FnMut(&LedgerLine),
    ) {
        let under = place.as_ref().map(|p| p.under);
        let file = |pages: u64, under: Option<Under>| PageInFile {
            path: place.as_ref().map(|p| p.path.clone()),
            key,
            bytes: pages.saturating_mul(page_bytes),
            under,
        };
        if read > 0 {
            // What is read in is split by the watched trees only.
            let under = under.filter(|u| *u != Under::Cwd);
            let file = file(read, under);
            self.read.add(under, file.bytes);
            each(&LedgerLine {
                how: How::Read,
                file: file.clone(),
                created: None,
            });
            self.read_top.push(file);
        }
        if written > 0 {
            let created = place.as_ref().and_then(|p| p.created);
            let file = file(written, under);
            self.written.add(under, file.bytes);
            if created == Some(true) {
                self.written.created.add(file.bytes);
            }
            let line = LedgerLine {
                how: How::Written,
                file,
                created,
            };
            each(&line);
            self.written_top.push(WrittenFile {
                file: line.file,
                created,
            });
        }
    }

    /// The record: the split's parts where `split` (the watched trees could be told), the
    /// working directory's and the files created where also `searched`.
    fn record(mut self, split: bool, searched: bool, names_reason: Option<&str>) -> PageInsRecord {
        self.read_top.sort_by(largest_first);
        self.read_top.truncate(TOP);
        self.written_top
            .sort_by(|a, b| largest_first(&a.file, &b.file));
        self.written_top.truncate(TOP);
        let (read, written) = (&self.read, &self.written);
        let (total, all_written) = (read.total(), written.total());
        PageInsRecord {
            source: Some(SOURCE),
            bytes: Some(total.bytes),
            files: Some(total.files),
            evicted: split.then_some(read.evicted),
            watched: split.then_some(read.watched),
            elsewhere: split.then_some(read.elsewhere),
            top: self.read_top,
            written: Some(WrittenRecord {
                bytes: all_written.bytes,
                files: all_written.files,
                evicted: split.then_some(written.evicted),
                watched: split.then_some(written.watched),
                cwd: (split && searched).then_some(written.cwd),
                elsewhere: split.then_some(written.elsewhere),
                created: (split && searched).then_some(written.created),
                top: self.written_top,
                names_reason: names_reason.map(str::to_string),
            }),
            unknown_reason: None,
            split_unknown_reason: None,
        }
    }
}

impl PageInsRecord {
    /// The record of a run's `ledger`, its files placed as `placing` says; `each` sees every
    /// line (a file read in, a file written), with its bytes.
    pub fn of(
        ledger: &Ledger,
        placing: Placing<'_, '_>,
        each: &mut dyn FnMut(&LedgerLine),
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
        let Placing {
            page_bytes,
            split_unknown,
            searched,
            names_reason,
            locate,
        } = placing;
        let mut split = Split::default();
        for &key in ins.files.keys() {
            let place = split_unknown.is_none().then(|| locate(key)).flatten();
            let pages = (ins.read_pages(&key), ins.written_pages(&key));
            split.place(key, place, pages, page_bytes, each);
        }
        PageInsRecord {
            split_unknown_reason: split_unknown.map(str::to_string),
            ..split.record(split_unknown.is_none(), searched, names_reason)
        }
    }

    /// The record of a run without a ledger, and why.
    pub fn unknown(why: &str) -> PageInsRecord {
        PageInsRecord {
            unknown_reason: Some(why.to_string()),
            ..PageInsRecord::default()
        }
    }

    /// The `page_ins` of a run record read back (`None`: the record has none, as records
    /// before schema version 6 and `--minimal` runs). Before version 8 its figures counted the
    /// pages created by writing as read in, and it had no `written`.
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
            written: v.get("written").and_then(WrittenRecord::read),
            unknown_reason: text("unknown_reason"),
            split_unknown_reason: text("split_unknown_reason"),
        })
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

    /// Files 1 (evicted), 2 (watched), 3 (elsewhere) read in; 1 and 4 (under the working
    /// directory, created by the run) written.
    fn ledger() -> Ledger {
        let mut ins = PageIns::default();
        ins.add(key(1), 10);
        ins.add(key(2), 3);
        ins.add(key(3), 100);
        ins.add(key(1), 2);
        ins.add(key(1), 5);
        ins.add_written(key(1), 5);
        ins.add(key(4), 7);
        ins.add_written(key(4), 7);
        Ok(ins)
    }

    fn locate(k: FileKey) -> Option<Place> {
        let (path, under, created) = match k.ino {
            1 => ("/py/lib/a.so", Under::Evict, Some(false)),
            2 => ("/data/b", Under::Watch, None),
            4 => ("/work/__pycache__/m.pyc", Under::Cwd, Some(true)),
            _ => return None,
        };
        Some(Place {
            path: path.into(),
            under,
            created,
        })
    }

    fn record(
        split_unknown: Option<&str>,
        searched: bool,
        each: &mut dyn FnMut(&LedgerLine),
    ) -> PageInsRecord {
        let placing = Placing {
            page_bytes: 4096,
            split_unknown,
            searched,
            names_reason: None,
            locate: &mut locate,
        };
        PageInsRecord::of(&ledger(), placing, each)
    }

    fn part(files: u64, pages: u64) -> Option<PageInPart> {
        Some(PageInPart {
            files,
            bytes: pages * 4096,
        })
    }

    #[test]
    fn pages_read_in_are_split_into_evicted_watched_and_elsewhere() {
        let mut lines = Vec::new();
        let r = record(None, true, &mut |l| lines.push((l.how, l.file.key.ino)));
        lines.sort_by_key(|l| (l.1, l.0 == How::Written));
        assert_eq!(
            lines,
            [
                (How::Read, 1),
                (How::Written, 1),
                (How::Read, 2),
                (How::Read, 3),
                (How::Written, 4)
            ]
        );
        assert_eq!((r.bytes, r.files), (Some(115 * 4096), Some(3)));
        assert_eq!(
            (r.evicted, r.watched, r.elsewhere),
            (part(1, 12), part(1, 3), part(1, 100))
        );
        let order: Vec<u64> = r.top.iter().map(|f| f.key.ino).collect();
        assert_eq!(order, [3, 1, 2], "largest first");
        assert_eq!(r.top[0].path, None);
        assert_eq!(r.top[1].under, Some(Under::Evict));
    }

    #[test]
    fn pages_created_by_writing_are_apart_with_where_and_whether_created() {
        let r = record(None, true, &mut |_| {});
        let w = r.written.as_ref().expect("written");
        assert_eq!((w.bytes, w.files), (12 * 4096, 2));
        assert_eq!(
            (w.evicted, w.watched, w.cwd, w.elsewhere, w.created),
            (part(1, 5), part(0, 0), part(1, 7), part(0, 0), part(1, 7))
        );
        let top: Vec<(u64, Option<Under>, Option<bool>)> = w
            .top
            .iter()
            .map(|f| (f.file.key.ino, f.file.under, f.created))
            .collect();
        assert_eq!(
            top,
            [
                (4, Some(Under::Cwd), Some(true)),
                (1, Some(Under::Evict), Some(false))
            ]
        );
        // A run whose working directory was not looked in says so with nulls.
        let later = record(None, false, &mut |_| {});
        let w = later.written.unwrap();
        assert_eq!((w.cwd, w.created), (None, None));
        assert_eq!(w.evicted, part(1, 5));
    }

    #[test]
    fn what_is_written_reads_back_the_same() {
        let r = record(None, true, &mut |_| {});
        let json = serde_json::json!({ "page_ins": serde_json::to_value(&r).unwrap() });
        assert_eq!(PageInsRecord::read(&json), Some(r));
        assert_eq!(json["page_ins"]["top"][1]["device"], "254:0");
        assert_eq!(json["page_ins"]["top"][0]["path"], Value::Null);
        assert_eq!(json["page_ins"]["written"]["top"][0]["under"], "cwd");
        assert_eq!(json["page_ins"]["written"]["top"][0]["created"], true);
        assert_eq!(
            PageInsRecord::read(&serde_json::json!({"page_ins": null})),
            None
        );
    }

    #[test]
    fn without_a_ledger_or_a_split_the_figures_are_absent_with_the_reason() {
        let placing = Placing {
            page_bytes: 4096,
            split_unknown: None,
            searched: true,
            names_reason: None,
            locate: &mut locate,
        };
        let lost = PageInsRecord::of(
            &Err("the kernel dropped page-in records".into()),
            placing,
            &mut |_| {},
        );
        assert_eq!((lost.bytes, lost.evicted, lost.top.len()), (None, None, 0));
        assert_eq!(lost.written, None);
        assert_eq!(
            lost.unknown_reason.as_deref(),
            Some("the kernel dropped page-in records")
        );
        let overlay = "on overlayfs";
        let r = record(Some(overlay), true, &mut |_| {});
        assert_eq!(r.bytes, Some(115 * 4096));
        assert_eq!((r.evicted, r.watched, r.elsewhere), (None, None, None));
        assert!(r.top.iter().all(|f| f.under.is_none() && f.path.is_none()));
        let w = r.written.unwrap();
        assert_eq!(
            (w.bytes, w.evicted, w.cwd, w.created),
            (12 * 4096, None, None, None)
        );
        assert_eq!(r.split_unknown_reason.as_deref(), Some(overlay));
        let none = PageInsRecord::unknown("needs root");
        assert_eq!((none.source, none.bytes, none.written), (None, None, None));
    }
}
