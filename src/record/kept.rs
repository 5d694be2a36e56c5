//! Every run's record line, kept until the end of the batch for the exports (`--export-json`,
//! `--export-coldtrace-json`, `--export-csv`…): in an unmapped memfd, so that a long batch does not raise coldtrace's
//! resident set (and the floor under every child's max RSS). It keeps lines; it writes no file.
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, Write};

/// The record lines of a batch, in run order.
#[derive(Debug)]
pub enum KeptRecords {
    /// An anonymous in-memory file ([memfd_create(2)]), written with `write(2)`, never mapped.
    ///
    /// [memfd_create(2)]: https://man7.org/linux/man-pages/man2/memfd_create.2.html
    File(File),
    /// Where memfds are refused: the heap.
    Memory(Vec<u8>),
}

impl KeptRecords {
    /// An empty store.
    pub fn new() -> KeptRecords {
        match rustix::fs::memfd_create("coldtrace-records", rustix::fs::MemfdFlags::CLOEXEC) {
            Ok(fd) => KeptRecords::File(File::from(fd)),
            Err(_) => KeptRecords::Memory(Vec::new()),
        }
    }

    /// Keeps one record line (with its newline). A failed write loses the line for the
    /// exports only: `runs.jsonl` has it.
    pub fn push(&mut self, line: &[u8]) {
        match self {
            KeptRecords::File(f) => {
                let _ = f.write_all(line);
            }
            KeptRecords::Memory(v) => v.extend_from_slice(line),
        }
    }

    /// Calls `each` with every line, in order (without its newline), reading them back one at
    /// a time.
    pub fn for_each(
        &self,
        mut each: impl FnMut(&str) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        match self {
            KeptRecords::File(f) => {
                let mut reader: &File = f;
                reader.rewind()?;
                for line in BufReader::new(reader).lines() {
                    each(&line?)?;
                }
                Ok(())
            }
            KeptRecords::Memory(v) => {
                for line in String::from_utf8_lossy(v).lines() {
                    each(line)?;
                }
                Ok(())
            }
        }
    }
}

impl Default for KeptRecords {
    fn default() -> Self {
        KeptRecords::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_back_in_order() {
        for mut kept in [KeptRecords::new(), KeptRecords::Memory(Vec::new())] {
            kept.push(b"{\"index\":0}\n");
            kept.push(b"{\"index\":1}\n");
            let mut seen = Vec::new();
            kept.for_each(|l| {
                seen.push(l.to_string());
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, ["{\"index\":0}", "{\"index\":1}"]);
        }
    }
}
