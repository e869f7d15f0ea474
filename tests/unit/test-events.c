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
#include <sys/wait.h>
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
                        ASSERT_TRUE(ev[i].timestamp_ns > 0);
                }
        }
}

static pid_t spawn_true(void) {
        pid_t c = fork();

        ASSERT_TRUE(c >= 0);
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

        ASSERT_TRUE(proc_events_lazy_fd(e) < 0);
        collect(e, true, c, &s);
        ASSERT_TRUE(s.fork && s.exec && s.exit);
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
        ASSERT_TRUE(lazy.fork && lazy.exit);
        ASSERT_FALSE(lazy.exec);
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
                return 0;
        }
        RUN_WITH(test_split, split);
        return 0;
}
