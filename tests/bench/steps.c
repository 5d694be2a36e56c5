/* What a runner's duties cost, in C, added one step at a time to the floor loop (floor.c):
 * the least a runner that keeps coldtrace's promises can cost per run, without coldtrace.
 *
 *   0  vfork + execve + wait4 of /bin/true, empty environment       (floor.c)
 *   1  clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD) instead of vfork; close the pidfd
 *   2  + wait on the pidfd and a signalfd (SIGCHLD, SIGINT, SIGTERM) with ppoll and a 20 ms
 *        timeout; drain the signalfd; waitid(P_PIDFD, WNOWAIT) before wait4; after the reaping
 *        one waitid(P_ALL, WNOHANG) for orphans; every signal blocked around the clone
 *   3  + in the child: three signals reset to SIG_DFL, stdin/stdout/stderr installed with
 *        dup3, close_range(3, ~0), the signal mask restored; the real environment passed
 *   4  + per run in the parent: the two writes of a record (runs.jsonl line and the metric
 *        values), one truncate + seek of a stderr sink, one pread of a small /proc file
 *
 * coldtrace --minimal does what step 4 does, plus its own bookkeeping.
 * Build: cc -O2 -o steps tests/bench/steps.c
 * Usage: ./steps STEP [N]     (N runs, default 1000; time it from outside: total ÷ N) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/sched.h>

extern char **environ;
static char *child_argv[] = {"/bin/true", NULL};
static char *empty_env[] = {NULL};
static char child_stack[65536] __attribute__((aligned(16)));
static int step;
static int stdio_fds[3];

static int child(void *unused) {
    (void)unused;
    char **envp = empty_env;
    if (step >= 3) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        syscall(SYS_rt_sigaction, SIGBUS, &dfl, NULL, 8);
        syscall(SYS_rt_sigaction, SIGSEGV, &dfl, NULL, 8);
        syscall(SYS_rt_sigaction, SIGPIPE, &dfl, NULL, 8);
        for (int i = 0; i < 3; i++) dup3(stdio_fds[i], i, 0);
        syscall(SYS_close_range, 3, ~0U, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        envp = environ;
    }
    execve(child_argv[0], child_argv, envp);
    _exit(127);
}

int main(int argc, char **argv) {
    step = argc > 1 ? atoi(argv[1]) : 0;
    long runs = argc > 2 ? strtol(argv[2], NULL, 10) : 1000;
    if (step < 0 || step > 4 || runs <= 0) {
        fprintf(stderr, "steps: usage: steps STEP(0-4) [RUNS > 0]\n");
        return 2;
    }
    sigset_t all, watched;
    sigfillset(&all);
    sigemptyset(&watched);
    sigaddset(&watched, SIGCHLD);
    sigaddset(&watched, SIGINT);
    sigaddset(&watched, SIGTERM);
    sigprocmask(SIG_BLOCK, &watched, NULL);
    int sfd = signalfd(-1, &watched, SFD_NONBLOCK | SFD_CLOEXEC);
    stdio_fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    stdio_fds[1] = open("/dev/null", O_WRONLY | O_CLOEXEC);
    stdio_fds[2] = memfd_create("stderr", MFD_CLOEXEC);
    int records = memfd_create("records", MFD_CLOEXEC);
    int small = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    char buf[4096] = {0};
    for (long i = 0; i < runs; i++) {
        struct rusage usage;
        int status;
        if (step == 0) {
            pid_t pid = vfork();
            if (pid == 0) {
                execve(child_argv[0], child_argv, empty_env);
                _exit(127);
            }
            wait4(pid, &status, 0, &usage);
            continue;
        }
        sigset_t saved;
        if (step >= 2) sigprocmask(SIG_SETMASK, &all, &saved);
        int pidfd = -1;
        pid_t pid = clone(child, child_stack + sizeof child_stack,
                          CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, NULL, &pidfd);
        if (pid < 0) return 1;
        if (step >= 2) {
            sigprocmask(SIG_SETMASK, &saved, NULL);
            struct pollfd fds[2] = {{pidfd, POLLIN, 0}, {sfd, POLLIN, 0}};
            for (;;) {
                struct timespec tick = {0, 20000000};
                int ready = ppoll(fds, 2, &tick, NULL);
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof si) > 0) {
                }
                if (ready > 0 && (fds[0].revents & POLLIN)) break;
            }
            siginfo_t info;
            syscall(SYS_waitid, P_PIDFD, pidfd, &info, WEXITED | WNOWAIT, NULL);
        }
        wait4(pid, &status, 0, &usage);
        close(pidfd);
        if (step >= 2) {
            siginfo_t info;
            waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT);
        }
        if (step >= 4) {
            if (write(records, buf, 1300) < 0 || write(records, buf, 184) < 0) return 1;
            if (ftruncate(stdio_fds[2], 0) < 0) return 1;
            lseek(stdio_fds[2], 0, SEEK_SET);
            if (pread(small, buf, sizeof buf, 0) < 0) return 1;
        }
    }
    return 0;
}
