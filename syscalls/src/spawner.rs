//! Children started by the spawner program (`spawner/main.rs`): a few KiB of static code that
//! this process runs once from a memfd and asks, over a `SOCK_SEQPACKET` socket, to clone each
//! child with `CLONE_PARENT | CLONE_VM | CLONE_VFORK`. The child's parent is this process, so
//! [`Child`] works as for a child cloned here (pidfd, waiting, the zombie's `/proc`, `wait4`);
//! what the child inherits at `execve` — the old address space's high-water RSS, which the
//! kernel folds into its `ru_maxrss` — is the spawner's instead of this process's.
//!
//! The spawner's own 0, 1 and 2 are this process's at [`Spawner::start`]: a stream that
//! [`SpawnOptions`] leaves to inherit is inherited from there.
#![forbid(unsafe_code)]

pub mod protocol;

use crate::errno::Errno;
use crate::owners::Spawning;
use crate::rusage::ResourceUsage;
use crate::signal::SigSet;
use crate::spawn::{ChildStack, ChildStage, Program, SpawnError, SpawnOptions};
use crate::status::WaitStatus;
use crate::Child;
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
/// programs it holds (slot `k` is `defined[k]`), and the thread that started it.
pub struct Spawner {
    process: Child,
    socket: OwnedFd,
    defined: Vec<Program>,
    /// The thread ID of the thread that started the spawner: the parent, to the kernel, of
    /// every child the spawner clones (`CLONE_PARENT`).
    starter: i32,
}

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
    /// The spawner is gone or answered out of protocol: start children in-process from now on.
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
        let path = format!("/proc/self/fd/{}", memfd.as_raw_fd());
        let socket_arg = format!("{}", theirs.as_raw_fd());
        let parent_arg = format!("{}", rustix::process::getpid().as_raw_nonzero());
        let program = Program::new(
            CString::new(path).map_err(|_| StartError::Memfd(Errno::INVAL))?,
            alloc::vec![
                c"coldtrace-spawner".into(),
                CString::new(socket_arg).unwrap_or_default(),
                CString::new(parent_arg).unwrap_or_default()
            ],
            Vec::new(),
        );
        let keep = [memfd.as_fd(), theirs.as_fd()];
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
        })
    }

    /// The spawner's process ID (a child of this process: leave it to [`Spawner::stop`]).
    pub fn pid(&self) -> i32 {
        self.process.pid()
    }

    /// Starts `program` as [`Program::spawn`] would, through the spawner: the child, and the
    /// `CLOCK_MONOTONIC` time the spawner read right before the clone. `Unsupported` where the
    /// spawner cannot (see [`SpawnerFailure::Unsupported`]).
    pub fn spawn(
        &mut self,
        program: &Program,
        options: &SpawnOptions<'_>,
    ) -> Result<(Child, u64), SpawnerFailure> {
        let other_thread = || rustix::thread::gettid().as_raw_nonzero().get() != self.starter;
        if !options.keep_fds.is_empty()
            || options.cwd.is_some()
            || options.legacy_clone
            || program.through_shell()
            || (options.parent_death_signal.is_some() && other_thread())
        {
            return Err(SpawnerFailure::Unsupported);
        }
        let slot = self.slot(program)?;
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
        self.send(&request.encode(), &fds)?;
        let (reply, pidfd) = self.receive()?;
        let child = self.adopt(&reply, pidfd, options.new_process_group);
        drop(spawning);
        child.map(|child| (child, reply.start_ns))
    }

    /// The child of a `START` reply and the pidfd that came with it, or why there is none (a
    /// child that failed before `execve` is reaped here: it is this process's child).
    fn adopt(
        &self,
        reply: &Reply,
        pidfd: Option<OwnedFd>,
        new_group: bool,
    ) -> Result<Child, SpawnerFailure> {
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
            return Err(SpawnerFailure::Program(SpawnError {
                stage: ChildStage::from_raw(reply.stage),
                errno: Errno::from_raw(reply.errno),
            }));
        }
        Ok(child)
    }

    /// The slot of `program`, defining it first when the spawner does not hold it.
    fn slot(&mut self, program: &Program) -> Result<u32, SpawnerFailure> {
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
        let mut reply = self.define(&bytes)?;
        if reply.value == -Errno::NOSPC.raw() {
            self.exchange(&Request {
                op: protocol::OP_RESET,
                ..Request::default()
            })?;
            self.defined.clear();
            reply = self.define(&bytes)?;
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
    fn define(&mut self, bytes: &[u8]) -> Result<Reply, SpawnerFailure> {
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
            let (reply, _) = self.receive()?;
            if i == last || reply.value < 0 {
                return Ok(reply);
            }
        }
        Err(SpawnerFailure::Broken(Errno::IO))
    }

    fn exchange(&mut self, request: &Request) -> Result<Reply, SpawnerFailure> {
        self.send(&request.encode(), &[])?;
        self.receive().map(|(reply, _)| reply)
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

    /// The next reply, and the descriptor that came with it (a `START`'s pidfd).
    fn receive(&self) -> Result<(Reply, Option<OwnedFd>), SpawnerFailure> {
        let mut bytes = [0u8; protocol::REPLY];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        loop {
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let mut iov = [IoSliceMut::new(&mut bytes)];
            let flags = RecvFlags::CMSG_CLOEXEC;
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
    /// resource usage (it waits for no child, so this is its CPU time alone).
    pub fn stop(self) -> Result<(WaitStatus, ResourceUsage), Errno> {
        drop(self.socket);
        self.process.reap().map_err(|e| e.errno)
    }
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
