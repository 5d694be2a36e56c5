// self_cpu: runs a command and writes the CPU time of the command's own process, without its
// children: the main thread's time on a CPU (user and kernel, ns), read from its zombie's
// /proc/PID/schedstat before it is reaped (waitid WNOWAIT). Its rusage (user + system, µs)
// includes every child it waited for, so it cannot tell a runner's own work from the
// commands it ran; /proc/PID/schedstat can, for a single-threaded runner (hyperfine 2.0.0 and
// coldtrace are: one entry in /proc/PID/task while they run). Needs no privilege.
//
// Usage: self_cpu OUT COMMAND [ARG...]
// OUT gets one line: "<main thread ns> <rusage user + system µs>".
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: self_cpu OUT COMMAND [ARG...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    siginfo_t info;
    if (pid < 0 || waitid(P_PID, pid, &info, WEXITED | WNOWAIT) != 0) {
        perror("self_cpu");
        return 2;
    }
    char path[64];
    unsigned long long on_cpu_ns = 0;
    snprintf(path, sizeof path, "/proc/%d/schedstat", pid);
    FILE *f = fopen(path, "r");
    if (!f || fscanf(f, "%llu", &on_cpu_ns) != 1) {
        fprintf(stderr, "self_cpu: cannot read %s\n", path);
        return 2;
    }
    fclose(f);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) {
        perror("self_cpu: wait4");
        return 2;
    }
    long long usage_us = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL +
                         ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 2;
    }
    fprintf(out, "%llu %lld\n", on_cpu_ns, usage_us);
    fclose(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
