/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The planner: golden plans for synthetic machines × policies (flat and
 * nested, each cgroup mode written or emulated, pack and spread, exclusive,
 * conflicts, no SMT), byte-identical across runs and input orders. Set
 * TOPOD_UPDATE_GOLDEN=1 to rewrite tests/data/plans/ after a deliberate
 * change. Runs in the source tree. */

#include "base/json.h"
#include "base/util.h"
#include "decide/plan.h"
#include "decide/policy-read.h"
#include "tests.h"

static const char AVX[] = "[policy]\nname = avx\npriority = 300\n[match]\nclass = avx\n"
                          "[place]\ngroup = avx\ncookie = group\ncpus = llc\nspread = pack\n";
static const char LATENCY[] = "[policy]\nname = latency\npriority = 200\n[match]\nclass = latency\n"
                              "[place]\ngroup = lat\ncookie = process\ncpus = llc\nspread = spread\nweight = 300\n"
                              "[features]\nTTWU_QUEUE = on\n";
static const char BATCH[] = "[policy]\nname = batch\npriority = 100\n[match]\ncomm = batch*\n"
                            "[place]\ngroup = batch\ncpus = node\nspread = pack\nweight = 200\n"
                            "[kernel]\ncgroup_mode = MODE\n[features]\nTTWU_QUEUE = off\n";
static const char PINNED[] = "[policy]\nname = pinned\npriority = 400\n[match]\ncomm = pinned\n"
                             "[place]\ngroup = pinned\ncpus = 2-5,200\nexclusive = yes\n";
static const char PINNED2[] = "[policy]\nname = pinned2\npriority = 390\n[match]\ncomm = pinned2\n"
                              "[place]\ngroup = pinned2\ncpus = 4-7\nexclusive = yes\n";

typedef struct Scenario {
        const char *name;
        const char *topology;
        bool cgroup_mode_file; /* a 7.3+ kernel */
        bool smt;
        ConfigHierarchy hierarchy;
        const char *mode;      /* for BATCH */
        bool with_usage;
} Scenario;

static PolicySet *policies(const char *mode) {
        static char batch[sizeof(BATCH) + 16];
        const char *at = strstr(BATCH, "MODE");
        IniSource src[5];
        PolicySet *s = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();

        snprintf(batch, sizeof(batch), "%.*s%s%s", (int) (at - BATCH), BATCH, mode, at + 4);
        src[0] = (IniSource) { "10-avx.ini", AVX, sizeof(AVX) - 1 };
        src[1] = (IniSource) { "20-latency.ini", LATENCY, sizeof(LATENCY) - 1 };
        src[2] = (IniSource) { "30-batch.ini", batch, strlen(batch) };
        src[3] = (IniSource) { "40-pinned.ini", PINNED, sizeof(PINNED) - 1 };
        src[4] = (IniSource) { "41-pinned2.ini", PINNED2, sizeof(PINNED2) - 1 };
        ASSERT_OK(policy_set_parse(src, 5, d, &s));
        return s;
}

/* The plans here model a host whose operator put every task in [scope]
 * include (the scope has tests of its own, test-scope.c): include = /,
 * nothing excluded, and a task without a cgroup in a session's. */
static void scope_everywhere(Config *c) {
        char error[160];

        ASSERT_OK(scope_patterns_parse("/", &c->scope.include, error, sizeof error));
        ASSERT_OK(scope_patterns_parse("", &c->scope.exclude, error, sizeof error));
}
#define TEST_CGROUP "/user.slice/user-1000.slice/session-1.scope"

/* The tasks: AVX processes, latency processes, batch jobs, pinned ones, a
 * kernel thread and an unmatched task. */
static size_t make_tasks(PlanTaskInput *t, size_t max) {
        size_t n = 0;
        pid_t tid = 1000;

#define TASK(tgid_, class_, comm_, runnable_)                                                           \
        do {                                                                                          \
                ASSERT_LT(n, max);                                                                    \
                pid_t _g = (tgid_);                                                                   \
                t[n++] = (PlanTaskInput) { .tid = tid, .tgid = _g, .start_time = 5,                   \
                                           .runnable = (runnable_),                                   \
                                           .match = { .class = (class_), .comm = (comm_), .cgroup = TEST_CGROUP } };         \
                tid++;                                                                                \
        } while (0)

        for (int p = 0; p < 3; p++) { /* 3 AVX processes of 4 threads */
                pid_t tgid = tid;
                for (int i = 0; i < 4; i++)
                        TASK(tgid, POLICY_CLASS_AVX, "gemm", true);
        }
        for (int p = 0; p < 4; p++) { /* 4 latency services of 2 threads */
                pid_t tgid = tid;
                for (int i = 0; i < 2; i++)
                        TASK(tgid, POLICY_CLASS_LATENCY, "svc", false);
        }
        for (int p = 0; p < 2; p++) { /* 2 batch jobs of 6 threads, 5 runnable */
                pid_t tgid = tid;
                for (int i = 0; i < 6; i++)
                        TASK(tgid, POLICY_CLASS_THROUGHPUT, "batch-job", i < 5);
        }
        TASK(tid, POLICY_CLASS_OTHER, "pinned", true);
        TASK(tid, POLICY_CLASS_OTHER, "pinned2", true);
        TASK(tid, POLICY_CLASS_OTHER, "bash", false); /* no policy */
        t[n] = (PlanTaskInput) { .tid = 2, .tgid = 2, .kernel_thread = true, .match = { .comm = "kthreadd" } };
        n++;
#undef TASK
        return n;
}

static char *render(const Plan *p, const PolicySet *ps) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        Json *j;

        ASSERT_NOT_NULL(f);
        j = json_new(f, true);
        ASSERT_OK(plan_print_json(j, p, ps));
        json_free(j);
        fputs("--- text\n", f);
        ASSERT_OK(plan_print_text(f, p, ps));
        fclose(f);
        return buf;
}

static char *build(const Scenario *sc, bool reverse, Plan **ret_plan, PolicySet **ret_set) {
        static char *modes[] = { (char *) "up", (char *) "smp", (char *) "concur", (char *) "max", (char *) "tasks", NULL };
        TopologySource src = { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = sc->topology };
        _cleanup_(topology_freep) Topology *t = NULL;
        _cleanup_(config_freep) Config *config = NULL;
        PlanTaskInput tasks[64];
        PlanUsage usage[] = { { "batch-node0", 3500 }, { "node0/batch", 3500 } };
        KernelCaps caps = {
                .core_sched = { .available = sc->smt, .reason = (char *) "test: no SMT" },
                .smt = { .available = sc->smt },
                .smt_active = sc->smt,
                .cgroup_mode = { .available = sc->cgroup_mode_file },
                .cgroup_modes = sc->cgroup_mode_file ? modes : NULL,
        };
        PolicySet *ps = policies(sc->mode);
        bool in_force[8];
        size_t n;
        Plan *p = NULL;

        ASSERT_OK(topology_load(&src, &t));
        ASSERT_OK(config_new(&config));
        scope_everywhere(config);
        config->hierarchy = sc->hierarchy;
        n = make_tasks(tasks, ELEMENTSOF(tasks));
        if (reverse) /* input order must not matter */
                for (size_t i = 0; i < n / 2; i++) {
                        PlanTaskInput x = tasks[i];
                        tasks[i] = tasks[n - 1 - i];
                        tasks[n - 1 - i] = x;
                }
        for (size_t i = 0; i < ps->n; i++)
                in_force[i] = true;
        {
                PlanInputs in = {
                        .topology = t,
                        .caps = &caps,
                        .config = config,
                        .policies = ps,
                        .in_force = in_force,
                        .tasks = tasks,
                        .n_tasks = n,
                        .usage = sc->with_usage ? usage : NULL,
                        .n_usage = sc->with_usage ? ELEMENTSOF(usage) : 0,
                };
                ASSERT_OK(plan_build(&in, &p));
        }
        {
                char *out = render(p, ps);

                if (ret_plan)
                        *ret_plan = p;
                else
                        plan_free(p);
                if (ret_set)
                        *ret_set = ps;
                else
                        policy_set_free(ps);
                return out;
        }
}

static const Scenario scenarios[] = {
        { "nested-73-max", "pack:2 [numa] l3:4 core:4 pu:2", true, true, CONFIG_HIERARCHY_AUTO, "max", false },
        { "flat-612-max", "pack:2 [numa] l3:4 core:4 pu:2", false, true, CONFIG_HIERARCHY_AUTO, "max", false },
        { "flat-612-concur", "pack:2 [numa] l3:4 core:4 pu:2", false, true, CONFIG_HIERARCHY_FLAT, "concur", true },
        { "flat-612-concur-unmeasured", "pack:2 [numa] l3:4 core:4 pu:2", false, true, CONFIG_HIERARCHY_FLAT, "concur",
          false },
        { "nested-612-tasks", "pack:2 [numa] l3:4 core:4 pu:2", false, true, CONFIG_HIERARCHY_NESTED, "tasks", false },
        { "flat-612-up", "pack:2 [numa] l3:4 core:4 pu:2", false, true, CONFIG_HIERARCHY_FLAT, "up", false },
        { "flat-612-smp-nosmt", "pack:2 [numa] l3:4 core:8 pu:1", false, false, CONFIG_HIERARCHY_FLAT, "smp", false },
        { "nested-snc2-keep", "pack:2 l3:1 group:2 [numa] core:4 pu:2", true, true, CONFIG_HIERARCHY_NESTED, "keep",
          false },
};

/* The shipped policies (policies/, all class-based) on a fresh install,
 * with the default scope: they move nothing of a systemd host's (system
 * services, PID 1's scope, a VM, a user manager, a login session, the root
 * cgroup), whatever the classes. Once the operator lists the sessions in
 * include, those, and only those, are placed; a policy that names a
 * service places it inside system.slice. */
static void test_shipped_policies_fresh_install(void) {
        static const char *const cgroups[] = {
                "/system.slice/systemd-journald.service", "/system.slice/dbus.service", "/init.scope",
                "/machine.slice/libpod-1.scope", "/user.slice/user-1000.slice/user@1000.service/app.slice/x.service",
                "/user.slice/user-1000.slice/session-2.scope", "/",
        };
        static const char NAMED[] = "[policy]\nname = crunch\npriority = 500\n[match]\nunit = systemd-journald.service\n"
                                    "[place]\ncpus = all\n";
        TopologySource src = { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = "pack:2 [numa] l3:2 core:4 pu:2" };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(topology_freep) Topology *t = NULL;
        _cleanup_(config_freep) Config *config = NULL;
        _cleanup_(policy_set_freep) PolicySet *ps = NULL;
        KernelCaps caps = { .core_sched = { .available = true }, .smt_active = true };
        PlanTaskInput tasks[ELEMENTSOF(cgroups) * _POLICY_CLASS_MAX];
        char *paths[] = { (char *) "policies" };
        bool in_force[8];
        size_t n = 0;
        Plan *p = NULL;
        PlanInputs in;
        char error[160];
        bool journald = false;

        ASSERT_OK(topology_load(&src, &t));
        ASSERT_OK(config_new(&config));
        ASSERT_OK(policy_read_paths(paths, 1, d, &ps));
        ASSERT_GE(ps->n, 3u);
        ASSERT_LT(ps->n, ELEMENTSOF(in_force));
        for (size_t i = 0; i < ps->n; i++) {
                in_force[i] = true;
                ps->policies[i]->enabled = true; /* even the one shipped disabled */
                ASSERT_FALSE(policy_match_names(&ps->policies[i]->match));
        }
        for (size_t c = 0; c < ELEMENTSOF(cgroups); c++)
                for (unsigned k = 0; k < _POLICY_CLASS_MAX; k++, n++)
                        tasks[n] = (PlanTaskInput) { .tid = (pid_t) (1000 + n), .tgid = (pid_t) (1000 + n), .start_time = 5,
                                                     .match = { .class = (PolicyClass) k, .comm = "work",
                                                                .cgroup = cgroups[c], .tgid = (pid_t) (1000 + n) } };
        in = (PlanInputs) { .topology = t, .caps = &caps, .config = config, .policies = ps, .in_force = in_force,
                            .tasks = tasks, .n_tasks = n };
        ASSERT_OK(plan_build(&in, &p));
        ASSERT_EQ(p->n_tasks, 0u);
        p = plan_free(p);

        /* include = /user.slice: the session's tasks only (the user
         * manager stays excluded by default) */
        ASSERT_OK(scope_patterns_parse("/user.slice", &config->scope.include, error, sizeof error));
        ASSERT_OK(plan_build(&in, &p));
        ASSERT_GT(p->n_tasks, 0u);
        for (size_t i = 0; i < p->n_tasks; i++)
                ASSERT_STREQ(cgroups[(size_t) (p->tasks[i].tid - 1000) / _POLICY_CLASS_MAX],
                             "/user.slice/user-1000.slice/session-2.scope");
        p = plan_free(p);

        /* a policy that names a system service places it there */
        {
                Policy *named = NULL;

                ASSERT_OK(policy_parse(NAMED, strlen(NAMED), "crunch.ini", d, &named));
                ASSERT_OK(policy_set_add(ps, named));
                ASSERT_OK(policy_set_finalize(ps, d));
                for (size_t i = 0; i < ps->n; i++)
                        in_force[i] = true;
        }
        ASSERT_OK(plan_build(&in, &p));
        for (size_t i = 0; i < p->n_tasks; i++) {
                const char *cg = cgroups[(size_t) (p->tasks[i].tid - 1000) / _POLICY_CLASS_MAX];

                journald = journald || streq(cg, "/system.slice/systemd-journald.service");
                ASSERT_TRUE(streq(cg, "/system.slice/systemd-journald.service") ||
                            streq(cg, "/user.slice/user-1000.slice/session-2.scope"));
        }
        ASSERT_TRUE(journald);
        p = plan_free(p);
}

static void test_golden_plans(void) {
        for (size_t i = 0; i < ELEMENTSOF(scenarios); i++) {
                _cleanup_free_ char *got = NULL, *again = NULL, *reversed = NULL, *path = NULL;

                printf("   %s\n", scenarios[i].name);
                got = build(&scenarios[i], false, NULL, NULL);
                again = build(&scenarios[i], false, NULL, NULL);
                reversed = build(&scenarios[i], true, NULL, NULL);
                ASSERT_STREQ(got, again);
                ASSERT_STREQ(got, reversed);
                ASSERT_GT(asprintf(&path, "tests/data/plans/%s.txt", scenarios[i].name), 0);
                test_golden(path, got);
        }
}

/* A few facts checked directly, so a golden file rewritten by mistake is
 * caught. */
static void test_facts(void) {
        _cleanup_(plan_freep) Plan *p = NULL;
        _cleanup_(policy_set_freep) PolicySet *ps = NULL;
        _cleanup_free_ char *out = build(&scenarios[1], false, &p, &ps); /* flat, 6.12, max */
        const PlanTask *t;
        unsigned avx_groups = 0, lat_groups = 0;

        ASSERT_EQ(p->hierarchy, CONFIG_HIERARCHY_FLAT);
        ASSERT_TRUE(p->mode_emulated);
        ASSERT_FALSE(p->mode_written);
        ASSERT_TRUE(p->cookies_allowed);
        ASSERT_NULL(plan_find_task(p, 2));    /* kernel thread */
        ASSERT_NULL(plan_find_task(p, 1034)); /* bash: no policy */
        for (size_t i = 0; i < p->n_groups; i++) {
                const PlanGroup *g = &p->groups[i];

                if (g->policy >= 0 && streq(ps->policies[g->policy]->name, "avx"))
                        avx_groups++;
                if (g->policy >= 0 && streq(ps->policies[g->policy]->name, "latency"))
                        lat_groups++;
                if (streq(g->path, "batch-node0")) {
                        /* max: weight x the 28 CPUs of node 0 that the
                         * exclusive pinned (2-5) leaves */
                        ASSERT_EQ(g->weight, 200 * 28);
                        ASSERT_EQ(g->n_tasks, 12);      /* pack: both jobs fit node 0 */
                }
        }
        /* pack, whole cores (cookies): 4 cores per LLC hold one 4-thread
         * AVX process each: three LLCs. spread: four latency services over
         * four LLCs of the eight, the least loaded first. */
        ASSERT_EQ(avx_groups, 3);
        ASSERT_EQ(lat_groups, 4);
        /* One cookie for all AVX tasks; one per latency process. */
        t = plan_find_task(p, 1000);
        ASSERT_NOT_NULL(t);
        ASSERT_GE(t->cookie_group, 0);
        ASSERT_EQ(p->cookie_groups[t->cookie_group].n_tasks, 12);
        ASSERT_EQ(p->n_cookie_groups, 1 + 4);
        /* The conflict over TTWU_QUEUE: latency (priority 200) beats batch. */
        ASSERT_EQ(p->kernel->n_conflicts, 1);
        ASSERT_EQ(p->kernel->n_features, 1);
        ASSERT_TRUE(p->kernel->features[0].on);
        /* Two exclusive groups overlapping on 4-5: the second is not. */
        {
                bool saw = false;

                for (char **n = p->notes; n && *n; n++)
                        saw |= strstr(*n, "exclusive CPUs overlap") != NULL;
                ASSERT_TRUE(saw);
        }
        /* The exclusive one's CPUs in no other group (the kernel refuses a
         * partition a sibling's cpuset.cpus overlaps). */
        {
                const PlanGroup *x = NULL;

                for (size_t i = 0; i < p->n_groups; i++)
                        if (p->groups[i].exclusive) {
                                ASSERT_NULL(x);
                                x = &p->groups[i];
                        }
                ASSERT_NOT_NULL(x);
                ASSERT_STREQ(x->path, "pinned");
                for (size_t i = 0; i < p->n_groups; i++)
                        if (&p->groups[i] != x)
                                ASSERT_FALSE(bitmap_intersects(p->groups[i].cpus, x->cpus));
        }
}

/* A plan for a synthetic machine, policy files and tasks, every policy in
 * force; what it is built from stays in m until mini_done(). */
typedef struct Mini {
        Topology *t;
        Config *config;
        PolicySet *ps;
} Mini;

static Plan *mini_plan_kept(Mini *m, const char *topology, const IniSource *ini, size_t n_ini, const KernelCaps *caps,
                            const PlanTaskInput *tasks, size_t n_tasks, const Plan *keep) {
        TopologySource src = { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = topology };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        bool in_force[8] = { true, true, true, true, true, true, true, true };
        PlanInputs in = { .caps = caps, .in_force = in_force, .tasks = tasks, .n_tasks = n_tasks, .keep = keep };
        Plan *p = NULL;

        ASSERT_LE(n_ini, ELEMENTSOF(in_force));
        if (!m->t)
                ASSERT_OK(topology_load(&src, &m->t));
        if (!m->config)
        {
                ASSERT_OK(config_new(&m->config));
                scope_everywhere(m->config);
        }
        /* The plan kept names the policies of the set it was built from. */
        if (!keep) {
                m->ps = policy_set_free(m->ps);
                ASSERT_OK(policy_set_parse(ini, n_ini, d, &m->ps));
        }
        in.topology = m->t;
        in.config = m->config;
        in.policies = m->ps;
        {
                _cleanup_free_ PlanTaskInput *copy = calloc(MAX(n_tasks, (size_t) 1), sizeof(PlanTaskInput));

                ASSERT_NOT_NULL(copy);
                for (size_t i = 0; i < n_tasks; i++) {
                        copy[i] = tasks[i];
                        copy[i].match.cgroup = copy[i].match.cgroup ?: TEST_CGROUP;
                }
                in.tasks = copy;
                ASSERT_OK(plan_build(&in, &p));
        }
        return p;
}

static Plan *mini_plan(Mini *m, const char *topology, const IniSource *ini, size_t n_ini, const KernelCaps *caps,
                       const PlanTaskInput *tasks, size_t n_tasks) {
        return mini_plan_kept(m, topology, ini, n_ini, caps, tasks, n_tasks, NULL);
}

static void mini_done(Mini *m) {
        m->ps = policy_set_free(m->ps);
        config_free(m->config);
        topology_free(m->t);
        *m = (Mini) {};
}

/* The CPUs of the group at path, as a list ("" when there is none). */
static char *group_cpus(const Plan *p, const char *path) {
        char *s = NULL;

        for (size_t i = 0; i < p->n_groups; i++)
                if (streq(p->groups[i].path, path))
                        ASSERT_OK(bitmap_format_list(p->groups[i].cpus, &s));
        return s ?: strdup("");
}

/* spread counts a domain's size: on a machine whose second LLC has 5 CPUs
 * in 3 cores (one of them without its sibling) beside 8 CPUs in 4 cores
 * (tests/data/topologies/uneven-llc-half-core.xml: 0-7, 8-12), six
 * processes go 4 and 2 by CPUs (3/8 < 2/5 for the sixth), and 3 and 3 for
 * a cookie'd policy, which counts whole cores (3/4 > 2/3). Counting
 * threads alone gives 3 and 3 for both. */
static void test_spread_by_size(void) {
        static const char SPREAD[] = "[policy]\nname = s\n[match]\ncomm = s\n[place]\ngroup = s\ncpus = llc\n"
                                     "spread = spread\ncookie = process\n";
        static const char PLAIN[] = "[policy]\nname = s\n[match]\ncomm = s\n[place]\ngroup = s\ncpus = llc\n"
                                    "spread = spread\ncookie = none\n";
        TopologySource src = { .kind = TOPOLOGY_SOURCE_XML, .arg = "tests/data/topologies/uneven-llc-half-core.xml" };
        PlanTaskInput tasks[6];
        KernelCaps caps = { .core_sched = { .available = true }, .smt = { .available = true }, .smt_active = true };

        for (size_t i = 0; i < ELEMENTSOF(tasks); i++)
                tasks[i] = (PlanTaskInput) { .tid = (pid_t) (10 + i), .tgid = (pid_t) (10 + i), .match = { .comm = "s" } };
        for (int cookie = 0; cookie < 2; cookie++) {
                IniSource ini[1] = { { "10-s.ini", cookie ? SPREAD : PLAIN, (cookie ? sizeof(SPREAD) : sizeof(PLAIN)) - 1 } };
                Mini m = {};
                _cleanup_(plan_freep) Plan *p = NULL;
                unsigned n[2] = {};

                ASSERT_OK(topology_load(&src, &m.t));
                ASSERT_EQ(m.t->n_llcs, 2u);
                p = mini_plan(&m, NULL, ini, 1, &caps, tasks, ELEMENTSOF(tasks));
                ASSERT_EQ(p->n_groups, 2u);
                for (size_t i = 0; i < p->n_groups; i++) {
                        _cleanup_free_ char *cpus = NULL;

                        ASSERT_OK(bitmap_format_list(p->groups[i].cpus, &cpus));
                        ASSERT_TRUE(streq(cpus, "0-7") || streq(cpus, "8-12"));
                        n[streq(cpus, "8-12")] = p->groups[i].n_tasks;
                }
                ASSERT_EQ(n[0], cookie ? 3u : 4u);
                ASSERT_EQ(n[1], cookie ? 3u : 2u);
                mini_done(&m);
        }
}

/* An exclusive group that would leave another without a CPU is not
 * exclusive, and takes nothing. */
static void test_exclusive_covers(void) {
        static const char SMALL[] = "[policy]\nname = small\n[match]\ncomm = small\n[place]\ngroup = small\ncpus = 2-3\n";
        static const char BIG[] = "[policy]\nname = big\n[match]\ncomm = big\n[place]\ngroup = big\ncpus = 0-5\n"
                                  "exclusive = yes\n";
        static const char OTHER[] = "[policy]\nname = other\n[match]\ncomm = other\n[place]\ngroup = other\n"
                                    "cpus = 4-7\n";
        IniSource ini[3] = { { "10-small.ini", SMALL, sizeof(SMALL) - 1 }, { "20-big.ini", BIG, sizeof(BIG) - 1 },
                             { "30-other.ini", OTHER, sizeof(OTHER) - 1 } };
        PlanTaskInput tasks[3] = {
                { .tid = 10, .tgid = 10, .match = { .comm = "small" } },
                { .tid = 11, .tgid = 11, .match = { .comm = "big" } },
                { .tid = 12, .tgid = 12, .match = { .comm = "other" } },
        };
        KernelCaps caps = {};
        Mini m = {};

        /* small (2-3) inside big (0-5): big is not exclusive, nothing taken. */
        {
                _cleanup_(plan_freep) Plan *p = mini_plan(&m, "pack:1 core:4 pu:2", ini, 3, &caps, tasks, 3);
                _cleanup_free_ char *a = group_cpus(p, "other");

                for (size_t i = 0; i < p->n_groups; i++)
                        ASSERT_FALSE(p->groups[i].exclusive);
                ASSERT_STREQ(a, "4-7");
                ASSERT_TRUE(strv_contains(p->notes, "big: exclusive CPUs would leave small none: not exclusive"));
        }
        /* Without small: big is exclusive and other keeps 6-7 only. */
        {
                _cleanup_(plan_freep) Plan *p = mini_plan(&m, "pack:1 core:4 pu:2", ini + 1, 2, &caps, tasks + 1, 2);
                _cleanup_free_ char *a = group_cpus(p, "other");

                for (size_t i = 0; i < p->n_groups; i++)
                        if (streq(p->groups[i].path, "big"))
                                ASSERT_TRUE(p->groups[i].exclusive);
                ASSERT_STREQ(a, "6-7");
                ASSERT_TRUE(strv_contains(p->notes, "other: CPUs 0-5 taken by the exclusive big"));
                /* other's tasks gone, the plan kept: other stays, with the
                 * CPUs it has (fewer than its domain's). */
                {
                        _cleanup_(plan_freep) Plan *q = mini_plan_kept(&m, "pack:1 core:4 pu:2", ini + 1, 2, &caps,
                                                                        tasks + 1, 1, p);
                        _cleanup_free_ char *kept = group_cpus(q, "other");

                        ASSERT_STREQ(kept, "6-7");
                }
        }
        /* Two exclusive groups that together cover a third: the second is
         * not exclusive, the third keeps its CPUs. */
        {
                static const char X1[] = "[policy]\nname = x1\n[match]\ncomm = x1\n[place]\ngroup = x1\ncpus = 0-1\n"
                                         "exclusive = yes\n";
                static const char X2[] = "[policy]\nname = x2\n[match]\ncomm = x2\n[place]\ngroup = x2\ncpus = 2-3\n"
                                         "exclusive = yes\n";
                static const char G[] = "[policy]\nname = g\n[match]\ncomm = g\n[place]\ngroup = g\ncpus = 0-3\n";
                IniSource three[3] = { { "10-x1.ini", X1, sizeof(X1) - 1 }, { "20-x2.ini", X2, sizeof(X2) - 1 },
                                       { "30-g.ini", G, sizeof(G) - 1 } };
                PlanTaskInput ts[3] = {
                        { .tid = 20, .tgid = 20, .match = { .comm = "x1" } },
                        { .tid = 21, .tgid = 21, .match = { .comm = "x2" } },
                        { .tid = 22, .tgid = 22, .match = { .comm = "g" } },
                };
                _cleanup_(plan_freep) Plan *p = mini_plan(&m, "pack:1 core:4 pu:2", three, 3, &caps, ts, 3);
                _cleanup_free_ char *a = group_cpus(p, "g");

                for (size_t i = 0; i < p->n_groups; i++)
                        ASSERT_EQ(p->groups[i].exclusive, streq(p->groups[i].path, "x1"));
                ASSERT_STREQ(a, "2-3");
                ASSERT_TRUE(strv_contains(p->notes, "x2: exclusive CPUs would leave g none: not exclusive"));
        }
        mini_done(&m);
}

/* A mode the kernel has a file for but does not list: not set, and not
 * emulated either (the weight as written). */
static void test_mode_not_listed(void) {
        static const char text[] = "[policy]\nname = m\n[match]\ncomm = m\n[place]\ngroup = m\ncpus = 0-3\n"
                                   "weight = 100\n[kernel]\ncgroup_mode = max\n";
        static char *modes[] = { (char *) "smp", (char *) "concur", NULL };
        IniSource ini = { "m.ini", text, sizeof(text) - 1 };
        PlanTaskInput task = { .tid = 10, .tgid = 10, .match = { .comm = "m" } };
        KernelCaps caps = { .cgroup_mode = { .available = true }, .cgroup_modes = modes };
        Mini m = {};
        Plan *p = mini_plan(&m, "pack:1 core:4 pu:2", &ini, 1, &caps, &task, 1);

        ASSERT_FALSE(p->mode_written);
        ASSERT_FALSE(p->mode_emulated);
        ASSERT_EQ(p->n_groups, 1);
        ASSERT_EQ(p->groups[0].weight, 100); /* not 100 x 4 CPUs */
        ASSERT_STR_CONTAINS(p->groups[0].weight_why, "not among the kernel's");
        ASSERT_TRUE(strv_contains(p->notes, "cgroup_mode max is not among the kernel's modes: not set"));
        plan_free(p);
        mini_done(&m);
}

/* A policy with [match] and no [place] sets kernel values only while a task
 * it matches is there. */
static void test_kernel_only_while_matched(void) {
        static const char text[] = "[policy]\nname = tuned\n[match]\ncomm = special\n[features]\nHRTICK = on\n";
        IniSource ini = { "tuned.ini", text, sizeof(text) - 1 };
        PlanTaskInput task = { .tid = 10, .tgid = 10, .match = { .comm = "other" } };
        KernelCaps caps = {};
        Mini m = {};

        {
                _cleanup_(plan_freep) Plan *p = mini_plan(&m, "pack:1 core:2 pu:2", &ini, 1, &caps, &task, 1);
                ASSERT_EQ(p->kernel->n_features, 0);
        }
        task.match.comm = "special";
        {
                _cleanup_(plan_freep) Plan *p = mini_plan(&m, "pack:1 core:2 pu:2", &ini, 1, &caps, &task, 1);
                ASSERT_EQ(p->kernel->n_features, 1);
                ASSERT_STREQ(p->kernel->features[0].name, "HRTICK");
                ASSERT_EQ(p->n_tasks, 0); /* no [place]: not moved */
        }
        mini_done(&m);
}

/* A group whose tasks left stays in the next plan when the plan in force is
 * kept (same policies), empty; not without it, nor for a policy no longer in
 * force. */
static void test_keep_groups(void) {
        static const char A[] = "[policy]\nname = a\n[match]\ncomm = a\n[place]\ngroup = ga\ncpus = llc\nspread = spread\n";
        TopologySource src = { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = "pack:1 [numa] l3:2 core:2 pu:1" };
        _cleanup_(topology_freep) Topology *t = NULL;
        _cleanup_(config_freep) Config *config = NULL;
        _cleanup_(policy_set_freep) PolicySet *ps = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(plan_freep) Plan *first = NULL;
        IniSource ini = { "a.ini", A, sizeof(A) - 1 };
        PlanTaskInput tasks[2] = {
                { .tid = 10, .tgid = 10, .match = { .comm = "a" } },
                { .tid = 11, .tgid = 11, .match = { .comm = "a" } },
        };
        KernelCaps caps = {};
        bool in_force[1] = { true };
        PlanInputs in = { .caps = &caps, .in_force = in_force, .tasks = tasks, .n_tasks = 2 };

        ASSERT_OK(topology_load(&src, &t));
        ASSERT_OK(config_new(&config));
        scope_everywhere(config);
        config->hierarchy = CONFIG_HIERARCHY_FLAT;
        ASSERT_OK(policy_set_parse(&ini, 1, d, &ps));
        in.topology = t;
        in.config = config;
        in.policies = ps;
        ASSERT_OK(plan_build(&in, &first));
        ASSERT_EQ(first->n_groups, 2); /* spread: one process per LLC */

        in.n_tasks = 0; /* both processes exited */
        {
                _cleanup_(plan_freep) Plan *p = NULL;
                ASSERT_OK(plan_build(&in, &p));
                ASSERT_EQ(p->n_groups, 0);
        }
        in.keep = first;
        {
                _cleanup_(plan_freep) Plan *p = NULL;
                _cleanup_free_ char *a = NULL, *b = NULL;

                ASSERT_OK(plan_build(&in, &p));
                ASSERT_EQ(p->n_groups, 2);
                ASSERT_STREQ(p->groups[0].path, first->groups[0].path);
                ASSERT_EQ(p->groups[0].n_tasks, 0);
                ASSERT_TRUE(bitmap_equal(p->groups[1].cpus, first->groups[1].cpus));
                /* pure: the same inputs, the same plan */
                a = render(p, ps);
                {
                        _cleanup_(plan_freep) Plan *q = NULL;
                        ASSERT_OK(plan_build(&in, &q));
                        b = render(q, ps);
                }
                ASSERT_STREQ(a, b);
        }
        in_force[0] = false;
        {
                _cleanup_(plan_freep) Plan *p = NULL;
                ASSERT_OK(plan_build(&in, &p));
                ASSERT_EQ(p->n_groups, 0);
        }
}

/* A group named like an inner directory of the nested tree is refused,
 * never merged into it. */
static void test_path_clash(void) {
        static const char A[] = "[policy]\nname = a\npriority = 20\n[match]\ncomm = a\n[place]\ngroup = a\ncpus = llc\n";
        static const char B[] = "[policy]\nname = b\npriority = 10\n[match]\ncomm = b\n[place]\ngroup = node0\nweight = 500\n";
        TopologySource src = { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = "pack:1 [numa] l3:2 core:2 pu:1" };
        _cleanup_(topology_freep) Topology *t = NULL;
        _cleanup_(config_freep) Config *config = NULL;
        _cleanup_(policy_set_freep) PolicySet *ps = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(plan_freep) Plan *p = NULL;
        IniSource ini[2] = { { "a.ini", A, sizeof(A) - 1 }, { "b.ini", B, sizeof(B) - 1 } };
        PlanTaskInput tasks[2] = {
                { .tid = 10, .tgid = 10, .match = { .comm = "a" } },
                { .tid = 11, .tgid = 11, .match = { .comm = "b" } },
        };
        KernelCaps caps = {};
        bool in_force[2] = { true, true };
        PlanInputs in = { .caps = &caps, .in_force = in_force, .tasks = tasks, .n_tasks = 2 };
        bool noted = false;

        ASSERT_OK(topology_load(&src, &t));
        ASSERT_OK(config_new(&config));
        scope_everywhere(config);
        config->hierarchy = CONFIG_HIERARCHY_NESTED;
        ASSERT_OK(policy_set_parse(ini, 2, d, &ps));
        in.topology = t;
        in.config = config;
        in.policies = ps;
        ASSERT_OK(plan_build(&in, &p));
        ASSERT_NOT_NULL(plan_find_task(p, 10));
        ASSERT_NULL(plan_find_task(p, 11));
        for (size_t i = 0; i < p->n_groups; i++)
                if (streq(p->groups[i].path, "node0"))
                        ASSERT_EQ(p->groups[i].policy, -1);
        for (char **n = p->notes; n && *n; n++)
                noted |= strstr(*n, "clashes") != NULL;
        ASSERT_TRUE(noted);
}

int main(void) {
        RUN(test_shipped_policies_fresh_install);
        RUN(test_path_clash);
        RUN(test_keep_groups);
        RUN(test_kernel_only_while_matched);
        RUN(test_golden_plans);
        RUN(test_facts);
        RUN(test_exclusive_covers);
        RUN(test_spread_by_size);
        RUN(test_mode_not_listed);
        return 0;
}
