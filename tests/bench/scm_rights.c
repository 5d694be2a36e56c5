/* What handing the spawner its descriptors again on every run costs, and what proving that
 * they did not change would cost instead: one process, a SOCK_SEQPACKET socket pair, N round
 * trips of a 24-byte message (the size of a START request) sent on one end and received on the
 * other, in three ways:
 *   plain   no descriptor;
 *   rights  four descriptors as SCM_RIGHTS (stdin, stdout, stderr, a cgroup directory), which
 *           the receiver then closes, as the spawner does;
 *   kcmp    no descriptor, but four kcmp(KCMP_FILE) calls comparing a descriptor with a kept
 *           copy (the least a runner must do to know a descriptor is the one it sent before).
 * No process wakes another here: this is the system calls' own CPU, not the round trip's.
 * Build: cc -O2 -o scm_rights tests/bench/scm_rights.c
 * Usage: ./scm_rights [N]   (default 200000; prints µs per round trip for each way) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define KCMP_FILE 0

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int round_trip(int sv[2], const int *fds, int nfds) {
    char bytes[24] = {0};
    char control[CMSG_SPACE(4 * sizeof(int))];
    struct iovec iov = {bytes, sizeof bytes};
    struct msghdr out = {0};
    out.msg_iov = &iov;
    out.msg_iovlen = 1;
    if (nfds) {
        out.msg_control = control;
        out.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&out);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    }
    if (sendmsg(sv[0], &out, MSG_NOSIGNAL) != sizeof bytes) return -1;
    char got_control[CMSG_SPACE(4 * sizeof(int))];
    struct msghdr in = {0};
    in.msg_iov = &iov;
    in.msg_iovlen = 1;
    in.msg_control = got_control;
    in.msg_controllen = sizeof got_control;
    if (recvmsg(sv[1], &in, MSG_CMSG_CLOEXEC) != sizeof bytes) return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&in);
    for (int i = 0; c && i < nfds; i++) close(((int *)CMSG_DATA(c))[i]);
    return 0;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    int sv[2], fds[4], kept[4];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) return 2;
    for (int i = 0; i < 4; i++) {
        fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
        kept[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    }
    pid_t me = getpid();
    const char *names[] = {"plain", "rights", "kcmp"};
    for (int way = 0; way < 3; way++) {
        double start = now_ns();
        for (int k = 0; k < n; k++) {
            if (round_trip(sv, fds, way == 1 ? 4 : 0)) return 1;
            for (int i = 0; way == 2 && i < 4; i++)
                if (syscall(SYS_kcmp, me, me, KCMP_FILE, fds[i], kept[i]) != 0) return 3;
        }
        printf("%-6s %.2f us per round trip\n", names[way], (now_ns() - start) / n / 1000);
    }
    return 0;
}
