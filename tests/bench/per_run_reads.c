// What each file the default run reads after every run costs the reader, alone: CPU time
// (CLOCK_PROCESS_CPUTIME_ID) per read, over N reads of each. The zombie's files are read as
// coldtrace reads them: a child forks and exits, its parent waits for it with WNOWAIT, opens,
// reads and closes /proc/PID/io and /proc/PID/schedstat, then reaps it; the same loop without
// the reads is subtracted (the reap pays for dropping the /proc dentries the opens made, so
// it is counted with them).
//
// Usage: cc -O2 -o per_run_reads tests/bench/per_run_reads.c && ./per_run_reads [N] [LEAF]
// LEAF: a cgroup directory whose cpu.stat, PSI files and cgroup.events are read too.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static char buf[65536];

// One pread of `len` bytes from the start of `path`, N times: µs per read (-1: cannot open).
static double pread_cost(const char *path, size_t len, int n) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    double t = cpu_us();
    for (int i = 0; i < n; i++) pread(fd, buf, len, 0);
    t = (cpu_us() - t) / n;
    close(fd);
    return t;
}

// The bytes of /proc/vmstat up to the end of the pgmajfault line, plus coldtrace's margin.
static size_t vmstat_prefix(void) {
    int fd = open("/proc/vmstat", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd < 0 ? -1 : pread(fd, buf, sizeof buf - 1, 0);
    if (fd >= 0) close(fd);
    if (got <= 0) return 0;
    buf[got] = 0;
    char *at = strstr(buf, "\npgmajfault ");
    char *end = at ? strchr(at + 1, '\n') : NULL;
    return end ? (size_t)(end + 1 - buf) + 64 : 0;
}

static void read_once(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        pread(fd, buf, 4096, 0);
        close(fd);
    }
}

// µs per fork + exit + wait, with (`read` 1) or without the zombie's two files.
static double zombie_loop(int n, int read) {
    double t = cpu_us();
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        siginfo_t info;
        waitid(P_PID, pid, &info, WEXITED | WNOWAIT);
        if (read) {
            char path[64];
            snprintf(path, sizeof path, "/proc/%d/io", pid);
            read_once(path);
            snprintf(path, sizeof path, "/proc/%d/schedstat", pid);
            read_once(path);
        }
        waitpid(pid, NULL, 0);
    }
    return (cpu_us() - t) / n;
}

static void row(const char *what, double us) {
    if (us < 0) printf("| %s | (cannot be read) |\n", what);
    else printf("| %s | %.2f |\n", what, us);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    const char *leaf = argc > 2 ? argv[2] : NULL;
    size_t prefix = vmstat_prefix();
    printf("| read (%d times each) | µs per read |\n|---|---:|\n", n);
    char what[128];
    snprintf(what, sizeof what, "/proc/vmstat, first %zu bytes (to pgmajfault + 64)", prefix);
    row(what, pread_cost("/proc/vmstat", prefix, n));
    row("/proc/vmstat, whole", pread_cost("/proc/vmstat", sizeof buf, n));
    row("/proc/vmstat, first 16 bytes", pread_cost("/proc/vmstat", 16, n));
    row("/proc/pressure/cpu", pread_cost("/proc/pressure/cpu", 4096, n));
    row("/proc/pressure/io", pread_cost("/proc/pressure/io", 4096, n));
    row("/proc/pressure/memory", pread_cost("/proc/pressure/memory", 4096, n));
    row("/proc/self/statm (the spawner's, as the floor)", pread_cost("/proc/self/statm", 4096, n));
    row("/sys/devices/system/cpu/online", pread_cost("/sys/devices/system/cpu/online", 4096, n));
    if (leaf) {
        const char *files[] = {"cpu.stat", "cpu.pressure", "io.pressure", "memory.pressure",
                               "cgroup.events"};
        for (int i = 0; i < 5; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", leaf, files[i]);
            snprintf(what, sizeof what, "leaf %s", files[i]);
            row(what, pread_cost(path, 1024, n));
        }
    }
    int z = n / 10;
    double plain = zombie_loop(z, 0), with = zombie_loop(z, 1);
    printf("| fork, exit, wait (%d times): without the zombie's files | %.2f |\n", z, plain);
    printf("| … with /proc/PID/io and schedstat opened, read, closed | %.2f |\n", with);
    printf("| … the zombie's two files | %.2f |\n", with - plain);
    return 0;
}
