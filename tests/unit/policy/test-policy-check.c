/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Checks across policies (conflicts, shadowing) and against a machine given
 * as hand-built Topology and KernelCaps values. */

#include "decide/policy-check.h"
#include "tests.h"

static PolicySet *set_of(const char *const *files, const char *const *texts, size_t n, Diagnostics *d) {
        IniSource src[8];
        PolicySet *s = NULL;
        int k;

        ASSERT_LE(n, 8);
        for (size_t i = 0; i < n; i++)
                src[i] = (IniSource) { .file = files[i], .text = texts[i], .len = strlen(texts[i]) };
        k = policy_set_parse(src, n, d, &s);
        if (k < 0) {
                DUMP_DIAG(d);
                ASSERT_OK(k);
        }
        return s;
}

/* The set's check finds one shadowed policy: file's, by the one named. */
static void expect_one_shadowed(const char *const *files, const char *const *texts, size_t n, const char *file,
                                const char *by) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(files, texts, n, d);

        ASSERT_OK(check_policy_set(s, NULL, NULL, 0, d));
        ASSERT_EQ(diag_count_id(d, "shadowed"), 1);
        ASSERT_STREQ(d->items[0].file, file);
        ASSERT_STR_CONTAINS(d->items[0].message, by);
}

static void test_shadowing(void) {
        static const char *const files[] = { "a.ini", "b.ini", "c.ini", "d.ini", "e.ini" };
        static const char *const texts[] = {
                /* a: all avx tasks, always */
                "[policy]\nname = a\npriority = 60\n[match]\nclass = avx\n[place]\n",
                /* b: avx tasks named gemm*: a takes them first inside [scope]
                 * include, but a names nothing and b does: outside include
                 * b places them, so not shadowed */
                "[policy]\nname = b\npriority = 50\n[match]\nclass = avx\ncomm = gemm*\n[place]\n",
                /* c: any class named gemm*: wider than a, not shadowed */
                "[policy]\nname = c\npriority = 40\n[match]\ncomm = gemm*\n[place]\n",
                /* d: same as a but disabled: not a shadow, not shadowed */
                "[policy]\nname = d\npriority = 70\nenabled = no\n[match]\nclass = avx\n[place]\n",
                /* e: same match as c, later in precedence: shadowed by c */
                "[policy]\nname = e\npriority = 30\n[match]\ncomm = gemm*\n[place]\n",
        };

        /* e is shadowed by c */
        expect_one_shadowed(files, texts, 5, "e.ini", "'c'");
}

/* The scope in the shadow check: a policy with an exclude of its own
 * covers only one that excludes as much. */
static void test_shadowing_exclude(void) {
        static const char *const files[] = { "a.ini", "b.ini", "c.ini" };
        static const char *const texts[] = {
                "[policy]\nname = a\npriority = 60\n[match]\ncomm = gemm*\nexclude = /lab\n[place]\n",
                /* b: gemm* everywhere: a leaves /lab to it */
                "[policy]\nname = b\npriority = 50\n[match]\ncomm = gemm*\n[place]\n",
                /* c: gemm* outside /lab and /x: a takes them all first */
                "[policy]\nname = c\npriority = 40\n[match]\ncomm = gemm*\nexclude = /lab /x\n[place]\n",
        };

        expect_one_shadowed(files, texts, 3, "c.ini", "'a'");
}

static void test_shadowing_when(void) {
        static const char *const files[] = { "a.ini", "b.ini", "c.ini" };
        static const char *const texts[] = {
                "[policy]\nname = a\npriority = 60\n[when]\nload = 0-50%\n[match]\nclass = avx\n[place]\n",
                /* holds at loads where a does not: reachable */
                "[policy]\nname = b\npriority = 50\n[match]\nclass = avx\n[place]\n",
                /* only at loads inside a's band: shadowed */
                "[policy]\nname = c\npriority = 40\n[when]\nload = 10-40%\n[match]\nclass = avx\n[place]\n",
        };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(files, texts, 3, d);

        ASSERT_OK(check_policy_set(s, NULL, NULL, 0, d));
        ASSERT_EQ(diag_count_id(d, "shadowed"), 1);
        ASSERT_STREQ(d->items[0].file, "c.ini");
}

static void test_conflict_warnings(void) {
        static const char *const files[] = { "hi.ini", "lo.ini", "apart.ini" };
        static const char *const texts[] = {
                ("[policy]\nname = hi\npriority = 60\n[when]\nload = 50-100%\n[kernel]\ncgroup_mode = concur\n"
                 "[features]\nSHARED_RUNQ = off\n"),
                "[policy]\nname = lo\npriority = 50\n[kernel]\ncgroup_mode = smp\n[features]\nSHARED_RUNQ = on\n",
                /* never in force together with hi: no warning against hi */
                "[policy]\nname = apart\npriority = 55\n[when]\nload = 0-40%\n[features]\nSHARED_RUNQ = on\n",
        };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(files, texts, 3, d);

        ASSERT_OK(check_policy_set(s, NULL, NULL, 0, d));
        diag_sort(d);
        /* lo loses cgroup_mode and the feature to hi; apart agrees with lo */
        ASSERT_EQ(diag_count_id(d, "conflict"), 2);
        ASSERT_STREQ(d->items[0].file, "lo.ini");
        ASSERT_EQ(d->items[0].line, 5);
        ASSERT_EQ(d->items[1].line, 7);
        ASSERT_STR_CONTAINS(d->items[1].message, "'hi' wins");
}

static void test_offline_cgroup_mode_words(void) {
        static const char *const files[] = { "m.ini" };
        static const char *const texts[] = { "[policy]\nname = m\n[kernel]\ncgroup_mode = conccur\n" };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(files, texts, 1, d);

        ASSERT_OK(check_policy_set(s, NULL, NULL, 0, d));
        ASSERT_DIAG(d, DIAG_WARNING, "unknown-cgroup-mode", 4);
        ASSERT_STR_CONTAINS(d->items[0].message, "did you mean 'concur'?");
}

/* A 2-socket, 4-LLC, SMT2 machine with 16 PUs, made by hand. */
static Topology *fake_topology(void) {
        Topology *t = calloc(1, sizeof(Topology));

        ASSERT_NOT_NULL(t);
        t->n_packages = 2;
        t->n_numa_nodes = 2;
        t->n_llcs = 4;
        t->n_pus = 16;
        t->max_threads_per_core = 2;
        t->cpu_vendor = (char *) "AuthenticAMD";
        ASSERT_OK(bitmap_parse_list("0-15", &t->cpus));
        return t;
}

static char *tokens[] = { (char *) "GENTLE_FAIR_SLEEPERS", (char *) "NO_HRTICK", (char *) "TTWU_QUEUE", NULL };
static char *modes_list[] = { (char *) "up", (char *) "smp", (char *) "concur", (char *) "max", (char *) "tasks", NULL };

static KernelCaps fake_caps(void) {
        return (KernelCaps) {
                .core_sched = { .available = true, .reason = (char *) "ok" },
                .smt = { .available = true },
                .smt_active = true,
                .sched_features = { .available = true },
                .features_readable = true,
                .features = tokens,
                .cgroup_mode = { .available = true },
                .cgroup_modes = modes_list,
                .avx512_state = { .available = true },
                .avx512_evidence = { .available = true, .reason = (char *) "clean: ..." },
                .avx512_arch_status = KERNEL_AVX_CLEAN,
        };
}

#define MACHINE_POLICY                                                          \
        "[policy]\nname = m\n"                                                  \
        "[when]\nsmt = on\nllcs >= 8\nvendor = GenuineIntel\nkernel >= 7.3\n"   \
        "[match]\nclass = avx\n"                                                \
        "[place]\ncookie = group\ncpus = 8-31\n"                                \
        "[kernel]\ncgroup_mode = concur\n"                                      \
        "[features]\nHRTICK = on\nTTWU_QUEUE = off\nTTWU_QUEU = on\nNOSUCH = on\n"

static void test_machine_warnings(void) {
        static const char *const files[] = { "m.ini" };
        static const char *const texts[] = { MACHINE_POLICY };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(files, texts, 1, d);
        Topology *t = fake_topology();
        KernelCaps caps = fake_caps();

        ASSERT_OK(check_policy_set(s, t, &caps, POLICY_KERNEL_VERSION(6, 6, 0), d));
        diag_sort(d);
        DUMP_DIAG(d);
        /* HRTICK is listed as NO_HRTICK: known. TTWU_QUEU: a typo. */
        ASSERT_EQ(diag_count_id(d, "unknown-feature"), 2);
        ASSERT_TRUE(diag_has_line(d, "m.ini", 18));
        ASSERT_TRUE(diag_has_line(d, "m.ini", 19));
        ASSERT_STR_CONTAINS(d->items[d->n - 2].message, "did you mean TTWU_QUEUE?");
        /* llcs, vendor, kernel cannot hold; smt can */
        ASSERT_EQ(diag_count_id(d, "never-holds"), 3);
        ASSERT_TRUE(diag_has_line(d, "m.ini", 5));
        ASSERT_TRUE(diag_has_line(d, "m.ini", 6));
        ASSERT_TRUE(diag_has_line(d, "m.ini", 7));
        ASSERT_DIAG(d, DIAG_WARNING, "cpu-not-present", 12);
        ASSERT_EQ(d->n_errors, 0);
        ASSERT_FALSE(diag_has(d, -1, "no-cgroup-mode"));
        ASSERT_FALSE(diag_has(d, -1, "unknown-cgroup-mode"));
        bitmap_free(t->cpus);
        free(t);
}

static void test_machine_without_facilities(void) {
        static const char *const files[] = { "m.ini", "off.ini" };
        static const char *const texts[] = {
                MACHINE_POLICY,
                "[policy]\nname = off\nenabled = no\n[kernel]\ncgroup_mode = max\n[features]\nNOSUCH = on\n",
        };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(files, texts, 2, d);
        KernelCaps caps = fake_caps();

        caps.cgroup_mode = (CapStatus) { .available = false, .reason = (char *) "no sched/cgroup_mode" };
        caps.cgroup_modes = NULL;
        caps.features_readable = false;
        caps.features = NULL;
        caps.core_sched = (CapStatus) { .available = false, .reason = (char *) "EINVAL" };
        caps.smt_active = false;
        ASSERT_OK(check_policy_set(s, NULL, &caps, 0, d));
        DUMP_DIAG(d);
        /* only the enabled policy gets machine warnings */
        ASSERT_DIAG(d, DIAG_WARNING, "no-cgroup-mode", 14);
        ASSERT_DIAG(d, DIAG_WARNING, "no-features", 16);
        ASSERT_DIAG(d, DIAG_WARNING, "no-core-sched", 11);
        ASSERT_DIAG(d, DIAG_WARNING, "never-holds", 4); /* smt = on, SMT off */
}

/* class = avx where arch_status cannot tell AVX-512 work: a warning at the
 * class line, naming the evidence; a clean host says nothing; a policy
 * without class avx says nothing either. */
static void test_machine_avx_untellable(void) {
        static const char *const files[] = { "m.ini", "t.ini" };
        static const char *const texts[] = {
                MACHINE_POLICY,
                "[policy]\nname = t\n[match]\nclass = throughput\n[place]\ncpus = all\n",
        };
        for (int e = 0; e < _KERNEL_AVX_MAX; e++) {
                _cleanup_(diag_freep) Diagnostics *d = diag_new();
                _cleanup_(policy_set_freep) PolicySet *s = set_of(files, texts, 2, d);
                KernelCaps caps = fake_caps();
                bool warned = false;

                caps.avx512_arch_status = (KernelAvxEvidence) e;
                caps.avx512_evidence.available = e == KERNEL_AVX_CLEAN;
                caps.avx512_evidence.reason = (char *) (e == KERNEL_AVX_POLLUTED ? "polluted: the C library" : "none: no line");
                ASSERT_OK(check_policy_set(s, NULL, &caps, 0, d));
                DUMP_DIAG(d);
                for (size_t i = 0; i < d->n; i++)
                        if (streq(d->items[i].id, "avx-untellable")) {
                                ASSERT_STREQ(d->items[i].file, "m.ini");
                                ASSERT_EQ(d->items[i].line, 9u);
                                ASSERT_EQ(d->items[i].severity, DIAG_WARNING);
                                ASSERT_STR_CONTAINS(d->items[i].message, kernel_avx_evidence_to_string((KernelAvxEvidence) e));
                                warned = true;
                        }
                ASSERT_EQ(warned, e != KERNEL_AVX_CLEAN);
        }
}

static void test_machine_unknown_mode(void) {
        static const char *const files[] = { "m.ini" };
        static const char *const texts[] = { "[policy]\nname = m\n[kernel]\ncgroup_mode = flat\n" };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(files, texts, 1, d);
        KernelCaps caps = fake_caps();
        static char *newer[] = { (char *) "up", (char *) "flat", NULL };

        ASSERT_OK(check_policy_set(s, NULL, &caps, 0, d));
        ASSERT_DIAG(d, DIAG_WARNING, "unknown-cgroup-mode", 4);
        ASSERT_STR_CONTAINS(d->items[0].message, "this kernel");
        diag_free(TAKE_PTR(d));

        /* a kernel that lists a mode topod never heard of: fine */
        d = diag_new();
        caps.cgroup_modes = newer;
        ASSERT_OK(check_policy_set(s, NULL, &caps, 0, d));
        ASSERT_EQ(d->n, 0);
}

static void test_machine_from(void) {
        Topology *t = fake_topology();
        KernelCaps caps = fake_caps();
        PolicyMachine m;

        check_machine_from(t, &caps, 42, &m);
        ASSERT_TRUE(m.smt);
        ASSERT_EQ(m.n_llcs, 4);
        ASSERT_EQ(m.n_cpus, 16);
        ASSERT_EQ(m.kernel, 42);
        ASSERT_FALSE(m.has_load);
        caps.smt_active = false; /* nosmt: present in the topology, off */
        check_machine_from(t, &caps, 0, &m);
        ASSERT_FALSE(m.smt);
        bitmap_free(t->cpus);
        free(t);
}

int main(void) {
        RUN(test_shadowing);
        RUN(test_shadowing_exclude);
        RUN(test_shadowing_when);
        RUN(test_conflict_warnings);
        RUN(test_offline_cgroup_mode_words);
        RUN(test_machine_warnings);
        RUN(test_machine_without_facilities);
        RUN(test_machine_avx_untellable);
        RUN(test_machine_unknown_mode);
        RUN(test_machine_from);
        return 0;
}
