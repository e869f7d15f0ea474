/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proc connector on this kernel: one socket, and split (EXEC and COMM
 * on one, FORK and EXIT on the other) where the kernel filters per socket.
 * Real events from a child that forks and execs. Needs root
 * (CAP_NET_ADMIN) and the connector: exit 77 otherwise; the split part
 * says so when the kernel cannot filter (before 6.6). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "observe/events.h"
#include "tests.h"

#define RUN_WITH(fn, arg)                           \
        do {                                        \
                printf("== %s\n", #fn);             \
                fflush(stdout);                     \
                fn(arg);                            \
        } while (0)

typedef struct Seen {
        bool fork, exec, exit;
} Seen;

/* Read from one fd until the child's fork, exec and exit of interest are
 * all in, or a second passes. */
static void collect(ProcEvents *e, bool urgent, pid_t child, Seen *ret) {
        int fd = urgent ? proc_events_fd(e) : proc_events_lazy_fd(e);

        for (int tries = 0; tries < 100; tries++) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                TaskEvent ev[64];
                size_t n;

                if (poll(&p, 1, 10) <= 0)
                        continue;
                if (urgent)
                        ASSERT_OK(proc_events_read_urgent(e, ev, ELEMENTSOF(ev), &n));
                else
                        ASSERT_OK(proc_events_read(e, ev, ELEMENTSOF(ev), &n));
                for (size_t i = 0; i < n; i++) {
                        if (ev[i].tgid != child)
                                continue;
                        ret->fork = ret->fork || (ev[i].type == TASK_EVENT_FORK && ev[i].pid == child);
                        ret->exec = ret->exec || ev[i].type == TASK_EVENT_EXEC;
                        ret->exit = ret->exit || (ev[i].type == TASK_EVENT_EXIT && ev[i].pid == child);
                        ASSERT_GT(ev[i].timestamp_ns, 0);
                }
        }
}

static pid_t spawn_true(void) {
        pid_t c = fork();

        ASSERT_GE(c, 0);
        if (c == 0) {
                execl("/bin/true", "true", (char *) NULL);
                _exit(127);
        }
        ASSERT_EQ(waitpid(c, NULL, 0), c);
        return c;
}

static void test_one_socket(ProcEvents *e) {
        Seen s = {};
        pid_t c = spawn_true();

        ASSERT_LT(proc_events_lazy_fd(e), 0);
        collect(e, true, c, &s);
        ASSERT_TRUE(s.fork);
        ASSERT_TRUE(s.exec);
        ASSERT_TRUE(s.exit);
}

static void test_split(ProcEvents *e) {
        Seen urgent = {}, lazy = {};
        pid_t c = spawn_true();

        /* The exec on the urgent socket alone, fork and exit on the other. */
        collect(e, true, c, &urgent);
        ASSERT_TRUE(urgent.exec);
        ASSERT_FALSE(urgent.fork);
        ASSERT_FALSE(urgent.exit);
        collect(e, false, c, &lazy);
        ASSERT_TRUE(lazy.fork);
        ASSERT_TRUE(lazy.exit);
        ASSERT_FALSE(lazy.exec);
}

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static void on_alarm(int sig) {
        (void) sig;
}

/* The placer's read: it waits for the exec, and a signal ends a wait that
 * nothing else would. */
static void test_wait(ProcEvents *e) {
        struct sigaction sa = { .sa_handler = on_alarm }, old; /* no SA_RESTART */
        struct itimerval tick = { .it_value = { .tv_usec = 50000 } };
        bool exec = false;
        pid_t c;
        int k = 0;

        ASSERT_OK(sigaction(SIGALRM, &sa, &old));
        c = spawn_true();
        /* A backstop: a wait that never returns fails instead of hanging. */
        alarm(5);
        while (!exec) {
                TaskEvent ev[8];
                size_t n = SIZE_MAX;

                ASSERT_OK(proc_events_wait_urgent(e, ev, ELEMENTSOF(ev), &n));
                ASSERT_LE(n, ELEMENTSOF(ev));
                for (size_t i = 0; i < n; i++)
                        exec = exec || (ev[i].type == TASK_EVENT_EXEC && ev[i].tgid == c);
        }
        alarm(0);
        /* Drained: the next wait blocks until a signal (other execs on
         * this machine may come first: each returns with its events). A
         * tick every 50 ms, as placer_stop() sends again: one that lands
         * between two waits, or after a datagram, ends none. */
        tick.it_interval = tick.it_value;
        ASSERT_OK(setitimer(ITIMER_REAL, &tick, NULL));
        for (uint64_t until = now_usec() + 5000000u; k == 0 && now_usec() < until;) {
                TaskEvent ev[8];
                size_t n;

                k = proc_events_wait_urgent(e, ev, ELEMENTSOF(ev), &n);
        }
        ASSERT_EQ(k, -EINTR);
        tick = (struct itimerval) {};
        ASSERT_OK(setitimer(ITIMER_REAL, &tick, NULL));
        /* The other reads never block on the socket made blocking: one
         * that did is killed by the alarm. */
        {
                struct sigaction dfl = { .sa_handler = SIG_DFL };
                TaskEvent ev[8];
                size_t n = SIZE_MAX;

                ASSERT_OK(sigaction(SIGALRM, &dfl, NULL));
                alarm(5);
                ASSERT_OK(proc_events_read_urgent(e, ev, ELEMENTSOF(ev), &n));
                alarm(0);
                ASSERT_LE(n, ELEMENTSOF(ev));
        }
        ASSERT_OK(sigaction(SIGALRM, &old, NULL));
}

int main(void) {
        _cleanup_(proc_events_freep) ProcEvents *one = NULL, *split = NULL;
        int k;

        if (geteuid() != 0) {
                fprintf(stderr, "test-events: needs root (the proc connector): skipped\n");
                return 77;
        }
        k = proc_events_open(&one);
        if (k < 0) {
                fprintf(stderr, "test-events: no proc connector here (%s): skipped\n", strerror(-k));
                return 77;
        }
        RUN_WITH(test_one_socket, one);
        one = proc_events_free(one);

        ASSERT_OK(proc_events_open_split(&split));
        if (proc_events_lazy_fd(split) < 0) {
                fprintf(stderr, "test-events: SKIPPED the split: this kernel does not filter proc connector "
                                "events per socket (Linux 6.6); one socket instead\n");
                RUN_WITH(test_one_socket, split);
                RUN_WITH(test_wait, split);
                return 0;
        }
        RUN_WITH(test_split, split);
        RUN_WITH(test_wait, split);
        return 0;
}
