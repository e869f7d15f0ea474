/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sandbox.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "apply/pidref.h"
#include "base/macro.h"

#ifndef PR_SCHED_CORE
#define PR_SCHED_CORE 62 /* linux/prctl.h, 5.14 */
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41 /* linux/prctl.h, 5.17: naming anonymous mappings */
#endif
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1 /* si_code of a SIGSYS from a filter (asm-generic/siginfo.h) */
#endif

/* ---------------------------------------------------------------------- */
/* the allow-list */

/* Allowed whatever the arguments. Grouped by the part of topod that needs
 * them; see sandbox.h for how to find a missing one. A name this
 * architecture lacks is skipped, so every variant can be listed. */
static const char *const allow_list[] = {
        /* sd-event: the loop, its timerfd and signalfd sources (they may be
         * set up after the filter too), and poll() in the pipeline's and the
         * pidref code's waits. */
        "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2",
        "timerfd_create", "timerfd_settime", "timerfd_gettime", "signalfd4",
        "poll", "ppoll",

        /* Files: /proc scans (tasks, stat, exe links, /proc/<pid>/task
         * listings), cgroupfs and debugfs reads and writes, the journal in
         * /run/topod (write, fsync, rename), topod.conf and the policies
         * read again on SIGHUP. glibc reaches some of these through the old
         * entry points (mkdir, rename, access, readlink, dup2, pipe on
         * x86_64). */
        "openat", "open", "close", "close_range", "read", "pread64", "readv", "write", "writev", "lseek",
        "getdents64", "newfstatat", "fstat", "stat", "lstat", "statx",
        "readlinkat", "readlink", "faccessat", "faccessat2", "access",
        "mkdirat", "mkdir", "unlinkat", "unlink", "rmdir", "renameat", "renameat2", "rename",
        "fsync", "fdatasync", "fcntl", "dup", "dup2", "dup3", "pipe2", "pipe",
        /* The metrics file (topod.conf: metrics_file), made 0644 whatever
         * the umask; written to a temporary name and renamed (above). */
        "fchmod",
        /* The journal's log, allocated when created (posix_fallocate(),
         * which glibc does with pwrite() where the file system cannot). */
        "fallocate", "pwrite64",
        /* Is a cgroup.procs about to be held open on cgroup2? */
        "fstatfs",

        /* Sockets: the proc connector (netlink, bound before the filter),
         * sd_notify (a fresh AF_UNIX datagram socket each time, with a
         * bigger send buffer) and an sd-bus or varlink server on a unix
         * socket. socket() itself is in the argument rules below. */
        "connect", "accept4", "sendmsg", "recvmsg", "recvmmsg", "sendto", "recvfrom",
        "getsockopt", "setsockopt", "getsockname", "getpeername", "shutdown",
        /* The bus: each client's socket pair to its sd-bus (bus-feed.h). */
        "socketpair",
        /* The journal: an entry too big for one datagram goes as a sealed
         * memfd (sd_journal_sendv()). */
        "memfd_create",

        /* Core scheduling: pidfds pin the threads a cookie goes to (the
         * cookie prctl is in the argument rules). */
        "pidfd_open",

        /* AVX-512 evidence: a counting event per candidate thread
         * (observe/counters.h), read() and close()d as any fd. */
        "perf_event_open",

        /* Who we are: sd-event's and sd_notify's checks, the cookie agents'
         * gettid(). */
        "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid",

        /* Memory: malloc (large snapshots are mmap()ed and mremap()ed),
         * thread stacks and arenas. */
        "brk", "mmap", "munmap", "mremap", "mprotect", "madvise",

        /* Threads: the cookie agents and their locks (glibc's thread start
         * registers the robust list and rseq; clone() is in the argument
         * rules, clone3() answers ENOSYS). */
        "futex", "set_robust_list", "rseq", "sched_yield", "sched_getaffinity", "getcpu", "exit",

        /* Signals: sigprocmask for sd-event's signal sources, the SIGSYS
         * handler itself, raise() and abort() (tgkill is in the argument
         * rules). */
        "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "restart_syscall",

        /* Time: clock_gettime() when the vDSO cannot answer, the pipeline's
         * sleeps. */
        "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time",
        /* The idle gate: our own CPU time against /proc/stat's. */
        "getrusage",

        /* glibc and libsystemd underneath: hashmap seeds (getrandom), qsort()
         * sizing its buffer (sysinfo), getrlimit() (prlimit64), uname(),
         * and the end. */
        "getrandom", "sysinfo", "prlimit64", "getrlimit", "uname", "exit_group",

        /* The same calls under their 32-bit names (i386, arm, x32 keeps
         * most 64-bit ones); skipped on 64-bit architectures. */
        "fcntl64", "_llseek", "fstatfs64", "fstat64", "stat64", "lstat64", "fstatat64", "mmap2", "ugetrlimit",
        "sigreturn", "socketcall", "send", "recv", "clock_gettime64", "clock_nanosleep_time64", "recvmmsg_time64",
        "futex_time64", "ppoll_time64", "timerfd_settime64", "timerfd_gettime64",
};

/* Allowed only when one argument matches: (arg & mask) == value, 32-bit
 * wide, as the kernel reads these int arguments. Rows of the same syscall
 * are alternatives and must be next to each other. Where an architecture
 * cannot express a condition (socket() multiplexed through socketcall on
 * i386) the call is allowed without it. */
#define ARG_SELF_PID UINT64_MAX /* value: our own process id, at install time */
#define INT_MASK UINT64_C(0xffffffff)

#if defined(__s390__) || defined(__s390x__) || defined(__CRIS__)
#define CLONE_FLAGS_ARG 1 /* clone(stack, flags, ...) there */
#else
#define CLONE_FLAGS_ARG 0
#endif

typedef struct ArgRule {
        const char *name;
        unsigned arg;
        uint64_t mask, value;
} ArgRule;

static const ArgRule arg_rules[] = {
        /* socket(): unix sockets for sd_notify and a local server, netlink
         * for the proc connector; nothing that reaches the network. */
        { "socket", 0, INT_MASK, AF_UNIX },
        { "socket", 0, INT_MASK, AF_NETLINK },

        /* prctl(): PR_SCHED_CORE for cookies (create, share, get), thread
         * names, and glibc naming its mappings where it does. */
        { "prctl", 0, INT_MASK, PR_SCHED_CORE },
        { "prctl", 0, INT_MASK, PR_SET_NAME },
        { "prctl", 0, INT_MASK, PR_GET_NAME },
        { "prctl", 0, INT_MASK, PR_SET_VMA },

        /* ioctl(): isatty() (TCGETS) and terminal width in libsystemd's
         * logging, and the harmless fd requests; none that talk to a
         * device. */
        { "ioctl", 1, INT_MASK, TCGETS },
        { "ioctl", 1, INT_MASK, TIOCGWINSZ },
        { "ioctl", 1, INT_MASK, FIONREAD },
        { "ioctl", 1, INT_MASK, FIONBIO },
        { "ioctl", 1, INT_MASK, FIOCLEX },
        { "ioctl", 1, INT_MASK, FIONCLEX },
        /* PIDFD_GET_INFO (6.13): the cgroup a process to move is in. */
        { "ioctl", 1, INT_MASK, PIDREF_PIDFD_GET_INFO },

        /* sched_getattr()/sched_setattr(): the placer's own scheduler slice
         * (placer.c), on the calling thread alone (pid 0). */
        { "sched_getattr", 0, INT_MASK, 0 },
        { "sched_setattr", 0, INT_MASK, 0 },
        /* sched_setaffinity(): the topology read again when SMT is
         * switched on or off (machine.c): hwloc's x86 backend binds the
         * calling thread (pid 0) to each CPU in turn to read CPUID there,
         * and back. Never another task's. */
        { "sched_setaffinity", 0, INT_MASK, 0 },

        /* clone(): threads only (pthread_create), no new processes. */
        { "clone", CLONE_FLAGS_ARG, CLONE_VM | CLONE_THREAD, CLONE_VM | CLONE_THREAD },

        /* tgkill(): raise(), abort() and pthread_kill() within this
         * process; topod signals nobody else. */
        { "tgkill", 0, INT_MASK, ARG_SELF_PID },
};

/* Answered with ENOSYS instead: clone3() passes its flags in memory, where
 * a filter cannot check them; glibc then falls back to clone(), checked
 * above. */
static const char *const enosys_list[] = {
        "clone3",
};

/* ---------------------------------------------------------------------- */
/* the SIGSYS handler and what it reads */

#define SIGSYS_NAMES_MAX 512u /* syscall numbers named in the message; higher ones get a number only */
#define SIGSYS_NAME_MAX 32u   /* the longest name is 23 characters */

typedef struct SigsysName {
        char name[SIGSYS_NAME_MAX];
        bool conditional; /* allowed with some arguments */
} SigsysName;

/* A signal handler gets no userdata, hence this one static of the module:
 * filled by sandbox_install() before the handler is installed and only
 * read after, so the handler never calls into libseccomp (which
 * allocates). */
static struct {
        bool filled;
        uint32_t arch; /* native, AUDIT_ARCH_* */
        SigsysName names[SIGSYS_NAMES_MAX];
} sigsys_table;

static size_t append(char *buf, size_t n, size_t size, const char *s) {
        while (*s && n + 1 < size)
                buf[n++] = *s++;
        return n;
}

static size_t append_uint(char *buf, size_t n, size_t size, unsigned long v) {
        char digits[24];
        size_t k = 0;

        do
                digits[k++] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        while (k > 0 && n + 1 < size)
                buf[n++] = digits[--k];
        return n;
}

/* Async-signal-safe: formats by hand, write(2) to stderr, then dies of
 * SIGSYS with the default action. */
static void sigsys_handler(int sig, siginfo_t *si, void *ucontext) {
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        char line[256];
        size_t n = 0;
        sigset_t ss;

        (void) ucontext;
        if (si && si->si_code == SYS_SECCOMP) {
                int nr = si->si_syscall;
                const SigsysName *e = NULL;

                if (si->si_arch == sigsys_table.arch && nr >= 0 && (unsigned) nr < SIGSYS_NAMES_MAX &&
                    sigsys_table.names[nr].name[0])
                        e = &sigsys_table.names[nr];
                n = append(line, n, sizeof(line), "topod: seccomp: refused syscall ");
                n = append(line, n, sizeof(line), e ? e->name : "unknown");
                n = append(line, n, sizeof(line), " (");
                if (nr < 0) {
                        n = append(line, n, sizeof(line), "-");
                        n = append_uint(line, n, sizeof(line), (unsigned long) -(long) nr);
                } else
                        n = append_uint(line, n, sizeof(line), (unsigned long) nr);
                n = append(line, n, sizeof(line), ")");
                if (si->si_arch != sigsys_table.arch)
                        n = append(line, n, sizeof(line), " of another architecture");
                n = append(line, n, sizeof(line),
                           e && e->conditional
                                   ? "; the allow-list in src/topod/sandbox.c allows it only with other arguments"
                                   : "; the allow-list in src/topod/sandbox.c lacks it");
                line[n++] = '\n';
                for (size_t done = 0; done < n;) {
                        ssize_t w = write(STDERR_FILENO, line + done, n - done);

                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w <= 0)
                                break;
                        done += (size_t) w;
                }
        }
        (void) sigaction(sig, &dfl, NULL);
        sigemptyset(&ss);
        sigaddset(&ss, sig);
        (void) sigprocmask(SIG_UNBLOCK, &ss, NULL);
        (void) raise(sig);
        _exit(128 + sig); /* not reached: the default action of SIGSYS ends the process */
}

static void sigsys_table_fill(void) {
        if (sigsys_table.filled)
                return;
        sigsys_table.arch = seccomp_arch_native();
        for (unsigned nr = 0; nr < SIGSYS_NAMES_MAX; nr++) {
                char *s = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int) nr);

                if (s && strlen(s) < SIGSYS_NAME_MAX)
                        memcpy(sigsys_table.names[nr].name, s, strlen(s) + 1);
                free(s);
        }
        for (size_t i = 0; i < ELEMENTSOF(arg_rules); i++) {
                int nr = seccomp_syscall_resolve_name(arg_rules[i].name);

                if (nr >= 0 && (unsigned) nr < SIGSYS_NAMES_MAX)
                        sigsys_table.names[nr].conditional = true;
        }
        sigsys_table.filled = true;
}

/* ---------------------------------------------------------------------- */
/* building and loading the filter */

static void seccomp_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

_printf_(3, 4) static int fail(int k, char **ret_reason, const char *fmt, ...) {
        va_list ap;

        if (ret_reason) {
                char *s = NULL;

                va_start(ap, fmt);
                if (vasprintf(&s, fmt, ap) < 0)
                        s = NULL;
                va_end(ap);
                *ret_reason = s;
        }
        return k;
}

static int add_rules(scmp_filter_ctx ctx, char **ret_reason) {
        pid_t self = getpid();
        int k;

        for (size_t i = 0; i < ELEMENTSOF(allow_list); i++) {
                int nr = seccomp_syscall_resolve_name(allow_list[i]);

                if (nr == __NR_SCMP_ERROR)
                        continue; /* unknown to this libseccomp */
                /* A negative (pseudo) number is a call this architecture
                 * lacks: libseccomp ignores it, or maps it to the
                 * multiplexer (socketcall) where there is one. */
                k = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
                if (k < 0)
                        return fail(k, ret_reason, "cannot allow %s: %s", allow_list[i], strerror(-k));
        }

        for (size_t i = 0; i < ELEMENTSOF(arg_rules); i++) {
                const ArgRule *a = &arg_rules[i];
                int nr = seccomp_syscall_resolve_name(a->name);
                uint64_t value = a->value == ARG_SELF_PID ? (uint64_t) self : a->value;

                if (nr == __NR_SCMP_ERROR)
                        continue;
                k = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
                                     (struct scmp_arg_cmp) { .arg = a->arg, .op = SCMP_CMP_MASKED_EQ,
                                                             .datum_a = a->mask, .datum_b = value });
                if (k == -ENOMEM)
                        return fail(k, ret_reason, "cannot allow %s: %s", a->name, strerror(-k));
                if (k < 0) {
                        /* The condition cannot be put in a filter here: allow
                         * the call outright, and skip its other rows. */
                        k = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
                        if (k < 0)
                                return fail(k, ret_reason, "cannot allow %s: %s", a->name, strerror(-k));
                        while (i + 1 < ELEMENTSOF(arg_rules) && streq(arg_rules[i + 1].name, a->name))
                                i++;
                }
        }

        for (size_t i = 0; i < ELEMENTSOF(enosys_list); i++) {
                int nr = seccomp_syscall_resolve_name(enosys_list[i]);

                if (nr == __NR_SCMP_ERROR)
                        continue;
                k = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
                if (k < 0)
                        return fail(k, ret_reason, "cannot refuse %s with ENOSYS: %s", enosys_list[i], strerror(-k));
        }
        return 0;
}

/* What a failed seccomp(2) load meant. */
static int load_error(int k, char **ret_reason) {
        switch (-k) {
        case EINVAL: /* a kernel without seccomp filters, or one too old for a flag we set */
        case ENOSYS:
                return fail(-EOPNOTSUPP, ret_reason, "the kernel refused the filter (%s): built without "
                            "CONFIG_SECCOMP_FILTER, or too old", strerror(-k));
        case EACCES: /* no_new_privs is set by libseccomp first, so this is unexpected */
        case EPERM:  /* typically a container manager's own filter refusing seccomp(2) */
                return fail(-EPERM, ret_reason, "loading a seccomp filter is not permitted here (%s)", strerror(-k));
        case ESRCH: /* TSYNC: some thread has a filter of its own */
                return fail(-ESRCH, ret_reason, "a thread of the process has a different seccomp filter");
        default:
                return fail(k, ret_reason, "cannot load the seccomp filter: %s", strerror(-k));
        }
}

int sandbox_install(SandboxLevel level, char **ret_reason) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        struct sigaction sa = { .sa_sigaction = sigsys_handler, .sa_flags = SA_SIGINFO }, old;
        uint32_t action;
        int k;

        switch (level) {
        case SANDBOX_OFF:
                return 0;
        case SANDBOX_LOG:
                action = SCMP_ACT_LOG;
                break;
        case SANDBOX_ENFORCE:
                action = SCMP_ACT_TRAP;
                break;
        default:
                return fail(-EINVAL, ret_reason, "unknown sandbox level %d", (int) level);
        }

        /* API level 2: thread sync; 3: SECCOMP_RET_LOG and the log flag. */
        if (seccomp_api_get() < (level == SANDBOX_LOG ? 3u : 2u))
                return fail(-EOPNOTSUPP, ret_reason, "the kernel lacks seccomp %s (libseccomp API level %u)",
                            level == SANDBOX_LOG ? "SECCOMP_RET_LOG (Linux 4.14)" : "filters with thread sync (Linux 3.17)",
                            seccomp_api_get());

        /* The native architecture only: a call through another ABI (int 0x80
         * on x86_64) meets the same default. */
        ctx = seccomp_init(action);
        if (!ctx)
                return fail(-ENOMEM, ret_reason, "cannot set up a seccomp filter");
        if ((k = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, action)) < 0 ||
            (k = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1)) < 0 ||
            (k = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) < 0 ||
            /* Raw errnos from the kernel instead of ECANCELED. */
            (k = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1)) < 0)
                return fail(k, ret_reason, "cannot set the seccomp filter's attributes: %s", strerror(-k));
        if (level == SANDBOX_ENFORCE)
                /* Refusals in the audit log too: the only trace when the
                 * refusing thread blocks SIGSYS. (clone3's ENOSYS is
                 * logged as well, once per thread created under the
                 * filter; topod starts its threads before.) Best effort. */
                (void) seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1);
        /* A binary tree instead of a linear list: fewer instructions per
         * syscall for a list this long. Best effort. */
        (void) seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

        if ((k = add_rules(ctx, ret_reason)) < 0)
                return k;

        if (level == SANDBOX_ENFORCE) {
                sigsys_table_fill();
                sigfillset(&sa.sa_mask);
                if (sigaction(SIGSYS, &sa, &old) < 0)
                        return fail(negative_errno(), ret_reason, "cannot install the SIGSYS handler: %m");
        }
        k = seccomp_load(ctx);
        if (k < 0) {
                if (level == SANDBOX_ENFORCE)
                        (void) sigaction(SIGSYS, &old, NULL);
                return load_error(k, ret_reason);
        }
        return 0;
}

const char *sandbox_level_to_string(SandboxLevel l) {
        static const char *const names[_SANDBOX_LEVEL_MAX] = {
                [SANDBOX_OFF] = "off",
                [SANDBOX_LOG] = "log",
                [SANDBOX_ENFORCE] = "enforce",
        };

        return l >= 0 && l < _SANDBOX_LEVEL_MAX ? names[l] : "?";
}

static bool same_syscall_as_previous(size_t i) {
        /* Rows of arg_rules for one syscall are adjacent. */
        return i > 0 && streq(arg_rules[i - 1].name, arg_rules[i].name);
}

size_t sandbox_allowed_count(void) {
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(allow_list); i++)
                if (seccomp_syscall_resolve_name(allow_list[i]) >= 0)
                        n++;
        for (size_t i = 0; i < ELEMENTSOF(arg_rules); i++)
                if (!same_syscall_as_previous(i) && seccomp_syscall_resolve_name(arg_rules[i].name) >= 0)
                        n++;
        return n;
}
