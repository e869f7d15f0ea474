/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* topod.conf: defaults, every key, drop-in order, errors, limits. */

#include "decide/config.h"
#include "tests.h"

static IniSource src(const char *file, const char *text) {
        return (IniSource) { .file = file, .text = text, .len = strlen(text) };
}

static void test_defaults(void) {
        _cleanup_(config_freep) Config *c = NULL;

        ASSERT_OK(config_new(&c));
        ASSERT_NULL(c->policies_dir); /* the layers */
        ASSERT_EQ(c->sample_interval_usec, USEC_PER_SEC);
        ASSERT_EQ(c->rescan_interval_usec, 60 * USEC_PER_SEC);
        ASSERT_TRUE(c->restore_on_exit);
        ASSERT_EQ(c->log_level, CONFIG_LOG_INFO);
        ASSERT_EQ(c->seccomp, CONFIG_SECCOMP_ENFORCE);
        ASSERT_STREQ(c->cgroup_root, "/topod.slice");
        ASSERT_EQ(c->hierarchy, CONFIG_HIERARCHY_AUTO);
        ASSERT_EQ(c->avx512_recent_usec, 200 * USEC_PER_MSEC);
        ASSERT_EQ(c->latency_voluntary_min, 80);
        ASSERT_EQ(c->latency_cpu_max, 20);
        ASSERT_EQ(c->throughput_cpu_min, 80);
        ASSERT_EQ(c->classify_window_usec, 5 * USEC_PER_SEC);
        ASSERT_EQ(c->min_task_age_usec, USEC_PER_SEC);
        ASSERT_EQ(c->load_hysteresis, 5);
        ASSERT_EQ(c->load_dwell_usec, 30 * USEC_PER_SEC);
}

static void test_every_key(void) {
        static const char text[] =
                "[daemon]\npolicies_dir = /srv/policies/\nsample_interval = 500ms\nrescan_interval = 2min\n"
                "restore_on_exit = no\nlog_level = debug\nseccomp = log\n"
                "[cgroup]\ncgroup_root = /topod.slice/topod-lab.slice\nhierarchy = nested\n"
                "[classifier]\navx512_recent = 50ms\nlatency_voluntary_min = 90%\nlatency_cpu_max = 10\n"
                "throughput_cpu_min = 70%\nwindow = 10s\nmin_task_age = 0\n"
                "[load]\nhysteresis = 10%\ndwell = 1h\n";
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(config_freep) Config *c = NULL;
        IniSource m = src("topod.conf", text);

        ASSERT_OK(config_parse_all(&m, NULL, 0, d, &c));
        ASSERT_EQ(d->n, 0);
        ASSERT_STREQ(c->policies_dir, "/srv/policies");
        ASSERT_EQ(c->sample_interval_usec, 500 * USEC_PER_MSEC);
        ASSERT_EQ(c->rescan_interval_usec, 120 * USEC_PER_SEC);
        ASSERT_FALSE(c->restore_on_exit);
        ASSERT_EQ(c->log_level, CONFIG_LOG_DEBUG);
        ASSERT_EQ(c->seccomp, CONFIG_SECCOMP_LOG);
        ASSERT_STREQ(c->cgroup_root, "/topod.slice/topod-lab.slice");
        ASSERT_EQ(c->hierarchy, CONFIG_HIERARCHY_NESTED);
        ASSERT_EQ(c->avx512_recent_usec, 50 * USEC_PER_MSEC);
        ASSERT_EQ(c->latency_voluntary_min, 90);
        ASSERT_EQ(c->latency_cpu_max, 10);
        ASSERT_EQ(c->throughput_cpu_min, 70);
        ASSERT_EQ(c->classify_window_usec, 10 * USEC_PER_SEC);
        ASSERT_EQ(c->min_task_age_usec, 0);
        ASSERT_EQ(c->load_hysteresis, 10);
        ASSERT_EQ(c->load_dwell_usec, 3600 * USEC_PER_SEC);
}

static void test_dropin_order(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(config_freep) Config *c = NULL;
        IniSource m = src("/etc/topod/topod.conf", "[daemon]\nlog_level = warning\nseccomp = off\n");
        /* given out of order: applied as 10-, 50-, 90- by file name */
        IniSource dropins[] = {
                src("/etc/topod/topod.conf.d/90-last.conf", "[daemon]\nlog_level = err\n"),
                src("/etc/topod/topod.conf.d/10-first.conf", "[daemon]\nlog_level = debug\nsample_interval = 2s\n"),
                src("/etc/topod/topod.conf.d/50-mid.conf", "[daemon]\nsample_interval = 3s\n[cgroup]\nhierarchy = flat\n"),
        };

        ASSERT_OK(config_parse_all(&m, dropins, ELEMENTSOF(dropins), d, &c));
        ASSERT_EQ(c->log_level, CONFIG_LOG_ERR);
        ASSERT_EQ(c->sample_interval_usec, 3 * USEC_PER_SEC);
        ASSERT_EQ(c->hierarchy, CONFIG_HIERARCHY_FLAT);
        ASSERT_EQ(c->seccomp, CONFIG_SECCOMP_OFF); /* from the main file, untouched */
        ASSERT_LT(config_dropin_compare("/a/z/10-x.conf", "/b/20-a.conf"), 0);
}

static void test_errors(void) {
        static const char text[] = "[daemon]\n"
                                   "sample_intervall = 2s\n"       /* 2 unknown key, did you mean */
                                   "seccomp = enforc\n"            /* 3 bad enum, did you mean */
                                   "rescan_interval = 10 parsecs\n" /* 4 bad duration */
                                   "sample_interval = 10ms\n"      /* 5 out of range */
                                   "policies_dir = relative/dir\n" /* 6 not absolute */
                                   "log_level = info\nlog_level = debug\n" /* 8 duplicate */
                                   "[cgrup]\n"                     /* 9 unknown section */
                                   "x = 1\n"
                                   "[load]\nhysteresis = 60%\n"    /* 12 out of range */
                                   "hierarchy = flat\n"            /* 13 wrong section */
                                   "no equals sign\n";             /* 14 syntax */
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(config_freep) Config *c = NULL;
        IniSource m = src("bad.conf", text);

        ASSERT_EQ(config_parse_all(&m, NULL, 0, d, &c), -EINVAL);
        ASSERT_NOT_NULL(c);
        DUMP_DIAG(d);
        ASSERT_EQ(d->n_errors, 10);
        ASSERT_STR_CONTAINS(d->items[0].message, "did you mean 'sample_interval'?");
        ASSERT_EQ(d->items[0].line, 2);
        ASSERT_STR_CONTAINS(d->items[1].message, "did you mean 'enforce'?");
        ASSERT_EQ(d->items[3].line, 5);
        ASSERT_STREQ(d->items[3].id, "out-of-range");
        ASSERT_DIAG(d, DIAG_ERROR, "duplicate-key", 8);
        ASSERT_DIAG(d, DIAG_ERROR, "unknown-section", 9);
        ASSERT_DIAG(d, DIAG_ERROR, "syntax", 14);
        ASSERT_STR_CONTAINS(d->items[8].message, "belongs in [cgroup]");
        /* bad values leave the defaults */
        ASSERT_EQ(c->seccomp, CONFIG_SECCOMP_ENFORCE);
        ASSERT_EQ(c->sample_interval_usec, USEC_PER_SEC);
        ASSERT_NULL(c->policies_dir); /* the layers */
        ASSERT_EQ(c->log_level, CONFIG_LOG_INFO);
}

static void test_limits(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(config_freep) Config *c = NULL;
        char *big = calloc(1, CONFIG_FILE_SIZE_MAX + 2);
        IniSource many[CONFIG_DROPINS_MAX + 1];

        ASSERT_NOT_NULL(big);
        memset(big, '\n', CONFIG_FILE_SIZE_MAX + 1);
        ASSERT_OK(config_new(&c));
        ASSERT_EQ(config_parse(c, big, CONFIG_FILE_SIZE_MAX + 1, "big.conf", d), -EFBIG);
        ASSERT_DIAG(d, DIAG_ERROR, "limit", 0);
        free(big);
        config_free(TAKE_PTR(c));
        for (size_t i = 0; i < ELEMENTSOF(many); i++)
                many[i] = src("x.conf", "");
        ASSERT_EQ(config_parse_all(NULL, many, ELEMENTSOF(many), d, &c), -E2BIG);
        ASSERT_NULL(c);
}

static void test_durations(void) {
        uint64_t u;

        ASSERT_OK(config_parse_duration("250us", &u));
        ASSERT_EQ(u, 250);
        ASSERT_OK(config_parse_duration("3", &u));
        ASSERT_EQ(u, 3 * USEC_PER_SEC);
        ASSERT_OK(config_parse_duration("2 min", &u));
        ASSERT_EQ(u, 120 * USEC_PER_SEC);
        ASSERT_LT(config_parse_duration("-1s", &u), 0);
        ASSERT_LT(config_parse_duration("1.5s", &u), 0);
        ASSERT_LT(config_parse_duration("99999999999999999999s", &u), 0);
}

int main(void) {
        RUN(test_defaults);
        RUN(test_every_key);
        RUN(test_dropin_order);
        RUN(test_errors);
        RUN(test_limits);
        RUN(test_durations);
        return 0;
}
