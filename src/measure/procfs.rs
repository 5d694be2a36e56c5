//! Cheap reads of small /proc files, before and after every run.
//! Raw bytes only: parsing a file's contents is its reader's job.
//!
//! A file read through `std::fs` costs seven system calls here (open, musl's extra
//! `fcntl(FD_CLOEXEC)`, fstat and lseek for the size hint, reads, close), and coldtrace reads a
//! dozen /proc files per run. [`ProcFile`] keeps the descriptor open and re-reads it with
//! `pread(fd, buf, 0)`, which makes a seq_file regenerate its contents ([proc(5)]); [`read_once`]
//! reads a per-child file with a bare open/read/close.
//!
//! [proc(5)]: https://man7.org/linux/man-pages/man5/proc.5.html
#![forbid(unsafe_code)]

use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};

fn open(path: &str) -> Option<OwnedFd> {
    rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()
}

/// Reads all of `fd` from offset 0 into `buf`, until a read returns 0. The buffer is kept at
/// its full length between calls (zeroed once, when it grows) so no read pays for zeroing.
/// Reads after the first continue where the previous one ended, so a seq_file does not
/// regenerate its contents to find the offset.
fn read_all<'b>(fd: &OwnedFd, buf: &'b mut Vec<u8>) -> Option<&'b [u8]> {
    if buf.len() < 16 * 1024 {
        buf.resize(16 * 1024, 0);
    }
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            let grown = buf.len() * 2;
            buf.resize(grown, 0);
        }
        match rustix::io::pread(fd, &mut buf[filled..], filled as u64) {
            Ok(0) => return Some(&buf[..filled]),
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
}

/// A /proc file kept open and re-read from the start on every [`ProcFile::read`].
pub struct ProcFile {
    fd: Option<OwnedFd>,
    buf: Vec<u8>,
}

impl ProcFile {
    /// Opens `path`; a file that cannot be opened reads as `None` ever after.
    pub fn open(path: &str) -> ProcFile {
        ProcFile {
            fd: open(path),
            buf: Vec::with_capacity(4096),
        }
    }

    /// The file's current contents.
    pub fn read(&mut self) -> Option<&[u8]> {
        let fd = self.fd.as_ref()?;
        read_all(fd, &mut self.buf)
    }
}

/// A decimal number in /proc text, surrounding whitespace allowed.
pub fn parse_u64(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// Reads a file once (open, read, close), into `buf`.
pub fn read_once<'b>(path: &str, buf: &'b mut Vec<u8>) -> Option<&'b [u8]> {
    let fd = open(path)?;
    read_all(&fd, buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rereads_see_fresh_contents() {
        let mut uptime = ProcFile::open("/proc/uptime");
        let first: f64 = std::str::from_utf8(uptime.read().unwrap())
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let second: f64 = std::str::from_utf8(uptime.read().unwrap())
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(second > first, "{first} then {second}");
        // A file larger than one read: /proc/self/smaps is many KiB.
        let mut buf = Vec::new();
        let smaps = read_once("/proc/self/smaps", &mut buf).unwrap().to_vec();
        assert!(
            smaps.len() > 8192 && smaps.ends_with(b"\n"),
            "{} bytes",
            smaps.len()
        );
        assert!(ProcFile::open("/proc/does-not-exist").read().is_none());
    }
}
