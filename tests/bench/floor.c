/* The per-run floor: a C loop of vfork + execve + wait4 of /bin/true, N times —
 * the least any runner can do per run, with nothing measured and nothing recorded.
 * Build: cc -O2 -o floor tests/bench/floor.c
 * Usage: ./floor [N] [PROGRAM]   (default 1000 runs of /bin/true)
 * Prints "runs=N median_us=... mean_us=...", each iteration timed on CLOCK_MONOTONIC from just
 * before vfork to just after wait4 returns. compare.sh times the whole process instead (total
 * time ÷ runs), the same way it times coldtrace and hyperfine. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    long runs = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
    char *path = argc > 2 ? argv[2] : "/bin/true";
    if (runs <= 0) {
        fprintf(stderr, "floor: usage: floor [RUNS > 0] [PROGRAM]\n");
        return 2;
    }
    unsigned long long *t = malloc(sizeof *t * (size_t)runs);
    if (!t) return 1;
    char *child_argv[] = {path, NULL};
    char *child_envp[] = {NULL};
    for (long i = 0; i < runs; i++) {
        unsigned long long start = now_ns();
        pid_t pid = vfork();
        if (pid == 0) {
            execve(path, child_argv, child_envp);
            _exit(127);
        }
        if (pid < 0) {
            perror("floor: vfork");
            return 1;
        }
        int status;
        struct rusage ru;
        if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
            fprintf(stderr, "floor: %s did not exit 0\n", path);
            return 1;
        }
        t[i] = now_ns() - start;
    }
    double sum = 0;
    for (long i = 0; i < runs; i++) sum += (double)t[i];
    qsort(t, (size_t)runs, sizeof *t, cmp);
    double median = runs % 2 ? (double)t[runs / 2] : ((double)t[runs / 2 - 1] + (double)t[runs / 2]) / 2;
    printf("runs=%ld median_us=%.1f mean_us=%.1f\n", runs, median / 1e3, sum / (double)runs / 1e3);
    free(t);
    return 0;
}
