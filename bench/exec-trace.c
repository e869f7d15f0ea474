/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* exec-trace: the kernel's clock for exec -> placed. Reads the text of a
 * tracefs buffer holding sched:sched_process_exec and
 * cgroup:cgroup_attach_task events and, per pid, pairs each exec of the
 * probe with the first attach that follows it into a cgroup whose path ends
 * in /GROUP. Prints p50/p90/p99/max of that delta (µs, at the trace's
 * resolution: µs in the default text output).
 *
 *   exec-trace [-g GROUP] [-f NAME] [--kv | --json] [TRACE-FILE]
 *
 * NAME is the exec'd file's base name (default topod-probe). A GROUP that
 * ends in '*' is a start: a cgroup whose last component begins with the
 * rest ("topod-bench-*": the systemd driver's scopes
 * topod-bench-PID.scope). */

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec-bench.h"

#define MAX_EVENTS 4000000u

typedef struct Event {
        uint64_t ts_ns;
        int pid;
        int attach; /* 0: exec, 1: attach; exec sorts first at the same time */
} Event;

static int cmp_event(const void *a, const void *b) {
        const Event *x = a, *y = b;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        if (x->ts_ns != y->ts_ns)
                return x->ts_ns < y->ts_ns ? -1 : 1;
        return x->attach - y->attach;
}

/* The timestamp is the "SECONDS.FRACTION" that ends just before marker. */
static bool parse_ts(const char *line, const char *marker, uint64_t *ret) {
        const char *e = marker, *b, *dot = NULL;
        uint64_t sec = 0, frac = 0, scale = 1000000000u;

        while (e > line && (e[-1] == ' ' || e[-1] == ':'))
                e--;
        b = e;
        while (b > line && ((b[-1] >= '0' && b[-1] <= '9') || b[-1] == '.'))
                b--;
        if (b == e)
                return false;
        for (const char *p = b; p < e; p++) {
                if (*p == '.') {
                        dot = p;
                        continue;
                }
                if (!dot)
                        sec = sec * 10 + (uint64_t) (*p - '0');
                else if (scale > 1) {
                        scale /= 10;
                        frac += (uint64_t) (*p - '0') * scale;
                }
        }
        *ret = sec * 1000000000u + frac;
        return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix, bool after_slash) {
        size_t k = strlen(suffix);

        if (n < k || memcmp(s + n - k, suffix, k) != 0)
                return false;
        return !after_slash || n == k || s[n - k - 1] == '/';
}

/* The path's last component is GROUP, or begins with it when it ends in '*'. */
static bool group_matches(const char *s, size_t n, const char *group) {
        size_t k = strlen(group);
        const char *last = s + n;

        if (k == 0 || group[k - 1] != '*')
                return ends_with(s, n, group, true);
        while (last > s && last[-1] != '/')
                last--;
        return (size_t) (s + n - last) >= k - 1 && memcmp(last, group, k - 1) == 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "group", required_argument, NULL, 'g' }, { "name", required_argument, NULL, 'f' },
                { "kv", no_argument, NULL, 'k' },          { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },        {},
        };
        const char *group = "bench", *name = "topod-probe";
        bool kv = false, json = false;
        size_t n = 0, cap = 0, execs = 0, attaches = 0, paired = 0, lost_lines = 0, n_lat = 0;
        Event *ev = NULL;
        uint64_t *lat;
        char *line = NULL;
        size_t linecap = 0;
        FILE *f = stdin;
        LatencyStats s;
        int c;

        while ((c = getopt_long(argc, argv, "g:f:h", options, NULL)) >= 0)
                switch (c) {
                case 'g': group = optarg; break;
                case 'f': name = optarg; break;
                case 'k': kv = true; break;
                case 'j': json = true; break;
                case 'h':
                        printf("usage: exec-trace [-g GROUP] [-f NAME] [--kv | --json] [TRACE-FILE]\n");
                        return 0;
                default: return 2;
                }
        if (optind + 1 < argc)
                return 2;
        if (optind < argc && !(f = fopen(argv[optind], "re"))) {
                fprintf(stderr, "exec-trace: %s: %m\n", argv[optind]);
                return 1;
        }
        while (getline(&line, &linecap, f) > 0) {
                const char *m, *v;
                Event e = {};

                if (line[0] == '#')
                        continue;
                if (strstr(line, "LOST") && strstr(line, "EVENTS")) {
                        lost_lines++;
                        continue;
                }
                if ((m = strstr(line, ": sched_process_exec: "))) {
                        const char *fn = strstr(m, "filename="), *sp;

                        if (!fn || !(sp = strstr(fn, " pid=")))
                                continue;
                        fn += strlen("filename=");
                        if (!ends_with(fn, (size_t) (sp - fn), name, true))
                                continue;
                        v = sp + strlen(" pid=");
                        execs++;
                } else if ((m = strstr(line, ": cgroup_attach_task: "))) {
                        const char *dp = strstr(m, "dst_path="), *sp, *pp;

                        if (!dp || !(pp = strstr(dp, " pid=")))
                                continue;
                        /* the last " pid=" before " comm=": a path may hold anything */
                        while ((sp = strstr(pp + 1, " pid=")))
                                pp = sp;
                        dp += strlen("dst_path=");
                        if (!group_matches(dp, (size_t) (pp - dp), group))
                                continue;
                        v = pp + strlen(" pid=");
                        e.attach = 1;
                        attaches++;
                } else
                        continue;
                if (!parse_ts(line, m, &e.ts_ns))
                        continue;
                e.pid = atoi(v);
                if (n == cap) {
                        Event *ne;

                        if (cap >= MAX_EVENTS)
                                break;
                        cap = cap ? cap * 2 : 4096;
                        if (!(ne = realloc(ev, cap * sizeof(*ev))))
                                return 1;
                        ev = ne;
                }
                ev[n++] = e;
        }
        free(line);
        qsort(ev, n, sizeof(*ev), cmp_event);
        if (!(lat = calloc(n + 1, sizeof(*lat))))
                return 1;
        for (size_t i = 0; i < n; i++) {
                /* an exec followed, before the pid's next exec, by an attach */
                if (ev[i].attach || i + 1 >= n || ev[i + 1].pid != ev[i].pid || !ev[i + 1].attach)
                        continue;
                lat[n_lat++] = ev[i + 1].ts_ns - ev[i].ts_ns;
                paired++;
        }
        latency_stats(lat, n_lat, &s);
        if (kv) {
                printf("execs=%zu attaches=%zu paired=%zu unplaced=%zu lost_marks=%zu", execs, attaches, paired,
                       execs - paired, lost_lines);
                latency_stats_kv(stdout, "", &s);
                putchar('\n');
        } else if (json) {
                printf("{\"execs\": %zu, \"attaches\": %zu, \"paired\": %zu, \"unplaced\": %zu, \"lost_marks\": %zu, "
                       "\"latency_us\": {",
                       execs, attaches, paired, execs - paired, lost_lines);
                latency_stats_json(stdout, &s);
                printf("}}\n");
        } else {
                printf("exec-trace: %zu execs of %s, %zu attaches into .../%s, %zu paired%s\n", execs, name, attaches,
                       group, paired, lost_lines ? " (the trace lost events)" : "");
                printf("  sched_process_exec -> cgroup_attach_task: ");
                latency_stats_text(stdout, &s);
                putchar('\n');
        }
        free(lat);
        free(ev);
        return 0;
}
