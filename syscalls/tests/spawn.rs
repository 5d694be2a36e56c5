//! `Program::spawn` against real programs: redirection, exact argv and environment, every
//! kind of exec failure, no leaked zombie or descriptor, the descriptors, signal mask and
//! dispositions a child starts with, process groups, and waiting with a deadline.
//!
//! Several tests inspect process-wide state (the descriptor table, the set of children), and a
//! test that writes an executable could see ETXTBSY if another thread's child held a copy of
//! the writable descriptor. So every test in this binary takes `SERIAL` first.
#![forbid(unsafe_code)]

mod common;

use coldtrace_syscalls::signal::{self as raw, Disposition, MaskHow};
use coldtrace_syscalls::spawn::ChildStage;
use coldtrace_syscalls::wait::monotonic_ns;
use coldtrace_syscalls::{
    find_program, ChildStack, Errno, Program, SigSet, Signal, SpawnError, SpawnOptions, WaitEvent,
    WaitStatusKind,
};
use common::{cstring, path_cstring, program, run, run_in, sh, TempDir};
use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    // A failed test poisons the lock; the others should still run (and report their own result).
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// No child of this process is left, running or zombie.
fn assert_no_children() {
    let left = rustix::process::wait(rustix::process::WaitOptions::NOHANG);
    assert_eq!(
        left.map(|r| r.map(|(pid, s)| (pid, s.as_raw()))),
        Err(rustix::io::Errno::CHILD)
    );
}

fn fd_count() -> usize {
    // read_dir holds one descriptor of its own while listing; it is the same one each time.
    std::fs::read_dir("/proc/self/fd")
        .expect("list /proc/self/fd")
        .count()
}

fn spawn_error(program: &Program) -> SpawnError {
    let mut stack = ChildStack::new().unwrap();
    match program.spawn(&SpawnOptions::default(), &mut stack) {
        Ok(child) => {
            let status = child.reap();
            panic!(
                "{:?} was expected to fail, but ran: {status:?}",
                program.path()
            );
        }
        Err(e) => e,
    }
}

fn write_file(path: &Path, content: &[u8], mode: u32) {
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn true_path() -> CString {
    find_program(b"true", Some(b"/usr/bin:/bin")).expect("`true` on /usr/bin:/bin")
}

#[test]
fn stdio_redirected_to_files_and_stdin_from_dev_null() {
    let _serial = serial();
    let dir = TempDir::new("stdio");
    let out_path = dir.join("out");
    let err_path = dir.join("err");
    let stdin = File::open("/dev/null").unwrap();
    let stdout = File::create(&out_path).unwrap();
    let stderr = File::create(&err_path).unwrap();
    let options = SpawnOptions {
        stdin: Some(stdin.as_fd()),
        stdout: Some(stdout.as_fd()),
        stderr: Some(stderr.as_fd()),
        ..SpawnOptions::default()
    };
    // Writes to both streams, then shows where its stdin points and that reading it gives EOF.
    let script =
        "printf 'to stdout\\n'; printf 'to stderr\\n' >&2; readlink /proc/$$/fd/0; cat; echo end";
    let child = sh(script, &[])
        .spawn(&options, &mut ChildStack::new().unwrap())
        .unwrap();
    let (status, _) = child.reap().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(&out_path).unwrap(),
        "to stdout\n/dev/null\nend\n"
    );
    assert_eq!(std::fs::read_to_string(&err_path).unwrap(), "to stderr\n");
}

#[test]
fn stdio_descriptors_below_3_can_be_swapped() {
    let _serial = serial();
    // stdout to the parent's fd 2 and stderr to a file: fd 2 must be moved out of the way
    // before it is installed as 1, or installing the file as 2 would clobber it. We cannot
    // change this process's fd 2, so we check the child's view: fd 1 is the parent's fd 2.
    let dir = TempDir::new("swap");
    let err_path = dir.join("err");
    let stderr = File::create(&err_path).unwrap();
    let parent_fd2 = std::fs::read_link("/proc/self/fd/2").unwrap();
    let parent_stderr = std::io::stderr();
    let options = SpawnOptions {
        stdout: Some(parent_stderr.as_fd()),
        stderr: Some(stderr.as_fd()),
        ..SpawnOptions::default()
    };
    // (fd 3 copies the child's fd 1 before readlink's own stdout is pointed at the file.)
    let child = sh("exec 3>&1; readlink /proc/self/fd/3 >&2", &[])
        .spawn(&options, &mut ChildStack::new().unwrap())
        .unwrap();
    let (status, _) = child.reap().unwrap();
    assert_eq!(status.code(), Some(0));
    let seen = std::fs::read_to_string(&err_path).unwrap();
    assert_eq!(seen.trim_end(), parent_fd2.to_string_lossy());
}

#[test]
fn environment_is_passed_exactly() {
    let _serial = serial();
    let env = [
        "A=1",
        "B=two words",
        "EMPTY=",
        "UTF8=ünïcødé ✓",
        "EQ=a=b=c",
        "PATH=/nowhere",
    ];
    let out = run(&program("/usr/bin/env", &["env"], &env));
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    let expected: String = env.iter().map(|kv| format!("{kv}\n")).collect();
    assert_eq!(out.stdout_text(), expected);

    let out = run(&program("/usr/bin/env", &["env"], &[]));
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    assert_eq!(out.stdout, b"", "an empty environment stays empty");
}

#[test]
fn argv_is_passed_exactly() {
    let _serial = serial();
    let args = [
        "with spaces",
        "",
        "ünïcødé ✓",
        "  lead and trail  ",
        "new\nline",
        "tab\there",
        "*",
        "$HOME",
    ];
    // NUL-separated, so that every byte of every argument (newlines included) is compared.
    let out = run(&sh("printf '%s\\0' \"$0\" \"$@\"", &args));
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    let mut expected = b"sh\0".to_vec();
    for arg in args {
        expected.extend_from_slice(arg.as_bytes());
        expected.push(0);
    }
    assert_eq!(out.stdout, expected, "{}", out.describe());

    // argv[0] is passed as given, independently of the path.
    let out = run(&program(
        "/bin/sh",
        &["not-the-path", "-c", "printf '%s' \"$0\""],
        &[],
    ));
    assert_eq!(out.stdout, b"not-the-path");
}

#[test]
fn oversized_argv_is_a_clean_e2big() {
    let _serial = serial();
    let path = true_path();
    // One string longer than MAX_ARG_STRLEN (32 pages = 128 KiB).
    let long = "x".repeat(256 * 1024);
    let one_long = Program::new(path.clone(), vec![cstring("true"), cstring(&long)], vec![]);
    // Many strings of legal length, 16 MiB in all: beyond any ARG_MAX (at most 6 MiB when the
    // stack limit is unlimited, a quarter of an 8 MiB stack otherwise).
    let piece = cstring(&"y".repeat(16 * 1024));
    let many = Program::new(path, std::iter::repeat_n(piece, 1024).collect(), vec![]);
    for program in [one_long, many] {
        let fds = fd_count();
        let error = spawn_error(&program);
        assert_eq!(
            error,
            SpawnError {
                stage: ChildStage::Exec,
                errno: Errno::TOOBIG
            }
        );
        assert_no_children();
        assert_eq!(fd_count(), fds);
    }
}

#[test]
fn not_found_versus_not_executable() {
    let _serial = serial();
    let dir = TempDir::new("lookup");
    let d = dir.path().to_str().unwrap().to_string();
    write_file(&dir.join("noexec"), b"#!/bin/sh\nexit 0\n", 0o644);
    std::fs::create_dir(dir.join("adir")).unwrap();
    let path = d.as_bytes();

    // Through PATH lookup.
    assert_eq!(find_program(b"missing", Some(path)), Err(Errno::NOENT));
    assert_eq!(find_program(b"noexec", Some(path)), Err(Errno::ACCES));
    assert_eq!(find_program(b"adir", Some(path)), Err(Errno::ACCES));
    assert_eq!(find_program(b"", Some(path)), Err(Errno::NOENT));
    // A later directory with an executable wins over an earlier non-executable one; a
    // non-executable one wins over "not found" when nothing is executable.
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    write_file(&bin.join("noexec"), b"#!/bin/sh\nexit 0\n", 0o755);
    let two = format!("{d}:{}", bin.display());
    assert_eq!(
        find_program(b"noexec", Some(two.as_bytes())),
        Ok(path_cstring(&bin.join("noexec")))
    );
    let other = format!("/nonexistent-dir:{d}");
    assert_eq!(
        find_program(b"noexec", Some(other.as_bytes())),
        Err(Errno::ACCES)
    );

    // Through an absolute path: find_program and execve agree.
    for (name, errno) in [
        ("missing", Errno::NOENT),
        ("noexec", Errno::ACCES),
        ("adir", Errno::ACCES),
    ] {
        let abs = format!("{d}/{name}");
        assert_eq!(
            find_program(abs.as_bytes(), None),
            Err(errno),
            "find_program {abs}"
        );
        let error = spawn_error(&program(&abs, &[name], &[]));
        assert_eq!(
            error,
            SpawnError {
                stage: ChildStage::Exec,
                errno
            },
            "spawn {abs}"
        );
        assert_no_children();
    }
}

#[test]
fn garbage_with_the_x_bit_is_enoexec() {
    let _serial = serial();
    let dir = TempDir::new("garbage");
    let garbage = dir.join("garbage");
    write_file(&garbage, b"\x01\x02\x03 this is not a program\n", 0o755);
    let path = garbage.to_str().unwrap();
    // The lookup cannot know (see find_program's docs); execve does.
    assert_eq!(find_program(path.as_bytes(), None), Ok(cstring(path)));
    let error = spawn_error(&program(path, &["garbage"], &[]));
    assert_eq!(
        error,
        SpawnError {
            stage: ChildStage::Exec,
            errno: Errno::NOEXEC
        }
    );
    assert_no_children();
}

#[test]
fn a_script_without_a_shebang_runs_through_sh_in_the_same_child_when_asked() {
    let _serial = serial();
    let dir = TempDir::new("no-shebang");
    let script = dir.join("script");
    // No #! line: execve fails with ENOEXEC; execvp would run it with /bin/sh.
    write_file(
        &script,
        b"printf '%s\\0' \"$$\" \"$0\" \"$@\"\nexit 7\n",
        0o755,
    );
    let path = script.to_str().unwrap();
    let plain = program(path, &["script", "a b", ""], &[]);
    assert_eq!(
        spawn_error(&plain),
        SpawnError {
            stage: ChildStage::Exec,
            errno: Errno::NOEXEC
        },
        "without asking, no shell"
    );
    let asked = plain.scripts_through_shell();
    for legacy_clone in [false, true] {
        let out_path = dir.join("out");
        let out = File::create(&out_path).unwrap();
        let options = SpawnOptions {
            stdout: Some(out.as_fd()),
            legacy_clone,
            ..SpawnOptions::default()
        };
        let mut stack = ChildStack::new().unwrap();
        let child = asked.spawn(&options, &mut stack).expect("spawn the script");
        let pid = child.pid();
        let (status, _) = child.reap().unwrap();
        assert_eq!(status.code(), Some(7), "{status:?}");
        // The shell is the child itself ($$ is its PID: no second process), its $0 the
        // script's path (`sh -- PATH ARGS…`, execvp's `sh PATH ARGS…` with a `--`), and the arguments follow exactly.
        let expected = format!("{pid}\0{path}\0a b\0\0");
        let got = std::fs::read(&out_path).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            expected,
            "legacy_clone {legacy_clone}"
        );
    }
    // A file that is no script either: the shell reports it and exits non-zero (no ENOEXEC
    // from the spawn: the shell did start).
    let garbage = dir.join("garbage");
    write_file(&garbage, b"\x01\x02\x03(\n", 0o755);
    let out = run(&program(garbage.to_str().unwrap(), &["garbage"], &[]).scripts_through_shell());
    assert_ne!(out.status.code(), Some(0), "{}", out.describe());
    assert_no_children();
}

/// A bare path that starts with `-` reaches the shell as the script, never as an option: the
/// shell is run as `sh -- PATH ARGS…` (without the `--`, `sh -x a` traced a command file `a`).
#[test]
fn a_script_whose_bare_path_starts_with_a_dash_runs_through_sh_as_the_script() {
    let _serial = serial();
    let dir = TempDir::new("dash-script");
    write_file(
        &dir.join("-x"),
        b"printf '%s\\0' \"$0\" \"$@\"\nexit 7\n",
        0o755,
    );
    let out_path = dir.join("out");
    let out = File::create(&out_path).unwrap();
    let cwd = path_cstring(dir.path());
    let options = SpawnOptions {
        stdout: Some(out.as_fd()),
        cwd: Some(&cwd),
        ..SpawnOptions::default()
    };
    let script = program("-x", &["-x", "-c", "a"], &[]).scripts_through_shell();
    let mut stack = ChildStack::new().unwrap();
    let child = script.spawn(&options, &mut stack).expect("spawn -x");
    let (status, _) = child.reap().unwrap();
    let got = std::fs::read(&out_path).unwrap();
    assert_eq!(
        (status.code(), String::from_utf8_lossy(&got).into_owned()),
        (Some(7), "-x\0-c\0a\0".to_string()),
        "{status:?}"
    );
    assert_no_children();
}

#[test]
fn script_with_a_missing_interpreter_is_enoent() {
    let _serial = serial();
    let dir = TempDir::new("shebang");
    let script = dir.join("script");
    write_file(&script, b"#!/nonexistent/interpreter\necho never\n", 0o755);
    let path = script.to_str().unwrap();
    // The script itself exists and is executable: the ENOENT is about its interpreter.
    assert_eq!(find_program(path.as_bytes(), None), Ok(cstring(path)));
    let error = spawn_error(&program(path, &["script"], &[]));
    assert_eq!(
        error,
        SpawnError {
            stage: ChildStage::Exec,
            errno: Errno::NOENT
        }
    );
    assert_no_children();
}

#[test]
fn a_thousand_spawns_leave_no_zombie_and_no_descriptor() {
    let _serial = serial();
    assert_no_children();
    let ok = Program::new(true_path(), vec![cstring("true")], vec![]);
    let missing = program("/nonexistent/program", &["missing"], &[]);
    let mut stack = ChildStack::new().unwrap();
    let before = fd_count();
    for i in 0..1000 {
        match i % 3 {
            // A failed exec: the child is reaped inside spawn.
            0 => {
                let error = missing
                    .spawn(&SpawnOptions::default(), &mut stack)
                    .unwrap_err();
                assert_eq!(
                    error,
                    SpawnError {
                        stage: ChildStage::Exec,
                        errno: Errno::NOENT
                    }
                );
            }
            // Waiting opens a pidfd, which reaping must close.
            1 => {
                let child = ok.spawn(&SpawnOptions::default(), &mut stack).unwrap();
                assert_eq!(child.wait(None, None), Ok(WaitEvent::Exited));
                assert_eq!(child.has_exited(), Ok(true));
                assert_eq!(child.reap().unwrap().0.code(), Some(0));
            }
            _ => {
                let child = ok.spawn(&SpawnOptions::default(), &mut stack).unwrap();
                assert_eq!(child.reap().unwrap().0.code(), Some(0));
            }
        }
    }
    assert_eq!(fd_count(), before, "descriptors leaked over 1,000 spawns");
    assert_no_children();
}

/// `ls -l /proc/self/fd` as the child itself, parsed into (fd, link target).
fn child_fd_listing(keep: &[std::os::fd::BorrowedFd<'_>]) -> (i32, Vec<(i32, String)>) {
    let dir = TempDir::new("fdlist");
    let out_path = dir.join("out");
    let stdout = File::create(&out_path).unwrap();
    let stdin = File::open("/dev/null").unwrap();
    let options = SpawnOptions {
        stdin: Some(stdin.as_fd()),
        stdout: Some(stdout.as_fd()),
        keep_fds: keep,
        ..SpawnOptions::default()
    };
    let ls = program("/usr/bin/ls", &["ls", "-l", "/proc/self/fd"], &["LC_ALL=C"]);
    let child = ls.spawn(&options, &mut ChildStack::new().unwrap()).unwrap();
    let pid = child.pid();
    let (status, _) = child.reap().unwrap();
    let text = std::fs::read_to_string(&out_path).unwrap();
    assert_eq!(status.code(), Some(0), "ls: {status:?}: {text}");
    let mut fds: Vec<(i32, String)> = text
        .lines()
        .filter_map(|line| {
            let (left, target) = line.split_once(" -> ")?;
            let fd = left.split_whitespace().last()?.parse().ok()?;
            Some((fd, target.to_string()))
        })
        .collect();
    fds.sort();
    // The listing itself shows the descriptor it opened on /proc/self/fd: the lowest free
    // number, and the link names the child's own /proc/PID/fd.
    let own = format!("/proc/{pid}/fd");
    let out = out_path.to_str().unwrap().to_string();
    for (fd, target) in &fds {
        if *fd == 1 {
            assert_eq!(target, &out, "stdout is the file");
        }
        if *fd == 0 {
            assert_eq!(target, "/dev/null", "stdin is /dev/null");
        }
    }
    let listing: Vec<i32> = fds
        .iter()
        .filter(|(_, t)| *t == own)
        .map(|(fd, _)| *fd)
        .collect();
    assert_eq!(
        listing.len(),
        1,
        "exactly one descriptor is ls's own listing: {fds:?}"
    );
    (listing[0], fds)
}

#[test]
fn child_descriptors_are_0_1_2_and_keep_fds() {
    let _serial = serial();
    let dir = TempDir::new("fds");
    let leaky_path = dir.join("leaky");
    let kept_path = dir.join("kept");
    std::fs::write(&leaky_path, b"").unwrap();
    std::fs::write(&kept_path, b"").unwrap();
    // Opened without O_CLOEXEC: only the child's close_range keeps it out of the program.
    let leaky = rustix::fs::open(
        &leaky_path,
        rustix::fs::OFlags::RDONLY,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    let flags = rustix::io::fcntl_getfd(&leaky).unwrap();
    assert!(
        !flags.contains(rustix::io::FdFlags::CLOEXEC),
        "the test needs an inheritable fd"
    );
    // Opened by std, so with O_CLOEXEC: keep_fds must clear the flag for it to survive execve.
    let kept = File::open(&kept_path).unwrap();
    assert!(rustix::io::fcntl_getfd(&kept)
        .unwrap()
        .contains(rustix::io::FdFlags::CLOEXEC));
    let leaky_target = leaky_path.to_str().unwrap();
    let kept_target = kept_path.to_str().unwrap();

    // Without keep_fds: exactly 0, 1, 2 and ls's own descriptor, which must then be 3 (the
    // lowest free number), so nothing else, the leaky fd in particular, was inherited.
    let (own, fds) = child_fd_listing(&[]);
    assert_eq!(own, 3, "{fds:?}");
    let numbers: Vec<i32> = fds.iter().map(|(fd, _)| *fd).collect();
    assert_eq!(numbers, [0, 1, 2, 3], "{fds:?}");
    assert!(
        fds.iter()
            .all(|(_, t)| t != leaky_target && t != kept_target),
        "{fds:?}"
    );

    // With keep_fds = [kept]: the same plus `kept` under its own number.
    let kept_fd = kept.as_raw_fd();
    let (own, fds) = child_fd_listing(&[kept.as_fd()]);
    assert!(
        fds.contains(&(kept_fd, kept_target.to_string())),
        "kept fd {kept_fd} missing: {fds:?}"
    );
    let mut expected = vec![0, 1, 2, own, kept_fd];
    expected.sort();
    let numbers: Vec<i32> = fds.iter().map(|(fd, _)| *fd).collect();
    assert_eq!(numbers, expected, "{fds:?}");
    assert!(fds.iter().all(|(_, t)| t != leaky_target), "{fds:?}");
    // keep_fds changes the child only: our copy still has close-on-exec.
    assert!(rustix::io::fcntl_getfd(&kept)
        .unwrap()
        .contains(rustix::io::FdFlags::CLOEXEC));
    drop(leaky);
}

/// SigBlk, SigIgn and SigCgt from a child's `/proc/self/status` (read by `cat` itself).
fn child_signal_state(signal_mask: Option<SigSet>) -> (u64, u64, u64) {
    let mut stack = ChildStack::new().unwrap();
    let dir = TempDir::new("sigstate");
    let options = SpawnOptions {
        signal_mask,
        ..SpawnOptions::default()
    };
    let out = run_in(
        &dir,
        &program("/usr/bin/cat", &["cat", "/proc/self/status"], &[]),
        &options,
        &mut stack,
    )
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    parse_signal_state(&out.stdout_text())
}

fn parse_signal_state(status: &str) -> (u64, u64, u64) {
    let field = |name: &str| {
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {status}"));
        u64::from_str_radix(line.trim(), 16).unwrap()
    };
    (field("SigBlk:"), field("SigIgn:"), field("SigCgt:"))
}

#[test]
fn child_signal_mask_and_dispositions() {
    let _serial = serial();
    // The test process as Rust's runtime set it up: SIGPIPE ignored, SIGSEGV/SIGBUS handled.
    let pipe = raw::disposition(Signal::PIPE).unwrap();
    let segv = raw::disposition(Signal::SEGV).unwrap();
    if pipe != Disposition::Ignore {
        eprintln!(
            "note: SIGPIPE is {pipe:?} here, not ignored as Rust's runtime usually leaves it"
        );
    }
    if segv != Disposition::Handler {
        eprintln!("note: SIGSEGV has no handler here ({segv:?}); the reset is less tested");
    }
    let (_, parent_ign, parent_cgt) =
        parse_signal_state(&std::fs::read_to_string("/proc/self/status").unwrap());
    if pipe == Disposition::Ignore {
        assert!(SigSet::from_bits(parent_ign).contains(Signal::PIPE));
    }
    if segv == Disposition::Handler {
        assert!(SigSet::from_bits(parent_cgt).contains(Signal::SEGV));
    }
    let sigpipe_bit = SigSet::EMPTY.with(Signal::PIPE).bits();

    // No mask given: the child starts with this thread's mask, here with SIGUSR1 added.
    let usr1 = Signal::from_raw(10);
    let old = raw::sigprocmask(MaskHow::Block, Some(SigSet::EMPTY.with(usr1))).unwrap();
    let current = raw::sigprocmask(MaskHow::Block, None);
    let inherited = child_signal_state(None);
    raw::sigprocmask(MaskHow::SetMask, Some(old)).unwrap();
    let current = current.unwrap();
    assert!(current.contains(usr1));
    let (blk, ign, cgt) = inherited;
    assert_eq!(blk, current.bits(), "SigBlk is the parent thread's mask");
    assert_eq!(cgt, 0, "no handler survives into the child");
    assert_eq!(
        ign,
        parent_ign & !sigpipe_bit,
        "ignored stays ignored, except SIGPIPE"
    );
    assert_eq!(ign & sigpipe_bit, 0, "SIGPIPE is not ignored");
    // The parent's own mask was restored.
    assert_eq!(raw::sigprocmask(MaskHow::Block, None).unwrap(), old);

    // A mask given: exactly it (including a real-time signal), whatever the parent blocks.
    let mask = SigSet::EMPTY
        .with(Signal::TERM)
        .with(Signal::from_raw(12))
        .with(Signal::from_raw(40));
    let (blk, ign, cgt) = child_signal_state(Some(mask));
    assert_eq!(blk, mask.bits());
    assert_eq!(cgt, 0);
    assert_eq!(ign & sigpipe_bit, 0);
    // And an empty one really is empty, even while the parent blocks SIGUSR1.
    let old = raw::sigprocmask(MaskHow::Block, Some(SigSet::EMPTY.with(usr1))).unwrap();
    let empty = child_signal_state(Some(SigSet::EMPTY));
    raw::sigprocmask(MaskHow::SetMask, Some(old)).unwrap();
    assert_eq!(empty.0, 0);
}

/// The process group of `pid`, from field 5 of /proc/PID/stat.
fn pgid_of(pid: &str) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name (field 2) may contain spaces; the rest follows its closing parenthesis.
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(2).unwrap().parse().unwrap()
}

#[test]
fn new_process_group_makes_the_child_a_leader() {
    let _serial = serial();
    let mut stack = ChildStack::new().unwrap();
    let sleep = program("/usr/bin/sleep", &["sleep", "5"], &[]);
    let ours = pgid_of("self");

    let options = SpawnOptions {
        new_process_group: true,
        ..SpawnOptions::default()
    };
    let child = sleep.spawn(&options, &mut stack).unwrap();
    let pid = child.pid();
    let pgid = pgid_of(&pid.to_string());
    child.signal_group(Signal::KILL).unwrap();
    let (status, _) = child.reap().unwrap();
    assert_eq!(pgid, pid, "the child leads its own group");
    assert_ne!(pgid, ours);
    assert_eq!(
        status.kind(),
        WaitStatusKind::Signaled {
            signal: Signal::KILL,
            core_dumped: false
        }
    );

    let child = sleep.spawn(&SpawnOptions::default(), &mut stack).unwrap();
    let pgid = pgid_of(&child.pid().to_string());
    child.signal_group(Signal::KILL).unwrap();
    let (status, _) = child.reap().unwrap();
    assert_eq!(pgid, ours, "by default the child stays in our group");
    assert_eq!(status.signal(), Some(9));
}

#[test]
fn wait_with_a_deadline_times_out_then_kill_is_reported() {
    let _serial = serial();
    let mut stack = ChildStack::new().unwrap();
    let sleep = program("/usr/bin/sleep", &["sleep", "5"], &[]);
    let child = sleep.spawn(&SpawnOptions::default(), &mut stack).unwrap();
    let deadline = monotonic_ns() + 100_000_000;
    assert_eq!(child.wait(None, Some(deadline)), Ok(WaitEvent::TimedOut));
    assert_eq!(child.has_exited(), Ok(false));
    // A deadline already past times out at once, without blocking.
    assert_eq!(child.wait(None, Some(0)), Ok(WaitEvent::TimedOut));
    child.signal(Signal::KILL).unwrap();
    assert_eq!(child.wait(None, None), Ok(WaitEvent::Exited));
    assert_eq!(child.has_exited(), Ok(true));
    let (status, _) = child.reap().unwrap();
    assert_eq!(status.signal(), Some(9));
    assert_eq!(
        status.kind(),
        WaitStatusKind::Signaled {
            signal: Signal::KILL,
            core_dumped: false
        }
    );
    assert_eq!(status.to_string(), "killed by SIGKILL");
    assert_no_children();
}

#[test]
fn cwd_is_applied_and_a_bad_cwd_fails_cleanly() {
    let _serial = serial();
    let dir = TempDir::new("cwd");
    let cwd = dir.cpath();
    let mut stack = ChildStack::new().unwrap();
    let options = SpawnOptions {
        cwd: Some(&cwd),
        ..SpawnOptions::default()
    };
    let out = run_in(&dir, &sh("pwd -P", &[]), &options, &mut stack).unwrap();
    let real = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        out.stdout_text().trim_end(),
        real.to_str().unwrap(),
        "{}",
        out.describe()
    );

    let missing = path_cstring(&dir.join("missing"));
    let options = SpawnOptions {
        cwd: Some(&missing),
        ..SpawnOptions::default()
    };
    let error = sh("exit 0", &[]).spawn(&options, &mut stack).unwrap_err();
    assert_eq!(
        error,
        SpawnError {
            stage: ChildStage::ChangeDirectory,
            errno: Errno::NOENT
        }
    );
    assert_no_children();
}

/// Regression: `Child::signal` once went through rustix's `Signal::from_named_raw`, which only
/// accepts the named standard signals, so every real-time signal (32..=64) failed with EINVAL
/// before the kernel was asked. It now uses the raw `kill(2)` binding.
#[test]
fn real_time_signals_reach_the_child() {
    let _serial = serial();
    let mut stack = ChildStack::new().unwrap();
    let sleep = program("/usr/bin/sleep", &["sleep", "5"], &[]);
    let child = sleep.spawn(&SpawnOptions::default(), &mut stack).unwrap();
    // SIGRT+8 (40): the default action of every real-time signal is to terminate.
    let sent = child.signal(Signal::from_raw(40));
    if sent.is_err() {
        child.signal(Signal::KILL).unwrap();
    }
    let (status, _) = child.reap().unwrap();
    assert_eq!(sent, Ok(()), "kill(pid, 40) was refused");
    assert_eq!(status.signal(), Some(40));
    assert_eq!(status.to_string(), "killed by SIGRT+8");
}

/// The cgroup v2 hierarchy: `/sys/fs/cgroup/unified` on a hybrid system, else `/sys/fs/cgroup`.
fn cgroup2_root() -> Option<std::path::PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some("cgroup2"))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(std::path::PathBuf::from)
}

#[test]
fn a_child_is_born_in_the_cgroup_it_is_given() {
    let _serial = serial();
    if !rustix::process::geteuid().is_root() {
        eprintln!("not root: cannot make a cgroup; the cgroup option is not checked");
        return;
    }
    let root = cgroup2_root().expect("a cgroup2 mount (root may make a cgroup in it)");
    let name = format!("coldtrace-spawn-test-{}", std::process::id());
    let dir = root.join(&name);
    std::fs::create_dir(&dir).expect("make a cgroup");
    let fd = File::open(&dir).expect("open the cgroup directory");
    let options = SpawnOptions {
        cgroup: Some(fd.as_fd()),
        ..SpawnOptions::default()
    };
    let tmp = TempDir::new("cgroup");
    let mut stack = ChildStack::new().unwrap();
    let out = run_in(
        &tmp,
        &program("/bin/cat", &["cat", "/proc/self/cgroup"], &[]),
        &options,
        &mut stack,
    );
    let legacy = SpawnOptions {
        legacy_clone: true,
        ..options
    };
    let refused = program("/bin/true", &["true"], &[]).spawn(&legacy, &mut stack);
    drop(fd);
    let removed = std::fs::remove_dir(&dir);
    let out = out.expect("spawn cat into the cgroup");
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    let line = format!("0::/{name}");
    assert!(
        out.stdout_text().lines().any(|l| l == line),
        "not born in {}: {}",
        dir.display(),
        out.stdout_text()
    );
    assert_eq!(
        refused.err().map(|e| e.errno),
        Some(Errno::INVAL),
        "clone cannot place a child in a cgroup"
    );
    removed.expect("the cgroup is empty again once the child is reaped");
    assert_no_children();
}
