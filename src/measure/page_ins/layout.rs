//! The raw record of `filemap:mm_filemap_add_to_page_cache`, read with the layout its tracefs
//! format file gives: the inode (`i_ino`), the superblock's device (`s_dev`, the kernel's
//! `dev_t`: major in the bits above 20, minor below) and the folio's order (`order`, Linux ≥
//! 6.2; before, each record is one page). Pure and total: any bytes give a page-in or `None`.
#![forbid(unsafe_code)]

use super::FileKey;
use crate::measure::tree::format::{read_int, Field, Format};

/// The tracepoint's system and name in tracefs.
pub const TRACEPOINT: (&str, &str) = ("filemap", "mm_filemap_add_to_page_cache");

/// The largest folio order believed (2^20 pages: 4 GiB); a larger one is a misread record.
const MAX_ORDER: i64 = 20;

/// Where the fields the ledger reads sit in the raw record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The tracepoint's ID (what `common_type` holds).
    pub id: u64,
    common_type: Field,
    ino: Field,
    dev: Field,
    order: Option<Field>,
}

impl Layout {
    /// The layout of `format`. `Err` names the field that is missing.
    pub fn of(format: &Format) -> Result<Layout, String> {
        Ok(Layout {
            id: format.id,
            common_type: format.require("common_type")?.clone(),
            ino: format.require("i_ino")?.clone(),
            dev: format.require("s_dev")?.clone(),
            order: format.field("order").cloned(),
        })
    }

    /// The file and the number of pages of one raw record; `None` for a record of another
    /// tracepoint or one too short for its fields.
    pub fn decode(&self, raw: &[u8]) -> Option<(FileKey, u64)> {
        if read_int(raw, &self.common_type)? as u64 != self.id {
            return None;
        }
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
        Some((file, 1u64 << order))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format file on Linux 6.18 (x86_64), as tracefs gives it.
    const FORMAT: &str =
        include_str!("../../../tests/data/tracefs-6.18/mm_filemap_add_to_page_cache.format");

    fn record(id: u16, ino: u64, dev: u32, order: u8) -> Vec<u8> {
        let mut raw = vec![0u8; 40];
        raw[0..2].copy_from_slice(&id.to_ne_bytes());
        raw[8..16].copy_from_slice(&0x1234_5678u64.to_ne_bytes());
        raw[16..24].copy_from_slice(&ino.to_ne_bytes());
        raw[24..32].copy_from_slice(&7u64.to_ne_bytes());
        raw[32..36].copy_from_slice(&dev.to_ne_bytes());
        raw[36] = order;
        raw
    }

    #[test]
    fn a_record_gives_its_file_and_pages() {
        let layout = Layout::of(&Format::parse(FORMAT).unwrap()).unwrap();
        assert_eq!(layout.id, 600);
        // 254:0 in the kernel's dev_t; a folio of order 4.
        let raw = record(600, 1_845_032, 254 << 20, 4);
        let key = FileKey {
            major: 254,
            minor: 0,
            ino: 1_845_032,
        };
        assert_eq!(layout.decode(&raw), Some((key, 16)));
        let minor = record(600, 9, (259 << 20) | 70_000, 0);
        assert_eq!(
            layout.decode(&minor).map(|(k, p)| (k.major, k.minor, p)),
            Some((259, 70_000, 1))
        );
    }

    #[test]
    fn other_tracepoints_short_records_and_absurd_orders_are_not_page_ins() {
        let layout = Layout::of(&Format::parse(FORMAT).unwrap()).unwrap();
        assert_eq!(layout.decode(&record(601, 1, 1, 0)), None);
        assert_eq!(layout.decode(&record(600, 1, 1, 0)[..30]), None);
        assert_eq!(layout.decode(&record(600, 1, 1, 200)), None);
        assert_eq!(layout.decode(&[]), None);
    }

    #[test]
    fn kernels_without_an_order_count_one_page_per_record() {
        let old = FORMAT.replace(
            "\tfield:unsigned char order;\toffset:36;\tsize:1;\tsigned:0;\n",
            "",
        );
        let format = Format::parse(&old).unwrap();
        assert!(format.field("order").is_none());
        let layout = Layout::of(&format).unwrap();
        assert_eq!(
            layout.decode(&record(600, 5, 8 << 20, 9)).map(|r| r.1),
            Some(1)
        );
        let missing = Format::parse(&FORMAT.replace("i_ino", "inode")).unwrap();
        assert!(Layout::of(&missing).unwrap_err().contains("i_ino"));
    }
}
