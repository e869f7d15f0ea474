/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* [kernel] lines for the scheduler's debugfs settings: parsing (names,
 * older names and sysctl names, values of each kind, errors), the
 * kernel-wide outcome of several policies (precedence, conflicts), and the
 * checks against a kernel that has them, lacks them (7.3's on 6.12, 6.12's
 * that 6.6 removed) or refuses their writes. Pure: decide/ sources only,
 * the KernelCaps built by hand. */

#include "decide/policy-check.h"
#include "tests.h"

static Policy *parse_ok(const char *text, Diagnostics *d) {
        Policy *p = NULL;
        int k = policy_parse(text, strlen(text), "k.ini", d, &p);

        if (k < 0) {
                DUMP_DIAG(d);
                ASSERT_OK(k);
        }
        return p;
}

static Diagnostics *parse_bad(const char *text) {
        Diagnostics *d = diag_new();
        Policy *p = NULL;

        ASSERT_NOT_NULL(d);
        ASSERT_ERROR(policy_parse(text, strlen(text), "k.ini", d, &p), EINVAL);
        ASSERT_NULL(p);
        return d;
}

static const PolicySetting *setting(const Policy *p, const char *name) {
        for (size_t i = 0; i < p->n_settings; i++)
                if (streq(p->settings[i].info->name, name))
                        return &p->settings[i];
        return NULL;
}

#define LLC_OFF                              \
        "[policy]\nname = pinned\n"          \
        "[kernel]\n"                         \
        "cgroup_mode = smp\n"                \
        "llc_balancing/enabled = off\n"      \
        "llc_balancing/imb_pct = 30\n"       \
        "base_slice_ns = 3000000\n"          \
        "preempt = full\n"

static void test_parse(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *p = parse_ok(LLC_OFF, d);

        ASSERT_EQ(d->n, 0);
        ASSERT_STREQ(p->cgroup_mode, "smp");
        ASSERT_EQ(p->n_settings, 4);
        ASSERT_STREQ(setting(p, "llc_balancing/enabled")->value, "0");
        ASSERT_EQ(setting(p, "llc_balancing/enabled")->line, 5);
        ASSERT_STREQ(setting(p, "llc_balancing/imb_pct")->value, "30");
        ASSERT_STREQ(setting(p, "base_slice_ns")->value, "3000000");
        ASSERT_STREQ(setting(p, "preempt")->value, "full");
}

/* An older name or tuned's sysctl name: managed under today's name, with
 * a warning that says which files it has had. */
static void test_renamed(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *p = parse_ok("[policy]\nname = old\n[kernel]\nmin_granularity_ns = 750000\n"
                                                     "sched_migration_cost_ns = 250000\n",
                                                     d);

        DUMP_DIAG(d);
        ASSERT_EQ(p->n_settings, 2);
        ASSERT_STREQ(setting(p, "base_slice_ns")->value, "750000");
        ASSERT_STREQ(setting(p, "migration_cost_ns")->value, "250000");
        ASSERT_EQ(diag_count_id(d, "renamed-setting"), 2);
        ASSERT_STR_CONTAINS(d->items[0].message, "managed as base_slice_ns");
        ASSERT_STR_CONTAINS(d->items[0].message, "min_granularity_ns from 5.13 until 6.6");
        ASSERT_STR_CONTAINS(d->items[1].message, "old sysctl (before 5.13)");
        ASSERT_EQ(d->n_errors, 0);
}

static void test_errors(void) {
        Diagnostics *d;

        d = parse_bad("[policy]\nname = x\n[kernel]\nllc_balancing/enabled = maybe\n");
        ASSERT_DIAG(d, DIAG_ERROR, "bad-value", 4);
        ASSERT_STR_CONTAINS(d->items[0].message, "on or off");
        diag_free(d);
        d = parse_bad("[policy]\nname = x\n[kernel]\nbase_slice_ns = 3ms\n");
        ASSERT_DIAG(d, DIAG_ERROR, "bad-value", 4);
        ASSERT_STR_CONTAINS(d->items[0].message, "a number");
        diag_free(d);
        d = parse_bad("[policy]\nname = x\n[kernel]\nnr_migrate = 4294967296\n");
        ASSERT_DIAG(d, DIAG_ERROR, "bad-value", 4);
        diag_free(d);
        /* In the u32, but not what the scheduler works with: each setting's bounds. */
        d = parse_bad("[policy]\nname = x\n[kernel]\nnr_migrate = 0\n");
        ASSERT_DIAG(d, DIAG_ERROR, "bad-value", 4);
        ASSERT_STR_CONTAINS(d->items[0].message, "from 1 to 4294967295");
        diag_free(d);
        d = parse_bad("[policy]\nname = x\n[kernel]\nbase_slice_ns = 0\n");
        ASSERT_DIAG(d, DIAG_ERROR, "bad-value", 4);
        ASSERT_STR_CONTAINS(d->items[0].message, "from 100000 to 1000000000");
        diag_free(d);
        d = parse_bad("[policy]\nname = x\n[kernel]\nsched_min_granularity_ns = 2000000000\n");
        ASSERT_DIAG(d, DIAG_ERROR, "bad-value", 4);
        diag_free(d);
        {
                _cleanup_(diag_freep) Diagnostics *ok = diag_new();
                _cleanup_(policy_freep) Policy *p = parse_ok("[policy]\nname = x\n[kernel]\nnr_migrate = 1\n"
                                                             "base_slice_ns = 100000\nwakeup_granularity_ns = 0\n", ok);

                ASSERT_EQ(p->n_settings, 3);
        }
        d = parse_bad("[policy]\nname = x\n[kernel]\npreempt = Full\n");
        ASSERT_DIAG(d, DIAG_ERROR, "bad-value", 4);
        diag_free(d);
        /* The same setting twice, also under two of its names. */
        d = parse_bad("[policy]\nname = x\n[kernel]\nbase_slice_ns = 1000000\nmin_granularity_ns = 2000000\n");
        ASSERT_DIAG(d, DIAG_ERROR, "duplicate-key", 5);
        ASSERT_STR_CONTAINS(d->items[d->n - 1].message, "first at line 4");
        diag_free(d);
        /* A typo: the closest setting. */
        d = parse_bad("[policy]\nname = x\n[kernel]\nllc_balancing/enable = off\n");
        ASSERT_DIAG(d, DIAG_ERROR, "unknown-key", 4);
        ASSERT_STR_CONTAINS(d->items[0].message, "did you mean 'llc_balancing/enabled'?");
        diag_free(d);
        /* Settings belong in [kernel]. */
        d = parse_bad("[policy]\nname = x\n[place]\nbase_slice_ns = 1\n");
        ASSERT_DIAG(d, DIAG_ERROR, "unknown-key", 4);
        diag_free(d);
        /* A [kernel] with only settings is not a policy that does nothing. */
        {
                _cleanup_(diag_freep) Diagnostics *ok = diag_new();
                _cleanup_(policy_freep) Policy *p = parse_ok("[policy]\nname = x\n[kernel]\nnr_migrate = 8\n", ok);

                ASSERT_FALSE(diag_has(ok, -1, "noop"));
        }
}

static PolicySet *set_of(const char *const *texts, size_t n, Diagnostics *d) {
        static const char *const files[] = { "a.ini", "b.ini", "c.ini" };
        IniSource src[3];
        PolicySet *s = NULL;

        ASSERT_LE(n, 3);
        for (size_t i = 0; i < n; i++)
                src[i] = (IniSource) { .file = files[i], .text = texts[i], .len = strlen(texts[i]) };
        ASSERT_OK(policy_set_parse(src, n, d, &s));
        return s;
}

/* The first policy in precedence wins each setting; a different value
 * from a later one is a conflict, the same value is not. */
static void test_resolve(void) {
        static const char *const texts[] = {
                "[policy]\nname = a\npriority = 200\n[kernel]\nllc_balancing/enabled = off\nnr_migrate = 8\n",
                "[policy]\nname = b\n[kernel]\nllc_balancing/enabled = on\nnr_migrate = 8\nbase_slice_ns = 3000000\n",
                "[policy]\nname = c\npriority = 10\n[kernel]\nbase_slice_ns = 4000000\n",
        };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(texts, 3, d);
        _cleanup_(policy_kernel_plan_freep) PolicyKernelPlan *kp = NULL;
        bool in_force[] = { true, true, true };

        ASSERT_OK(policy_set_resolve_kernel(s, in_force, &kp));
        ASSERT_EQ(kp->n_settings, 3);
        ASSERT_STREQ(kp->settings[0].info->name, "llc_balancing/enabled");
        ASSERT_STREQ(kp->settings[0].value, "0");
        ASSERT_EQ(kp->setting_policy[0], 0);
        ASSERT_STREQ(kp->settings[2].info->name, "base_slice_ns");
        ASSERT_STREQ(kp->settings[2].value, "3000000");
        ASSERT_EQ(kp->setting_policy[2], 1);
        ASSERT_EQ(kp->n_conflicts, 2);
        ASSERT_STREQ(kp->conflicts[0].what, "setting llc_balancing/enabled");
        ASSERT_EQ(kp->conflicts[0].winner, 0);
        ASSERT_EQ(kp->conflicts[0].loser, 1);
        ASSERT_STREQ(kp->conflicts[1].what, "setting base_slice_ns");
        kp = policy_kernel_plan_free(kp);

        /* a out of force: b's values. */
        in_force[0] = false;
        ASSERT_OK(policy_set_resolve_kernel(s, in_force, &kp));
        ASSERT_STREQ(kp->settings[0].value, "1");
        ASSERT_EQ(kp->setting_policy[0], 1);

        /* The offline check says the same. */
        ASSERT_OK(check_policy_set(s, NULL, NULL, 0, d));
        DUMP_DIAG(d);
        ASSERT_EQ(diag_count_id(d, "conflict"), 2);
        ASSERT_TRUE(diag_has_line(d, "b.ini", 4));
        ASSERT_TRUE(diag_has_line(d, "c.ini", 5));
}

/* The settings of the 7.3.4 and 6.12.95 test guests (read there). */
static KernelSetting settings_73[17], settings_612[17];
static char *lazy_full[] = { (char *) "full", (char *) "lazy", NULL };

static void have(KernelSetting *table, const char *name, const char *file, const char *value, bool writable) {
        const SchedSettingInfo *info = sched_setting_lookup(name);
        KernelSetting *ks = &table[sched_setting_index(info)];

        ks->info = info;
        ks->file = file;
        snprintf(ks->value, sizeof(ks->value), "%s", value);
        ks->writable = writable;
        ks->error = writable ? 0 : -EPERM;
}

static KernelCaps caps_for(KernelSetting *table) {
        ASSERT_LE(sched_settings_count, 17);
        for (size_t i = 0; i < sched_settings_count; i++)
                if (!table[i].info)
                        table[i] = (KernelSetting) { .info = &sched_settings[i], .error = -ENOENT };
        return (KernelCaps) {
                .sched_settings = { .available = true },
                .settings = table,
                .n_settings = sched_settings_count,
                .cgroup_mode = { .available = false, .reason = (char *) "absent" },
        };
}

static void test_on_machines(void) {
        static const char *const texts[] = {
                LLC_OFF,
                "[policy]\nname = cfs\n[kernel]\nlatency_ns = 24000000\nnuma_balancing/scan_delay_ms = 500\n",
        };
        _cleanup_(diag_freep) Diagnostics *d73 = diag_new(), *d612 = diag_new(), *dlocked = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(texts, 2, d73);
        KernelCaps c73, c612;

        have(settings_73, "base_slice_ns", "base_slice_ns", "2800000", true);
        have(settings_73, "preempt", "preempt", "lazy", true);
        settings_73[sched_setting_index(sched_setting_lookup("preempt"))].choices = lazy_full;
        have(settings_73, "llc_balancing/enabled", "llc_balancing/enabled", "1", true);
        have(settings_73, "llc_balancing/imb_pct", "llc_balancing/imb_pct", "20", true);
        c73 = caps_for(settings_73);
        c73.cgroup_mode = (CapStatus) { .available = true };
        c73.cgroup_modes = (char *[]) { (char *) "up", (char *) "smp", (char *) "concur", NULL };
        have(settings_612, "base_slice_ns", "base_slice_ns", "2800000", true);
        c612 = caps_for(settings_612);

        /* 7.3: the pinned policy applies as it is; the CFS one does not. */
        ASSERT_OK(check_policy_set(s, NULL, &c73, POLICY_KERNEL_VERSION(7, 3, 4), d73));
        DUMP_DIAG(d73);
        ASSERT_EQ(diag_count_id(d73, "no-setting"), 2);
        ASSERT_TRUE(diag_has_line(d73, "b.ini", 4)); /* latency_ns: removed in 6.6 */
        ASSERT_TRUE(diag_has_line(d73, "b.ini", 5)); /* numa_balancing: not built in */
        ASSERT_FALSE(diag_has_line(d73, "a.ini", 5));

        /* 6.12: llc_balancing is 7.3's, preempt not built in here. */
        ASSERT_OK(check_policy_set(s, NULL, &c612, POLICY_KERNEL_VERSION(6, 12, 95), d612));
        DUMP_DIAG(d612);
        ASSERT_TRUE(diag_has_line(d612, "a.ini", 5));
        ASSERT_TRUE(diag_has_line(d612, "a.ini", 6));
        ASSERT_TRUE(diag_has_line(d612, "a.ini", 8));
        ASSERT_FALSE(diag_has_line(d612, "a.ini", 7));
        ASSERT_EQ(diag_count_id(d612, "no-setting"), 5);
        ASSERT_DIAG(d612, DIAG_WARNING, "no-cgroup-mode", 4);
        for (size_t i = 0; i < d612->n; i++)
                if (streq(d612->items[i].id, "no-setting") && streq(d612->items[i].file, "a.ini") && d612->items[i].line == 5) {
                        ASSERT_STR_CONTAINS(d612->items[i].message, "7.3");
                        ASSERT_STR_CONTAINS(d612->items[i].message, "CONFIG_SCHED_CACHE");
                }

        /* Locked down: present, not writable; a word the kernel lacks. */
        have(settings_73, "base_slice_ns", "base_slice_ns", "2800000", false);
        settings_73[sched_setting_index(sched_setting_lookup("preempt"))].choices =
                (char *[]) { (char *) "lazy", NULL };
        ASSERT_OK(check_policy_set(s, NULL, &c73, POLICY_KERNEL_VERSION(7, 3, 4), dlocked));
        DUMP_DIAG(dlocked);
        ASSERT_DIAG(dlocked, DIAG_WARNING, "setting-read-only", 7);
        ASSERT_DIAG(dlocked, DIAG_WARNING, "unknown-choice", 8);
        ASSERT_EQ(dlocked->n_errors, 0);
}

int main(void) {
        test_parse();
        test_renamed();
        test_errors();
        test_resolve();
        test_on_machines();
        return 0;
}
