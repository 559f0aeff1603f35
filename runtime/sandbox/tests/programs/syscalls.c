/* Makes the system calls a berth must refuse, and a few it must allow, and
 * prints one line per call: its name and the errno it failed with (0: it
 * succeeded). Built static by the Docker tests (gcc -static), so it runs in
 * any image. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(const char *name, long r) {
    printf("%s %d\n", name, r < 0 ? errno : 0);
}

int main(void) {
    char params[120];
    memset(params, 0, sizeof params);
    errno = 0;
    report("io_uring_setup", syscall(SYS_io_uring_setup, 1, params));
    errno = 0;
    report("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0));
    errno = 0;
    report("userfaultfd", syscall(SYS_userfaultfd, 0));
    errno = 0;
    report("bpf", syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0));
    errno = 0;
    report("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
    errno = 0;
    report("unshare_newuser", syscall(SYS_unshare, CLONE_NEWUSER));
    errno = 0;
    report("clone3", syscall(SYS_clone3, NULL, 0));
    errno = 0;
    report("getpid", syscall(SYS_getpid));
    errno = 0;
    pid_t child = fork();
    if (child == 0) {
        _exit(0);
    }
    report("fork", child);
    if (child > 0) {
        waitpid(child, NULL, 0);
    }
    /* In a child, so that being traced does not stop this process later. */
    child = fork();
    if (child == 0) {
        errno = 0;
        _exit(ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0 ? errno : 0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("ptrace_traceme %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
