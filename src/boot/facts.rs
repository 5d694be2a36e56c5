//! What a boot's runner reads of the machine around its batch: the instant's uptime, page
//! cache, load and pressure ([proc_meminfo(5)], [proc_loadavg(5)], [proc_pressure(5)]), the
//! kernel's command line, and the stamps (inode, size, mtime) of the files the command runs
//! from. It reads; it decides nothing.
//!
//! [proc_meminfo(5)]: https://man7.org/linux/man-pages/man5/proc_meminfo.5.html
//! [proc_loadavg(5)]: https://man7.org/linux/man-pages/man5/proc_loadavg.5.html
//! [proc_pressure(5)]: https://man7.org/linux/man-pages/man5/proc_pressure.5.html
#![forbid(unsafe_code)]

use crate::measure::procfs::read_text;
use crate::record::boot::{FileStamp, Instant};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The kernel command-line word that disarms from the boot loader.
pub const DISARM_WORD: &str = "coldtrace.disarm";

/// `KEY:   N kB` of `/proc/meminfo` text, in KiB.
pub fn meminfo_kib(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
}

/// The 1-minute load and the runnable tasks of `/proc/loadavg` text
/// (`0.52 0.41 0.30 3/412 12345`).
pub fn parse_loadavg(text: &str) -> (Option<f64>, Option<u64>) {
    let mut words = text.split_whitespace();
    let load = words.next().and_then(|w| w.parse().ok());
    let runnable = words.nth(2).and_then(|w| w.split('/').next()?.parse().ok());
    (load, runnable)
}

fn psi_some_us(path: &str) -> Option<u64> {
    let text = read_text(path, 4096)?;
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The machine now.
pub fn instant() -> Instant {
    let meminfo = read_text("/proc/meminfo", 1 << 16).unwrap_or_default();
    let (load_avg_1m, runnable_tasks) =
        parse_loadavg(&read_text("/proc/loadavg", 4096).unwrap_or_default());
    Instant {
        uptime_s: crate::measure::context::read_uptime_s(),
        page_cache_kib: meminfo_kib(&meminfo, "Cached"),
        mem_available_kib: meminfo_kib(&meminfo, "MemAvailable"),
        load_avg_1m,
        runnable_tasks,
        psi_cpu_some_us: psi_some_us("/proc/pressure/cpu"),
        psi_io_some_us: psi_some_us("/proc/pressure/io"),
    }
}

/// `/proc/cmdline`, trimmed.
pub fn kernel_cmdline() -> Option<String> {
    read_text("/proc/cmdline", 1 << 16).map(|t| t.trim().to_string())
}

/// Whether the command line holds [`DISARM_WORD`] (alone or as `coldtrace.disarm=…`).
pub fn asks_to_disarm(cmdline: &str) -> bool {
    cmdline
        .split_whitespace()
        .any(|w| w == DISARM_WORD || w.starts_with(&format!("{DISARM_WORD}=")))
}

/// The stamp of `path` (symlinks resolved) in its `role`; unknown fields where it cannot be
/// read.
pub fn stamp(role: &'static str, path: &Path) -> FileStamp {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let meta = std::fs::metadata(&real).ok();
    FileStamp {
        role,
        path: real.to_string_lossy().into_owned(),
        inode: meta.as_ref().map(MetadataExt::ino),
        size: meta.as_ref().map(MetadataExt::size),
        mtime_ns: meta
            .as_ref()
            .map(|m| i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())),
    }
}

/// The paths of the libraries in the dynamic loader's `--list` output
/// (`libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)`, `/lib64/ld-linux-x86-64.so.2 (0x…)`);
/// the vDSO (no file) is left out.
pub fn parse_loader_list(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let path = match line.split_once(" => ") {
                Some((_, rest)) => rest.split(" (").next()?,
                None => line.split(" (").next()?,
            };
            path.starts_with('/').then(|| path.to_string())
        })
        .collect()
}

/// The `PT_INTERP` of an ELF file (its dynamic loader), `None` for a static program, a
/// script or anything unreadable. Reads the ELF header and program headers only.
pub fn elf_interpreter(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let opened = crate::untrusted::open(path, crate::untrusted::Want::Regular).ok()?;
    let mut file = std::fs::File::from(opened.fd);
    let mut header = [0u8; 64];
    file.read_exact(&mut header).ok()?;
    // 64-bit, little-endian only: the loader's --list is asked of x86_64 and aarch64 alike.
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
    let (phoff, phentsize, phnum) = (
        u64_at(&header, 32),
        usize::from(u16_at(&header, 54)),
        usize::from(u16_at(&header, 56)),
    );
    if phentsize < 56 || phnum > 256 {
        return None;
    }
    let mut table = vec![0u8; phentsize * phnum];
    file.seek(SeekFrom::Start(phoff)).ok()?;
    file.read_exact(&mut table).ok()?;
    let interp = table.chunks(phentsize).find(|ph| {
        u32::from_le_bytes([ph[0], ph[1], ph[2], ph[3]]) == 3 // PT_INTERP
    })?;
    let (offset, size) = (u64_at(interp, 8), u64_at(interp, 32));
    if size == 0 || size > 4096 {
        return None;
    }
    let mut name = vec![0u8; size as usize];
    file.seek(SeekFrom::Start(offset)).ok()?;
    file.read_exact(&mut name).ok()?;
    let name = name.split(|&b| b == 0).next()?;
    Some(String::from_utf8_lossy(name).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_and_loadavg_are_read_by_their_fields() {
        let meminfo = "MemTotal:       24000000 kB\nCached:          1234 kB\nSwapCached: 9 kB\n";
        assert_eq!(meminfo_kib(meminfo, "Cached"), Some(1234));
        assert_eq!(meminfo_kib(meminfo, "SwapCached"), Some(9));
        assert_eq!(meminfo_kib(meminfo, "Buffers"), None);
        assert_eq!(
            parse_loadavg("0.52 0.41 0.30 3/412 12345\n"),
            (Some(0.52), Some(3))
        );
        assert_eq!(parse_loadavg(""), (None, None));
    }

    #[test]
    fn the_disarm_word_is_a_whole_word() {
        assert!(asks_to_disarm("console=ttyS0 coldtrace.disarm quiet"));
        assert!(asks_to_disarm("coldtrace.disarm=1"));
        assert!(!asks_to_disarm("coldtrace.disarmed console=ttyS0"));
        assert!(!asks_to_disarm("init=/bin/sh"));
    }

    #[test]
    fn the_loaders_list_gives_the_library_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f1)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f2)\n\
                    \tlibgone.so => not found\n";
        assert_eq!(
            parse_loader_list(text),
            [
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
    }

    #[test]
    fn a_dynamic_program_names_its_loader_and_a_script_none() {
        let sh = elf_interpreter(Path::new("/bin/sh"));
        assert!(sh.as_deref().is_some_and(|p| p.contains("ld-")), "{sh:?}");
        assert_eq!(elf_interpreter(Path::new("/proc/self/status")), None);
    }
}
