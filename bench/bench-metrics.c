/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One metrics write as topod makes it after a pass: the plan's tasks
 * counted by policy, group and class (metrics_count_tasks()), the
 * exposition printed (metrics_format_text()) and the file replaced
 * (metrics_file_write(): a temporary file, then rename) — for a plan of
 * TASKS managed tasks in POLICIES policies of 4 groups each, every other
 * policy with [when] forced_idle, both histograms filled. Prints the CPU
 * time of one write (mean over N, 99th percentile, slowest), of its printing alone,
 * the file's size, and the 1 ms floor it is to stay under. Asserts
 * nothing.
 *
 *   bench-metrics [-t TASKS] [-p POLICIES] [-n WRITES] [-d DIR] */

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench-util.h"
#include "metrics-file.h"
#include "metrics-format.h"

#define GROUPS_PER_POLICY 4u
#define FLOOR_MS 1.0

typedef struct Fake {
        Policy *policies;
        Policy **pp;
        PolicySet set;
        PlanGroup *groups;
        PlanTask *tasks;
        Plan plan;
        MetricsPolicy *mp;
        char (*names)[32];
        char (*paths)[64];
} Fake;

static void fake_new(Fake *f, unsigned n_pol, unsigned n_tasks) {
        unsigned n_groups = n_pol * GROUPS_PER_POLICY;

        f->policies = calloc(n_pol, sizeof(Policy));
        f->pp = calloc(n_pol, sizeof(Policy *));
        f->mp = calloc(n_pol, sizeof(MetricsPolicy));
        f->names = calloc(n_pol, sizeof(*f->names));
        f->groups = calloc(n_groups, sizeof(PlanGroup));
        f->paths = calloc(n_groups, sizeof(*f->paths));
        f->tasks = calloc(n_tasks ?: 1, sizeof(PlanTask));
        if (!f->policies || !f->pp || !f->mp || !f->names || !f->groups || !f->paths || !f->tasks) {
                fprintf(stderr, "bench-metrics: out of memory\n");
                exit(1);
        }
        for (unsigned i = 0; i < n_pol; i++) {
                snprintf(f->names[i], sizeof(f->names[i]), "policy-%u", i);
                f->policies[i].name = f->names[i];
                f->pp[i] = &f->policies[i];
                f->mp[i] = (MetricsPolicy) { .name = f->names[i], .in_force = true, .cookie_groups = 3,
                                             .forced_idle = i % 2 == 0, .have_share = i % 2 == 0, .share_permille = 42,
                                             .idle_groups = GROUPS_PER_POLICY, .force_idle_usec = 123456789,
                                             .usage_usec = 987654321 };
        }
        for (unsigned g = 0; g < n_groups; g++) {
                snprintf(f->paths[g], sizeof(f->paths[g]), "node%u/llc%u/%s", g % 2, g % GROUPS_PER_POLICY,
                         f->names[g / GROUPS_PER_POLICY]);
                f->groups[g] = (PlanGroup) { .path = f->paths[g], .policy = (int) (g / GROUPS_PER_POLICY) };
        }
        for (unsigned t = 0; t < n_tasks; t++) {
                unsigned g = t % n_groups;

                f->tasks[t] = (PlanTask) { .tid = (pid_t) (1000 + t), .tgid = (pid_t) (1000 + t - t % 4),
                                           .class = (PolicyClass) (t % _POLICY_CLASS_MAX),
                                           .policy = (int) (g / GROUPS_PER_POLICY), .group = (int) g, .cookie_group = -1 };
        }
        f->set = (PolicySet) { .policies = f->pp, .n = n_pol };
        f->plan = (Plan) { .groups = f->groups, .n_groups = n_groups, .tasks = f->tasks, .n_tasks = n_tasks };
}

/* One write: count, print, replace the file. Its size in *ret_len. */
static void one_write(const Fake *f, const MetricsSnapshot *base, const char *path, bool to_file, size_t *ret_len) {
        MetricsSnapshot s = *base;
        MetricsTasks *tasks = NULL;
        char *text = NULL;
        size_t n = 0, len = 0;
        FILE *out;

        if (metrics_count_tasks(&f->plan, &f->set, &tasks, &n) < 0)
                exit(1);
        s.tasks = tasks;
        s.n_tasks = n;
        out = open_memstream(&text, &len);
        if (!out || metrics_format_text(out, &s) < 0 || fclose(out) != 0)
                exit(1);
        if (to_file && metrics_file_write(path, text, len) < 0) {
                fprintf(stderr, "bench-metrics: cannot write %s\n", path);
                exit(1);
        }
        *ret_len = len;
        free(text);
        free(tasks);
}

static int compare_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

/* CPU time of n writes, in ms: the mean, the 99th percentile, the slowest. */
static void measure(const Fake *f, const MetricsSnapshot *s, const char *path, bool to_file, unsigned n, double ret[3],
                    size_t *ret_len) {
        double *each = calloc(n, sizeof(double)), total0 = cpu_seconds();

        if (!each)
                exit(1);
        for (unsigned i = 0; i < n; i++) {
                double t0 = cpu_seconds();

                one_write(f, s, path, to_file, ret_len);
                each[i] = (cpu_seconds() - t0) * 1e3;
        }
        ret[0] = (cpu_seconds() - total0) * 1e3 / n;
        qsort(each, n, sizeof(double), compare_double);
        ret[1] = each[(size_t) ((n - 1) * 0.99)];
        ret[2] = each[n - 1];
        free(each);
}

int main(int argc, char *argv[]) {
        unsigned n_tasks = 1000, n_pol = 8, n = 2000;
        const char *dir = NULL;
        char tmpl[] = "/tmp/bench-metrics-XXXXXX", path[4096];
        double w[3], p[3];
        MetricsSnapshot s;
        size_t len = 0;
        Fake f = {};
        int c;

        while ((c = getopt(argc, argv, "t:p:n:d:")) >= 0)
                switch (c) {
                case 't':
                        n_tasks = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'p':
                        n_pol = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'n':
                        n = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'd':
                        dir = optarg;
                        break;
                default:
                        fprintf(stderr, "usage: bench-metrics [-t TASKS] [-p POLICIES] [-n WRITES] [-d DIR]\n");
                        return 2;
                }
        if (n_pol == 0 || n == 0) {
                fprintf(stderr, "bench-metrics: -p and -n take a positive number\n");
                return 2;
        }
        if (!dir && !(dir = mkdtemp(tmpl))) {
                perror("bench-metrics: mkdtemp");
                return 1;
        }
        snprintf(path, sizeof(path), "%s/topod.prom", dir);
        fake_new(&f, n_pol, n_tasks);
        s = (MetricsSnapshot) { .version = "bench", .policies = f.mp, .n_policies = n_pol, .groups = n_pol * GROUPS_PER_POLICY,
                                .passes = 12345, .have_last_pass = true, .last_pass_usec = { 4000, 300, 2000 },
                                .reloads = 3, .apply = { 100, 200000, 30, 0, 1 }, .fast_placed = 5000 };
        for (unsigned i = 0; i < 1000; i++) {
                histogram_observe(&s.pass_duration, (uint64_t) i * 37000u);
                histogram_observe(&s.exec_to_placed, (uint64_t) i * 1300u);
        }
        one_write(&f, &s, path, true, &len); /* warm */
        measure(&f, &s, path, false, n, p, &len);
        measure(&f, &s, path, true, n, w, &len);
        printf("metrics write at %u managed tasks, %u policies, %u groups: %zu bytes, %u writes to %s\n", n_tasks, n_pol,
               n_pol * GROUPS_PER_POLICY, len, n, path);
        printf("  count + print:         %.4f ms CPU mean, %.4f ms p99, %.4f ms slowest\n", p[0], p[1], p[2]);
        printf("  count + print + file:  %.4f ms CPU mean, %.4f ms p99, %.4f ms slowest\n", w[0], w[1], w[2]);
        printf("  floor: %.1f ms CPU per write: mean %s, p99 %s, slowest %s\n", FLOOR_MS, w[0] < FLOOR_MS ? "under" : "OVER",
               w[1] < FLOOR_MS ? "under" : "OVER", w[2] < FLOOR_MS ? "under" : "OVER");
        if (dir == tmpl) {
                unlink(path);
                rmdir(dir);
        }
        return 0;
}
