/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The reference placer, the floor topod is measured against: proc connector
 * EXEC -> read /proc/<pid>/comm -> write the pid to <cgroup>/cgroup.procs
 * -> (with -c) PR_SCHED_CORE_CREATE for it. Nothing else: no rules file,
 * no scan of existing processes, no socket filter unless -f.
 *
 *   placer-ref -n COMM -g CGROUP-DIR [-c [-k]] [-f] [-s]
 *
 * -f asks the kernel for EXEC events only (the per-socket filter of Linux
 * 6.6, which topod uses where it can): one wake-up per process instead of
 * three (fork, exec, exit). An older kernel ignores the request and sends
 * nothing: the run then times out.
 * -k (with -c) keeps core scheduling switched on, as topod does: a thread
 * of ours holds a cookie of its own from the start and sleeps. Without it
 * the kernel turns core scheduling on at the first cookie and off when the
 * last one goes; probes that die before the next one is cookied make every
 * CREATE turn it on again (a machine-wide switch: measured in the test
 * guest, 4-6 ms for a CREATE then against 0.1 ms).
 * -s asks for a 0.1 ms scheduler slice (sched_setattr's sched_runtime of a
 * SCHED_OTHER thread, 6.12+), as topod's placer does: its wake-ups then
 * preempt a busy CPU. An older kernel keeps none; it says so. *
 * Prints "placer-ref: ready" on stderr once subscribed, and its counts when
 * stopped with SIGINT or SIGTERM. */

#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/sched-attr.h"

#ifndef PR_SCHED_CORE
#define PR_SCHED_CORE 62
#endif
#ifndef PR_SCHED_CORE_CREATE
#define PR_SCHED_CORE_CREATE 1
#endif

static volatile sig_atomic_t stop;

static void on_stop(int sig) {
        (void) sig;
        stop = 1;
}

/* mask 0: every event; else struct proc_input { op, mask } (6.6). */
static int mcast(int nl, enum proc_cn_mcast_op op, unsigned mask) {
        unsigned in[2] = { (unsigned) op, mask };
        size_t len = mask ? sizeof(in) : sizeof(in[0]);
        char buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(in))] __attribute__((aligned(NLMSG_ALIGNTO))) = {};
        struct nlmsghdr *h = (struct nlmsghdr *) buf;
        struct cn_msg *m = NLMSG_DATA(h);

        h->nlmsg_len = NLMSG_LENGTH(sizeof(*m) + len);
        h->nlmsg_type = NLMSG_DONE;
        m->id.idx = CN_IDX_PROC;
        m->id.val = CN_VAL_PROC;
        m->len = (unsigned short) len;
        memcpy(m->data, in, len);
        return send(nl, h, h->nlmsg_len, 0) < 0 ? -1 : 0;
}

/* The keep-alive (-k): a cookie of this thread's own, then sleep. */
static void *keep_alive(void *arg) {
        int *ret = arg;

        int k = prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, 0 /* this thread */, 0 /* PIDTYPE_PID */, 0) == 0 ? 0 : -errno;

        __atomic_store_n(ret, k, __ATOMIC_RELEASE);
        for (;;)
                pause();
        return NULL;
}

int main(int argc, char *argv[]) {
        const char *comm = NULL, *group = NULL;
        char path[4096], buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
        unsigned long execs = 0, placed = 0, failed = 0, cookies = 0, lost = 0;
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
        struct sigaction act = { .sa_handler = on_stop }; /* no SA_RESTART: recv returns EINTR */
        bool cookie = false, cookie_said = false, filter = false, slice = false, keep = false;
        int c, nl, procs;

        while ((c = getopt(argc, argv, "n:g:cfks")) >= 0)
                switch (c) {
                case 'n': comm = optarg; break;
                case 'g': group = optarg; break;
                case 'c': cookie = true; break;
                case 'f': filter = true; break;
                case 'k': keep = true; break;
                case 's': slice = true; break;
                default: goto usage;
                }
        if (!comm || !group || optind != argc || (keep && !cookie)) {
usage:
                fprintf(stderr, "usage: placer-ref -n COMM -g CGROUP-DIR [-c [-k]] [-f] [-s]\n");
                return 2;
        }
        if (keep) {
                static int kept = 1;
                pthread_t t;
                sigset_t all, old;

                /* Signals for the main thread alone: its recv is what they stop. */
                sigfillset(&all);
                pthread_sigmask(SIG_BLOCK, &all, &old);
                if (pthread_create(&t, NULL, keep_alive, &kept) != 0) {
                        fprintf(stderr, "placer-ref: cannot start the keep-alive thread\n");
                        return 1;
                }
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                while (__atomic_load_n(&kept, __ATOMIC_ACQUIRE) > 0)
                        usleep(1000);
                if (kept < 0)
                        fprintf(stderr, "placer-ref: no keep-alive cookie: %s\n", strerror(-kept));
        }
        if (slice)
                fprintf(stderr, "placer-ref: scheduler slice %llu ns\n", (unsigned long long) sched_attr_ask_slice(100000));
        snprintf(path, sizeof(path), "%s/cgroup.procs", group);
        if ((procs = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
                fprintf(stderr, "placer-ref: %s: %m\n", path);
                return 1;
        }
        sigaction(SIGINT, &act, NULL);
        sigaction(SIGTERM, &act, NULL);

        /* Subscribe: bind to the proc connector's group, then ask for events. */
        nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
        if (nl < 0 || bind(nl, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                fprintf(stderr, "placer-ref: proc connector: %m\n");
                return 1;
        }
        if (mcast(nl, PROC_CN_MCAST_LISTEN, filter ? 0x2u /* PROC_EVENT_EXEC */ : 0) < 0) {
                fprintf(stderr, "placer-ref: PROC_CN_MCAST_LISTEN: %m\n");
                return 1;
        }
        fprintf(stderr, "placer-ref: ready: %s -> %s%s\n", comm, group, cookie ? " + cookie" : "");

        while (!stop) {
                ssize_t n = recv(nl, buf, sizeof(buf), 0);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == ENOBUFS) { /* the socket overflowed: events are lost */
                                lost++;
                                continue;
                        }
                        fprintf(stderr, "placer-ref: recv: %m\n");
                        return 1;
                }
                for (struct nlmsghdr *h = (struct nlmsghdr *) buf; NLMSG_OK(h, (size_t) n); h = NLMSG_NEXT(h, n)) {
                        struct cn_msg *m = NLMSG_DATA(h);
                        struct proc_event *ev = (struct proc_event *) m->data;
                        char name[32], num[16];
                        ssize_t k;
                        int fd, len;
                        pid_t pid;

                        if (h->nlmsg_type != NLMSG_DONE || ev->what != PROC_EVENT_EXEC)
                                continue;
                        execs++;
                        pid = ev->event_data.exec.process_tgid;
                        snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
                        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                                continue; /* exited already */
                        k = read(fd, name, sizeof(name) - 1);
                        close(fd);
                        if (k <= 0)
                                continue;
                        name[k] = '\0';
                        name[strcspn(name, "\n")] = '\0';
                        if (strcmp(name, comm) != 0)
                                continue;
                        len = snprintf(num, sizeof(num), "%d", (int) pid);
                        if (write(procs, num, (size_t) len) != len) {
                                if (errno != ESRCH) /* ESRCH: it exited meanwhile */
                                        failed++;
                                continue;
                        }
                        placed++;
                        if (!cookie)
                                continue;
                        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, pid, 0 /* PIDTYPE_PID */, 0) == 0)
                                cookies++;
                        else if ((errno == EINVAL || errno == ENODEV) && !cookie_said) {
                                /* EINVAL: no CONFIG_SCHED_CORE; ENODEV: no SMT */
                                fprintf(stderr, "placer-ref: no cookies here (%s), cgroup only\n",
                                        errno == EINVAL ? "kernel without core scheduling" : "SMT off");
                                cookie_said = true;
                        }
                }
        }
        (void) mcast(nl, PROC_CN_MCAST_IGNORE, 0);
        fprintf(stderr, "placer-ref: %lu execs, %lu placed, %lu cookies, %lu failed, %lu overflows\n", execs, placed,
                cookies, failed, lost);
        return 0;
}
