/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* exec-spawn: fork+exec the probe (topod-probe, see exec-probe.c) at a fixed
 * rate, without waiting for each, and summarise what the probes report:
 * "probe running -> placed" latency, timeouts, lost probes. Percentiles are
 * over the placed probes; timeouts are counted apart.
 *
 *   exec-spawn [-r RATE] [-d SECONDS | -n COUNT] [-g GROUP] [-C CONTROLLER]
 *              [-c] [-t TIMEOUT_MS] [-i POLL_US] [-p PROBE]
 *              [--kv | --json] [--raw FILE]
 *   exec-spawn --can-cookie
 *   exec-spawn --cpu-ns PID
 *
 * Each probe also gets the time just before its spawn, so a second figure,
 * spawn -> placed, includes the fork and exec.
 *
 * --cpu-ns prints the CPU time process PID has used, in nanoseconds: the
 * kernel's process CPU clock (clock_getcpuclockid()), which adds up every
 * thread, those that have exited included; exec-latency reads it before
 * and after a run for a placer's whole CPU.
 *
 * Spawns run on an absolute schedule (start + i/RATE): a late spawn is not
 * made up by a burst, and the largest lag is reported. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec-bench.h"

#ifndef PR_SCHED_CORE
#define PR_SCHED_CORE 62
#endif
#ifndef PR_SCHED_CORE_GET
#define PR_SCHED_CORE_GET 0
#endif

#define MAX_PROBES 1000000u

extern char **environ;

typedef struct Run {
        ProbeRecord *recs;
        size_t n_recs, n_spawned, n_spawn_failed, n_exit_failed;
        uint64_t lag_max_ns, first_ns, last_ns;
        double wall_s;
} Run;

static uint64_t now_ns(void) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

static int can_cookie(void) {
        unsigned long long cookie = 0;

        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, 0, 0, &cookie) == 0) {
                puts("yes");
                return 0;
        }
        /* EINVAL: not built with CONFIG_SCHED_CORE; ENODEV: SMT off or absent. */
        printf("no: %s\n", errno == EINVAL   ? "kernel without core scheduling (PR_SCHED_CORE_GET: EINVAL)"
                           : errno == ENODEV ? "no SMT (PR_SCHED_CORE_GET: ENODEV)"
                                             : strerror(errno));
        return 1;
}

static int print_cpu_ns(const char *arg) {
        char *end = NULL;
        long pid;
        clockid_t clock;
        struct timespec t;
        int k;

        errno = 0;
        pid = strtol(arg, &end, 10);
        if (errno != 0 || end == arg || *end != '\0' || pid <= 0 || pid > INT_MAX) {
                fprintf(stderr, "exec-spawn: --cpu-ns takes a pid, not '%s'\n", arg);
                return 2;
        }
        k = clock_getcpuclockid((pid_t) pid, &clock);
        if (k != 0) {
                fprintf(stderr, "exec-spawn: pid %ld: no CPU clock: %s\n", pid, strerror(k));
                return 1;
        }
        if (clock_gettime(clock, &t) < 0) {
                fprintf(stderr, "exec-spawn: pid %ld: reading its CPU clock: %m\n", pid);
                return 1;
        }
        printf("%" PRIu64 "\n", (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec);
        return 0;
}

/* Take whatever records the pipe holds (it is non-blocking). */
static void collect(int fd, Run *r, size_t cap) {
        for (;;) {
                ProbeRecord buf[64];
                ssize_t n = read(fd, buf, sizeof(buf));

                if (n <= 0)
                        return;
                /* Each record is one write of less than PIPE_BUF: whole. */
                for (size_t i = 0; i < (size_t) n / sizeof(ProbeRecord) && r->n_recs < cap; i++)
                        r->recs[r->n_recs++] = buf[i];
        }
}

static void reap(Run *r) {
        int st;

        while (waitpid(-1, &st, WNOHANG) > 0)
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                        r->n_exit_failed++;
}

static void wait_readable(int fd, uint64_t ns) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        struct timespec ts = { .tv_sec = (time_t) (ns / 1000000000u), .tv_nsec = (long) (ns % 1000000000u) };

        (void) ppoll(&p, 1, &ts, NULL);
}

static char *probe_next_to_self(void) {
        char self[PATH_MAX], *slash, *ret = NULL;
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

        if (n <= 0)
                return NULL;
        self[n] = '\0';
        if ((slash = strrchr(self, '/')))
                *slash = '\0';
        if (asprintf(&ret, "%s/topod-probe", self) < 0)
                return NULL;
        return ret;
}

static void usage(FILE *f) {
        fprintf(f, "usage: exec-spawn [-r RATE] [-d SECONDS | -n COUNT] [-g GROUP] [-C CONTROLLER] [-c]\n"
                   "                  [-t TIMEOUT_MS] [-i POLL_US] [-p PROBE] [--kv | --json] [--raw FILE]\n"
                   "       exec-spawn --can-cookie\n"
                   "       exec-spawn --cpu-ns PID\n"
                   "  -r RATE        probes started per second (default 100)\n"
                   "  -d SECONDS     for this long (default 5), or -n COUNT probes\n"
                   "  -g GROUP       the probe waits for a cgroup path ending in /GROUP (default bench)\n"
                   "  -C CONTROLLER  look at that cgroup v1 hierarchy instead of cgroup2\n"
                   "  -c             also wait for a core-scheduling cookie\n"
                   "  -t TIMEOUT_MS  a probe gives up after this (default 1000)\n"
                   "  -i POLL_US     the probe's polling interval for its first ms (default 10)\n"
                   "  -p PROBE       the probe binary, named as the rule's comm (default: topod-probe next to exec-spawn)\n");
}

int main(int argc, char *argv[]) {
        enum { ARG_KV = 0x100, ARG_JSON, ARG_RAW, ARG_CAN_COOKIE, ARG_CPU_NS };
        static const struct option options[] = {
                { "rate", required_argument, NULL, 'r' },       { "seconds", required_argument, NULL, 'd' },
                { "count", required_argument, NULL, 'n' },      { "group", required_argument, NULL, 'g' },
                { "controller", required_argument, NULL, 'C' }, { "cookie", no_argument, NULL, 'c' },
                { "timeout-ms", required_argument, NULL, 't' }, { "poll-us", required_argument, NULL, 'i' },
                { "probe", required_argument, NULL, 'p' },      { "kv", no_argument, NULL, ARG_KV },
                { "json", no_argument, NULL, ARG_JSON },        { "raw", required_argument, NULL, ARG_RAW },
                { "can-cookie", no_argument, NULL, ARG_CAN_COOKIE }, { "cpu-ns", required_argument, NULL, ARG_CPU_NS },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        double rate = 100, seconds = 5;
        unsigned long count = 0, timeout_ms = 1000, poll_us = 10;
        const char *group = "bench", *controller = "-", *raw = NULL;
        char *probe = NULL, arg_timeout[32], arg_poll[32], arg_spawn[32];
        bool cookie = false, kv = false, json = false;
        posix_spawn_file_actions_t fa;
        int c, pfd[2], wfd;
        uint64_t t0, period, deadline;
        Run r = {};
        size_t cap;

        while ((c = getopt_long(argc, argv, "r:d:n:g:C:ct:i:p:h", options, NULL)) >= 0)
                switch (c) {
                case 'r': rate = strtod(optarg, NULL); break;
                case 'd': seconds = strtod(optarg, NULL); break;
                case 'n': count = strtoul(optarg, NULL, 10); break;
                case 'g': group = optarg; break;
                case 'C': controller = optarg; break;
                case 'c': cookie = true; break;
                case 't': timeout_ms = strtoul(optarg, NULL, 10); break;
                case 'i': poll_us = strtoul(optarg, NULL, 10); break;
                case 'p': probe = optarg; break;
                case ARG_KV: kv = true; break;
                case ARG_JSON: json = true; break;
                case ARG_RAW: raw = optarg; break;
                case ARG_CAN_COOKIE: return can_cookie();
                case ARG_CPU_NS: return print_cpu_ns(optarg);
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        if (optind != argc || !(rate > 0 && rate <= 100000) || !(seconds > 0) || timeout_ms == 0 ||
            timeout_ms > 60000 || !*group || strchr(group, '/')) {
                usage(stderr);
                return 2;
        }
        if (count == 0)
                count = (unsigned long) (rate * seconds + 0.5);
        if (count == 0 || count > MAX_PROBES) {
                fprintf(stderr, "exec-spawn: %lu probes: 1 to %u\n", count, MAX_PROBES);
                return 2;
        }
        if (!probe && !(probe = probe_next_to_self()))
                return 1;
        if (access(probe, X_OK) < 0) {
                fprintf(stderr, "exec-spawn: probe %s: %m\n", probe);
                return 1;
        }
        cap = count;
        if (!(r.recs = calloc(cap, sizeof(*r.recs))))
                return 1;
        /* The write end goes to the probes as fd 3: keep it off 0-3 here so
         * the dup2 below really copies it (and clears O_CLOEXEC). */
        if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0 || (wfd = fcntl(pfd[1], F_DUPFD_CLOEXEC, 10)) < 0) {
                perror("exec-spawn: pipe");
                return 1;
        }
        close(pfd[1]);
        /* The probe blocks on nothing but a full pipe, which we drain. */
        if (fcntl(wfd, F_SETFL, 0) < 0 || posix_spawn_file_actions_init(&fa) != 0 ||
            posix_spawn_file_actions_adddup2(&fa, wfd, EXEC_PROBE_FD) != 0)
                return 1;
        snprintf(arg_timeout, sizeof(arg_timeout), "%lu", timeout_ms * 1000);
        snprintf(arg_poll, sizeof(arg_poll), "%lu", poll_us);
        signal(SIGPIPE, SIG_IGN);

        period = (uint64_t) (1e9 / rate);
        t0 = now_ns();
        for (size_t i = 0; i < count;) {
                uint64_t target = t0 + i * period, now = now_ns();
                char *pargv[] = { probe, (char *) group, (char *) controller, arg_timeout, cookie ? "1" : "0",
                                  arg_poll, arg_spawn, NULL };
                pid_t pid;
                int k;

                if (now < target) {
                        wait_readable(pfd[0], target - now);
                        collect(pfd[0], &r, cap);
                        reap(&r);
                        continue;
                }
                if (now - target > r.lag_max_ns)
                        r.lag_max_ns = now - target;
                now = now_ns();
                snprintf(arg_spawn, sizeof(arg_spawn), "%" PRIu64, now);
                k = posix_spawn(&pid, probe, &fa, NULL, pargv, environ);
                if (k == 0) {
                        if (r.n_spawned == 0)
                                r.first_ns = now;
                        r.last_ns = now;
                }
                if (k != 0) {
                        /* EAGAIN (process limit) and the like: counted, not retried. */
                        if (r.n_spawn_failed++ == 0)
                                fprintf(stderr, "exec-spawn: spawn failed: %s\n", strerror(k));
                }
                r.n_spawned += k == 0;
                i++;
        }
        deadline = now_ns() + timeout_ms * 1000000u + 2000000000u;
        for (uint64_t now; r.n_recs < r.n_spawned && (now = now_ns()) < deadline;) {
                wait_readable(pfd[0], deadline - now);
                collect(pfd[0], &r, cap);
                reap(&r);
        }
        r.wall_s = (double) (now_ns() - t0) / 1e9;
        reap(&r);

        {
                uint64_t *lat = calloc(r.n_recs + 1, sizeof(uint64_t)), *slat = calloc(r.n_recs + 1, sizeof(uint64_t));
                size_t placed = 0, timeouts = 0, at_start = 0, no_cookie = 0, bad = 0;
                LatencyStats s, ss;
                /* What the schedule became: a busy machine spawns late. */
                double achieved = r.n_spawned > 1 && r.last_ns > r.first_ns
                                          ? (double) (r.n_spawned - 1) * 1e9 / (double) (r.last_ns - r.first_ns)
                                          : rate;
                FILE *fr = raw ? fopen(raw, "we") : NULL;

                if (!lat || !slat)
                        return 1;
                for (size_t i = 0; i < r.n_recs; i++) {
                        const ProbeRecord *p = &r.recs[i];

                        if (fr)
                                fprintf(fr, "%d 0x%x %.1f %.1f %u\n", (int) p->pid, p->flags, (double) p->latency_ns / 1e3,
                                        (double) p->spawn_ns / 1e3, p->polls);
                        no_cookie += !!(p->flags & PROBE_NO_COOKIE);
                        bad += !!(p->flags & PROBE_BAD_CGROUP);
                        if (!(p->flags & PROBE_PLACED)) {
                                timeouts++;
                                continue;
                        }
                        at_start += !!(p->flags & PROBE_AT_START);
                        slat[placed] = p->spawn_ns;
                        lat[placed++] = p->latency_ns;
                }
                if (fr)
                        fclose(fr);
                latency_stats(lat, placed, &s);
                latency_stats(slat, placed, &ss);
                if (kv) {
                        printf("rate=%g seconds=%.2f spawned=%zu spawn_failed=%zu placed=%zu timeouts=%zu lost=%zu "
                               "at_start=%zu cookie=%d no_cookie=%zu bad_cgroup=%zu lag_max_us=%.1f achieved_rate=%.1f",
                               rate, (double) count / rate, r.n_spawned, r.n_spawn_failed, placed, timeouts,
                               r.n_spawned - r.n_recs, at_start, cookie, no_cookie, bad, (double) r.lag_max_ns / 1e3,
                               achieved);
                        latency_stats_kv(stdout, "", &s);
                        latency_stats_kv(stdout, "spawn_", &ss);
                        putchar('\n');
                } else if (json) {
                        printf("{\"rate\": %g, \"seconds\": %.2f, \"group\": \"%s\", \"controller\": \"%s\", "
                               "\"cookie\": %s, \"spawned\": %zu, \"spawn_failed\": %zu, \"placed\": %zu, "
                               "\"timeouts\": %zu, \"timeout_ms\": %lu, \"lost\": %zu, \"at_start\": %zu, "
                               "\"no_cookie\": %zu, \"lag_max_us\": %.1f, \"achieved_rate\": %.1f, \"latency_us\": {",
                               rate, (double) count / rate, group, controller, cookie ? "true" : "false", r.n_spawned,
                               r.n_spawn_failed, placed, timeouts, timeout_ms, r.n_spawned - r.n_recs, at_start,
                               no_cookie, (double) r.lag_max_ns / 1e3, achieved);
                        latency_stats_json(stdout, &s);
                        printf("}, \"spawn_to_placed_us\": {");
                        latency_stats_json(stdout, &ss);
                        printf("}}\n");
                } else {
                        printf("exec-spawn: %zu probes at %g/s over %.2f s (achieved %.1f/s, largest spawn lag %.1f ms)%s\n",
                               r.n_spawned, rate, (double) count / rate, achieved, (double) r.lag_max_ns / 1e6,
                               r.n_spawn_failed ? ", some spawns failed" : "");
                        printf("  placed %zu, timeouts %zu (> %lu ms), lost %zu, placed before the first look %zu\n",
                               placed, timeouts, timeout_ms, r.n_spawned - r.n_recs, at_start);
                        if (cookie)
                                printf("  cookie: %s\n", no_cookie ? "none on this kernel (cgroup only)" : "required");
                        printf("  probe running -> placed: ");
                        latency_stats_text(stdout, &s);
                        printf("\n  spawn -> placed (with the fork and exec): ");
                        latency_stats_text(stdout, &ss);
                        putchar('\n');
                }
                free(lat);
                free(slat);
        }
        return 0;
}
