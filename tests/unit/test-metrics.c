/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The metrics' printings against a hand-made snapshot: the exact
 * exposition (names, HELP and TYPE, label escaping, cumulative buckets,
 * seconds from micro- and nanoseconds), its JSON, the count of a plan's
 * tasks, and the file's atomic replacement. With "promtool" as argument:
 * the same exposition, and the file a topod on a fake root writes,
 * checked by `promtool check metrics` (exit 77 without promtool). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/macro.h"
#include "metrics-file.h"
#include "metrics-format.h"
#include "tests.h"

static const MetricsPolicy policies[] = {
        { .name = "avx", .in_force = true, .cookie_groups = 2, .forced_idle = true, .have_share = true,
          .share_permille = 123, .idle_groups = 2, .force_idle_usec = 1500000, .usage_usec = 12000007 },
        { .name = "we\"ird\\\nname\t", .in_force = false },
};

static const MetricsTasks tasks[] = {
        { "avx", "node0/llc0/avx", "avx", 3 },
        { "we\"ird\\\nname\t", "", "other", 1 },
};

static const MetricsIdleGroup idle_groups[] = {
        { "avx", "node0/llc0/avx", 1000000, 8000004 },
        { "avx", "node0/llc1/\"q\"", 500000, 4000003 },
};

static void fake_snapshot(MetricsSnapshot *s) {
        *s = (MetricsSnapshot) {
                .version = "1.2.3",
                .policies = policies,
                .n_policies = ELEMENTSOF(policies),
                .tasks = tasks,
                .n_tasks = ELEMENTSOF(tasks),
                .idle_groups = idle_groups,
                .n_idle_groups = ELEMENTSOF(idle_groups),
                .groups = 2,
                .passes = 7,
                .passes_failed = 1,
                .have_last_pass = true,
                .last_pass_usec = { 1000, 2000, 3500 },
                .reloads = 2,
                .reloads_refused = 1,
                .apply = { 10, 20, 1, 0, 2 },
                .fast_placed = 4,
                .idle_skips = 5,
        };
        histogram_observe(&s->pass_duration, 3000000);     /* 3 ms: le 0.005 */
        histogram_observe(&s->pass_duration, 40000000);    /* 40 ms: le 0.05 */
        histogram_observe(&s->pass_duration, 12000000000); /* 12 s: past the last bound */
        histogram_observe(&s->exec_to_placed, 80000);      /* 80 µs: le 0.0001 */
        histogram_observe(&s->exec_to_placed, 100000);     /* on the bound: le 0.0001 */
        histogram_observe(&s->exec_to_placed, 1200000);    /* le 0.0025 */
        histogram_observe(&s->exec_to_placed, 700000000);  /* le 1 */
}

static const char expected_text[] =
        "# HELP topod_info The running topod's version (always 1).\n"
        "# TYPE topod_info gauge\n"
        "topod_info{version=\"1.2.3\"} 1\n"
        "# HELP topod_paused 1 while topoctl reset has paused topod (until a reload), else 0.\n"
        "# TYPE topod_paused gauge\n"
        "topod_paused 0\n"
        "# HELP topod_policy_in_force 1 for a policy in force (enabled, its [when] holds), else 0.\n"
        "# TYPE topod_policy_in_force gauge\n"
        "topod_policy_in_force{policy=\"avx\"} 1\n"
        "topod_policy_in_force{policy=\"we\\\"ird\\\\\\nname_\"} 0\n"
        "# HELP topod_tasks_managed Tasks the plan in force places, by policy, group and class.\n"
        "# TYPE topod_tasks_managed gauge\n"
        "topod_tasks_managed{policy=\"avx\",group=\"node0/llc0/avx\",class=\"avx\"} 3\n"
        "topod_tasks_managed{policy=\"we\\\"ird\\\\\\nname_\",group=\"\",class=\"other\"} 1\n"
        "# HELP topod_groups Policy groups in the plan in force.\n"
        "# TYPE topod_groups gauge\n"
        "topod_groups 2\n"
        "# HELP topod_cookie_groups Core-scheduling cookie groups in the plan in force, by policy.\n"
        "# TYPE topod_cookie_groups gauge\n"
        "topod_cookie_groups{policy=\"avx\"} 2\n"
        "topod_cookie_groups{policy=\"we\\\"ird\\\\\\nname_\"} 0\n"
        "# HELP topod_forced_idle_ratio Forced idle over CPU time of a policy's groups between the last two readings.\n"
        "# TYPE topod_forced_idle_ratio gauge\n"
        "topod_forced_idle_ratio{policy=\"avx\"} 0.123\n"
        "# HELP topod_forced_idle_groups A policy's groups read at the last forced idle reading.\n"
        "# TYPE topod_forced_idle_groups gauge\n"
        "topod_forced_idle_groups{policy=\"avx\"} 2\n"
        "# HELP topod_forced_idle_seconds Forced idle the kernel counted for a policy's groups at the last reading "
        "(cpu.stat core_sched.force_idle_usec, summed).\n"
        "# TYPE topod_forced_idle_seconds gauge\n"
        "topod_forced_idle_seconds{policy=\"avx\"} 1.500000\n"
        "# HELP topod_forced_idle_cpu_seconds CPU time of a policy's groups at the last reading (cpu.stat usage_usec, summed).\n"
        "# TYPE topod_forced_idle_cpu_seconds gauge\n"
        "topod_forced_idle_cpu_seconds{policy=\"avx\"} 12.000007\n"
        "# HELP topod_group_forced_idle_seconds_total Forced idle the kernel counted for a group of a policy with "
        "[when] forced_idle (cpu.stat core_sched.force_idle_usec) at the last reading.\n"
        "# TYPE topod_group_forced_idle_seconds_total counter\n"
        "topod_group_forced_idle_seconds_total{policy=\"avx\",group=\"node0/llc0/avx\"} 1.000000\n"
        "topod_group_forced_idle_seconds_total{policy=\"avx\",group=\"node0/llc1/\\\"q\\\"\"} 0.500000\n"
        "# HELP topod_group_cpu_seconds_total CPU time of such a group (cpu.stat usage_usec) at the last reading.\n"
        "# TYPE topod_group_cpu_seconds_total counter\n"
        "topod_group_cpu_seconds_total{policy=\"avx\",group=\"node0/llc0/avx\"} 8.000004\n"
        "topod_group_cpu_seconds_total{policy=\"avx\",group=\"node0/llc1/\\\"q\\\"\"} 4.000003\n"
        "# HELP topod_passes_total Passes (scan, plan, apply) done.\n"
        "# TYPE topod_passes_total counter\n"
        "topod_passes_total 7\n"
        "# HELP topod_pass_failures_total Passes that failed before their plan was in use.\n"
        "# TYPE topod_pass_failures_total counter\n"
        "topod_pass_failures_total 1\n"
        "# HELP topod_pass_duration_seconds Wall time of each pass done.\n"
        "# TYPE topod_pass_duration_seconds histogram\n"
        "topod_pass_duration_seconds_bucket{le=\"0.0001\"} 0\n"
        "topod_pass_duration_seconds_bucket{le=\"0.00025\"} 0\n"
        "topod_pass_duration_seconds_bucket{le=\"0.0005\"} 0\n"
        "topod_pass_duration_seconds_bucket{le=\"0.001\"} 0\n"
        "topod_pass_duration_seconds_bucket{le=\"0.0025\"} 0\n"
        "topod_pass_duration_seconds_bucket{le=\"0.005\"} 1\n"
        "topod_pass_duration_seconds_bucket{le=\"0.01\"} 1\n"
        "topod_pass_duration_seconds_bucket{le=\"0.025\"} 1\n"
        "topod_pass_duration_seconds_bucket{le=\"0.05\"} 2\n"
        "topod_pass_duration_seconds_bucket{le=\"0.1\"} 2\n"
        "topod_pass_duration_seconds_bucket{le=\"0.25\"} 2\n"
        "topod_pass_duration_seconds_bucket{le=\"0.5\"} 2\n"
        "topod_pass_duration_seconds_bucket{le=\"1\"} 2\n"
        "topod_pass_duration_seconds_bucket{le=\"2.5\"} 2\n"
        "topod_pass_duration_seconds_bucket{le=\"5\"} 2\n"
        "topod_pass_duration_seconds_bucket{le=\"10\"} 2\n"
        "topod_pass_duration_seconds_bucket{le=\"+Inf\"} 3\n"
        "topod_pass_duration_seconds_sum 12.043000000\n"
        "topod_pass_duration_seconds_count 3\n"
        "# HELP topod_last_pass_stage_seconds Wall time of the last pass, by stage.\n"
        "# TYPE topod_last_pass_stage_seconds gauge\n"
        "topod_last_pass_stage_seconds{stage=\"scan\"} 0.001000\n"
        "topod_last_pass_stage_seconds{stage=\"plan\"} 0.002000\n"
        "topod_last_pass_stage_seconds{stage=\"apply\"} 0.003500\n"
        "# HELP topod_timer_passes_skipped_total Timer passes skipped, by reason.\n"
        "# TYPE topod_timer_passes_skipped_total counter\n"
        "topod_timer_passes_skipped_total{reason=\"idle\"} 5\n"
        "topod_timer_passes_skipped_total{reason=\"exec_storm\"} 0\n"
        "# HELP topod_reloads_total Reloads asked for (SIGHUP, topoctl reload), done or refused.\n"
        "# TYPE topod_reloads_total counter\n"
        "topod_reloads_total 2\n"
        "# HELP topod_reloads_refused_total Reloads refused (the running policy stayed in force).\n"
        "# TYPE topod_reloads_refused_total counter\n"
        "topod_reloads_refused_total 1\n"
        "# HELP topod_apply_results_total Items the passes' apply went through, by result.\n"
        "# TYPE topod_apply_results_total counter\n"
        "topod_apply_results_total{result=\"done\"} 10\n"
        "topod_apply_results_total{result=\"already\"} 20\n"
        "topod_apply_results_total{result=\"vanished\"} 1\n"
        "topod_apply_results_total{result=\"skipped\"} 0\n"
        "topod_apply_results_total{result=\"failed\"} 2\n"
        "# HELP topod_fast_path_placements_total Processes the fast path placed at exec or fork.\n"
        "# TYPE topod_fast_path_placements_total counter\n"
        "topod_fast_path_placements_total 4\n"
        "# HELP topod_exec_to_placed_seconds From a process's exec (or fork) event to its placement by the fast path.\n"
        "# TYPE topod_exec_to_placed_seconds histogram\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.0001\"} 2\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.00025\"} 2\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.0005\"} 2\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.001\"} 2\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.0025\"} 3\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.005\"} 3\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.01\"} 3\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.025\"} 3\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.05\"} 3\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.1\"} 3\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.25\"} 3\n"
        "topod_exec_to_placed_seconds_bucket{le=\"0.5\"} 3\n"
        "topod_exec_to_placed_seconds_bucket{le=\"1\"} 4\n"
        "topod_exec_to_placed_seconds_bucket{le=\"2.5\"} 4\n"
        "topod_exec_to_placed_seconds_bucket{le=\"5\"} 4\n"
        "topod_exec_to_placed_seconds_bucket{le=\"10\"} 4\n"
        "topod_exec_to_placed_seconds_bucket{le=\"+Inf\"} 4\n"
        "topod_exec_to_placed_seconds_sum 0.701380000\n"
        "topod_exec_to_placed_seconds_count 4\n";

static char *format_text(const MetricsSnapshot *s) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        ASSERT_TRUE(f);
        ASSERT_EQ(metrics_format_text(f, s), 0);
        ASSERT_EQ(fclose(f), 0);
        return text;
}

static void test_text(void) {
        _cleanup_free_ char *text = NULL;
        MetricsSnapshot s;

        fake_snapshot(&s);
        text = format_text(&s);
        ASSERT_STREQ(text, expected_text);
}

/* A topod with no plan yet, no policy, nothing counted: the families
 * that have no sample are left out, the rest are there at 0. */
static void test_text_empty(void) {
        _cleanup_free_ char *text = NULL;
        MetricsSnapshot s = { .version = "0", .paused = true };

        text = format_text(&s);
        ASSERT_STR_CONTAINS(text, "topod_paused 1\n");
        ASSERT_STR_CONTAINS(text, "# TYPE topod_tasks_managed gauge\n# HELP topod_groups");
        ASSERT_STR_CONTAINS(text, "topod_pass_duration_seconds_bucket{le=\"+Inf\"} 0\n");
        ASSERT_STR_CONTAINS(text, "topod_exec_to_placed_seconds_sum 0.000000000\n");
        ASSERT_STR_NOT_CONTAINS(text, "topod_policy_in_force");
        ASSERT_STR_NOT_CONTAINS(text, "topod_forced_idle");
        ASSERT_STR_NOT_CONTAINS(text, "topod_group_");
        ASSERT_STR_NOT_CONTAINS(text, "topod_last_pass_stage_seconds");
}

static void test_json(void) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        MetricsSnapshot s;
        FILE *f;

        fake_snapshot(&s);
        f = open_memstream(&text, &len);
        ASSERT_TRUE(f);
        {
                _cleanup_(json_freep) Json *j = json_new(f, false);

                ASSERT_TRUE(j);
                metrics_format_json(j, &s);
        }
        ASSERT_EQ(fclose(f), 0);
        ASSERT_STR_CONTAINS(text, "\"name\":\"we\\\"ird\\\\\\nname\\t\"");
        ASSERT_STR_CONTAINS(text, "\"forced_idle\":{\"permille\":123,\"groups\":2,\"force_idle_usec\":1500000,"
                                  "\"usage_usec\":12000007}");
        ASSERT_STR_CONTAINS(text, "{\"policy\":\"avx\",\"group\":\"node0/llc0/avx\",\"class\":\"avx\",\"tasks\":3}");
        ASSERT_STR_CONTAINS(text, "\"forced_idle_groups\":[{\"policy\":\"avx\",\"group\":\"node0/llc0/avx\","
                                  "\"force_idle_usec\":1000000,\"usage_usec\":8000004},");
        ASSERT_STR_CONTAINS(text, "\"pass_duration\":{\"count\":3,\"sum_ns\":12043000000,\"buckets\":[{\"le_ns\":100000,\"count\":0}");
        ASSERT_STR_CONTAINS(text, "{\"le_ns\":5000000,\"count\":1}");
        ASSERT_STR_CONTAINS(text, "{\"le_ns\":null,\"count\":3}]}");
        ASSERT_STR_CONTAINS(text, "\"apply_results\":{\"done\":10,\"already\":20,\"vanished\":1,\"skipped\":0,\"failed\":2}");
        ASSERT_STR_CONTAINS(text, "\"last_pass_stage_usec\":{\"scan\":1000,\"plan\":2000,\"apply\":3500}");
        ASSERT_STR_CONTAINS(text, "\"exec_to_placed\":{\"count\":4,\"sum_ns\":701380000,");
}

/* A plan's tasks counted: policy groups in path order, then the policies'
 * tasks without a group; intermediate directories not at all. */
static void test_count(void) {
        Policy p0 = { .name = (char *) "zero" }, p1 = { .name = (char *) "one" };
        Policy *pp[] = { &p0, &p1 };
        PolicySet set = { .policies = pp, .n = 2 };
        PlanGroup groups[] = {
                { .path = (char *) "a", .policy = 0 },
                { .path = (char *) "node0", .policy = -1 },
                { .path = (char *) "node0/b", .policy = 1 },
        };
        PlanTask pt[] = {
                { .tid = 1, .class = POLICY_CLASS_AVX, .policy = 0, .group = 0 },
                { .tid = 2, .class = POLICY_CLASS_LATENCY, .policy = 0, .group = 0 },
                { .tid = 3, .class = POLICY_CLASS_AVX, .policy = 0, .group = 0 },
                { .tid = 4, .class = POLICY_CLASS_THROUGHPUT, .policy = 1, .group = 2 },
                { .tid = 5, .class = POLICY_CLASS_OTHER, .policy = 0, .group = -1 },
                { .tid = 6, .class = POLICY_CLASS_OTHER, .policy = -1, .group = -1 },
        };
        Plan plan = { .groups = groups, .n_groups = ELEMENTSOF(groups), .tasks = pt, .n_tasks = ELEMENTSOF(pt) };
        _cleanup_free_ MetricsTasks *t = NULL;
        size_t n = 99;

        ASSERT_EQ(metrics_count_tasks(NULL, &set, &t, &n), 0);
        ASSERT_EQ(n, 0u);
        ASSERT_EQ(metrics_count_tasks(&plan, &set, &t, &n), 0);
        ASSERT_EQ(n, 4u);
        ASSERT_STREQ(t[0].policy, "zero");
        ASSERT_STREQ(t[0].group, "a");
        ASSERT_STREQ(t[0].class_name, "avx");
        ASSERT_EQ(t[0].tasks, 2u);
        ASSERT_STREQ(t[1].class_name, "latency");
        ASSERT_EQ(t[1].tasks, 1u);
        ASSERT_STREQ(t[2].policy, "one");
        ASSERT_STREQ(t[2].group, "node0/b");
        ASSERT_STREQ(t[2].class_name, "throughput");
        ASSERT_EQ(t[2].tasks, 1u);
        ASSERT_STREQ(t[3].policy, "zero");
        ASSERT_STREQ(t[3].group, "");
        ASSERT_STREQ(t[3].class_name, "other");
        ASSERT_EQ(t[3].tasks, 1u);
}

static char *tmp_dir(void) {
        char *d = strdup("/tmp/test-metrics-XXXXXX");

        ASSERT_TRUE(d && mkdtemp(d));
        return d;
}

static void test_file(void) {
        _cleanup_free_ char *dir = tmp_dir(), *path = NULL, *tmp = NULL, *missing = NULL;
        char buf[64] = {};
        struct stat st;
        mode_t old;
        int fd;

        ASSERT_TRUE(asprintf(&path, "%s/topod.prom", dir) > 0);
        ASSERT_TRUE(asprintf(&tmp, "%s/topod.prom.tmp", dir) > 0);
        ASSERT_TRUE(asprintf(&missing, "%s/none/topod.prom", dir) > 0);
        old = umask(077);
        ASSERT_EQ(metrics_file_write(path, "first\n", 6), 0);
        ASSERT_EQ(metrics_file_write(path, "second\n", 7), 0);
        umask(old);
        ASSERT_EQ(stat(path, &st), 0);
        ASSERT_EQ(st.st_mode & 07777, 0644u); /* readable by the collector's user, whatever the umask */
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(read(fd, buf, sizeof(buf) - 1), 7);
        close(fd);
        ASSERT_STREQ(buf, "second\n");
        ASSERT_EQ(access(tmp, F_OK), -1); /* renamed, nothing left beside */
        ASSERT_EQ(metrics_file_write(missing, "x\n", 2), -ENOENT);
        /* A link planted at the temporary name is not followed. */
        ASSERT_EQ(symlink("/dev/null", tmp), 0);
        ASSERT_EQ(metrics_file_write(path, "third\n", 6), -ELOOP);
        ASSERT_EQ(unlink(tmp), 0);
        ASSERT_EQ(unlink(path), 0);
        ASSERT_EQ(rmdir(dir), 0);
}

/* `promtool check metrics` < path: its exit status, its output shown. */
static int promtool_check(const char *path) {
        _cleanup_free_ char *cmd = NULL;
        int r;

        ASSERT_TRUE(asprintf(&cmd, "promtool check metrics < '%s'", path) > 0);
        r = system(cmd);
        return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

static int test_promtool(void) {
        _cleanup_free_ char *dir = tmp_dir(), *path = NULL, *text = NULL;
        MetricsSnapshot s, empty = { .version = "0" };

        if (system("command -v promtool >/dev/null 2>&1") != 0) {
                printf("SKIP: promtool not found (Debian package prometheus)\n");
                return 77;
        }
        ASSERT_TRUE(asprintf(&path, "%s/topod.prom", dir) > 0);
        fake_snapshot(&s);
        text = format_text(&s);
        ASSERT_EQ(metrics_file_write(path, text, strlen(text)), 0);
        ASSERT_EQ(promtool_check(path), 0);
        free(text);
        text = format_text(&empty);
        ASSERT_EQ(metrics_file_write(path, text, strlen(text)), 0);
        ASSERT_EQ(promtool_check(path), 0);
        /* and it can fail: a sample of a family declared twice */
        ASSERT_EQ(metrics_file_write(path, "# TYPE a counter\na 1\n# TYPE a counter\na 2\n", 42), 0);
        ASSERT_NE(promtool_check(path), 0);
        ASSERT_EQ(unlink(path), 0);
        ASSERT_EQ(rmdir(dir), 0);
        return 0;
}

int main(int argc, char **argv) {
        if (argc > 1 && streq(argv[1], "promtool"))
                return test_promtool();
        test_text();
        test_text_empty();
        test_json();
        test_count();
        test_file();
        printf("metrics: all passed\n");
        return 0;
}
