/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The seccomp sandbox, for real: every case forks a child that installs the
 * filter and does something; the parent checks how the child ended and
 * what it wrote to stderr. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "base/macro.h"
#include "observe/topology.h"
#include "sandbox.h"
#include "tests.h"

#ifndef PR_SCHED_CORE
#define PR_SCHED_CORE 62
#define PR_SCHED_CORE_GET 0
#endif
#ifndef PR_SCHED_CORE_SCOPE_THREAD
#define PR_SCHED_CORE_SCOPE_THREAD 0
#endif
#ifndef NETLINK_CONNECTOR
#define NETLINK_CONNECTOR 11
#endif

/* A syscall topod never makes, harmless if it runs: personality(0xffffffff)
 * only reads the current persona. */
#define UNLISTED_NR SYS_personality
#define UNLISTED_NAME "personality"
static long call_unlisted(void) {
        return syscall(SYS_personality, 0xffffffffUL);
}

/* ---------------------------------------------------------------------- */
/* running a case in a child */

typedef struct Child {
        int status;   /* from waitpid() */
        char err[4096]; /* what it wrote to stderr */
} Child;

static void child_prepare(void) {
        struct rlimit no_core = { 0, 0 };

        /* Deaths by SIGSYS are expected here: no core files. */
        (void) setrlimit(RLIMIT_CORE, &no_core);
        (void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* Install the level or end the child with the reason (exit 3). */
static void child_install(SandboxLevel level) {
        char *reason = NULL;
        int r = sandbox_install(level, &reason);

        if (r < 0) {
                fprintf(stderr, "sandbox_install(%s): %s (%s)\n", sandbox_level_to_string(level), strerror(-r),
                        reason ?: "no reason");
                _exit(3);
        }
}

static void run_child(void (*fn)(void), Child *ret) {
        int p[2];
        size_t n = 0;
        pid_t pid;

        ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
                if (dup2(p[1], STDERR_FILENO) < 0)
                        _exit(2);
                child_prepare();
                fn();
                _exit(0); /* no atexit handlers (nor LeakSanitizer) under the filter */
        }
        close(p[1]);
        for (;;) {
                ssize_t k = read(p[0], ret->err + n, sizeof(ret->err) - 1 - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                n += (size_t) k;
                if (n == sizeof(ret->err) - 1)
                        break;
        }
        ret->err[n] = '\0';
        close(p[0]);
        while (waitpid(pid, &ret->status, 0) < 0)
                ASSERT_EQ(errno, EINTR);
}

static void assert_exited_ok(const Child *c) {
        if (!WIFEXITED(c->status) || WEXITSTATUS(c->status) != 0)
                TEST_FAIL("child %s %d; its stderr:\n%s", WIFEXITED(c->status) ? "exited with" : "was killed by signal",
                          WIFEXITED(c->status) ? WEXITSTATUS(c->status) : WTERMSIG(c->status), c->err);
}

static void assert_killed_by_sigsys(const Child *c) {
        if (!WIFSIGNALED(c->status) || WTERMSIG(c->status) != SIGSYS)
                TEST_FAIL("child should have died of SIGSYS, but %s %d; its stderr:\n%s",
                          WIFEXITED(c->status) ? "exited with" : "was killed by signal",
                          WIFEXITED(c->status) ? WEXITSTATUS(c->status) : WTERMSIG(c->status), c->err);
}

static void assert_refusal_line(const Child *c, const char *name, long nr, const char *tail) {
        char want[256];

        snprintf(want, sizeof(want), "topod: seccomp: refused syscall %s (%ld); the allow-list in src/topod/sandbox.c %s\n",
                 name, nr, tail);
        if (!strstr(c->err, want))
                TEST_FAIL("stderr lacks the line\n%s--- it holds:\n%s", want, c->err);
}

/* The Seccomp: line of /proc/self/status: 0 none, 2 filter. */
static int seccomp_mode(void) {
        _cleanup_free_ char *s = test_read_all("/proc/self/status");
        const char *p = s ? strstr(s, "\nSeccomp:") : NULL;

        return p ? atoi(p + strlen("\nSeccomp:")) : -1;
}

/* ---------------------------------------------------------------------- */
/* the cases */

static void child_unlisted_enforce(void) {
        child_install(SANDBOX_ENFORCE);
        (void) call_unlisted();
        fprintf(stderr, "still alive after the unlisted syscall\n");
        _exit(4);
}

static void test_unlisted_is_refused(void) {
        Child c;

        run_child(child_unlisted_enforce, &c);
        assert_killed_by_sigsys(&c);
        assert_refusal_line(&c, UNLISTED_NAME, UNLISTED_NR, "lacks it");
}

/* Conditional rules: the call is there, the arguments are not. */
static void child_inet_socket(void) {
        child_install(SANDBOX_ENFORCE);
        (void) socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        _exit(4);
}

static void child_fork(void) {
        child_install(SANDBOX_ENFORCE);
        if (fork() == 0)
                _exit(0);
        _exit(4);
}

/* Another task's CPUs are not ours to set. */
static void child_affinity_other(void) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(0, &set);
        child_install(SANDBOX_ENFORCE);
        (void) sched_setaffinity(getppid(), sizeof(set), &set);
        _exit(4);
}

static void test_arguments_are_checked(void) {
        Child c;

        run_child(child_affinity_other, &c);
        assert_killed_by_sigsys(&c);
        assert_refusal_line(&c, "sched_setaffinity", SYS_sched_setaffinity, "allows it only with other arguments");

        run_child(child_inet_socket, &c);
        assert_killed_by_sigsys(&c);
        assert_refusal_line(&c, "socket", SYS_socket, "allows it only with other arguments");

        /* clone() makes threads, not processes. */
        run_child(child_fork, &c);
        assert_killed_by_sigsys(&c);
        assert_refusal_line(&c, "clone", SYS_clone, "allows it only with other arguments");
}

/* Ordinary daemon work under enforce. */

static void *core_sched_thread(void *arg) {
        uint64_t cookie = 0;
        int r;

        (void) arg;
        /* EINVAL without CONFIG_SCHED_CORE, ENODEV without SMT: fine, as
         * long as the call is not refused. */
        r = prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, 0, PR_SCHED_CORE_SCOPE_THREAD, (unsigned long) &cookie);
        return (void *) (intptr_t) (r < 0 ? errno : 0);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        (void) userdata;
        return raise(SIGUSR1) < 0 ? -errno : 0;
}

static int on_usr1(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) si;
        (void) userdata;
        return sd_event_exit(sd_event_source_get_event(s), 42);
}

static int cmp_int(const void *a, const void *b) {
        int x = *(const int *) a, y = *(const int *) b;

        return (x > y) - (x < y);
}

static void child_daemon_work(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char tmpl[] = "/tmp/topod-test-sandbox-XXXXXX", buf[512], addr[64];
        _cleanup_close_ int notify_fd = -EBADF, dfd = -EBADF;
        sd_event *e = NULL;
        pthread_t t;
        void *err;
        sigset_t ss;
        ssize_t n;
        int fd, r, *v;
        size_t len;
        DIR *d;
        FILE *f;

        /* Before the filter, as the daemon's start-up: a bound socket
         * (here a stand-in for systemd's notify socket), a state directory,
         * SIGUSR1 blocked for sd-event. */
        notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ASSERT_GE(notify_fd, 0);
        snprintf(addr, sizeof(addr), "@topod-test-sandbox-%d", (int) getpid());
        memcpy(sa.sun_path + 1, addr + 1, strlen(addr) - 1);
        ASSERT_EQ(bind(notify_fd, (struct sockaddr *) &sa,
                       (socklen_t) (offsetof(struct sockaddr_un, sun_path) + strlen(addr))),
                  0);
        ASSERT_EQ(setenv("NOTIFY_SOCKET", addr, 1), 0);
        ASSERT_NOT_NULL(mkdtemp(tmpl));
        sigemptyset(&ss);
        sigaddset(&ss, SIGUSR1);
        ASSERT_EQ(sigprocmask(SIG_BLOCK, &ss, NULL), 0);

        child_install(SANDBOX_ENFORCE);
        ASSERT_EQ(seccomp_mode(), 2);

        /* /proc reads. */
        fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        ASSERT_GT(read(fd, buf, sizeof(buf)), 0);
        ASSERT_GT(pread(fd, buf, sizeof(buf), 0), 0);
        close(fd);
        f = fopen("/proc/self/status", "re");
        ASSERT_NOT_NULL(f);
        ASSERT_NOT_NULL(fgets(buf, sizeof(buf), f));
        fclose(f);
        ASSERT_GT(readlinkat(AT_FDCWD, "/proc/self/exe", buf, sizeof(buf)), 0);

        /* A thread (started under the filter) with the core-scheduling
         * prctl, and the task list that shows it. */
        ASSERT_EQ(pthread_create(&t, NULL, core_sched_thread, NULL), 0);
        ASSERT_EQ(pthread_join(t, &err), 0);
        if (err)
                ASSERT_TRUE((intptr_t) err == EINVAL || (intptr_t) err == ENODEV);
        d = opendir("/proc/self/task");
        ASSERT_NOT_NULL(d);
        r = 0;
        for (struct dirent *de; (de = readdir(d));)
                r += de->d_name[0] != '.';
        closedir(d);
        ASSERT_GE(r, 1);

        /* A pidfd pins a thread. */
        fd = (int) syscall(SYS_pidfd_open, getpid(), 0);
        if (fd >= 0) {
                struct pollfd p = { .fd = fd, .events = POLLIN };

                ASSERT_EQ(poll(&p, 1, 0), 0);
                close(fd);
        } else
                ASSERT_EQ(errno, ENOSYS); /* a kernel before 5.3 */

        /* Netlink (the proc connector's family) and sd_notify on unix. */
        fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
        if (fd >= 0)
                close(fd);
        else
                ASSERT_TRUE(errno == EPROTONOSUPPORT || errno == EPERM || errno == EACCES);
        ASSERT_GT(sd_notify(false, "READY=1\nSTATUS=sandboxed"), 0);
        ASSERT_EQ(ioctl(notify_fd, FIONREAD, &r), 0);
        ASSERT_GT(r, 0);
        ASSERT_FALSE(isatty(notify_fd)); /* TCGETS, answered ENOTTY */
        n = recv(notify_fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
        ASSERT_GT(n, 0);
        buf[n] = '\0';
        ASSERT_STREQ(buf, "READY=1\nSTATUS=sandboxed");

        /* The journal's way of writing a file: temporary, fsync, rename;
         * then a cgroup-like mkdir and rmdir. */
        dfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_GE(dfd, 0);
        fd = openat(dfd, "journal.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(write(fd, "x\n", 2), 2);
        ASSERT_EQ(fsync(fd), 0);
        close(fd);
        ASSERT_EQ(renameat(dfd, "journal.tmp", dfd, "journal"), 0);
        ASSERT_EQ(fsync(dfd), 0);
        ASSERT_EQ(mkdirat(dfd, "group", 0755), 0);
        ASSERT_EQ(unlinkat(dfd, "group", AT_REMOVEDIR), 0);
        ASSERT_EQ(unlinkat(dfd, "journal", 0), 0);
        ASSERT_EQ(rmdir(tmpl), 0);

        /* Memory: big blocks go through mmap and mremap; qsort sizes its
         * buffer. */
        v = malloc(1u << 20);
        ASSERT_NOT_NULL(v);
        v = realloc(v, 8u << 20);
        ASSERT_NOT_NULL(v);
        len = (8u << 20) / sizeof(int);
        for (size_t i = 0; i < len; i++)
                v[i] = (int) ((len - i) * 2654435761u);
        qsort(v, len, sizeof(int), cmp_int);
        ASSERT_LE(v[0], v[len - 1]);
        free(v);

        /* sd-event, created under the filter: a timer raises SIGUSR1, its
         * signal source ends the loop. */
        ASSERT_OK(sd_event_new(&e));
        ASSERT_OK(sd_event_add_signal(e, NULL, SIGUSR1, on_usr1, NULL));
        ASSERT_OK(sd_event_add_time_relative(e, NULL, CLOCK_MONOTONIC, 1000, 0, on_timer, NULL));
        ASSERT_EQ(sd_event_loop(e), 42);
        sd_event_unref(e);

#ifdef SYS_clone3
        /* clone3 answers ENOSYS: glibc falls back to clone(). */
        errno = 0;
        ASSERT_EQ(syscall(SYS_clone3, NULL, 0), -1);
        ASSERT_EQ(errno, ENOSYS);
#endif

        fprintf(stderr, "daemon work done\n");
}

/* The topology read again under the filter, as topod does when SMT is
 * switched on or off: hwloc's x86 backend binds the calling thread to
 * each CPU in turn to read CPUID there. */
static void child_topology(void) {
        TopologySource src = { .kind = TOPOLOGY_SOURCE_ROOT, .arg = NULL };
        Topology *t = NULL;

        child_prepare();
        child_install(SANDBOX_ENFORCE);
        ASSERT_OK(topology_load(&src, &t));
        ASSERT_GT(t->n_pus, 0);
        topology_free(t);
        fprintf(stderr, "topology read\n");
}

/* The log of changes: an entry with fields through sd_journal_sendv(),
 * and one too big for a datagram, which it hands over in a sealed memfd
 * (whether or not a journal listens here: the size is refused first). */
static void child_journal(void) {
        size_t big = 9u * 1024u * 1024u;
        char *m = malloc(big + sizeof("MESSAGE="));

        ASSERT_NOT_NULL(m);
        memcpy(m, "MESSAGE=", strlen("MESSAGE="));
        memset(m + strlen("MESSAGE="), 'x', big);
        m[strlen("MESSAGE=") + big] = 0;
        child_prepare();
        child_install(SANDBOX_ENFORCE);
        (void) sd_journal_send("MESSAGE=test-sandbox: a change", "PRIORITY=7", "TOPOD_ACTION=move", "TOPOD_PID=1",
                               NULL);
        (void) sd_journal_send("%s", m, "PRIORITY=7", "TOPOD_ACTION=move", NULL);
        free(m);
        fprintf(stderr, "journal sent\n");
}

/* The child ran fn to its end: exit 0, and its last words on stderr. */
static void assert_child_finished(void (*fn)(void), const char *last_words) {
        Child c;

        run_child(fn, &c);
        assert_exited_ok(&c);
        if (!strstr(c.err, last_words))
                TEST_FAIL("the child did not get to the end; its stderr:\n%s", c.err);
}

static void test_topology_is_allowed(void) {
        assert_child_finished(child_topology, "topology read\n");
}

static void test_daemon_work_is_allowed(void) {
        assert_child_finished(child_daemon_work, "daemon work done\n");
}

static void test_journal_is_allowed(void) {
        assert_child_finished(child_journal, "journal sent\n");
}

static void child_unlisted_log(void) {
        child_install(SANDBOX_LOG);
        if (seccomp_mode() != 2) {
                fprintf(stderr, "no filter installed\n");
                _exit(5);
        }
        if (call_unlisted() < 0) {
                fprintf(stderr, "personality: %s\n", strerror(errno));
                _exit(6);
        }
}

static void test_log_kills_nothing(void) {
        Child c;

        run_child(child_unlisted_log, &c);
        assert_exited_ok(&c);
        ASSERT_STR_NOT_CONTAINS(c.err, "refused");
}

/* TSYNC: a thread that was running before the filter gets it too. */
static int tsync_pipe[2];

static void *waiting_thread(void *arg) {
        char ch;

        (void) arg;
        while (read(tsync_pipe[0], &ch, 1) < 0 && errno == EINTR)
                ;
        (void) call_unlisted();
        fprintf(stderr, "the older thread made the unlisted syscall and lives\n");
        return NULL;
}

static void child_tsync(void) {
        pthread_t t;

        ASSERT_EQ(pipe2(tsync_pipe, O_CLOEXEC), 0);
        ASSERT_EQ(pthread_create(&t, NULL, waiting_thread, NULL), 0);
        child_install(SANDBOX_ENFORCE);
        ASSERT_EQ(write(tsync_pipe[1], "x", 1), 1);
        ASSERT_EQ(pthread_join(t, NULL), 0);
        _exit(4);
}

static void test_older_threads_are_filtered(void) {
        Child c;

        run_child(child_tsync, &c);
        assert_killed_by_sigsys(&c);
        assert_refusal_line(&c, UNLISTED_NAME, UNLISTED_NR, "lacks it");
}

static void child_off(void) {
        child_install(SANDBOX_OFF);
        if (seccomp_mode() != 0) {
                fprintf(stderr, "Seccomp: %d after off\n", seccomp_mode());
                _exit(5);
        }
        (void) call_unlisted();
}

static void test_off_installs_nothing(void) {
        Child c;

        run_child(child_off, &c);
        assert_exited_ok(&c);
}

static void test_names(void) {
        char *reason = NULL;
        size_t n = sandbox_allowed_count();

        ASSERT_STREQ(sandbox_level_to_string(SANDBOX_OFF), "off");
        ASSERT_STREQ(sandbox_level_to_string(SANDBOX_LOG), "log");
        ASSERT_STREQ(sandbox_level_to_string(SANDBOX_ENFORCE), "enforce");
        ASSERT_STREQ(sandbox_level_to_string(_SANDBOX_LEVEL_MAX), "?");
        /* A bad level is refused before anything is built. */
        ASSERT_ERROR(sandbox_install(_SANDBOX_LEVEL_MAX, &reason), EINVAL);
        ASSERT_NOT_NULL(reason);
        free(reason);
        printf("%zu syscalls allowed\n", n);
        ASSERT_GT(n, 50);
        ASSERT_LT(n, 200);
}

/* ---------------------------------------------------------------------- */

static void require_seccomp(void) {
        pid_t pid;
        int status;

        if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL)
                test_skip("the kernel has no seccomp (CONFIG_SECCOMP=n)");
        if (seccomp_api_get() < 3)
                test_skip("the kernel's seccomp lacks SECCOMP_RET_LOG or thread sync (libseccomp API level %u)",
                          seccomp_api_get());
        /* Can a filter be loaded here at all? A container may forbid it. */
        fflush(stdout);
        pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
                scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
                int r;

                if (!ctx)
                        _exit(ENOMEM);
                (void) seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
                r = seccomp_load(ctx);
                _exit(r < 0 ? -r : 0);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        if (WEXITSTATUS(status) != 0)
                test_skip("loading a seccomp filter fails here (%s): a container that forbids it?",
                          strerror(WEXITSTATUS(status)));
}

int main(void) {
        RUN(test_names);
        require_seccomp();
        RUN(test_unlisted_is_refused);
        RUN(test_arguments_are_checked);
        RUN(test_daemon_work_is_allowed);
        RUN(test_topology_is_allowed);
        RUN(test_journal_is_allowed);
        RUN(test_log_kills_nothing);
        RUN(test_older_threads_are_filtered);
        RUN(test_off_installs_nothing);
        return EXIT_SUCCESS;
}
