//! Which pages a run created by writing, among those it added to the page cache.
//!
//! The insertion tracepoint fires for every folio added: one read from storage (a `read`, a
//! page fault, readahead), and one a write creates where the file had no cached page (a new
//! file, an append, a written `.pyc`). What tells them apart is what the same thread does
//! next. The kernel's buffered write handles one folio at a time: it adds the folio
//! (`write_begin`), copies the data, and marks it dirty (`write_end`) — so a folio created by
//! writing is made dirty by the thread that added it, with no read from storage in between. A
//! read adds its folios and then submits the block I/O that fills them; a write into part of
//! a folio that is not cached reads the rest first.
//!
//! So each thread's insertions wait ([`PageOrigins::added`]) until the thread either makes
//! one of them dirty (that one was created by writing: [`PageOrigins::dirtied`]) or submits a
//! read (all were read in: [`PageOrigins::read_io`]). Whatever never learns its fate was read
//! in: the default is the page-in, never the write.
//!
//! What this cannot see, and counts as read: a write whose thread read a block of the file
//! system between adding the folio and dirtying it (the part of the folio the write does not
//! cover, or a block of the file's extent tree). And what it counts as written: on a file
//! system without a block device (NFS, FUSE), a page read in and then modified by the same
//! thread before it added anything else of that file. The dirtying names the inode and not
//! the device: a thread's waiting folio is matched by inode and page.
#![forbid(unsafe_code)]

use super::layout::Added;
use super::PageIns;
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;

/// The most insertions a thread keeps waiting; the oldest beyond is taken as read in (a write
/// dirties its folio before it adds the next).
const MAX_WAITING: usize = 64;

/// The threads' insertions whose origin is not known yet (see the module's note).
#[derive(Clone, Debug, Default)]
pub struct PageOrigins {
    waiting: HashMap<u32, VecDeque<Added>, BuildHasherDefault<DefaultHasher>>,
}

impl PageOrigins {
    /// Thread `task` added `added`: counted in `ins`, and waits to be told written.
    pub fn added(&mut self, task: u32, added: Added, ins: &mut PageIns) {
        ins.add(added.file, added.pages);
        let waiting = self.waiting.entry(task).or_default();
        if waiting.len() == MAX_WAITING {
            waiting.pop_front();
        }
        waiting.push_back(added);
    }

    /// Thread `task` made the folio at page `index` of inode `ino` dirty: if it is one it
    /// added and is waiting, it was created by writing. Its other waiting folios of that
    /// inode were not (read in).
    pub fn dirtied(&mut self, task: u32, ino: u64, index: u64, ins: &mut PageIns) {
        let Some(waiting) = self.waiting.get_mut(&task) else {
            return;
        };
        waiting.retain(|a| {
            if a.file.ino != ino {
                return true;
            }
            if a.index == index {
                ins.add_written(a.file, a.pages);
            }
            false
        });
    }

    /// Thread `task` submitted a read: what it added and is waiting was read in.
    pub fn read_io(&mut self, task: u32) {
        if let Some(waiting) = self.waiting.get_mut(&task) {
            waiting.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::page_ins::FileKey;

    fn file(ino: u64) -> FileKey {
        FileKey {
            major: 254,
            minor: 0,
            ino,
        }
    }

    fn at(ino: u64, index: u64, pages: u64) -> Added {
        Added {
            file: file(ino),
            index,
            pages,
        }
    }

    fn written(ins: &PageIns, ino: u64) -> u64 {
        ins.written.get(&file(ino)).copied().unwrap_or(0)
    }

    #[test]
    fn a_folio_its_thread_dirties_next_was_created_by_writing() {
        // dd of=new bs=1M: each 1 MiB folio added, then dirtied.
        let (mut o, mut ins) = (PageOrigins::default(), PageIns::default());
        for i in 0..8 {
            o.added(7, at(10, i * 256, 256), &mut ins);
            o.dirtied(7, 10, i * 256, &mut ins);
        }
        assert_eq!((ins.pages(), written(&ins, 10)), (2048, 2048));
        assert_eq!(ins.read_pages(&file(10)), 0);
    }

    #[test]
    fn folios_followed_by_a_read_were_read_in_even_when_dirtied_later() {
        // A read of a cold file, then an update in place of two of its pages.
        let (mut o, mut ins) = (PageOrigins::default(), PageIns::default());
        for i in 0..4 {
            o.added(7, at(10, i * 4, 4), &mut ins);
        }
        o.read_io(7);
        o.dirtied(7, 10, 4, &mut ins);
        o.dirtied(7, 10, 0, &mut ins);
        assert_eq!((ins.read_pages(&file(10)), written(&ins, 10)), (16, 0));
        // A write into part of a folio not cached reads it first.
        o.added(7, at(11, 2, 1), &mut ins);
        o.read_io(7);
        o.dirtied(7, 11, 2, &mut ins);
        assert_eq!((ins.read_pages(&file(11)), written(&ins, 11)), (1, 0));
    }

    #[test]
    fn only_the_thread_that_added_a_folio_can_have_written_it() {
        let (mut o, mut ins) = (PageOrigins::default(), PageIns::default());
        o.added(7, at(10, 0, 1), &mut ins);
        o.dirtied(8, 10, 0, &mut ins);
        // Another thread's read does not settle thread 7's folio either.
        o.read_io(8);
        o.dirtied(7, 10, 0, &mut ins);
        assert_eq!(written(&ins, 10), 1);
    }

    #[test]
    fn a_dirtied_folio_of_another_file_leaves_the_waiting_ones_waiting() {
        // A write's metadata (another inode) dirtied between the folio's insertion and its
        // own dirtying; then a folio of the same inode at another page settles the first as
        // read in.
        let (mut o, mut ins) = (PageOrigins::default(), PageIns::default());
        o.added(7, at(10, 0, 1), &mut ins);
        o.dirtied(7, 99, 5, &mut ins);
        o.dirtied(7, 10, 0, &mut ins);
        assert_eq!(written(&ins, 10), 1);
        o.added(7, at(12, 0, 1), &mut ins);
        o.added(7, at(12, 1, 1), &mut ins);
        o.dirtied(7, 12, 1, &mut ins);
        o.dirtied(7, 12, 0, &mut ins);
        assert_eq!((ins.read_pages(&file(12)), written(&ins, 12)), (1, 1));
    }

    #[test]
    fn a_thread_waits_for_at_most_a_bounded_number_of_folios() {
        let (mut o, mut ins) = (PageOrigins::default(), PageIns::default());
        for i in 0..(MAX_WAITING as u64 + 1) {
            o.added(7, at(10 + i, 0, 1), &mut ins);
        }
        // The oldest was given up as read in; the newest still waits.
        o.dirtied(7, 10, 0, &mut ins);
        o.dirtied(7, 10 + MAX_WAITING as u64, 0, &mut ins);
        assert_eq!(written(&ins, 10), 0);
        assert_eq!(written(&ins, 10 + MAX_WAITING as u64), 1);
        assert_eq!(o.waiting[&7].len(), MAX_WAITING - 1);
    }
}
