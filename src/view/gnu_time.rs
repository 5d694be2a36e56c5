//! GNU time 1.9's report to the character (default, `-p`, `-v`, every `%` conversion and `\`
//! escape) rendered from plain facts about one run. Pure: no I/O, no clock, no exit codes.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

/// GNU time's default format (also what `TIME` replaces).
pub const DEFAULT_FORMAT: &[u8] = b"%Uuser %Ssystem %Eelapsed %PCPU \
(%Xavgtext+%Davgdata %Mmaxresident)k\n\
%Iinputs+%Ooutputs (%Fmajor+%Rminor)pagefaults %Wswaps";

/// `-p`: POSIX 1003.2's three lines.
pub const POSIX_FORMAT: &[u8] = b"real %e\nuser %U\nsys %S";

/// `-v`: GNU time's 23 lines, one per field, each opening with a tab.
pub const VERBOSE_FORMAT: &[u8] = b"\tCommand being timed: \"%C\"\n\
\tUser time (seconds): %U\n\
\tSystem time (seconds): %S\n\
\tPercent of CPU this job got: %P\n\
\tElapsed (wall clock) time (h:mm:ss or m:ss): %E\n\
\tAverage shared text size (kbytes): %X\n\
\tAverage unshared data size (kbytes): %D\n\
\tAverage stack size (kbytes): %p\n\
\tAverage total size (kbytes): %K\n\
\tMaximum resident set size (kbytes): %M\n\
\tAverage resident set size (kbytes): %t\n\
\tMajor (requiring I/O) page faults: %F\n\
\tMinor (reclaiming a frame) page faults: %R\n\
\tVoluntary context switches: %w\n\
\tInvoluntary context switches: %c\n\
\tSwaps: %W\n\
\tFile system inputs: %I\n\
\tFile system outputs: %O\n\
\tSocket messages sent: %s\n\
\tSocket messages received: %r\n\
\tSignals delivered: %k\n\
\tPage size (bytes): %Z\n\
\tExit status: %x";

/// Which report to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout<'a> {
    /// A format string (`-f`, `TIME`, or [`DEFAULT_FORMAT`]).
    Format(&'a [u8]),
    /// `-p`: [`POSIX_FORMAT`], and never a line about the command's exit.
    Posix,
    /// `-v`: [`VERBOSE_FORMAT`].
    Verbose,
}

impl Layout<'_> {
    /// The format string this layout prints.
    pub fn format(&self) -> &[u8] {
        match self {
            Layout::Format(f) => f,
            Layout::Posix => POSIX_FORMAT,
            Layout::Verbose => VERBOSE_FORMAT,
        }
    }
}

/// How the command ended, as GNU time tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code (127 or 126 as well when it could not be run at all).
    Exited(u8),
    /// It was killed by this signal number.
    Signaled(i32),
    /// It was seen stopped by this signal number (a tracing stop: it called `PTRACE_TRACEME`).
    Stopped(i32),
}

/// The `wait4(2)` figures GNU time prints (the ones Linux fills in).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// `ru_utime`, microseconds.
    pub user_us: u64,
    /// `ru_stime`, microseconds.
    pub sys_us: u64,
    /// `ru_maxrss`, KiB.
    pub max_rss_kib: u64,
    /// `ru_majflt`.
    pub major_faults: u64,
    /// `ru_minflt`.
    pub minor_faults: u64,
    /// `ru_inblock`, 512-byte blocks.
    pub block_in: u64,
    /// `ru_oublock`, 512-byte blocks.
    pub block_out: u64,
    /// `ru_nvcsw`.
    pub voluntary_switches: u64,
    /// `ru_nivcsw`.
    pub involuntary_switches: u64,
}

/// Everything one report can show.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// The command as given (`%C` joins it with spaces, unquoted, as GNU time does).
    pub argv: &'a [OsString],
    /// Wall time of the run; `None` when nothing ran (printed as 0, the time nothing took).
    pub wall_ns: Option<u64>,
    /// The run's usage; `None` when nothing ran (every count printed as 0).
    pub usage: Option<Usage>,
    /// How it ended.
    pub ending: Ending,
    /// `%Z`.
    pub page_size_bytes: u64,
}

/// The whole report: the line about an abnormal end (unless `quiet` or [`Layout::Posix`]),
/// then the layout, then a newline — except after a format that ends in a lone `%`, where GNU
/// time 1.9 stops without one.
///
/// Only the values may differ from GNU time's: they are measured where GNU time's are off
/// (see docs/time.md), and truncated at the printed precision as GNU time truncates them. One deliberate difference in the words: a
/// trailing `\` prints `?\` as GNU time 1.10 does (1.9 reads past the end of the string).
pub fn render(layout: Layout<'_>, quiet: bool, facts: &Facts<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    if !quiet && layout != Layout::Posix {
        match facts.ending {
            Ending::Signaled(signal) => {
                out.extend_from_slice(format!("Command terminated by signal {signal}\n").as_bytes())
            }
            Ending::Stopped(signal) => {
                out.extend_from_slice(format!("Command stopped by signal {signal}\n").as_bytes())
            }
            Ending::Exited(0) => {}
            Ending::Exited(code) => out.extend_from_slice(
                format!("Command exited with non-zero status {code}\n").as_bytes(),
            ),
        }
    }
    if expand(layout.format(), facts, &mut out) == End::Complete {
        out.push(b'\n');
    }
    out
}

/// Whether the format ran to its end or stopped at a lone trailing `%`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Complete,
    LoneTrailingPercent,
}

/// Copies `format` into `out` with its conversions and escapes replaced. An unknown `%c` or
/// `\c` is written as `?%c`'s tail (`?c`, `?\c`), as GNU time writes it.
fn expand(format: &[u8], facts: &Facts<'_>, out: &mut Vec<u8>) -> End {
    let mut bytes = format.iter().copied();
    while let Some(b) = bytes.next() {
        match b {
            b'%' => match bytes.next() {
                Some(conversion) => convert(conversion, facts, out),
                None => {
                    out.push(b'?');
                    return End::LoneTrailingPercent;
                }
            },
            b'\\' => match bytes.next() {
                Some(b'n') => out.push(b'\n'),
                Some(b't') => out.push(b'\t'),
                Some(b'\\') => out.push(b'\\'),
                Some(other) => out.extend_from_slice(&[b'?', b'\\', other]),
                None => out.extend_from_slice(b"?\\"),
            },
            other => out.push(other),
        }
    }
    End::Complete
}

/// Writes one `%` conversion.
fn convert(conversion: u8, facts: &Facts<'_>, out: &mut Vec<u8>) {
    let usage = facts.usage.unwrap_or_default();
    let wall_ns = facts.wall_ns.unwrap_or(0);
    let count = |out: &mut Vec<u8>, n: u64| out.extend_from_slice(n.to_string().as_bytes());
    match conversion {
        b'%' => out.push(b'%'),
        b'C' => {
            for (i, arg) in facts.argv.iter().enumerate() {
                if i > 0 {
                    out.push(b' ');
                }
                out.extend_from_slice(arg.as_bytes());
            }
        }
        b'e' => out.extend_from_slice(seconds(centiseconds(wall_ns)).as_bytes()),
        b'E' => out.extend_from_slice(clock(wall_ns).as_bytes()),
        b'U' => out.extend_from_slice(seconds(centiseconds(us_to_ns(usage.user_us))).as_bytes()),
        b'S' => out.extend_from_slice(seconds(centiseconds(us_to_ns(usage.sys_us))).as_bytes()),
        b'P' => out.extend_from_slice(percent(usage.user_us + usage.sys_us, wall_ns).as_bytes()),
        b'M' => count(out, usage.max_rss_kib),
        b'F' => count(out, usage.major_faults),
        b'R' => count(out, usage.minor_faults),
        b'I' => count(out, usage.block_in),
        b'O' => count(out, usage.block_out),
        b'w' => count(out, usage.voluntary_switches),
        b'c' => count(out, usage.involuntary_switches),
        b'Z' => count(out, facts.page_size_bytes),
        b'x' => count(out, u64::from(exit_status(facts.ending))),
        // Linux never fills these rusage fields (ru_ixrss, ru_idrss, ru_isrss, ru_nswap,
        // ru_msgsnd, ru_msgrcv, ru_nsignals): GNU time prints 0 for them, and so do we.
        b'X' | b'D' | b'p' | b'K' | b't' | b'W' | b's' | b'r' | b'k' => out.push(b'0'),
        other => out.extend_from_slice(&[b'?', other]),
    }
}

/// `%x`: `WEXITSTATUS` of the status word, which is 0 for a command killed by a signal and
/// the signal for a stopped one (its status word holds the signal where an exit code goes).
fn exit_status(ending: Ending) -> u8 {
    match ending {
        Ending::Exited(code) => code,
        Ending::Signaled(_) => 0,
        Ending::Stopped(signal) => signal as u8,
    }
}

fn us_to_ns(us: u64) -> u64 {
    us.saturating_mul(1000)
}

/// Nanoseconds in whole hundredths of a second, truncated as GNU time truncates
/// (`tv_usec / 10000`): a 0.549 s time prints `0.54`, as in every figure written with it.
fn centiseconds(ns: u64) -> u64 {
    ns / 10_000_000
}

/// `12.34`: seconds with two decimals.
fn seconds(centis: u64) -> String {
    format!("{}.{:02}", centis / 100, centis % 100)
}

/// `%E`: `m:ss.cc` below an hour, `h:mm:ss` from one hour on.
fn clock(wall_ns: u64) -> String {
    let centis = centiseconds(wall_ns);
    if centis >= 3600 * 100 {
        let s = wall_ns / 1_000_000_000;
        format!("{}:{:02}:{:02}", s / 3600, (s % 3600) / 60, s % 60)
    } else {
        let s = centis / 100;
        format!("{}:{:02}.{:02}", s / 60, s % 60, centis % 100)
    }
}

/// `%P`: CPU time over wall time, as a whole percentage; `?%` when no time elapsed.
fn percent(cpu_us: u64, wall_ns: u64) -> String {
    if wall_ns == 0 {
        return "?%".to_string();
    }
    let cpu_ns = u128::from(cpu_us) * 1000;
    let wall = u128::from(wall_ns);
    format!("{}%", (cpu_ns * 100 + wall / 2) / wall)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    const USAGE: Usage = Usage {
        user_us: 1_234_567,
        sys_us: 89_999,
        max_rss_kib: 52_428,
        major_faults: 3,
        minor_faults: 1_234,
        block_in: 16,
        block_out: 8,
        voluntary_switches: 7,
        involuntary_switches: 2,
    };

    fn facts<'a>(argv: &'a [OsString], ending: Ending) -> Facts<'a> {
        Facts {
            argv,
            wall_ns: Some(2_345_678_901),
            usage: Some(USAGE),
            ending,
            page_size_bytes: 4096,
        }
    }

    fn text(layout: Layout<'_>, quiet: bool, facts: &Facts<'_>) -> String {
        String::from_utf8(render(layout, quiet, facts)).unwrap()
    }

    fn fmt(format: &str, facts: &Facts<'_>) -> String {
        text(Layout::Format(format.as_bytes()), false, facts)
    }

    #[test]
    fn every_conversion() {
        let a = argv(&["sh", "-c", "echo  \"a b\""]);
        let f = facts(&a, Ending::Exited(0));
        assert_eq!(fmt("%e|%E|%U|%S|%P", &f), "2.34|0:02.34|1.23|0.08|56%\n");
        assert_eq!(
            fmt("%M %F %R %I %O %w %c %Z %x", &f),
            "52428 3 1234 16 8 7 2 4096 0\n"
        );
        assert_eq!(fmt("%X %D %p %K %t %W %s %r %k", &f), "0 0 0 0 0 0 0 0 0\n");
        assert_eq!(fmt("%C", &f), "sh -c echo  \"a b\"\n");
        assert_eq!(fmt("100%% %%x", &f), "100% %x\n");
    }

    #[test]
    fn escapes_and_unknowns_as_gnu_time_writes_them() {
        let a = argv(&["true"]);
        let f = facts(&a, Ending::Exited(0));
        assert_eq!(fmt("a\\tb\\nc\\\\d", &f), "a\tb\nc\\d\n");
        assert_eq!(fmt("a\\qb", &f), "a?\\qb\n");
        assert_eq!(fmt("a%Qb%", &f), "a?Qb?");
        assert_eq!(fmt("abc\\", &f), "abc?\\\n");
        assert_eq!(fmt("", &f), "\n");
        // A multi-byte character after `%` is kept whole after the `?`.
        assert_eq!(fmt("%é", &f), "?é\n");
    }

    #[test]
    fn default_layout() {
        let a = argv(&["true"]);
        let f = facts(&a, Ending::Exited(0));
        assert_eq!(
            text(Layout::Format(DEFAULT_FORMAT), false, &f),
            "1.23user 0.08system 0:02.34elapsed 56%CPU (0avgtext+0avgdata 52428maxresident)k\n\
             16inputs+8outputs (3major+1234minor)pagefaults 0swaps\n"
        );
    }

    #[test]
    fn posix_layout_never_says_how_the_command_ended() {
        let a = argv(&["false"]);
        for ending in [Ending::Exited(1), Ending::Signaled(9), Ending::Exited(0)] {
            let f = facts(&a, ending);
            assert_eq!(
                text(Layout::Posix, false, &f),
                "real 2.34\nuser 1.23\nsys 0.08\n"
            );
        }
    }

    #[test]
    fn verbose_layout_has_gnu_times_23_lines() {
        let a = argv(&["sleep", "1"]);
        let out = text(Layout::Verbose, false, &facts(&a, Ending::Exited(0)));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 23);
        assert!(lines.iter().all(|l| l.starts_with('\t')));
        assert_eq!(lines[0], "\tCommand being timed: \"sleep 1\"");
        assert_eq!(
            lines[4],
            "\tElapsed (wall clock) time (h:mm:ss or m:ss): 0:02.34"
        );
        assert_eq!(lines[9], "\tMaximum resident set size (kbytes): 52428");
        assert_eq!(lines[21], "\tPage size (bytes): 4096");
        assert_eq!(lines[22], "\tExit status: 0");
        assert!(out.ends_with("Exit status: 0\n"));
    }

    #[test]
    fn the_line_about_an_abnormal_end() {
        let a = argv(&["x"]);
        let exited = facts(&a, Ending::Exited(3));
        assert_eq!(
            fmt("%x", &exited),
            "Command exited with non-zero status 3\n3\n"
        );
        let signaled = facts(&a, Ending::Signaled(15));
        // %x is WEXITSTATUS, 0 for a signalled command, as GNU time prints it.
        assert_eq!(fmt("%x", &signaled), "Command terminated by signal 15\n0\n");
        let verbose = text(Layout::Verbose, false, &signaled);
        assert!(verbose.starts_with("Command terminated by signal 15\n\tCommand being timed"));
        assert_eq!(text(Layout::Format(b"%x"), true, &exited), "3\n");
        assert_eq!(text(Layout::Format(b"%x"), true, &signaled), "0\n");
    }

    #[test]
    fn nothing_ran_prints_zeros_and_a_question_mark_for_the_cpu_share() {
        let a = argv(&["nosuch"]);
        let f = Facts {
            argv: &a,
            wall_ns: None,
            usage: None,
            ending: Ending::Exited(127),
            page_size_bytes: 4096,
        };
        assert_eq!(
            text(Layout::Format(DEFAULT_FORMAT), false, &f),
            "Command exited with non-zero status 127\n\
             0.00user 0.00system 0:00.00elapsed ?%CPU (0avgtext+0avgdata 0maxresident)k\n\
             0inputs+0outputs (0major+0minor)pagefaults 0swaps\n"
        );
    }

    #[test]
    fn times_are_truncated_at_the_printed_precision_as_gnu_time_does() {
        assert_eq!(seconds(centiseconds(0)), "0.00");
        assert_eq!(seconds(centiseconds(9_999_999)), "0.00");
        assert_eq!(seconds(centiseconds(10_000_000)), "0.01");
        assert_eq!(seconds(centiseconds(549_000_000)), "0.54");
        assert_eq!(seconds(centiseconds(1_999_000_000)), "1.99");
        assert_eq!(seconds(centiseconds(123_456_789_000)), "123.45");
        assert_eq!(clock(59_996_000_000), "0:59.99");
        assert_eq!(clock(61_234_000_000), "1:01.23");
        assert_eq!(clock(3_599_999_000_000), "59:59.99");
        assert_eq!(clock(3_600_000_000_000), "1:00:00");
        assert_eq!(clock(3_725_900_000_000), "1:02:05");
        assert_eq!(clock(90_062_600_000_000), "25:01:02");
        assert_eq!(clock(u64::MAX), "5124095:34:33");
    }

    #[test]
    fn cpu_share() {
        assert_eq!(percent(0, 0), "?%");
        assert_eq!(percent(5, 0), "?%");
        assert_eq!(percent(0, 1), "0%");
        assert_eq!(percent(500, 1_000_000), "50%");
        assert_eq!(percent(1_995, 1_000_000), "200%");
        assert_eq!(
            percent(u64::MAX, 1),
            format!("{}%", u128::from(u64::MAX) * 100_000)
        );
    }

    #[test]
    fn command_bytes_are_copied_unchanged() {
        use std::os::unix::ffi::OsStringExt;
        let a = vec![
            OsString::from("printf"),
            OsString::from_vec(vec![0xff, b'\n']),
        ];
        let f = facts(&a, Ending::Exited(0));
        assert_eq!(
            render(Layout::Format(b"[%C]"), false, &f),
            b"[printf \xff\n]\n".to_vec()
        );
    }
}
