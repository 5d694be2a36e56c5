//! Children started by the spawner program (`spawner/main.rs`): a few KiB of static code that
//! this process runs once from a memfd and asks, over a `SOCK_SEQPACKET` socket, to clone each
//! child with `CLONE_PARENT | CLONE_VM | CLONE_VFORK`. The child's parent is this process, so
//! [`Child`] works as for a child cloned here (pidfd, waiting, the zombie's `/proc`, `wait4`);
//! what the child inherits at `execve` — the old address space's high-water RSS, which the
//! kernel folds into its `ru_maxrss` — is the spawner's instead of this process's.
//!
//! The spawner's own 0, 1 and 2 are this process's at [`Spawner::start`]: a stream that
//! [`SpawnOptions`] leaves to inherit is inherited from there.
//!
//! A child is never started twice. The spawner may die (or be stopped, and then killed here)
//! while it waits for a child to `execve`; the child goes on, this process's own. The start
//! page and the exec pipe (`protocol.rs`) then say whether the `START` made a child and which:
//! [`Spawned::start_ns`] is `None` for it, and [`Spawner::failed_before_exec`] tells, once it
//! has exited, whether it reached `execve`. Only a `START` that made no child is
//! [`SpawnerFailure::Broken`], safe to start again in-process. Waiting for a reply watches the
//! caller's signals too ([`ReplyWatch`]): a spawner that never answers cannot hold this process.
#![forbid(unsafe_code)]

pub mod protocol;

use crate::errno::Errno;
use crate::owners::Spawning;
use crate::rusage::ResourceUsage;
use crate::signal::SigSet;
use crate::spawn::{ChildStack, ChildStage, Program, SpawnError, SpawnOptions};
use crate::status::WaitStatus;
use crate::wait::{SignalFd, WaitEvent};
use crate::{Child, Signal};
use alloc::ffi::CString;
use alloc::format;
use alloc::vec::Vec;
use core::mem::MaybeUninit;
use protocol::{Reply, Request};
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::io::{IoSlice, IoSliceMut};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// A running spawner: its process (a [`Child`] of this one), this end of its socket, the
/// programs it holds (slot `k` is `defined[k]`), the thread that started it, the read end of
/// the exec pipe, the start page, and the number of `START`s sent.
pub struct Spawner {
    process: Child,
    socket: OwnedFd,
    defined: Vec<Program>,
    /// The thread ID of the thread that started the spawner: the parent, to the kernel, of
    /// every child the spawner clones (`CLONE_PARENT`).
    starter: i32,
    exec_pipe: OwnedFd,
    page: OwnedFd,
    starts: u32,
}

/// A child the spawner started.
#[derive(Debug)]
pub struct Spawned {
    /// The child (this process's own, `CLONE_PARENT`).
    pub child: Child,
    /// `CLOCK_MONOTONIC` in ns right before the clone, as the spawner read it; `None` for a
    /// child the spawner made but never answered for (it ended in the clone's vfork wait): the
    /// child may have reached `execve`, and when it started is unknown.
    pub start_ns: Option<u64>,
}

/// What a wait for the spawner's reply watches besides its socket.
#[derive(Debug, Default)]
pub struct ReplyWatch<'a> {
    /// The caller's signals: SIGCHLD is taken and noted in `child_changed`; any other is a
    /// request to stop, kept in `requests`.
    pub signals: Option<&'a SignalFd>,
    /// A SIGCHLD was taken while waiting: a child changed state (it may be the one being
    /// started, stopped already — a tracer's stop at its `execve` — and no second SIGCHLD
    /// will come for that stop), so the caller looks at its child before waiting on.
    pub child_changed: bool,
    /// The requests to stop taken while waiting, in order. The second ends the wait at once:
    /// the spawner is killed, and a child it made is the caller's to end.
    pub requests: [Option<Signal>; 2],
}

/// How often a wait for a reply looks at whether the spawner is stopped (`T` in
/// `/proc/PID/stat`: it would never answer).
const LOOK_EVERY_MS: i32 = 200;
/// How long the spawner has to answer after a request to stop came, before it is killed (a
/// frozen spawner never would).
const GRACE_MS: u64 = 100;

/// Why a spawner could not be started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// `memfd_create` or writing the program into it failed.
    Memfd(Errno),
    /// The socket pair could not be made.
    Socket(Errno),
    /// Starting it failed: at `execve` with `EACCES` or `EPERM` where executing a memfd is
    /// forbidden (`vm.memfd_noexec = 2`, a seccomp filter, a security module), `ENOENT` without
    /// `/proc`.
    Spawn(SpawnError),
}

/// Why [`Spawner::spawn`] started no child, or started one it cannot vouch for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnerFailure {
    /// The program did not start (the spawner is fine): the failed step, as [`Program::spawn`]
    /// reports it. A child that failed before `execve` has been reaped.
    Program(SpawnError),
    /// The spawner cannot start this one as [`Program::spawn`] would: start it in-process. The
    /// options ask for what the spawner does not carry (descriptors kept under their numbers,
    /// a working directory, the legacy clone), the program is to run through `/bin/sh` where
    /// the kernel refuses it ([`Program::scripts_through_shell`]: the spawner has no shell
    /// fallback), or a parent-death signal is asked from a thread other than the one that
    /// started the spawner (its children are that thread's, and the signal would follow it).
    Unsupported,
    /// The spawner is gone and made no child for this request: start every later one
    /// in-process, and this one too unless [`ReplyWatch::requests`] holds a request to stop.
    /// `EPIPE`: it died; `EAGAIN`: it was found stopped and killed; `EINTR`: a request to stop
    /// came and it was killed; other: it answered out of protocol. A request that made a child
    /// is never this (see [`Spawned::start_ns`]).
    Broken(Errno),
}

impl Spawner {
    /// Starts the spawner program `executable` (its bytes) from a memfd, through this process's
    /// own spawn ([`Program::spawn`] on `stack`), with every signal blocked.
    ///
    /// [memfd_create(2)](https://man7.org/linux/man-pages/man2/memfd_create.2.html),
    /// [socketpair(2)](https://man7.org/linux/man-pages/man2/socketpair.2.html)
    pub fn start(executable: &[u8], stack: &mut ChildStack) -> Result<Spawner, StartError> {
        use rustix::fs::MemfdFlags;
        use rustix::net::{AddressFamily, SocketFlags, SocketType};
        let name = c"coldtrace-spawner";
        let memfd = match rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::EXEC) {
            // Before Linux 6.3 MFD_EXEC is unknown, and a memfd is executable anyway.
            Err(rustix::io::Errno::INVAL) => rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC),
            other => other,
        }
        .map_err(|e| StartError::Memfd(e.into()))?;
        write_all(memfd.as_fd(), executable).map_err(StartError::Memfd)?;
        let (ours, theirs) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| StartError::Socket(e.into()))?;
        let page = start_page().map_err(StartError::Memfd)?;
        let pipe_flags = rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK;
        let (exec_pipe, exec_write) =
            rustix::pipe::pipe_with(pipe_flags).map_err(|e| StartError::Socket(e.into()))?;
        let path = format!("/proc/self/fd/{}", memfd.as_raw_fd());
        let parent = rustix::process::getpid().as_raw_nonzero().get();
        let number = |n: i32| CString::new(format!("{n}")).unwrap_or_default();
        let program = Program::new(
            CString::new(path).map_err(|_| StartError::Memfd(Errno::INVAL))?,
            alloc::vec![
                c"coldtrace-spawner".into(),
                number(theirs.as_raw_fd()),
                number(parent),
                number(exec_write.as_raw_fd()),
                number(page.as_raw_fd()),
            ],
            Vec::new(),
        );
        let keep = [
            memfd.as_fd(),
            theirs.as_fd(),
            exec_write.as_fd(),
            page.as_fd(),
        ];
        let options = SpawnOptions {
            keep_fds: &keep,
            signal_mask: Some(SigSet::FULL),
            ..SpawnOptions::default()
        };
        let process = program.spawn(&options, stack).map_err(StartError::Spawn)?;
        Ok(Spawner {
            process,
            socket: ours,
            defined: Vec::new(),
            starter: rustix::thread::gettid().as_raw_nonzero().get(),
            exec_pipe,
            page,
            starts: 0,
        })
    }

    /// The spawner's process ID (a child of this process: leave it to [`Spawner::stop`]).
    pub fn pid(&self) -> i32 {
        self.process.pid()
    }

    /// Starts `program` as [`Program::spawn`] would, through the spawner, watching `watch`
    /// while it waits: the child, and the `CLOCK_MONOTONIC` time the spawner read right before
    /// the clone. `Unsupported` where the spawner cannot (see [`SpawnerFailure::Unsupported`]).
    pub fn spawn(
        &mut self,
        program: &Program,
        options: &SpawnOptions<'_>,
        watch: &mut ReplyWatch<'_>,
    ) -> Result<Spawned, SpawnerFailure> {
        let other_thread = || rustix::thread::gettid().as_raw_nonzero().get() != self.starter;
        if !options.keep_fds.is_empty()
            || options.cwd.is_some()
            || options.legacy_clone
            || program.through_shell()
            || (options.parent_death_signal.is_some() && other_thread())
        {
            return Err(SpawnerFailure::Unsupported);
        }
        let slot = match self.slot(program, watch) {
            Ok(slot) => slot,
            Err(SpawnerFailure::Broken(why)) => {
                self.end();
                return Err(SpawnerFailure::Broken(why));
            }
            Err(other) => return Err(other),
        };
        if watch.requests[0].is_some() {
            // Asked to stop while the program was being defined: nothing is started.
            return Err(SpawnerFailure::Broken(Errno::INTR));
        }
        let streams = [options.stdin, options.stdout, options.stderr];
        let mut fds: Vec<BorrowedFd<'_>> = streams.iter().flatten().copied().collect();
        let mut flags = 0;
        for (i, fd) in streams.iter().enumerate() {
            if fd.is_some() {
                flags |= protocol::START_STDIN << i;
            }
        }
        if let Some(cgroup) = options.cgroup {
            fds.push(cgroup);
            flags |= protocol::START_CGROUP;
        }
        if options.new_process_group {
            flags |= protocol::START_NEW_GROUP;
        }
        let mask = match options.signal_mask {
            Some(mask) => mask,
            None => crate::signal::sigprocmask(crate::abi::MaskHow::Block, None)
                .map_err(SpawnerFailure::Broken)?,
        };
        let request = Request {
            op: protocol::OP_START,
            slot,
            flags,
            len: options.parent_death_signal.map_or(0, |s| s.raw() as u32),
            mask: mask.bits(),
        };
        // From here until the child is registered, the orphan sweep leaves every child alone.
        let spawning = Spawning::start();
        self.starts = self.starts.wrapping_add(1);
        let reply = match self.send(&request.encode(), &fds) {
            Ok(()) => self.receive(watch),
            Err(e) => Err(e),
        };
        let spawned = match reply {
            Ok((reply, pidfd)) => self.adopt(&reply, pidfd, options.new_process_group),
            Err(SpawnerFailure::Broken(why)) => self.orphan(why, options.new_process_group),
            Err(other) => Err(other),
        };
        drop(spawning);
        spawned
    }

    /// After a `START` whose reply never came: the spawner killed (if it was not dead) and
    /// awaited, then the child the start page names for this `START`, if the clone made one.
    fn orphan(&mut self, why: Errno, new_group: bool) -> Result<Spawned, SpawnerFailure> {
        self.end();
        let mut bytes = [0u8; protocol::START_PAGE];
        let read = rustix::io::pread(&self.page, &mut bytes, 0);
        let word = |at: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&bytes[at..at + 4]);
            w
        };
        let (pid, start) = (i32::from_ne_bytes(word(0)), u32::from_ne_bytes(word(4)));
        if read != Ok(protocol::START_PAGE) || start != self.starts || pid <= 0 {
            return Err(SpawnerFailure::Broken(why));
        }
        Ok(Spawned {
            child: Child::adopt(pid, None, new_group),
            start_ns: None,
        })
    }

    /// Kills the spawner (SIGKILL ends it even stopped, or in a vfork wait) and waits until it
    /// has exited: then nothing writes the start page any more. It stays unreaped until
    /// [`Spawner::stop`].
    fn end(&self) {
        let _ = self.process.signal(Signal::KILL);
        if self.process.wait(None, None).is_ok() {
            return;
        }
        // Waiting itself failed (a seccomp filter on ppoll): look every millisecond, 10 s at
        // most (a killed process exits at once; its vfork wait is killable).
        for _ in 0..10_000 {
            if self.process.has_exited() != Ok(false) {
                return;
            }
            let pause = rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            };
            let _ = rustix::event::poll(&mut [], Some(&pause));
        }
    }

    /// For a child of [`Spawned::start_ns`] `None`, once it has exited: the step that failed
    /// before `execve`, as the child wrote it to the exec pipe; `None` when it wrote nothing,
    /// so it reached `execve` (or was killed just before).
    pub fn failed_before_exec(&self) -> Option<SpawnError> {
        let mut report = [0u8; 8];
        match rustix::io::read(&self.exec_pipe, &mut report) {
            Ok(8) => {
                let (mut stage, mut errno) = ([0u8; 4], [0u8; 4]);
                stage.copy_from_slice(&report[..4]);
                errno.copy_from_slice(&report[4..]);
                Some(SpawnError {
                    stage: ChildStage::from_raw(u32::from_ne_bytes(stage)),
                    errno: Errno::from_raw(i32::from_ne_bytes(errno)),
                })
            }
            _ => None,
        }
    }

    /// The child of a `START` reply and the pidfd that came with it, or why there is none (a
    /// child that failed before `execve` is reaped here: it is this process's child).
    fn adopt(
        &self,
        reply: &Reply,
        pidfd: Option<OwnedFd>,
        new_group: bool,
    ) -> Result<Spawned, SpawnerFailure> {
        if reply.value <= 0 {
            let errno = Errno::from_raw(reply.value.wrapping_neg().max(1));
            return Err(SpawnerFailure::Program(SpawnError {
                stage: ChildStage::Clone,
                errno,
            }));
        }
        let pidfd = pidfd.filter(|_| reply.flags & protocol::REPLY_PIDFD != 0);
        let child = Child::adopt(reply.value, pidfd, new_group);
        if reply.stage != 0 && reply.flags & protocol::REPLY_MEMORY_SHARED != 0 {
            let _ = child.reap();
            // The same report, written to the exec pipe too: read, so that the pipe holds
            // only the report of a child the spawner never answered for.
            let _ = self.failed_before_exec();
            return Err(SpawnerFailure::Program(SpawnError {
                stage: ChildStage::from_raw(reply.stage),
                errno: Errno::from_raw(reply.errno),
            }));
        }
        Ok(Spawned {
            child,
            start_ns: Some(reply.start_ns),
        })
    }

    /// The slot of `program`, defining it first when the spawner does not hold it.
    fn slot(
        &mut self,
        program: &Program,
        watch: &mut ReplyWatch<'_>,
    ) -> Result<u32, SpawnerFailure> {
        if let Some(k) = self.defined.iter().position(|p| p == program) {
            return Ok(k as u32);
        }
        let mut bytes = Vec::new();
        protocol::encode_program(
            program.path().to_bytes(),
            program.argv().iter().map(|a| a.to_bytes()),
            program.envp().iter().map(|e| e.to_bytes()),
            &mut bytes,
        );
        let mut reply = self.define(&bytes, watch)?;
        if reply.value == -Errno::NOSPC.raw() {
            let reset = Request {
                op: protocol::OP_RESET,
                ..Request::default()
            };
            self.send(&reset.encode(), &[])?;
            self.receive(watch)?;
            self.defined.clear();
            reply = self.define(&bytes, watch)?;
        }
        match reply.value {
            k if k >= 0 && k as usize == self.defined.len() => {
                self.defined.push(program.clone());
                Ok(k as u32)
            }
            // Too big for the spawner (E2BIG), or still no room: in-process.
            k if k < 0 => Err(SpawnerFailure::Unsupported),
            _ => Err(SpawnerFailure::Broken(Errno::IO)),
        }
    }

    /// Sends `bytes` as a `DEFINE` in chunks; the reply to the last one.
    fn define(
        &mut self,
        bytes: &[u8],
        watch: &mut ReplyWatch<'_>,
    ) -> Result<Reply, SpawnerFailure> {
        let chunks: Vec<&[u8]> = bytes.chunks(protocol::CHUNK).collect();
        let last = chunks.len() - 1;
        for (i, chunk) in chunks.iter().enumerate() {
            let mut flags = 0;
            if i == 0 {
                flags |= protocol::DEFINE_FIRST;
            }
            if i == last {
                flags |= protocol::DEFINE_LAST;
            }
            let request = Request {
                op: protocol::OP_DEFINE,
                flags,
                len: chunk.len() as u32,
                ..Request::default()
            };
            let mut message = Vec::with_capacity(protocol::HEADER + chunk.len());
            message.extend_from_slice(&request.encode());
            message.extend_from_slice(chunk);
            self.send(&message, &[])?;
            let (reply, _) = self.receive(watch)?;
            if i == last || reply.value < 0 {
                return Ok(reply);
            }
        }
        Err(SpawnerFailure::Broken(Errno::IO))
    }

    fn send(&self, message: &[u8], fds: &[BorrowedFd<'_>]) -> Result<(), SpawnerFailure> {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
            return Err(SpawnerFailure::Broken(Errno::INVAL));
        }
        let iov = [IoSlice::new(message)];
        loop {
            match rustix::net::sendmsg(&self.socket, &iov, &mut control, SendFlags::NOSIGNAL) {
                Ok(n) if n == message.len() => return Ok(()),
                Ok(_) => return Err(SpawnerFailure::Broken(Errno::IO)),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(SpawnerFailure::Broken(e.into())),
            }
        }
    }

    /// The next reply, and the descriptor that came with it (a `START`'s pidfd), awaited in
    /// `poll` with the caller's signals ([`ReplyWatch`]) and a look at the spawner every
    /// [`LOOK_EVERY_MS`]: `Broken` once the spawner is gone (`EPIPE`), found stopped
    /// (`EAGAIN`), or a request to stop came and it did not answer within [`GRACE_MS`] — at
    /// once for a second one (`EINTR`).
    fn receive(
        &self,
        watch: &mut ReplyWatch<'_>,
    ) -> Result<(Reply, Option<OwnedFd>), SpawnerFailure> {
        use rustix::event::{poll, PollFd, PollFlags};
        let mut give_up_at = None;
        loop {
            let now = crate::wait::monotonic_ns();
            let left_ms = give_up_at.map_or(LOOK_EVERY_MS, |at: u64| {
                (at.saturating_sub(now) / 1_000_000).min(LOOK_EVERY_MS as u64) as i32
            });
            let timeout = rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: i64::from(left_ms) * 1_000_000,
            };
            let signals = watch.signals.map_or(self.socket.as_fd(), |s| s.as_fd());
            let mut fds = [
                PollFd::new(&self.socket, PollFlags::IN),
                PollFd::from_borrowed_fd(signals, PollFlags::IN),
            ];
            let watched = if watch.signals.is_some() { 2 } else { 1 };
            match poll(&mut fds[..watched], Some(&timeout)) {
                Ok(0) if give_up_at.is_some_and(|at| crate::wait::monotonic_ns() >= at) => {
                    return Err(SpawnerFailure::Broken(Errno::INTR))
                }
                Ok(0) if self.stopped() => return Err(SpawnerFailure::Broken(Errno::AGAIN)),
                Ok(0) | Err(rustix::io::Errno::INTR) => continue,
                Ok(_) => {}
                Err(e) => return Err(SpawnerFailure::Broken(e.into())),
            }
            if !fds[0].revents().is_empty() {
                return self.receive_ready();
            }
            let Some(signals) = watch.signals else {
                continue;
            };
            while let Some(sig) = signals.take().map_err(SpawnerFailure::Broken)? {
                if sig == Signal::CHLD {
                    watch.child_changed = true;
                    continue;
                }
                if watch.requests[0].is_some() {
                    watch.requests[1] = Some(sig);
                    return Err(SpawnerFailure::Broken(Errno::INTR));
                }
                watch.requests[0] = Some(sig);
                give_up_at = Some(crate::wait::monotonic_ns().saturating_add(GRACE_MS * 1_000_000));
            }
        }
    }

    /// Whether the spawner is stopped (`T`): a stop by job control or another process's
    /// SIGSTOP, after which it would never answer.
    fn stopped(&self) -> bool {
        let path = format!("/proc/{}/stat", self.process.pid());
        let mut buf = [0u8; 512];
        let Ok(fd) = rustix::fs::open(
            path.as_str(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) else {
            return false;
        };
        let n = rustix::io::read(&fd, &mut buf).unwrap_or(0);
        let text = &buf[..n.min(buf.len())];
        // The state follows the last ')' (the name may hold any byte).
        let state = text
            .iter()
            .rposition(|&b| b == b')')
            .and_then(|at| text.get(at + 2));
        state == Some(&b'T')
    }

    /// The reply waiting on the socket (`poll` said so; `MSG_DONTWAIT` all the same).
    fn receive_ready(&self) -> Result<(Reply, Option<OwnedFd>), SpawnerFailure> {
        let mut bytes = [0u8; protocol::REPLY];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        loop {
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let mut iov = [IoSliceMut::new(&mut bytes)];
            let flags = RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT;
            let got = match rustix::net::recvmsg(&self.socket, &mut iov, &mut control, flags) {
                Ok(got) => got,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(SpawnerFailure::Broken(e.into())),
            };
            let mut pidfd = None;
            for message in control.drain() {
                if let RecvAncillaryMessage::ScmRights(mut fds) = message {
                    pidfd = pidfd.or(fds.next());
                }
            }
            return match got.bytes {
                protocol::REPLY => Ok((Reply::decode(&bytes), pidfd)),
                0 => Err(SpawnerFailure::Broken(Errno::PIPE)),
                _ => Err(SpawnerFailure::Broken(Errno::IO)),
            };
        }
    }

    /// Ends the spawner (end-of-file on its socket) and reaps it: its exit status and its own
    /// resource usage (it waits for no child, so this is its CPU time alone). A spawner that
    /// someone stopped is continued to read that end-of-file, and one that has not exited a
    /// second later (held by a debugger) is killed: the reap never waits on anything else.
    pub fn stop(self) -> Result<(WaitStatus, ResourceUsage), Errno> {
        drop(self.socket);
        let _ = self.process.signal(Signal::CONT);
        let deadline = crate::wait::monotonic_ns().saturating_add(1_000_000_000);
        if self.process.wait(None, Some(deadline)) != Ok(WaitEvent::Exited) {
            let _ = self.process.signal(Signal::KILL);
        }
        self.process.reap().map_err(|e| e.errno)
    }
}

/// The start page's memfd (`protocol.rs`): 8 zero bytes, never executable.
fn start_page() -> Result<OwnedFd, Errno> {
    use rustix::fs::MemfdFlags;
    let name = c"coldtrace-start-page";
    let page = match rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::NOEXEC_SEAL) {
        // Before Linux 6.3 MFD_NOEXEC_SEAL is unknown.
        Err(rustix::io::Errno::INVAL) => rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC),
        other => other,
    }?;
    rustix::fs::ftruncate(&page, protocol::START_PAGE as u64)?;
    Ok(page)
}

fn write_all(fd: BorrowedFd<'_>, mut bytes: &[u8]) -> Result<(), Errno> {
    while !bytes.is_empty() {
        match rustix::io::write(fd, bytes) {
            Ok(0) => return Err(Errno::IO),
            Ok(n) => bytes = &bytes[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
