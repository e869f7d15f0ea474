/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fast path's decision against the planner: for a new process placed
 * from the last plan, the pick must be what plan_build() does with the
 * process included (pack and spread, whole cores with cookies, overflow,
 * several new processes in one burst), or "needs a pass" exactly where the
 * planner would open a group the last plan does not have. Policies that
 * need a class do not take an unsampled process. A randomised run (seed
 * printed; TOPOD_TEST_SEED=N repeats one) walks many sequences. Linked with
 * the library for hwloc's synthetic machines; place and plan stay pure. */

#include <time.h>

#include "base/util.h"
#include "decide/place.h"
#include "decide/plan.h"
#include "tests.h"

#define TASKS_MAX_TEST 512

typedef struct World {
        Topology *topology;
        KernelCaps caps;
        Config *config;
        PolicySet *policies;
        bool in_force[16];
        PlanTaskInput tasks[TASKS_MAX_TEST];
        size_t n_tasks;
        pid_t next_pid;
} World;

/* topology: an hwloc synthetic description, or the path of an XML export. */
/* The plans here model a host whose operator put every task in [scope]
 * include (the scope has tests of its own, test-scope.c): include = /,
 * nothing excluded, and a task without a cgroup in a session's. */
static void scope_everywhere(Config *c) {
        char error[160];

        ASSERT_OK(scope_patterns_parse("/", &c->scope.include, error, sizeof error));
        ASSERT_OK(scope_patterns_parse("", &c->scope.exclude, error, sizeof error));
}
#define TEST_CGROUP "/user.slice/user-1000.slice/session-1.scope"

static void world_init(World *w, const char *topology, bool smt, const char *const *policy_texts, size_t n) {
        TopologySource src = { .kind = strstr(topology, ".xml") ? TOPOLOGY_SOURCE_XML : TOPOLOGY_SOURCE_SYNTHETIC,
                               .arg = topology };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        IniSource ini[16];
        char names[16][16];

        *w = (World) { .next_pid = 1000 };
        ASSERT_OK(topology_load(&src, &w->topology));
        ASSERT_OK(config_new(&w->config));
        scope_everywhere(w->config);
        w->config->hierarchy = CONFIG_HIERARCHY_FLAT;
        w->caps = (KernelCaps) {
                .core_sched = { .available = smt, .reason = (char *) "test: no SMT" },
                .smt = { .available = smt },
                .smt_active = smt,
        };
        ASSERT_LE(n, ELEMENTSOF(ini));
        for (size_t i = 0; i < n; i++) {
                snprintf(names[i], sizeof(names[i]), "%02zu.ini", i);
                ini[i] = (IniSource) { names[i], policy_texts[i], strlen(policy_texts[i]) };
        }
        ASSERT_OK(policy_set_parse(ini, n, d, &w->policies));
        ASSERT_EQ(w->policies->n, n);
        for (size_t i = 0; i < n; i++)
                w->in_force[i] = true;
}

static void world_done(World *w) {
        topology_free(w->topology);
        config_free(w->config);
        policy_set_free(w->policies);
}

/* A process of n threads, class other unless said. Returns its tgid. */
static pid_t add_process(World *w, const char *comm, unsigned threads, PolicyClass class) {
        pid_t tgid = w->next_pid;

        for (unsigned i = 0; i < threads; i++) {
                ASSERT_LT(w->n_tasks, TASKS_MAX_TEST);
                w->tasks[w->n_tasks++] = (PlanTaskInput) {
                        .tid = w->next_pid++,
                        .tgid = tgid,
                        .start_time = 100 + (uint64_t) tgid,
                        .runnable = true,
                        .match = { .class = class, .comm = comm, .cgroup = TEST_CGROUP },
                };
        }
        return tgid;
}


static Plan *world_plan(const World *w) {
        PlanInputs in = {
                .topology = w->topology,
                .caps = &w->caps,
                .config = w->config,
                .policies = w->policies,
                .in_force = w->in_force,
                .tasks = w->tasks,
                .n_tasks = w->n_tasks,
        };
        _cleanup_free_ PlanTaskInput *copy = calloc(MAX(w->n_tasks, (size_t) 1), sizeof(PlanTaskInput));
        Plan *p = NULL;

        ASSERT_NOT_NULL(copy);
        for (size_t i = 0; i < w->n_tasks; i++) {
                copy[i] = w->tasks[i];
                copy[i].match.cgroup = copy[i].match.cgroup ?: TEST_CGROUP;
        }
        in.tasks = copy;
        ASSERT_OK(plan_build(&in, &p));
        return p;
}

static PlaceState *world_state(const World *w, const Plan *p) {
        PlaceState *s = NULL;

        ASSERT_OK(place_state_new(p, w->policies, w->in_force, &w->config->scope, w->topology, &s));
        return s;
}

/* The fast path's pick for a new one-thread process with every fact known. */
static PlacePick fast_pick(const PlaceState *s, pid_t tgid, const char *comm) {
        PlaceProcess pp = {
                .tgid = tgid,
                .start_time = 100 + (uint64_t) tgid,
                .n_threads = 1,
                .have = PLACE_FACTS_ALL,
                .match = { .class = _POLICY_CLASS_MAX /* none: must not be looked at */, .comm = comm,
                           .cgroup = TEST_CGROUP /* as world_plan() gives the planner */, .tgid = tgid },
        };
        PlacePick pick;

        place_pick(s, &pp, &pick);
        return pick;
}

static bool plan_has_group(const Plan *p, const char *path) {
        for (size_t i = 0; i < p->n_groups; i++)
                if (streq(p->groups[i].path, path))
                        return true;
        return false;
}

/* The pick against the planner with the process included (w->tasks holds
 * it already, last). */
static void check_against_plan(const World *w, const Plan *before, const PlacePick *pick, pid_t tgid) {
        _cleanup_(plan_freep) Plan *after = world_plan(w);
        const PlanTask *t = plan_find_task(after, tgid);

        switch (pick->verdict) {
        case PLACE_GROUP:
                ASSERT_NOT_NULL(t);
                ASSERT_EQ(t->policy, pick->policy);
                if (!streq(before->groups[pick->group].path, after->groups[t->group].path)) {
                        (void) plan_print_text(stdout, before, w->policies);
                        (void) plan_print_text(stdout, after, w->policies);
                        TEST_FAIL("process %d: fast path %s, planner %s", (int) tgid, before->groups[pick->group].path,
                                  after->groups[t->group].path);
                }
                if (pick->cookie == PLACE_COOKIE_JOIN) {
                        ASSERT_GE(t->cookie_group, 0);
                        ASSERT_EQ(after->cookie_groups[t->cookie_group].tgid, 0);
                        if (pick->cookie_group >= 0)
                                ASSERT_EQ(before->cookie_groups[pick->cookie_group].policy, pick->policy);
                } else if (pick->cookie == PLACE_COOKIE_NEW) {
                        ASSERT_GE(t->cookie_group, 0);
                        ASSERT_EQ(after->cookie_groups[t->cookie_group].tgid, tgid);
                } else
                        ASSERT_EQ(t->cookie_group, -1);
                break;
        case PLACE_NEED_PASS:
                /* Exactly where the planner puts it in a group the last plan lacks. */
                ASSERT_NOT_NULL(t);
                ASSERT_EQ(t->policy, pick->policy);
                if (plan_has_group(before, after->groups[t->group].path))
                        TEST_FAIL("process %d: needs a pass, but the planner puts it in %s, which exists",
                                  (int) tgid, after->groups[t->group].path);
                break;
        case PLACE_NONE:
                ASSERT_NULL(t);
                break;
        case PLACE_WAIT_CLASS:
                /* The planner takes it (as "other") into the policy that needs a class. */
                ASSERT_NOT_NULL(t);
                ASSERT_EQ(t->policy, pick->policy);
                break;
        default:
                TEST_FAIL("unexpected verdict %s", place_verdict_to_string(pick->verdict));
        }
}

/* One new process after the existing ones: the pick, checked. */
static PlacePick one_new(World *w, const char *comm) {
        _cleanup_(plan_freep) Plan *before = world_plan(w);
        _cleanup_(place_state_freep) PlaceState *s = world_state(w, before);
        pid_t tgid = w->next_pid;
        PlacePick pick = fast_pick(s, tgid, comm);

        add_process(w, comm, 1, POLICY_CLASS_OTHER);
        check_against_plan(w, before, &pick, tgid);
        return pick;
}

/* The fast path's pick for a process at a cgroup, checked against the
 * planner with it: the scope holds there as in the plan. */
static PlacePick one_new_at(World *w, const char *comm, const char *cgroup, const char *user) {
        _cleanup_(plan_freep) Plan *before = world_plan(w);
        _cleanup_(place_state_freep) PlaceState *s = world_state(w, before);
        pid_t tgid = w->next_pid;
        PlaceProcess pp = {
                .tgid = tgid,
                .start_time = 100 + (uint64_t) tgid,
                .n_threads = 1,
                .have = PLACE_FACTS_ALL,
                .match = { .class = _POLICY_CLASS_MAX, .comm = comm, .cgroup = cgroup, .user = user, .tgid = tgid },
        };
        PlacePick pick;

        place_pick(s, &pp, &pick);
        add_process(w, comm, 1, POLICY_CLASS_OTHER);
        w->tasks[w->n_tasks - 1].match.cgroup = cgroup;
        w->tasks[w->n_tasks - 1].match.user = user;
        w->tasks[w->n_tasks - 1].match.tgid = tgid;
        check_against_plan(w, before, &pick, tgid);
        return pick;
}

/* The scope on the fast path, as the planner has it: a policy that names
 * the process (comm) applies in system.slice, not where its own exclude
 * or protect says; one that names nothing (user only) only inside
 * include. */
static void test_scope_fast_path(void) {
        static const char NAMED[] = "[policy]\nname = svc\npriority = 300\n[match]\ncomm = svc\nexclude = /lab/quiet\n"
                                    "[place]\ncpus = all\n";
        static const char USER[] = "[policy]\nname = mine\npriority = 100\n[match]\nuser = alice\n[place]\ncpus = all\n";
        const char *const pol[] = { NAMED, USER };
        const char *sess = "/user.slice/user-1000.slice/session-2.scope";
        char error[160];
        World w;
        PlacePick pick;

        world_init(&w, "pack:1 l3:1 core:2 pu:2", true, pol, 2);
        /* the defaults, then include the sessions and protect one tree */
        ASSERT_OK(scope_patterns_parse(SCOPE_DEFAULT_EXCLUDE, &w.config->scope.exclude, error, sizeof error));
        ASSERT_OK(scope_patterns_parse("/user.slice", &w.config->scope.include, error, sizeof error));
        ASSERT_OK(scope_patterns_parse("/lab/keep", &w.config->scope.protect, error, sizeof error));
        add_process(&w, "svc", 1, POLICY_CLASS_OTHER); /* the groups exist */
        w.tasks[w.n_tasks - 1].match.cgroup = "/lab";
        add_process(&w, "x", 1, POLICY_CLASS_OTHER);
        w.tasks[w.n_tasks - 1].match.cgroup = sess;
        w.tasks[w.n_tasks - 1].match.user = "alice";

        pick = one_new_at(&w, "svc", "/system.slice/svc.service", NULL);
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        ASSERT_STREQ(w.policies->policies[pick.policy]->name, "svc");
        pick = one_new_at(&w, "svc", "/lab/quiet/x", "alice");
        ASSERT_EQ(pick.verdict, PLACE_NONE); /* its exclude; mine names nothing, /lab is outside include */
        pick = one_new_at(&w, "svc", "/lab/keep", NULL);
        ASSERT_EQ(pick.verdict, PLACE_NONE);
        pick = one_new_at(&w, "bash", sess, "alice");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        ASSERT_STREQ(w.policies->policies[pick.policy]->name, "mine");
        pick = one_new_at(&w, "bash", "/user.slice/user-1000.slice/user@1000.service/app.slice/a.service", "alice");
        ASSERT_EQ(pick.verdict, PLACE_NONE); /* a user manager: excluded by default */
        pick = one_new_at(&w, "bash", "/system.slice/cron.service", "alice");
        ASSERT_EQ(pick.verdict, PLACE_NONE);
        world_done(&w);
}

static const char PACK_LLC[] = "[policy]\nname = batch\n[match]\ncomm = batch*\n"
                               "[place]\ncpus = llc\nspread = pack\n";
static const char SPREAD_LLC[] = "[policy]\nname = svc\n[match]\ncomm = svc*\n"
                                 "[place]\ncpus = llc\nspread = spread\ncookie = process\n";
static const char PACK_GROUP_COOKIE[] = "[policy]\nname = avx\n[match]\ncomm = gemm*\n"
                                        "[place]\ncpus = llc\nspread = pack\ncookie = group\n";

static void test_pack(void) {
        const char *const pol[] = { PACK_LLC };
        World w;
        PlacePick pick;

        /* 2 LLCs x 2 cores x 2 PUs: capacity 4 PUs each. */
        world_init(&w, "pack:1 l3:2 core:2 pu:2", true, pol, 1);
        /* The first process of the policy: no group yet. */
        pick = one_new(&w, "batch-0");
        ASSERT_EQ(pick.verdict, PLACE_NEED_PASS);
        add_process(&w, "batch-1", 2, POLICY_CLASS_OTHER);
        /* llc0 holds 3 of 4: the next fits there. */
        pick = one_new(&w, "batch-2");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        ASSERT_EQ(pick.cookie, PLACE_COOKIE_KEEP);
        /* llc0 full: the planner opens llc1, which has no group yet. */
        pick = one_new(&w, "batch-3");
        ASSERT_EQ(pick.verdict, PLACE_NEED_PASS);
        /* Now llc1 is the cursor. */
        pick = one_new(&w, "batch-4");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        add_process(&w, "batch-5", 2, POLICY_CLASS_OTHER);
        /* Both full (4 and 4): the least loaded relative to its size, the first. */
        pick = one_new(&w, "batch-6");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        pick = one_new(&w, "batch-7");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        /* Not the policy's. */
        pick = one_new(&w, "bash");
        ASSERT_EQ(pick.verdict, PLACE_NONE);
        world_done(&w);
}

static void test_spread(void) {
        const char *const pol[] = { SPREAD_LLC };
        World w;
        PlacePick pick;

        world_init(&w, "pack:1 l3:3 core:2 pu:2", true, pol, 1);
        add_process(&w, "svc-a", 3, POLICY_CLASS_OTHER);
        /* Two of three LLCs empty: the planner takes one of them. */
        pick = one_new(&w, "svc-b");
        ASSERT_EQ(pick.verdict, PLACE_NEED_PASS);
        add_process(&w, "svc-c", 2, POLICY_CLASS_OTHER);
        /* llc0 3, llc1 1 (svc-b), llc2 2: the fewest is llc1. */
        pick = one_new(&w, "svc-d");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        ASSERT_EQ(pick.cookie, PLACE_COOKIE_NEW);
        /* Ties go to the first in domain order. */
        pick = one_new(&w, "svc-e");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        world_done(&w);
}

/* Domains of two sizes (LLCs of 4 and 2 cores): spread counts the load
 * relative to the size, the fast path as the planner. */
static void test_spread_uneven(void) {
        static const struct {
                const char *comm, *cpus;
        } steps[] = {
                { "svc-c", "0-7" },  /* 1 of 4 cores and 1 of 2: the larger is the less loaded */
                { "svc-d", "0-7" },  /* 2 of 4 and 1 of 2: a tie, the first (by threads alone, the smaller) */
                { "svc-e", "8-11" }, /* 3 of 4 and 1 of 2: the smaller */
        };
        const char *const pol[] = { SPREAD_LLC };
        World w;

        world_init(&w, "tests/data/topologies/uneven-llc.xml", true, pol, 1);
        add_process(&w, "svc-a", 1, POLICY_CLASS_OTHER);
        add_process(&w, "svc-b", 1, POLICY_CLASS_OTHER);
        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                pid_t tgid = w.next_pid;
                PlacePick pick = one_new(&w, steps[i].comm);
                _cleanup_(plan_freep) Plan *p = world_plan(&w);
                const PlanTask *t = plan_find_task(p, tgid);
                _cleanup_free_ char *cpus = NULL;

                ASSERT_EQ(pick.verdict, PLACE_GROUP);
                ASSERT_NOT_NULL(t);
                ASSERT_GE(t->group, 0);
                ASSERT_OK(bitmap_format_list(p->groups[t->group].cpus, &cpus));
                ASSERT_STREQ(cpus, steps[i].cpus);
        }
        world_done(&w);
}

/* cookie = group: whole cores, one cookie for the policy. */
static void test_group_cookie(void) {
        const char *const pol[] = { PACK_GROUP_COOKIE };
        World w;
        PlacePick pick;

        world_init(&w, "pack:1 l3:2 core:2 pu:2", true, pol, 1);
        add_process(&w, "gemm", 1, POLICY_CLASS_OTHER);
        /* Capacity is 2 cores per LLC: 1 + 1 fits. */
        pick = one_new(&w, "gemm");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        ASSERT_EQ(pick.cookie, PLACE_COOKIE_JOIN);
        ASSERT_GE(pick.cookie_group, 0);
        /* Full by cores (2 of 2) though 2 PUs are free: the next LLC. */
        pick = one_new(&w, "gemm");
        ASSERT_EQ(pick.verdict, PLACE_NEED_PASS);
        world_done(&w);

        /* Without SMT: no cookies, capacity by PUs. */
        world_init(&w, "pack:1 l3:2 core:4 pu:1", false, pol, 1);
        add_process(&w, "gemm", 1, POLICY_CLASS_OTHER);
        pick = one_new(&w, "gemm");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        ASSERT_EQ(pick.cookie, PLACE_COOKIE_KEEP);
        world_done(&w);
}

/* Sources to join from: the plan's members, main threads first. */
static void test_cookie_sources(void) {
        const char *const pol[] = { PACK_GROUP_COOKIE };
        World w;
        Plan *p;
        PlaceState *s;
        PlaceSource src[PLACE_COOKIE_SOURCES_MAX + 1];
        PlacePick pick;
        pid_t a, b;
        size_t n;

        world_init(&w, "pack:1 l3:1 core:8 pu:2", true, pol, 1);
        a = add_process(&w, "gemm", 3, POLICY_CLASS_OTHER);
        b = add_process(&w, "gemm", 1, POLICY_CLASS_OTHER);
        p = world_plan(&w);
        s = world_state(&w, p);
        pick = fast_pick(s, w.next_pid, "gemm");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        ASSERT_EQ(pick.cookie, PLACE_COOKIE_JOIN);
        n = place_cookie_sources(s, &pick, src, ELEMENTSOF(src));
        ASSERT_EQ(n, PLACE_COOKIE_SOURCES_MAX);
        ASSERT_EQ(src[0].tid, a);
        ASSERT_EQ(src[1].tid, b);
        ASSERT_EQ(src[2].tid, a + 1);
        ASSERT_EQ(src[0].start_time, 100 + (uint64_t) a);
        place_note_cookie(s, pick.policy, 4242, 7);
        n = place_cookie_sources(s, &pick, src, ELEMENTSOF(src));
        ASSERT_EQ(n, PLACE_COOKIE_SOURCES_MAX + 1);
        ASSERT_EQ(src[n - 1].tid, 4242);
        place_state_free(s);
        plan_free(p);
        world_done(&w);
}

/* Policies that need a class do not take an unsampled process. */
static void test_classes(void) {
        static const char AVX[] = "[policy]\nname = avx\npriority = 300\n[match]\nclass = avx\n"
                                  "[place]\ncpus = all\n";
        static const char LAT[] = "[policy]\nname = lat\npriority = 200\n[match]\nclass = latency other\ncomm = svc\n"
                                  "[place]\ncpus = all\n";
        static const char ANY[] = "[policy]\nname = any\npriority = 100\n[match]\ncomm = *\n[place]\ncpus = all\n";
        const char *const pol[] = { AVX, LAT, ANY };
        World w;
        PlacePick pick;

        world_init(&w, "pack:1 l3:1 core:2 pu:2", true, pol, 3);
        add_process(&w, "job", 1, POLICY_CLASS_OTHER); /* the "any" group exists */
        add_process(&w, "svc", 1, POLICY_CLASS_OTHER); /* and the "lat" one */
        /* avx needs class avx: passed by, as the planner does with "other". */
        pick = one_new(&w, "job");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        ASSERT_STREQ(w.policies->policies[pick.policy]->name, "any");
        /* lat allows "other": the planner would take it there now, maybe
         * elsewhere once classified. Left to the pass. */
        pick = one_new(&w, "svc");
        ASSERT_EQ(pick.verdict, PLACE_WAIT_CLASS);
        ASSERT_STREQ(w.policies->policies[pick.policy]->name, "lat");
        /* Not in force: not looked at. */
        w.in_force[1] = false;
        pick = one_new(&w, "svc");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        ASSERT_STREQ(w.policies->policies[pick.policy]->name, "any");
        world_done(&w);
}

/* Facts beyond comm are asked for only when a candidate needs them. */
static void test_facts_on_demand(void) {
        static const char EXE[] = "[policy]\nname = db\npriority = 200\n[match]\ncomm = postgres\nexe = /usr/lib/*\n"
                                  "[place]\ncpus = all\n";
        static const char USER[] = "[policy]\nname = build\npriority = 100\n[match]\nuser = builder\n"
                                   "[place]\ncpus = all\n";
        const char *const pol[] = { EXE, USER };
        _cleanup_(plan_freep) Plan *p = NULL;
        _cleanup_(place_state_freep) PlaceState *s = NULL;
        World w;
        PlaceProcess pp = { .tgid = 5000, .start_time = 1, .n_threads = 1, .have = PLACE_FACT_COMM };
        PlacePick pick;

        world_init(&w, "pack:1 l3:1 core:2 pu:2", true, pol, 2);
        w.tasks[w.n_tasks++] = (PlanTaskInput) { .tid = 10, .tgid = 10, .start_time = 5,
                                                 .match = { .comm = "postgres", .exe = "/usr/lib/pg" } };
        w.tasks[w.n_tasks++] = (PlanTaskInput) { .tid = 11, .tgid = 11, .start_time = 5,
                                                 .match = { .comm = "cc", .user = "builder" } };
        p = world_plan(&w);
        s = world_state(&w, p);
        /* build names nothing (user only): the scope judges it by the cgroup. */
        ASSERT_EQ(place_state_facts(s), PLACE_FACT_COMM | PLACE_FACT(POLICY_MATCH_EXE) | PLACE_FACT(POLICY_MATCH_USER) |
                                                PLACE_FACT(POLICY_MATCH_CGROUP));

        /* comm rules db out; build needs the user and the cgroup. */
        pp.match = (PolicyTask) { .comm = "bash" };
        place_pick(s, &pp, &pick);
        ASSERT_EQ(pick.verdict, PLACE_NEED_FACTS);
        ASSERT_EQ(pick.need, PLACE_FACT(POLICY_MATCH_USER) | PLACE_FACT(POLICY_MATCH_CGROUP));
        pp.have |= pick.need;
        pp.match.user = "alice";
        place_pick(s, &pp, &pick);
        ASSERT_EQ(pick.verdict, PLACE_NONE);

        /* comm takes db: its exe is needed (and only that). */
        pp = (PlaceProcess) { .tgid = 5001, .start_time = 1, .n_threads = 1, .have = PLACE_FACT_COMM,
                              .match = { .comm = "postgres" } };
        place_pick(s, &pp, &pick);
        ASSERT_EQ(pick.verdict, PLACE_NEED_FACTS);
        ASSERT_EQ(pick.need, PLACE_FACT(POLICY_MATCH_EXE));
        pp.have |= pick.need;
        pp.match.exe = "/usr/lib/postgresql/bin/postgres";
        place_pick(s, &pp, &pick);
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        ASSERT_STREQ(w.policies->policies[pick.policy]->name, "db");

        /* A process the plan places already, same policy: left as it is. */
        pp = (PlaceProcess) { .tgid = 10, .start_time = 5, .n_threads = 1, .have = PLACE_FACTS_ALL,
                              .match = { .comm = "postgres", .exe = "/usr/lib/pg" } };
        place_pick(s, &pp, &pick);
        ASSERT_EQ(pick.verdict, PLACE_PLANNED);
        /* The same pid, another process (start time): placed. */
        pp.start_time = 6;
        place_pick(s, &pp, &pick);
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        world_done(&w);
}

/* A policy without [place] sets kernel-wide values only while a task it
 * matches is there: the first such process asks for a pass. */
static void test_kernel_only(void) {
        static const char TUNED[] = "[policy]\nname = tuned\npriority = 300\n[match]\ncomm = special\n"
                                    "[features]\nHRTICK = on\n";
        static const char ANY[] = "[policy]\nname = any\n[match]\ncomm = *\n[place]\ncpus = all\n";
        const char *const pol[] = { TUNED, ANY };
        World w;
        PlacePick pick;

        world_init(&w, "pack:1 l3:1 core:2 pu:2", true, pol, 2);
        add_process(&w, "job", 1, POLICY_CLASS_OTHER);
        pick = one_new(&w, "special");
        ASSERT_EQ(pick.verdict, PLACE_GROUP); /* placed by "any" all the same */
        ASSERT_TRUE(pick.kernel);
        pick = one_new(&w, "bash");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        ASSERT_FALSE(pick.kernel);
        /* "special" is there now (one_new added it): its features are in force. */
        pick = one_new(&w, "special");
        ASSERT_FALSE(pick.kernel);
        world_done(&w);
}

static int policy_index(const World *w, const char *name) {
        for (size_t i = 0; i < w->policies->n; i++)
                if (streq(w->policies->policies[i]->name, name))
                        return (int) i;
        TEST_FAIL("no policy %s", name);
        return -1;
}

/* Policies naming their programs are looked up by comm, the others looked
 * at for every process; the first in set order still wins, as the
 * planner's walk (one_new() checks each pick against it). */
static void test_comm_index(void) {
        static const char *const pol[] = {
                "[policy]\nname = top\npriority = 900\n[match]\ncomm = zzz\nexe = /opt/*\n[place]\ncpus = all\n",
                "[policy]\nname = a\npriority = 800\n[match]\ncomm = alpha\n[place]\ncpus = all\n",
                "[policy]\nname = b\npriority = 700\n[match]\ncomm = be*\n[place]\ncpus = all\n",
                "[policy]\nname = c\npriority = 600\n[match]\ncomm = gamma\ncomm = alpha\n[place]\ncpus = all\n",
                "[policy]\nname = mixed\npriority = 550\n[match]\ncomm = mu\ncomm = ps*\n[place]\ncpus = all\n",
                "[policy]\nname = d\npriority = 500\n[match]\ncomm = delta\n[features]\nHRTICK = on\n",
                "[policy]\nname = e\npriority = 450\n[match]\ncomm = d?lta\n[place]\ncpus = all\n",
                "[policy]\nname = f\npriority = 300\n[match]\ncomm = delta\ncomm = zeta\n[place]\ncpus = all\n",
                "[policy]\nname = g\npriority = 200\n[match]\ncomm = \\zeta\n[place]\ncpus = all\n",
                "[policy]\nname = h\npriority = 100\n[match]\ncomm = omega\n[place]\ncpus = all\n",
                "[policy]\nname = nocomm\npriority = 50\n[match]\nclass = other latency\n[place]\ncpus = all\n",
        };
        static const struct {
                const char *comm, *policy;
                PlaceVerdict verdict;
                bool kernel;
        } cases[] = {
                { "alpha", "a", PLACE_GROUP, false },      { "beta", "b", PLACE_GROUP, false },
                { "gamma", "c", PLACE_GROUP, false },      { "mu", "mixed", PLACE_GROUP, false },
                { "psi", "mixed", PLACE_GROUP, false },    { "delta", "e", PLACE_GROUP, true },
                { "zeta", "f", PLACE_GROUP, false },       { "omega", "h", PLACE_GROUP, false },
                { "other", "nocomm", PLACE_WAIT_CLASS, false }, { "alph", "nocomm", PLACE_WAIT_CLASS, false },
        };
        static const char *const seeds[] = { "alpha", "beta", "gamma", "mu", "dalta", "zeta", "omega", "zzz" };
        World w;

        world_init(&w, "pack:1 l3:1 core:2 pu:2", true, pol, ELEMENTSOF(pol));
        /* Groups for the policies picked below (no pass needed); none
         * named "delta" yet, so that d still only could set its feature. */
        for (size_t i = 0; i < ELEMENTSOF(seeds); i++)
                add_process(&w, seeds[i], 1, POLICY_CLASS_OTHER);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                PlacePick pick = one_new(&w, cases[i].comm);

                ASSERT_EQ(pick.verdict, cases[i].verdict);
                ASSERT_EQ(pick.policy, policy_index(&w, cases[i].policy));
                ASSERT_EQ(pick.kernel, cases[i].kernel);
        }
        /* Without its comm known, every policy is looked at: the first
         * asks for its comm and exe (looked up by "omega", it would not
         * be a candidate). */
        {
                _cleanup_(plan_freep) Plan *plan = world_plan(&w);
                _cleanup_(place_state_freep) PlaceState *s = world_state(&w, plan);
                PlaceProcess pp = { .tgid = w.next_pid, .n_threads = 1, .have = 0, .match = { .comm = "omega" } };
                PlacePick pick;

                place_pick(s, &pp, &pick);
                ASSERT_EQ(pick.verdict, PLACE_NEED_FACTS);
                ASSERT_EQ(pick.need, PLACE_FACT_COMM | PLACE_FACT(POLICY_MATCH_EXE));
        }
        world_done(&w);
}

/* The planner takes for each task the policy policy_set_select() takes
 * (the plain walk), with its comm index over names, starts and globs. */
static void test_plan_selects(void) {
        static const char *const pats[] = { "ab", "abc", "ab*", "a*", "*", "b*", "a?c", "*c", "x\\y", "*b*" };
        static const char *const comms[] = { "ab", "abc", "abcd", "a", "b", "bc", "xy", "c" };
        static const char *const classes[] = { "other", "latency", "avx", "other latency" };
        static const char *const features[] = { "[features]\nHRTICK = on\n", "[features]\nTTWU_QUEUE = off\n",
                                                 "[features]\nHRTICK = off\nTTWU_QUEUE = on\n" };
        unsigned seed = getenv("TOPOD_TEST_SEED") ? (unsigned) strtoul(getenv("TOPOD_TEST_SEED"), NULL, 10)
                                                  : (unsigned) time(NULL);

        printf("   seed %u (TOPOD_TEST_SEED=%u repeats it)\n", seed, seed);
        srand(seed);
        for (int round = 0; round < 100; round++) {
                char texts[16][256];
                const char *pol[16];
                size_t n = 1 + (size_t) (rand() % 16);
                _cleanup_(plan_freep) Plan *plan = NULL;
                World w;

                for (size_t i = 0; i < n; i++) {
                        /* Some disabled, some without [place]. */
                        int len = snprintf(texts[i], sizeof(texts[i]), "[policy]\nname = p%zu\npriority = %d\n%s[match]\n",
                                           i, rand() % 5, rand() % 8 == 0 ? "enabled = no\n" : "");
                        int k = rand() % 3;

                        for (int j = 0; j < k; j++)
                                len += snprintf(texts[i] + len, sizeof(texts[i]) - (size_t) len, "comm = %s\n",
                                                pats[rand() % ELEMENTSOF(pats)]);
                        if (k == 0 || rand() % 3 == 0)
                                len += snprintf(texts[i] + len, sizeof(texts[i]) - (size_t) len, "class = %s\n",
                                                classes[rand() % ELEMENTSOF(classes)]);
                        snprintf(texts[i] + len, sizeof(texts[i]) - (size_t) len, "%s",
                                 rand() % 4 == 0 ? features[rand() % ELEMENTSOF(features)] : "[place]\ncpus = all\n");
                        pol[i] = texts[i];
                }
                world_init(&w, "pack:1 l3:2 core:2 pu:2", false, pol, n);
                for (size_t i = 0; i < n; i++)
                        w.in_force[i] = rand() % 6 != 0;
                for (int t = 0; t < 20; t++)
                        add_process(&w, rand() % 10 == 0 ? NULL : comms[rand() % ELEMENTSOF(comms)], 1,
                                    (PolicyClass) (rand() % _POLICY_CLASS_MAX));
                plan = world_plan(&w);
                for (size_t t = 0; t < w.n_tasks; t++) {
                        const PlanTask *pt = plan_find_task(plan, w.tasks[t].tid);
                        int want = policy_set_select(w.policies, w.in_force, &w.config->scope, &w.tasks[t].match);

                        if ((pt ? pt->policy : -1) != want)
                                TEST_FAIL("round %d: task %s (class %d): planner %d, select %d", round,
                                          w.tasks[t].match.comm ?: "(none)", (int) w.tasks[t].match.class,
                                          pt ? pt->policy : -1, want);
                }
                /* The kernel-wide settings: those of the policies without
                 * [place] that some task matches, as policy by policy. */
                {
                        _cleanup_(policy_kernel_plan_freep) PolicyKernelPlan *want = NULL;
                        bool kernel[16];

                        for (size_t i = 0; i < n; i++) {
                                const Policy *p = w.policies->policies[i];

                                kernel[i] = w.in_force[i];
                                if (!kernel[i] || !p->has_match || p->place.present)
                                        continue;
                                kernel[i] = false;
                                for (size_t t = 0; t < w.n_tasks; t++)
                                        kernel[i] = kernel[i] || policy_match_task(&p->match, &w.tasks[t].match);
                        }
                        ASSERT_OK(policy_set_resolve_kernel(w.policies, kernel, &want));
                        ASSERT_EQ(plan->kernel->n_features, want->n_features);
                        for (size_t f = 0; f < want->n_features; f++)
                                ASSERT_EQ(plan->kernel->feature_policy[f], want->feature_policy[f]);
                        ASSERT_EQ(plan->kernel->n_conflicts, want->n_conflicts);
                }
                world_done(&w);
        }
}

/* Loads follow the fast path's placements, exits and new threads. */
static void test_loads(void) {
        const char *const pol[] = { PACK_LLC };
        _cleanup_(plan_freep) Plan *p = NULL;
        _cleanup_(place_state_freep) PlaceState *s = NULL;
        World w;
        PlacePick pick;
        pid_t a;
        int g;

        world_init(&w, "pack:1 l3:2 core:2 pu:2", true, pol, 1);
        a = add_process(&w, "batch", 2, POLICY_CLASS_OTHER);
        p = world_plan(&w);
        s = world_state(&w, p);
        pick = fast_pick(s, 3000, "batch");
        ASSERT_EQ(pick.verdict, PLACE_GROUP);
        g = pick.group;
        ASSERT_EQ(place_state_load(s, g), 2);
        place_commit(s, &pick, 3000, 1);
        ASSERT_EQ(place_state_load(s, g), 3);
        place_commit(s, &pick, 3001, 1);
        ASSERT_EQ(place_state_load(s, g), 4);
        /* Full: the planner would open llc1. */
        ASSERT_EQ(fast_pick(s, 3002, "batch").verdict, PLACE_NEED_PASS);
        place_note_exit(s, 3000, 3000);
        ASSERT_EQ(place_state_load(s, g), 3);
        ASSERT_EQ(fast_pick(s, 3002, "batch").verdict, PLACE_GROUP);
        place_note_thread(s, a);
        ASSERT_EQ(place_state_load(s, g), 4);
        place_note_exit(s, a, a + 1); /* one thread */
        ASSERT_EQ(place_state_load(s, g), 3);
        place_note_exit(s, a, a);     /* the process */
        ASSERT_EQ(place_state_load(s, g), 1);
        place_note_exit(s, a, a);     /* again: nothing */
        place_note_exit(s, 9999, 9999);
        ASSERT_EQ(place_state_load(s, g), 1);
        world_done(&w);
}

/* The planner's candidate domains, as place counts them: with enough
 * processes spread, every domain has a group. */
static void test_domains_counted(void) {
        static const char *const cpus[] = { "llc", "node", "package", "all", "1-3,9" };
        static const char *const topologies[] = {
                "pack:2 [numa] l3:2 core:2 pu:2",
                "pack:2 l3:1 group:2 [numa] core:2 pu:2", /* an LLC over two nodes */
        };

        for (size_t t = 0; t < ELEMENTSOF(topologies); t++)
                for (size_t c = 0; c < ELEMENTSOF(cpus); c++) {
                        char text[256];
                        const char *pol[1] = { text };
                        _cleanup_(plan_freep) Plan *p = NULL;
                        _cleanup_(place_state_freep) PlaceState *s = NULL;
                        World w;
                        size_t groups = 0;
                        PlacePick pick;

                        snprintf(text, sizeof(text),
                                 "[policy]\nname = s\n[match]\ncomm = s\n[place]\ncpus = %s\nspread = spread\n",
                                 cpus[c]);
                        world_init(&w, topologies[t], true, pol, 1);
                        for (int i = 0; i < 16; i++)
                                add_process(&w, "s", 1, POLICY_CLASS_OTHER);
                        p = world_plan(&w);
                        for (size_t g = 0; g < p->n_groups; g++)
                                groups += p->groups[g].policy == 0;
                        s = world_state(&w, p);
                        /* All domains in use: spread picks among them, never "needs a pass". */
                        pick = fast_pick(s, w.next_pid, "s");
                        printf("   %s cpus=%s: %zu groups, %s\n", topologies[t], cpus[c], groups,
                               place_verdict_to_string(pick.verdict));
                        ASSERT_EQ(pick.verdict, PLACE_GROUP);
                        add_process(&w, "s", 1, POLICY_CLASS_OTHER);
                        check_against_plan(&w, p, &pick, w.next_pid - 1);
                        world_done(&w);
                }
}

/* Random sequences: existing processes of 1-3 threads, then a burst of new
 * one-thread processes picked on one state (with place_commit), each
 * checked against the planner with all of them; "needs a pass" rebuilds the
 * state from the new plan, as the pass would. */
static void test_random(void) {
        static const char *const topologies[] = {
                "pack:1 l3:2 core:2 pu:2",
                "pack:2 [numa] l3:2 core:2 pu:2",
                "pack:1 l3:4 core:1 pu:2",
                "pack:2 l3:1 group:2 [numa] core:2 pu:2",
                "tests/data/topologies/uneven-llc.xml",
                "tests/data/topologies/uneven-llc-half-core.xml",
        };
        static const char *const spreads[] = { "pack", "spread" };
        static const char *const cookies[] = { "none", "group", "process" };
        static const char *const cpus[] = { "llc", "node", "all" };
        unsigned seed = getenv("TOPOD_TEST_SEED") ? (unsigned) strtoul(getenv("TOPOD_TEST_SEED"), NULL, 10)
                                                  : (unsigned) time(NULL);
        unsigned counts[_PLACE_VERDICT_MAX] = {};

        printf("   seed %u (TOPOD_TEST_SEED=%u repeats it)\n", seed, seed);
        srand(seed);
        for (int round = 0; round < 300; round++) {
                char a[256], b[256];
                const char *pol[3] = { a, b,
                                       /* Some rounds: an exclusive group that takes CPUs from the others'. */
                                       "[policy]\nname = x\npriority = 300\n[match]\ncomm = x*\n"
                                       "[place]\ncpus = 2-3\nexclusive = yes\ncookie = none\n" };
                bool exclusive = rand() % 3 == 0;
                World w;
                Plan *before;
                PlaceState *s;
                int existing = rand() % 8, burst = 1 + rand() % 6;

                snprintf(a, sizeof(a), "[policy]\nname = a\npriority = 200\n[match]\ncomm = a*\n"
                                       "[place]\ncpus = %s\nspread = %s\ncookie = %s\n",
                         cpus[rand() % 3], spreads[rand() % 2], cookies[rand() % 3]);
                snprintf(b, sizeof(b), "[policy]\nname = b\npriority = 100\n[match]\ncomm = *\n"
                                       "[place]\ncpus = %s\nspread = %s\ncookie = %s\n",
                         cpus[rand() % 3], spreads[rand() % 2], cookies[rand() % 3]);
                world_init(&w, topologies[rand() % ELEMENTSOF(topologies)], rand() % 4 != 0, pol, exclusive ? 3 : 2);
                if (exclusive)
                        add_process(&w, "x-old", 1, POLICY_CLASS_OTHER);
                for (int i = 0; i < existing; i++)
                        add_process(&w, rand() % 2 ? "a-old" : "b-old", 1 + (unsigned) (rand() % 3),
                                    POLICY_CLASS_OTHER);
                before = world_plan(&w);
                s = world_state(&w, before);
                for (int i = 0; i < burst; i++) {
                        const char *comm = rand() % 2 ? "a-new" : "b-new";
                        pid_t tgid = w.next_pid;
                        PlacePick pick = fast_pick(s, tgid, comm);

                        counts[pick.verdict]++;
                        add_process(&w, comm, 1, POLICY_CLASS_OTHER);
                        check_against_plan(&w, before, &pick, tgid);
                        if (pick.verdict == PLACE_GROUP)
                                place_commit(s, &pick, tgid, 1);
                        else if (pick.verdict == PLACE_NEED_PASS) {
                                /* The pass: a new plan, a new state. */
                                place_state_free(s);
                                plan_free(before);
                                before = world_plan(&w);
                                s = world_state(&w, before);
                        }
                }
                place_state_free(s);
                plan_free(before);
                world_done(&w);
        }
        printf("   picks: %u group, %u need-pass, %u none\n", counts[PLACE_GROUP], counts[PLACE_NEED_PASS],
               counts[PLACE_NONE]);
        ASSERT_GT(counts[PLACE_GROUP], counts[PLACE_NEED_PASS]);
}

int main(void) {
        RUN(test_pack);
        RUN(test_spread);
        RUN(test_spread_uneven);
        RUN(test_group_cookie);
        RUN(test_cookie_sources);
        RUN(test_classes);
        RUN(test_scope_fast_path);
        RUN(test_facts_on_demand);
        RUN(test_kernel_only);
        RUN(test_comm_index);
        RUN(test_plan_selects);
        RUN(test_loads);
        RUN(test_domains_counted);
        RUN(test_random);
        return 0;
}
