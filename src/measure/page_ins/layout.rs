//! The raw records the ledger reads, with the layouts their tracefs format files give:
//!
//! - `filemap:mm_filemap_add_to_page_cache`: a folio added to a file's page cache — the inode
//!   (`i_ino`), the superblock's device (`s_dev`, the kernel's `dev_t`: major in the bits above
//!   20, minor below), the folio's first page (`index`) and its order (`order`, Linux ≥ 6.2;
//!   before, each record is one page);
//! - `writeback:writeback_dirty_folio` (`writeback_dirty_page` before Linux 5.19): a clean
//!   folio made dirty — its inode (`ino`) and first page (`index`);
//! - `block:block_bio_queue`: a block I/O submitted — whether it reads (`rwbs`).
//!
//! Every record also names the task it was written for (`common_pid`, the thread's ID), which
//! is how [`super::origin`] tells a page created by writing from one read in. Pure and total:
//! any bytes give an event or `None`.
#![forbid(unsafe_code)]

use super::FileKey;
use crate::measure::tree::format::{read_int, Field, Format};

/// The tracepoint of every page-cache insertion, system and name in tracefs.
pub const TRACEPOINT: (&str, &str) = ("filemap", "mm_filemap_add_to_page_cache");
/// The tracepoint of a folio made dirty, by its name since Linux 5.19 and before.
pub const DIRTIED: [(&str, &str); 2] = [
    ("writeback", "writeback_dirty_folio"),
    ("writeback", "writeback_dirty_page"),
];
/// The tracepoint of a block I/O submitted.
pub const BLOCK_IO: (&str, &str) = ("block", "block_bio_queue");

/// The largest folio order believed (2^20 pages: 4 GiB); a larger one is a misread record.
const MAX_ORDER: i64 = 20;

/// A folio added to a file's page cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Added {
    /// Its file.
    pub file: FileKey,
    /// Its first page's index in the file.
    pub index: u64,
    /// Its pages.
    pub pages: u64,
}

/// One record of the ledger's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A folio added to the page cache.
    Added(Added),
    /// A clean folio made dirty: its inode and first page (the tracepoint names no device).
    Dirtied {
        /// The inode number.
        ino: u64,
        /// The folio's first page.
        index: u64,
    },
    /// A block I/O that reads.
    ReadIo,
}

/// The fields every raw record starts with: which tracepoint, and for which thread.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Common {
    kind: Field,
    task: Field,
}

/// Where the fields the ledger reads sit in each tracepoint's raw record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The tracepoints' IDs (what `common_type` holds): added, dirtied, block I/O.
    pub ids: [u64; 3],
    common: Common,
    ino: Field,
    dev: Field,
    index: Field,
    order: Option<Field>,
    dirty_ino: Field,
    dirty_index: Field,
    rwbs: Field,
}

impl Layout {
    /// The layout of the three tracepoints' formats. `Err` names the field that is missing.
    pub fn of(added: &Format, dirtied: &Format, block_io: &Format) -> Result<Layout, String> {
        Ok(Layout {
            ids: [added.id, dirtied.id, block_io.id],
            common: Common {
                kind: added.require("common_type")?.clone(),
                task: added.require("common_pid")?.clone(),
            },
            ino: added.require("i_ino")?.clone(),
            dev: added.require("s_dev")?.clone(),
            index: added.require("index")?.clone(),
            order: added.field("order").cloned(),
            dirty_ino: dirtied.require("ino")?.clone(),
            dirty_index: dirtied.require("index")?.clone(),
            rwbs: block_io.require("rwbs")?.clone(),
        })
    }

    /// The thread and the event of one raw record; `None` for a record of another tracepoint
    /// or one too short for its fields.
    pub fn decode(&self, raw: &[u8]) -> Option<(u32, Event)> {
        let kind = read_int(raw, &self.common.kind)? as u64;
        let task = read_int(raw, &self.common.task)? as u32;
        let event = if kind == self.ids[0] {
            Event::Added(self.added(raw)?)
        } else if kind == self.ids[1] {
            Event::Dirtied {
                ino: read_int(raw, &self.dirty_ino)? as u64,
                index: read_int(raw, &self.dirty_index)? as u64,
            }
        } else if kind == self.ids[2] {
            let rwbs = raw.get(self.rwbs.offset..self.rwbs.offset + self.rwbs.size)?;
            if !reads(rwbs) {
                return None;
            }
            Event::ReadIo
        } else {
            return None;
        };
        Some((task, event))
    }

    fn added(&self, raw: &[u8]) -> Option<Added> {
        let ino = read_int(raw, &self.ino)? as u64;
        let dev = read_int(raw, &self.dev)? as u64 as u32;
        let order = match &self.order {
            Some(field) => read_int(raw, field)?,
            None => 0,
        };
        if !(0..=MAX_ORDER).contains(&order) {
            return None;
        }
        let file = FileKey {
            major: dev >> 20,
            minor: dev & ((1 << 20) - 1),
            ino,
        };
        Some(Added {
            file,
            index: read_int(raw, &self.index)? as u64,
            pages: 1u64 << order,
        })
    }
}

/// Whether a block I/O's `rwbs` (`blk_fill_rwbs`: an `F` for a flush before, then the
/// operation — `R`ead, `W`rite, `D`iscard, `E` secure erase, `N` none —, then its flags) is a
/// read.
fn reads(rwbs: &[u8]) -> bool {
    rwbs.iter().find(|&&c| c != b'F') == Some(&b'R')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format files on Linux 6.18 (x86_64), as tracefs gives them.
    const ADDED: &str =
        include_str!("../../../tests/data/tracefs-6.18/mm_filemap_add_to_page_cache.format");
    const DIRTIED_FORMAT: &str =
        include_str!("../../../tests/data/tracefs-6.18/writeback_dirty_folio.format");
    const BLOCK_IO_FORMAT: &str =
        include_str!("../../../tests/data/tracefs-6.18/block_bio_queue.format");

    fn layout_of(added: &str) -> Layout {
        let parse = |text: &str| Format::parse(text).unwrap();
        Layout::of(
            &parse(added),
            &parse(DIRTIED_FORMAT),
            &parse(BLOCK_IO_FORMAT),
        )
        .unwrap()
    }

    fn layout() -> Layout {
        layout_of(ADDED)
    }

    fn added(id: u16, task: u32, ino: u64, index: u64, dev: u32, order: u8) -> Vec<u8> {
        let mut raw = vec![0u8; 40];
        raw[0..2].copy_from_slice(&id.to_ne_bytes());
        raw[4..8].copy_from_slice(&task.to_ne_bytes());
        raw[8..16].copy_from_slice(&0x1234_5678u64.to_ne_bytes());
        raw[16..24].copy_from_slice(&ino.to_ne_bytes());
        raw[24..32].copy_from_slice(&index.to_ne_bytes());
        raw[32..36].copy_from_slice(&dev.to_ne_bytes());
        raw[36] = order;
        raw
    }

    fn dirtied(task: u32, ino: u64, index: u64) -> Vec<u8> {
        let mut raw = vec![0u8; 56];
        raw[0..2].copy_from_slice(&1009u16.to_ne_bytes());
        raw[4..8].copy_from_slice(&task.to_ne_bytes());
        raw[8..14].copy_from_slice(b"254:0\0");
        raw[40..48].copy_from_slice(&ino.to_ne_bytes());
        raw[48..56].copy_from_slice(&index.to_ne_bytes());
        raw
    }

    fn block_io(task: u32, rwbs: &[u8]) -> Vec<u8> {
        let mut raw = vec![0u8; 54];
        raw[0..2].copy_from_slice(&2097u16.to_ne_bytes());
        raw[4..8].copy_from_slice(&task.to_ne_bytes());
        raw[28..28 + rwbs.len()].copy_from_slice(rwbs);
        raw
    }

    #[test]
    fn an_insertion_gives_its_thread_file_first_page_and_pages() {
        let layout = layout();
        assert_eq!(layout.ids, [600, 1009, 2097]);
        // 254:0 in the kernel's dev_t; a folio of order 4 at page 32.
        let raw = added(600, 4321, 1_845_032, 32, 254 << 20, 4);
        let file = FileKey {
            major: 254,
            minor: 0,
            ino: 1_845_032,
        };
        let event = Event::Added(Added {
            file,
            index: 32,
            pages: 16,
        });
        assert_eq!(layout.decode(&raw), Some((4321, event)));
        let minor = added(600, 1, 9, 0, (259 << 20) | 70_000, 0);
        match layout.decode(&minor) {
            Some((_, Event::Added(a))) => {
                assert_eq!((a.file.major, a.file.minor, a.pages), (259, 70_000, 1))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_dirtied_folio_and_a_read_are_told_by_their_tracepoint() {
        let layout = layout();
        let dirty = Event::Dirtied {
            ino: 10_076_173,
            index: 256,
        };
        assert_eq!(
            layout.decode(&dirtied(77, 10_076_173, 256)),
            Some((77, dirty))
        );
        for rwbs in [&b"R"[..], b"RA", b"RM", b"FRS", b"RSM"] {
            assert_eq!(
                layout.decode(&block_io(5, rwbs)),
                Some((5, Event::ReadIo)),
                "{rwbs:?}"
            );
        }
        for rwbs in [&b"W"[..], b"WS", b"FWFS", b"D", b"N", b""] {
            assert_eq!(layout.decode(&block_io(5, rwbs)), None, "{rwbs:?}");
        }
    }

    #[test]
    fn other_tracepoints_short_records_and_absurd_orders_are_not_events() {
        let layout = layout();
        assert_eq!(layout.decode(&added(601, 1, 1, 0, 1, 0)), None);
        assert_eq!(layout.decode(&added(600, 1, 1, 0, 1, 0)[..30]), None);
        assert_eq!(layout.decode(&added(600, 1, 1, 0, 1, 200)), None);
        assert_eq!(layout.decode(&dirtied(1, 1, 1)[..50]), None);
        assert_eq!(layout.decode(&block_io(1, b"R")[..30]), None);
        assert_eq!(layout.decode(&[]), None);
    }

    #[test]
    fn kernels_without_an_order_count_one_page_per_record() {
        let old = ADDED.replace(
            "\tfield:unsigned char order;\toffset:36;\tsize:1;\tsigned:0;\n",
            "",
        );
        assert!(Format::parse(&old).unwrap().field("order").is_none());
        let layout = layout_of(&old);
        match layout.decode(&added(600, 1, 5, 0, 8 << 20, 9)) {
            Some((_, Event::Added(a))) => assert_eq!(a.pages, 1),
            other => panic!("{other:?}"),
        }
        let missing = Format::parse(&ADDED.replace("i_ino", "inode")).unwrap();
        let parse = |text: &str| Format::parse(text).unwrap();
        let err = Layout::of(&missing, &parse(DIRTIED_FORMAT), &parse(BLOCK_IO_FORMAT));
        assert!(err.unwrap_err().contains("i_ino"));
    }
}
