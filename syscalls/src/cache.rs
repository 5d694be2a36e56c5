//! Page-cache residency of a file: `cachestat(2)` (Linux ≥ 6.5), and `mincore(2)` over a
//! temporary read-only mapping for older kernels.
#![forbid(unsafe_code)]

pub use crate::abi::CacheStat;
use crate::abi::CacheStatRange;
use crate::errno::Errno;
use rustix::fd::BorrowedFd;

/// `cachestat(fd, &range, &stat, 0)` — page-cache residency of `len` bytes from `off` (`len = 0`
/// means to the end of the file), without mapping the file. Linux ≥ 6.5.
///
/// # Errors
/// `ENOSYS` on older kernels; `EPERM` when the caller could not write the file (the kernel then
/// refuses, rather than leak residency); `EBADF` for an `O_PATH` descriptor.
///
/// # References
/// [cachestat(2)](https://man7.org/linux/man-pages/man2/cachestat.2.html)
pub fn cachestat(fd: BorrowedFd<'_>, off: u64, len: u64) -> Result<CacheStat, Errno> {
    crate::raw::cachestat(fd, CacheStatRange { off, len })
}

/// Counts the resident pages of the first `len` bytes of a file with `mmap` + `mincore(2)`,
/// one window at a time, without ever reading the mapped memory.
///
/// Beware (Linux ≥ 5.2): for a file the caller could not open for writing, `mincore` reports
/// every page as resident. Callers must treat that case as unknown.
///
/// # References
/// [mincore(2)](https://man7.org/linux/man-pages/man2/mincore.2.html),
/// [mmap(2)](https://man7.org/linux/man-pages/man2/mmap.2.html)
#[doc(alias = "mincore")]
pub fn mincore_resident_pages(fd: BorrowedFd<'_>, len: u64) -> Result<u64, Errno> {
    mincore_resident_pages_in(fd, 0, len)
}

/// [`mincore_resident_pages`] over the `len` bytes from `off` (rounded down to a page): a
/// caller that probes a large file a piece at a time (its data only, between holes, and
/// checking for a request to stop between pieces) counts each piece with this.
///
/// # Errors
/// As `mmap` and `mincore` fail (`EINVAL` for an offset past what a mapping can address).
pub fn mincore_resident_pages_in(fd: BorrowedFd<'_>, off: u64, len: u64) -> Result<u64, Errno> {
    const WINDOW_PAGES: usize = 4096;
    let page = rustix::param::page_size() as u64;
    let mut vec = [0u8; WINDOW_PAGES];
    let mut resident = 0u64;
    let start = off - off % page;
    let end = off.saturating_add(len);
    let mut at = start;
    while at < end {
        let window = (end - at).min(WINDOW_PAGES as u64 * page) as usize;
        crate::raw::mincore_window(fd, at, window, &mut vec)?;
        let pages = (window as u64).div_ceil(page) as usize;
        resident += vec.iter().take(pages).filter(|&&b| b & 1 != 0).count() as u64;
        at += window as u64;
    }
    Ok(resident)
}
