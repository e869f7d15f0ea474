/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The probe exec-spawn starts (built as "topod-probe": the file name is the
 * comm the placers' rule matches). It notes CLOCK_MONOTONIC first thing in
 * main(), then polls /proc/self/cgroup (and, if asked, its core-scheduling
 * cookie) until it is placed or gives up, and writes one ProbeRecord to fd
 * EXEC_PROBE_FD. So its ruler is "probe running -> placed": the exec itself
 * (and the dynamic loader, if any) is before its start; the kernel's
 * sched_process_exec -> cgroup_attach_task ruler covers that.
 *
 *   topod-probe GROUP CONTROLLER|- TIMEOUT_US COOKIE(0|1) POLL_US [SPAWN_NS]
 *
 * SPAWN_NS, the spawner's CLOCK_MONOTONIC just before it spawned us, gives
 * a second figure that includes the exec: spawn -> placed.
 *
 * Placed: a line of /proc/self/cgroup whose path ends in /GROUP, the
 * cgroup2 line "0::" with CONTROLLER "-", else the v1 line listing
 * CONTROLLER. GROUP "cpus=LIST" instead: the cgroup2 cgroup the probe is
 * in (wherever it is) has cpuset.cpus.effective LIST, as the kernel
 * prints it: a placement that moves nothing (a unit given its CPUs where
 * it is) is seen as one that moves. Polling: every POLL_US for the first millisecond, then ten
 * times that up to 10 ms, then every millisecond (the reading is late by
 * at most one interval). */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "exec-bench.h"

#ifndef PR_SCHED_CORE
#define PR_SCHED_CORE 62
#endif
#ifndef PR_SCHED_CORE_GET
#define PR_SCHED_CORE_GET 0
#endif

static uint64_t ns_of(const struct timespec *t) {
        return (uint64_t) t->tv_sec * 1000000000u + (uint64_t) t->tv_nsec;
}

static uint64_t now_ns(void) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return ns_of(&t);
}

/* Does one line "hier:controllers:path" say we are in .../group? */
static int line_placed(const char *line, const char *group, const char *controller) {
        const char *c1 = strchr(line, ':'), *c2, *path;
        size_t gl = strlen(group), pl;

        if (!c1 || !(c2 = strchr(c1 + 1, ':')))
                return 0;
        path = c2 + 1;
        if (!controller) {
                if (c1 - line != 1 || line[0] != '0' || c2 != c1 + 1)
                        return 0;
        } else {
                size_t cl = strlen(controller);
                const char *p = c1 + 1;
                int found = 0;

                while (p < c2 && !found) {
                        const char *e = memchr(p, ',', (size_t) (c2 - p));

                        if (!e)
                                e = c2;
                        found = (size_t) (e - p) == cl && memcmp(p, controller, cl) == 0;
                        p = e + 1;
                }
                if (!found)
                        return 0;
        }
        pl = strlen(path);
        return pl > gl && path[pl - gl - 1] == '/' && memcmp(path + pl - gl, group, gl) == 0;
}

/* Does the cgroup2 cgroup at path read cpuset.cpus.effective == cpus? A
 * cgroup whose parent has no cpuset controller for its children (a scope
 * in a slice given CPUs) has no such file: its CPUs are those of the
 * nearest ancestor that has one. */
static int cpus_placed(const char *path, const char *cpus) {
        char dir[4096], file[4096 + 64], buf[256];
        ssize_t n;
        int fd;

        if (snprintf(dir, sizeof(dir), "%s", path) >= (int) sizeof(dir))
                return 0;
        for (;;) {
                char *slash;

                snprintf(file, sizeof(file), "/sys/fs/cgroup%s/cpuset.cpus.effective", dir);
                if ((fd = open(file, O_RDONLY | O_CLOEXEC)) >= 0 || errno != ENOENT)
                        break;
                if (!(slash = strrchr(dir, '/')) || dir[1] == '\0')
                        return 0;
                if (slash == dir)
                        slash[1] = '\0'; /* the root */
                else
                        *slash = '\0';
        }
        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        return strcmp(buf, cpus) == 0;
}

static int cgroup_placed(char *text, const char *group, const char *controller) {
        if (strncmp(group, "cpus=", 5) == 0) {
                const char *path = strstr(text, "0::");

                if (!path || (path != text && path[-1] != '\n'))
                        return 0;
                path += 3;
                text[strcspn(text, "\n")] = '\0'; /* the one line of a pure cgroup2 host */
                return cpus_placed(path, group + 5);
        }
        for (char *line = text, *nl; line && *line; line = nl) {
                if ((nl = strchr(line, '\n')))
                        *nl++ = '\0';
                if (line_placed(line, group, controller))
                        return 1;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        struct timespec start;
        const char *group, *controller;
        uint64_t t0, timeout_ns, poll_ns, now = 0, elapsed;
        ProbeRecord rec = {};
        char buf[4096];
        int fd, want_cookie;

        clock_gettime(CLOCK_MONOTONIC, &start);
        t0 = ns_of(&start);
        if (argc != 6 && argc != 7) {
                fprintf(stderr, "usage: topod-probe GROUP CONTROLLER|- TIMEOUT_US COOKIE(0|1) POLL_US [SPAWN_NS]\n");
                return 2;
        }
        group = argv[1];
        controller = strcmp(argv[2], "-") == 0 ? NULL : argv[2];
        timeout_ns = strtoull(argv[3], NULL, 10) * 1000u;
        want_cookie = argv[4][0] == '1';
        poll_ns = strtoull(argv[5], NULL, 10) * 1000u;
        (void) prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0); /* short sleeps stay short */
        rec.pid = (int32_t) getpid();

        fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
        for (;;) {
                ssize_t n = fd < 0 ? -1 : pread(fd, buf, sizeof(buf) - 1, 0);
                int placed;

                if (n < 0) {
                        rec.flags |= PROBE_BAD_CGROUP;
                        break;
                }
                buf[n] = '\0';
                placed = cgroup_placed(buf, group, controller);
                if (placed && want_cookie && !(rec.flags & PROBE_NO_COOKIE)) {
                        unsigned long long cookie = 0;

                        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, 0, 0 /* PIDTYPE_PID */, &cookie) < 0) {
                                if (errno == EINVAL || errno == ENODEV) /* no core scheduling, or no SMT */
                                        rec.flags |= PROBE_NO_COOKIE;
                        } else if (cookie == 0)
                                placed = 0;
                        else
                                rec.flags |= PROBE_COOKIE;
                }
                now = now_ns();
                elapsed = now - t0;
                if (placed) {
                        rec.flags |= PROBE_PLACED | (rec.polls == 0 ? PROBE_AT_START : 0);
                        break;
                }
                if (elapsed >= timeout_ns)
                        break;
                rec.polls++;
                {
                        uint64_t d = elapsed < 1000000u ? poll_ns : elapsed < 10000000u ? poll_ns * 10 : 1000000u;
                        struct timespec ts = { .tv_sec = 0, .tv_nsec = (long) (d ?: 1) };

                        nanosleep(&ts, NULL);
                }
        }
        if (!(rec.flags & PROBE_PLACED))
                now = now_ns();
        rec.latency_ns = now - t0;
        if (argc == 7) {
                uint64_t spawned = strtoull(argv[6], NULL, 10);

                rec.spawn_ns = now > spawned ? now - spawned : 0;
        }
        if (write(EXEC_PROBE_FD, &rec, sizeof(rec)) != (ssize_t) sizeof(rec)) {
                /* Run by hand: no pipe. */
                printf("pid %d %s after %.1f µs, %u polls, flags 0x%x\n", (int) rec.pid,
                       rec.flags & PROBE_PLACED ? "placed" : "not placed", (double) rec.latency_ns / 1e3, rec.polls,
                       rec.flags);
        }
        return 0;
}
