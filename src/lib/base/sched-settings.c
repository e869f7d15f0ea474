/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The catalog of the scheduler's debugfs settings (sched-settings.h) and
 * the text of their values. Its own file as the one table the observer,
 * the policy language and the writer all read.
 *
 * Where each name and version comes from:
 *   - kernel/sched/debug.c, sched_init_debug(): the files under sched/ and
 *     their types (debugfs_create_u32() for the numbers).
 *   - 5.13, 8a99b6833c88 "sched: Move SCHED_DEBUG sysctl to debugfs": the
 *     kernel.sched_* and kernel.numa_balancing_* sysctls became
 *     sched/<name> and sched/numa_balancing/<name> (the sysctl names, as
 *     tuned's scheduler plugin writes them, are the aliases below; before
 *     5.13 topod finds none of these files).
 *   - 5.13, "sched,preempt: Move preempt_dynamic to debug.c": sched/preempt
 *     (CONFIG_PREEMPT_DYNAMIC).
 *   - 6.6, e4ec3318a17f "sched/debug: Rename sysctl_sched_min_granularity
 *     to sysctl_sched_base_slice": min_granularity_ns became base_slice_ns
 *     (the same variable; EEVDF takes it as the base slice).
 *   - 6.6, 5e963f2bd465 "sched/fair: Commit to EEVDF": latency_ns and
 *     wakeup_granularity_ns removed, with no successor.
 *   - 6.0, the memory-tiering series ("memory tiering: hot page selection
 *     with hint page fault latency"): numa_balancing/hot_threshold_ms.
 *   - 7.3, the cache-aware load balancing (CONFIG_SCHED_CACHE, on by
 *     default): sched/llc_balancing/{enabled, aggr_tolerance, epoch_period,
 *     epoch_affinity_timeout, imb_pct, overaggr_pct}, as the 7.3.4 test
 *     guest lists them (enabled reads 1; ../shared/vm/README.md).
 * Read from the test guests' debugfs: 6.12.95 has base_slice_ns,
 * migration_cost_ns, nr_migrate, preempt ("none (voluntary) full") and no
 * numa_balancing/ (CONFIG_NUMA_BALANCING off); 7.3.4 the same with preempt
 * "full (lazy)", and llc_balancing/. */
#include "sched-settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define FILES1(n, s) { { n, s, NULL } }, 1
#define ALIASES(...) (const char *const[]) { __VA_ARGS__, NULL }

#define NUMA_ABSENT "not on this kernel: NUMA balancing's tunables need CONFIG_NUMA_BALANCING (under sched/ since 5.13)"
#define LLC_ABSENT "not on this kernel: the cache-aware load balancing is 7.3's, with CONFIG_SCHED_CACHE"
/* The bounds the sysctls had before 5.13 (kernel/sysctl.c,
 * min_sched_granularity_ns and max_sched_granularity_ns: 100 us to 1 s;
 * wakeup granularity 0 to 1 s). A slice of 0 preempts at every update;
 * debugfs takes any u32 without a check. */
#define SLICE_RANGE 100000, 1000000000
#define EEVDF_GONE "not on this kernel: removed in 6.6 with CFS (5e963f2bd465 \"sched/fair: Commit to EEVDF\"), no equivalent"

const SchedSettingInfo sched_settings[] = {
        { "base_slice_ns", SCHED_SETTING_NUMBER,
          { { "base_slice_ns", "6.6", NULL }, { "min_granularity_ns", "5.13", "6.6" } }, 2,
          ALIASES("min_granularity_ns", "sched_min_granularity_ns"),
          "not on this kernel: base_slice_ns is 6.6's, min_granularity_ns 5.13's (a sysctl before)", false,
          "the base time slice of a fair task (EEVDF); CFS's minimum granularity before 6.6", SLICE_RANGE },
        { "latency_ns", SCHED_SETTING_NUMBER, { { "latency_ns", "5.13", "6.6" } }, 1, ALIASES("sched_latency_ns"),
          EEVDF_GONE, true, "CFS's target latency (before 6.6)", SLICE_RANGE },
        { "wakeup_granularity_ns", SCHED_SETTING_NUMBER, { { "wakeup_granularity_ns", "5.13", "6.6" } }, 1,
          ALIASES("sched_wakeup_granularity_ns"), EEVDF_GONE, true, "CFS's wake-up preemption granularity (before 6.6)",
          0, 1000000000 },
        { "migration_cost_ns", SCHED_SETTING_NUMBER, FILES1("migration_cost_ns", "5.13"),
          ALIASES("sched_migration_cost_ns"), "not on this kernel: under sched/ since 5.13 (a sysctl before)", false,
          "how long a task stays cache-hot for the load balancer" },
        { "nr_migrate", SCHED_SETTING_NUMBER, FILES1("nr_migrate", "5.13"), ALIASES("sched_nr_migrate"),
          "not on this kernel: under sched/ since 5.13 (a sysctl before)", false,
          "tasks the load balancer moves in one go", 1, 0 },
        { "preempt", SCHED_SETTING_CHOICE, FILES1("preempt", "5.13"), NULL,
          "not on this kernel: the preemption model is chosen at run time with CONFIG_PREEMPT_DYNAMIC (5.13 and later)",
          false, "the preemption model (the words the kernel lists: 6.12 none voluntary full, 7.3 full lazy)" },
        { "numa_balancing/scan_delay_ms", SCHED_SETTING_NUMBER, FILES1("numa_balancing/scan_delay_ms", "5.13"),
          ALIASES("numa_balancing_scan_delay_ms"), NUMA_ABSENT, false, "NUMA balancing: delay before a task's first scan" },
        { "numa_balancing/scan_period_min_ms", SCHED_SETTING_NUMBER,
          FILES1("numa_balancing/scan_period_min_ms", "5.13"), ALIASES("numa_balancing_scan_period_min_ms"),
          NUMA_ABSENT, false, "NUMA balancing: shortest scan period" },
        { "numa_balancing/scan_period_max_ms", SCHED_SETTING_NUMBER,
          FILES1("numa_balancing/scan_period_max_ms", "5.13"), ALIASES("numa_balancing_scan_period_max_ms"),
          NUMA_ABSENT, false, "NUMA balancing: longest scan period" },
        { "numa_balancing/scan_size_mb", SCHED_SETTING_NUMBER, FILES1("numa_balancing/scan_size_mb", "5.13"),
          ALIASES("numa_balancing_scan_size_mb"), NUMA_ABSENT, false, "NUMA balancing: memory scanned per period" },
        { "numa_balancing/hot_threshold_ms", SCHED_SETTING_NUMBER, FILES1("numa_balancing/hot_threshold_ms", "6.0"),
          NULL, "not on this kernel: needs CONFIG_NUMA_BALANCING, 6.0 and later", false,
          "NUMA balancing (memory tiering): hint-fault latency below which a page is hot" },
        { "llc_balancing/enabled", SCHED_SETTING_SWITCH, FILES1("llc_balancing/enabled", "7.3"), NULL, LLC_ABSENT, false,
          "cache-aware load balancing: the kernel gathers a process's threads on one LLC" },
        { "llc_balancing/aggr_tolerance", SCHED_SETTING_NUMBER, FILES1("llc_balancing/aggr_tolerance", "7.3"), NULL,
          LLC_ABSENT, false, "cache-aware load balancing: how far an LLC may be loaded by aggregation" },
        { "llc_balancing/epoch_period", SCHED_SETTING_NUMBER, FILES1("llc_balancing/epoch_period", "7.3"), NULL,
          LLC_ABSENT, false, "cache-aware load balancing: the period over which a process's LLC occupancy is measured" },
        { "llc_balancing/epoch_affinity_timeout", SCHED_SETTING_NUMBER,
          FILES1("llc_balancing/epoch_affinity_timeout", "7.3"), NULL, LLC_ABSENT, false,
          "cache-aware load balancing: periods after which a process's preferred LLC lapses" },
        { "llc_balancing/imb_pct", SCHED_SETTING_NUMBER, FILES1("llc_balancing/imb_pct", "7.3"), NULL, LLC_ABSENT,
          false, "cache-aware load balancing: imbalance tolerated between LLCs, percent" },
        { "llc_balancing/overaggr_pct", SCHED_SETTING_NUMBER, FILES1("llc_balancing/overaggr_pct", "7.3"), NULL,
          LLC_ABSENT, false, "cache-aware load balancing: load past which an LLC stops taking more, percent" },
};

const size_t sched_settings_count = ELEMENTSOF(sched_settings);

const char *const sched_setting_keys[] = {
        "base_slice_ns", "latency_ns", "wakeup_granularity_ns", "migration_cost_ns", "nr_migrate", "preempt",
        "numa_balancing/scan_delay_ms", "numa_balancing/scan_period_min_ms", "numa_balancing/scan_period_max_ms",
        "numa_balancing/scan_size_mb", "numa_balancing/hot_threshold_ms", "llc_balancing/enabled",
        "llc_balancing/aggr_tolerance", "llc_balancing/epoch_period", "llc_balancing/epoch_affinity_timeout",
        "llc_balancing/imb_pct", "llc_balancing/overaggr_pct",
        /* aliases */
        "min_granularity_ns", "sched_min_granularity_ns", "sched_latency_ns",
        "sched_wakeup_granularity_ns", "sched_migration_cost_ns", "sched_nr_migrate", "numa_balancing_scan_delay_ms",
        "numa_balancing_scan_period_min_ms", "numa_balancing_scan_period_max_ms", "numa_balancing_scan_size_mb", NULL,
};

const SchedSettingInfo *sched_setting_lookup(const char *key) {
        for (size_t i = 0; i < sched_settings_count; i++) {
                const SchedSettingInfo *s = &sched_settings[i];

                if (streq(s->name, key))
                        return s;
                for (const char *const *a = s->aliases; a && *a; a++)
                        if (streq(*a, key))
                                return s;
        }
        return NULL;
}

const SchedSettingInfo *sched_setting_by_file(const char *file) {
        for (size_t i = 0; i < sched_settings_count; i++)
                for (size_t f = 0; f < sched_settings[i].n_files; f++)
                        if (streq(sched_settings[i].files[f].name, file))
                                return &sched_settings[i];
        return NULL;
}

uint32_t sched_setting_max(const SchedSettingInfo *info) {
        return info->max ?: UINT32_MAX;
}

bool sched_setting_in_range(const SchedSettingInfo *info, const char *value) {
        uint64_t v;

        if (info->kind != SCHED_SETTING_NUMBER)
                return true;
        return parse_u64_decimal(value, UINT32_MAX, &v) && v >= info->min && v <= sched_setting_max(info);
}

size_t sched_setting_index(const SchedSettingInfo *info) {
        return (size_t) (info - sched_settings);
}

const char *sched_setting_kind_to_string(SchedSettingKind k) {
        switch (k) {
        case SCHED_SETTING_NUMBER:
                return "number";
        case SCHED_SETTING_SWITCH:
                return "switch";
        case SCHED_SETTING_CHOICE:
                return "choice";
        default:
                return "unknown";
        }
}

int sched_setting_history(const SchedSettingInfo *info, char **ret) {
        _cleanup_free_ char *text = NULL;

        for (size_t f = 0; f < info->n_files; f++) {
                const SchedSettingFile *x = &info->files[f];
                char *next;

                if (asprintf(&next, "%s%s%s from %s%s%s", text ?: "", text ? ", " : "", x->name, x->since,
                             x->until ? " until " : "", x->until ?: "") < 0)
                        return -ENOMEM;
                free(text);
                text = next;
        }
        *ret = TAKE_PTR(text);
        return 0;
}

/* ---- values ------------------------------------------------------------- */

static bool is_word_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

bool sched_setting_value_valid(const char *value) {
        size_t n = strlen(value);

        if (n == 0 || n >= SCHED_SETTING_VALUE_MAX)
                return false;
        for (const char *c = value; *c; c++)
                if (!is_word_char(*c))
                        return false;
        return true;
}

bool sched_setting_file_valid(const char *file) {
        size_t n = strlen(file);

        if (n == 0 || n >= SCHED_SETTING_NAME_MAX || file[0] == '/' || file[n - 1] == '/' || strstr(file, "//"))
                return false;
        for (const char *c = file; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '/'))
                        return false;
        return true;
}

/* At most UINT32_MAX: the kernel's u32 files (a larger number would be
 * cut, not refused). */
static bool number_valid(const char *s) {
        uint64_t v;

        return parse_u64_decimal(s, UINT32_MAX, &v);
}

static void set_value(char *ret, const char *v) {
        size_t n = strlen(v);

        memcpy(ret, v, n + 1);
}

int sched_setting_value_parse(SchedSettingKind kind, const char *text, char *ret) {
        static const char *const on[] = { "on", "yes", "true", "1", NULL };
        static const char *const off[] = { "off", "no", "false", "0", NULL };

        switch (kind) {
        case SCHED_SETTING_NUMBER:
                if (!number_valid(text))
                        return -EINVAL;
                set_value(ret, text);
                return 0;
        case SCHED_SETTING_SWITCH:
                if (strv_contains((char *const *) on, text))
                        set_value(ret, "1");
                else if (strv_contains((char *const *) off, text))
                        set_value(ret, "0");
                else
                        return -EINVAL;
                return 0;
        case SCHED_SETTING_CHOICE:
                if (!sched_setting_value_valid(text))
                        return -EINVAL;
                set_value(ret, text);
                return 0;
        default:
                return -EINVAL;
        }
}

/* "none (voluntary) full": the words, and the parenthesised one. */
static int parse_choices(const char *text, char *ret_value, char ***ret_choices) {
        _cleanup_strv_free_ char **words = NULL, **choices = NULL;
        const char *active = NULL;
        int k;

        k = strv_split_ws(text, 64, &words);
        if (k < 0)
                return k == -E2BIG ? -EBADMSG : k;
        for (char **w = words; *w; w++) {
                size_t n = strlen(*w);
                char *name = *w;

                if (name[0] == '(') {
                        if (n < 3 || name[n - 1] != ')' || active)
                                return -EBADMSG;
                        name[n - 1] = '\0';
                        name++;
                        active = name;
                }
                if (!sched_setting_value_valid(name))
                        return -EBADMSG;
                if ((k = strv_push_dup(&choices, name)) < 0)
                        return k;
        }
        if (!choices)
                return -EBADMSG;
        if (!active)
                return -ENODATA;
        set_value(ret_value, active);
        if (ret_choices)
                *ret_choices = TAKE_PTR(choices);
        return 0;
}

int sched_setting_text_parse(SchedSettingKind kind, const char *text, char *ret_value, char ***ret_choices) {
        _cleanup_free_ char *copy = strdup(text);
        char *t;

        if (!copy)
                return -ENOMEM;
        t = strstrip(copy);
        switch (kind) {
        case SCHED_SETTING_NUMBER:
                if (!number_valid(t))
                        return -EBADMSG;
                set_value(ret_value, t);
                return 0;
        case SCHED_SETTING_SWITCH:
                if (streq(t, "1") || streq(t, "Y") || streq(t, "y"))
                        set_value(ret_value, "1");
                else if (streq(t, "0") || streq(t, "N") || streq(t, "n"))
                        set_value(ret_value, "0");
                else
                        return -EBADMSG;
                return 0;
        case SCHED_SETTING_CHOICE:
                return parse_choices(t, ret_value, ret_choices);
        default:
                return -EBADMSG;
        }
}
