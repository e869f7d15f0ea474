/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cost per proc-connector event: a child process forks and reaps N short
 * children (each a FORK and an EXIT event, an EXEC too with -e) while this
 * process reads and parses the events. Prints events seen, overruns and the
 * reader's CPU per event. Needs root (CAP_NET_ADMIN). Asserts nothing.
 *
 *   bench-events [-n CHILDREN] [-e] */

#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "observe/events.h"

static double thread_cpu(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static double wall(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void storm(unsigned n, bool do_exec) {
        for (unsigned i = 0; i < n; i++) {
                pid_t p = fork();

                if (p == 0) {
                        if (do_exec)
                                execl("/bin/true", "true", (char *) NULL);
                        _exit(0);
                }
                if (p > 0)
                        waitpid(p, NULL, 0);
        }
}

int main(int argc, char *argv[]) {
        _cleanup_(proc_events_freep) ProcEvents *e = NULL;
        unsigned n = 5000, counts[_TASK_EVENT_MAX] = {};
        bool do_exec = false;
        double c0, w0, cpu, secs;
        unsigned long total = 0;
        pid_t child;
        int c, k;

        while ((c = getopt(argc, argv, "n:e")) >= 0)
                switch (c) {
                case 'n':
                        n = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'e':
                        do_exec = true;
                        break;
                default:
                        fprintf(stderr, "usage: bench-events [-n CHILDREN] [-e]\n");
                        return 2;
                }

        k = proc_events_open(&e);
        if (k < 0) {
                printf("bench-events: proc connector unavailable: %s (needs root)\n", errno_name(k));
                return 0;
        }
        c0 = thread_cpu();
        w0 = wall();
        child = fork();
        if (child == 0) {
                storm(n, do_exec);
                _exit(0);
        }
        for (bool done = false; !done;) {
                struct pollfd p = { .fd = proc_events_fd(e), .events = POLLIN };
                TaskEvent ev[256];
                size_t got;

                if (waitpid(child, NULL, WNOHANG) == child)
                        done = true; /* drain what is queued, then stop */
                if (poll(&p, 1, done ? 0 : 100) < 0)
                        break;
                for (;;) {
                        if (proc_events_read(e, ev, ELEMENTSOF(ev), &got) < 0 || got == 0)
                                break;
                        for (size_t i = 0; i < got; i++)
                                counts[ev[i].type]++;
                        total += got;
                }
        }
        cpu = thread_cpu() - c0;
        secs = wall() - w0;
        printf("bench-events: %u children%s in %.2f s: %lu events (fork %u, exec %u, exit %u, comm %u), overruns %u\n", n,
               do_exec ? " with exec" : "", secs, total, counts[TASK_EVENT_FORK], counts[TASK_EVENT_EXEC],
               counts[TASK_EVENT_EXIT], counts[TASK_EVENT_COMM], counts[TASK_EVENT_OVERRUN]);
        printf("bench-events: reader CPU %.1f ms, %.2f us per event, %.0f events/s\n", cpu * 1e3,
               total ? cpu / (double) total * 1e6 : 0.0, secs > 0 ? (double) total / secs : 0.0);
        return 0;
}
