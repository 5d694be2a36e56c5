//! Cheap reads of small /proc files, before and after every run.
//! Raw bytes only: parsing a file's contents is its reader's job.
//!
//! A file read through `std::fs` costs seven system calls here (open, musl's extra
//! `fcntl(FD_CLOEXEC)`, fstat and lseek for the size hint, reads, close), and coldtrace reads a
//! dozen /proc files per run. [`ProcFile`] keeps the descriptor open and re-reads it with
//! `pread(fd, buf, 0)`, which makes a seq_file regenerate its contents ([proc(5)]);
//! [`read_small_once`] reads a per-child file with a bare open, one read, close, and
//! [`read_pid_file`] a file of the zombie's own `/proc/PID` without the `fstat`.
//!
//! [proc(5)]: https://man7.org/linux/man-pages/man5/proc.5.html
#![forbid(unsafe_code)]

use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};

/// Opens a /proc (or /sys) file without blocking and keeps it only if it is a regular file: a
/// FIFO bind-mounted over one would otherwise block the open until a writer came, beyond every
/// signal coldtrace takes through its signalfd ([fstat(2)] on the descriptor, as in
/// [`crate::untrusted`]). Reads of proc and sysfs files never return `EAGAIN`.
///
/// [fstat(2)]: https://man7.org/linux/man-pages/man2/fstat.2.html
pub fn open(path: &str) -> Option<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty()).ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    (rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::RegularFile)
        .then_some(fd)
}

/// Reads all of `fd` from offset 0 into `buf`, until a read returns 0. The buffer is kept at
/// its full length between calls (zeroed once, when it grows) so no read pays for zeroing.
/// Reads after the first continue where the previous one ended, so a seq_file does not
/// regenerate its contents to find the offset.
fn read_all<'b>(fd: &OwnedFd, buf: &'b mut Vec<u8>) -> Option<&'b [u8]> {
    read_up_to(fd, buf, usize::MAX, false)
}

/// Below this many bytes, a short read of a *small-record* seq_file is its end (see
/// [`read_up_to`]).
const SHORT_READ_ENDS_BELOW: usize = 4096 - 256;

/// Reads `fd` from offset 0 into `buf`, asking for at most `limit` bytes in all (a seq_file
/// stops producing records there: `/proc/vmstat` costs about what it prints).
///
/// With `small_records`, a read that returns fewer than [`SHORT_READ_ENDS_BELOW`] bytes and
/// less than was asked for is taken as the end, saving the confirming read → 0. That holds for
/// seq_files ([proc(5)]) whose contents are one record (`single_open`: PSI, `statm`,
/// `status`, a PID's `io` and `schedstat`; kernfs shows a cgroup's `cpu.stat`,
/// `cgroup.events` and PSI files and a sysfs attribute such as `cpu/online` as one record too)
/// or records under 256 bytes (`/proc/vmstat`'s lines): `seq_read_iter` goes on adding records until the request is full, the file ends, or
/// the next record would overflow its buffer (at least a page), and the last cannot happen
/// below a page minus one record. Files with longer records (`smaps`) must not pass it.
///
/// [proc(5)]: https://man7.org/linux/man-pages/man5/proc.5.html
fn read_up_to<'b>(
    fd: &OwnedFd,
    buf: &'b mut Vec<u8>,
    limit: usize,
    small_records: bool,
) -> Option<&'b [u8]> {
    // One page holds every small file read here; a longer one grows the buffer (kept, and
    // resident while coldtrace spawns: every page here is on a vfork child's max RSS floor).
    if buf.len() < 4096 {
        buf.resize(4096, 0);
    }
    let mut filled = 0;
    loop {
        if filled >= limit {
            return Some(&buf[..filled]);
        }
        if filled == buf.len() {
            let grown = buf.len() * 2;
            buf.resize(grown, 0);
        }
        let end = buf.len().min(limit);
        let asked = end - filled;
        match rustix::io::pread(fd, &mut buf[filled..end], filled as u64) {
            Ok(0) => return Some(&buf[..filled]),
            Ok(n) if small_records && n < asked && n < SHORT_READ_ENDS_BELOW => {
                return Some(&buf[..filled + n])
            }
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
}

/// Reads a file of small records (see [`read_up_to`]) from offset 0 into `buf`, at most its
/// length: usually one read (a cgroup's `cpu.stat` or PSI file, a sysfs attribute); `None` on
/// an error.
pub fn pread_small<'b>(fd: &OwnedFd, buf: &'b mut [u8]) -> Option<&'b [u8]> {
    let mut filled = 0;
    while filled < buf.len() {
        let asked = buf.len() - filled;
        match rustix::io::pread(fd, &mut buf[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) if n < asked && n < SHORT_READ_ENDS_BELOW => return Some(&buf[..filled + n]),
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    Some(&buf[..filled])
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

    /// The contents of a file of small records (see [`read_up_to`]), usually in one read.
    pub fn read_small(&mut self) -> Option<&[u8]> {
        let fd = self.fd.as_ref()?;
        read_up_to(fd, &mut self.buf, usize::MAX, true)
    }

    /// The first `limit` bytes of a file of small records (all of it when shorter).
    pub fn read_prefix(&mut self, limit: usize) -> Option<&[u8]> {
        let fd = self.fd.as_ref()?;
        read_up_to(fd, &mut self.buf, limit, true)
    }
}

/// A decimal number in /proc text, surrounding whitespace allowed.
pub fn parse_u64(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// Reads a file of process `pid`'s own `/proc/PID` directory once into `buf` (open, one
/// `pread`, close): the zombie's files read after every run. No `fstat`, unlike [`open`]: the
/// open is non-blocking, a FIFO cannot be read with `pread` ([pread(2)] `ESPIPE`), and the
/// read never goes beyond `buf`, so whatever were mounted there could neither block the open
/// nor grow a buffer; the path is written on the stack. Two system calls and an allocation
/// fewer per run than [`read_small_once`] of a formatted path.
///
/// [pread(2)]: https://man7.org/linux/man-pages/man2/pread.2.html
pub fn read_pid_file<'b>(pid: i32, name: &str, buf: &'b mut [u8]) -> Option<&'b [u8]> {
    use std::io::Write;
    let mut path = [0u8; 64];
    let mut cursor = std::io::Cursor::new(&mut path[..]);
    write!(cursor, "/proc/{pid}/{name}").ok()?;
    let len = usize::try_from(cursor.position()).ok()?;
    let path = std::str::from_utf8(&path[..len]).ok()?;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty()).ok()?;
    pread_small(&fd, buf)
}

/// Reads a file of small records once (see [`read_up_to`]) into `buf`: open, one read, close.
pub fn read_small_once<'b>(path: &str, buf: &'b mut Vec<u8>) -> Option<&'b [u8]> {
    let fd = open(path)?;
    read_up_to(&fd, buf, usize::MAX, true)
}

/// The text of a /proc or /sys file opened as [`open`] does, at most `limit` bytes of it
/// (`None` when it cannot be opened, is no regular file, or is not UTF-8).
pub fn read_text(path: &str, limit: usize) -> Option<String> {
    let fd = open(path)?;
    let mut buf = Vec::new();
    let bytes = read_up_to(&fd, &mut buf, limit, false)?;
    String::from_utf8(bytes.to_vec()).ok()
}

/// Opens a /proc, /sys or cgroup file for writing without blocking, and keeps it only if it is
/// a regular file (`EINVAL` for anything else: a FIFO with a reader would take the write).
///
/// # Errors
/// The kernel's error from [open(2)] or [fstat(2)], `ENXIO` for a FIFO without a reader.
///
/// [open(2)]: https://man7.org/linux/man-pages/man2/open.2.html
/// [fstat(2)]: https://man7.org/linux/man-pages/man2/fstat.2.html
pub fn open_for_writing<P: rustix::path::Arg>(path: P) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::WRONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    let stat = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(rustix::io::Errno::INVAL);
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_neither_opened_blocking_nor_read_nor_written() {
        let dir = std::env::temp_dir().join(format!("ct-procfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let _ = std::fs::remove_file(&fifo);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let path = fifo.to_str().unwrap();
        // Each would block for ever if it waited for the FIFO's other end.
        assert!(open(path).is_none());
        assert!(read_text(path, 100).is_none());
        assert!(read_small_once(path, &mut Vec::new()).is_none());
        assert_eq!(open_for_writing(path).err(), Some(rustix::io::Errno::NXIO));
        assert!(ProcFile::open(path).read().is_none());
        assert!(read_text("/proc/self/stat", 4096).is_some_and(|t| t.contains(')')));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_pid_file_is_read_into_a_bounded_buffer() {
        let me = std::process::id() as i32;
        let mut buf = [0u8; 4096];
        let stat = read_pid_file(me, "stat", &mut buf).unwrap();
        assert!(stat.starts_with(format!("{me} (").as_bytes()), "{stat:?}");
        assert!(stat.ends_with(b"\n"));
        // A file longer than the buffer fills it and no more.
        let mut small = [0u8; 16];
        assert_eq!(read_pid_file(me, "stat", &mut small).unwrap().len(), 16);
        assert!(read_pid_file(me, "no-such-file", &mut buf).is_none());
        // A name too long for the path's stack buffer is refused, not cut short.
        assert!(read_pid_file(me, &"s".repeat(64), &mut buf).is_none());
    }

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
        let smaps = ProcFile::open("/proc/self/smaps").read().unwrap().to_vec();
        assert!(
            smaps.len() > 8192 && smaps.ends_with(b"\n"),
            "{} bytes",
            smaps.len()
        );
        assert!(ProcFile::open("/proc/does-not-exist").read().is_none());
        // A prefix is the start of the whole, and a short file is read whole either way.
        let mut vmstat = ProcFile::open("/proc/vmstat");
        let whole = vmstat.read().unwrap().to_vec();
        let prefix = vmstat.read_prefix(100).unwrap().to_vec();
        assert_eq!(prefix.len(), 100);
        assert_eq!(&prefix[..20], &whole[..20]);
        let mut statm = ProcFile::open("/proc/self/statm");
        let text = statm.read_small().unwrap();
        assert!(text.ends_with(b"\n") && text.len() < 200, "{text:?}");
        // A sysfs attribute in one read, whole, into a fixed buffer; one too small is filled.
        let fd = open("/sys/devices/system/cpu/online").unwrap();
        let mut buf = [0u8; 64];
        let online = pread_small(&fd, &mut buf).unwrap().to_vec();
        assert!(online.ends_with(b"\n") && online.len() > 1, "{online:?}");
        let mut tiny = [0u8; 1];
        assert_eq!(pread_small(&fd, &mut tiny).unwrap(), &online[..1]);
        // Small-record reads see the whole of /proc/vmstat, as the read to the end does.
        let small = vmstat.read_small().unwrap().to_vec();
        let lines = |t: &[u8]| t.split(|&b| b == b'\n').count();
        assert_eq!(lines(&small), lines(&whole));
    }
}
