/* seccomp_deny: runs a command under a seccomp filter that makes chosen system calls fail,
 * as an old kernel or a container's profile would. Test helper for coldtrace's fallbacks.
 *
 *   seccomp_deny [--clone-pidfd ERRNO] [--pidfd-open ERRNO] [--pidfd-send-signal ERRNO]
 *                [--close-range ERRNO] [--ppoll ERRNO]
 *                [--close-from N] [--nofile N] [--fd N] -- PROGRAM ARGS...
 *   seccomp_deny fdlist          prints the open descriptors, one per line
 *
 * --clone-pidfd fails clone(2) when args[0] has CLONE_PIDFD, and clone3(2) always (a filter
 * cannot read clone3's flags, which are in memory: container profiles fail it with ENOSYS);
 * --close-from closes every descriptor from N up; --nofile sets RLIMIT_NOFILE; --fd N opens
 * /dev/null as descriptor N, inheritable. Built by tests/fallback.rs with cc. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x1000
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

static struct sock_filter prog[32];
static int len;

static void emit(unsigned short code, unsigned jt, unsigned jf, unsigned k) {
    prog[len++] = (struct sock_filter)BPF_JUMP(code, k, jt, jf);
}

/* Fails syscall `nr` with `err`: "if nr != NR skip 1; return ERRNO(err)". */
static void deny(int nr, int err) {
    emit(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, nr);
    emit(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA));
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "fdlist") == 0) {
        for (int fd = 0; fd < 65536; fd++)
            if (fcntl(fd, F_GETFD) != -1) printf("%d\n", fd);
        return 0;
    }
    int clone_err = 0, open_err = 0, send_err = 0, range_err = 0, ppoll_err = 0, i = 1;
    long nofile = 0, extra_fd = -1, close_from = -1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
        if (i + 1 >= argc) { fprintf(stderr, "seccomp_deny: %s needs a value\n", argv[i]); return 2; }
        long v = strtol(argv[i + 1], NULL, 10);
        if (strcmp(argv[i], "--clone-pidfd") == 0) clone_err = (int)v;
        else if (strcmp(argv[i], "--pidfd-open") == 0) open_err = (int)v;
        else if (strcmp(argv[i], "--close-range") == 0) range_err = (int)v;
        else if (strcmp(argv[i], "--ppoll") == 0) ppoll_err = (int)v;
        else if (strcmp(argv[i], "--pidfd-send-signal") == 0) send_err = (int)v;
        else if (strcmp(argv[i], "--nofile") == 0) nofile = v;
        else if (strcmp(argv[i], "--close-from") == 0) close_from = v;
        else if (strcmp(argv[i], "--fd") == 0) extra_fd = v;
        else { fprintf(stderr, "seccomp_deny: unknown option %s\n", argv[i]); return 2; }
    }
    if (i + 1 >= argc) { fprintf(stderr, "seccomp_deny: no command\n"); return 2; }
    if (close_from >= 0)
        for (int fd = (int)close_from; fd < 65536; fd++) close(fd);
    if (nofile > 0) {
        struct rlimit r = { (rlim_t)nofile, (rlim_t)nofile };
        if (setrlimit(RLIMIT_NOFILE, &r) != 0) { perror("seccomp_deny: setrlimit"); return 2; }
    }
    if (extra_fd >= 0) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0 || dup2(fd, (int)extra_fd) < 0) { perror("seccomp_deny: --fd"); return 2; }
        if (fd != extra_fd) close(fd);
    }
    emit(BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, arch));
    emit(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, ARCH);
    emit(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
    emit(BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, nr));
    if (open_err) deny(__NR_pidfd_open, open_err);
    if (range_err) deny(__NR_close_range, range_err);
    if (ppoll_err) deny(__NR_ppoll, ppoll_err);
    if (send_err) deny(__NR_pidfd_send_signal, send_err);
    if (clone_err) deny(__NR_clone3, clone_err);
    if (clone_err) {
        /* if nr == clone: A = low word of args[0]; if A & CLONE_PIDFD: ERRNO; else ALLOW */
        emit(BPF_JMP | BPF_JEQ | BPF_K, 0, 4, __NR_clone);
        emit(BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, args[0]));
        emit(BPF_JMP | BPF_JSET | BPF_K, 0, 1, CLONE_PIDFD);
        emit(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | (clone_err & SECCOMP_RET_DATA));
        emit(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
    }
    emit(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
    struct sock_fprog fprog = { (unsigned short)len, prog };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) { perror("seccomp_deny: no_new_privs"); return 2; }
    if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) { perror("seccomp_deny: seccomp"); return 2; }
    execvp(argv[i + 1], argv + i + 1);
    perror("seccomp_deny: execvp");
    return 127;
}
