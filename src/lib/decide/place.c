/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "place.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* One policy as the fast path sees it. */
typedef struct PlacePolicy {
        bool active;        /* in force, enabled, with [place] */
        bool kernel_only;   /* in force, enabled, [match] without [place], not yet setting
                             * anything in the plan (no task of it was there) */
        unsigned facts;     /* PLACE_FACT() bits of the keys its [match] has patterns for */
        int *groups;        /* its leaf groups in the planner's domain order */
        size_t n_groups;
        size_t n_domains;   /* candidate domains the planner has for it */
        size_t cursor;      /* pack: the planner's cursor, an index into groups (n_groups
                             * once every domain was full) */
        int cookie_group;   /* its cookie = group cookie group in the plan, -1 */
        PlaceSource fresh_source; /* the last process the fast path gave its group cookie; tid 0 */
} PlacePolicy;

/* A process whose threads count in a group's load: from the plan, or
 * placed by the fast path since. */
typedef struct PlaceProc {
        pid_t tgid;
        int group;        /* -1: gone */
        unsigned threads;
        bool fresh;       /* placed by the fast path */
} PlaceProc;

/* Processes tracked beyond the plan's, at most (then the loads may drift
 * until the next plan). */
#define PLACE_TRACKED_MAX 65536u

struct PlaceState {
        const Plan *plan;
        const PolicySet *policies;
        const Topology *topology;
        const Scope *scope; /* the configuration's: where policies may act (scope.h) */
        PlacePolicy *pol;   /* per policy in set order */
        size_t n_pol;
        unsigned *load;     /* per plan group: threads */
        unsigned *capacity; /* per plan group, by the planner's rule */
        int (*sources)[PLACE_COOKIE_SOURCES_MAX]; /* per cookie group: plan task indices, -1 */
        unsigned facts;
        PlaceProc *procs;   /* sorted by tgid */
        size_t n_procs, procs_cap, procs_limit;
        PolicyIndex *index; /* of the policies a pick looks at (active or kernel_only) */
};

const char *place_verdict_to_string(PlaceVerdict v) {
        static const char *const names[_PLACE_VERDICT_MAX] = {
                [PLACE_NONE] = "none",           [PLACE_NEED_FACTS] = "need-facts", [PLACE_WAIT_CLASS] = "wait-class",
                [PLACE_NEED_PASS] = "need-pass", [PLACE_PLANNED] = "planned",       [PLACE_GROUP] = "group",
        };
        return (unsigned) v < _PLACE_VERDICT_MAX ? names[v] : "?";
}

const char *place_cookie_to_string(PlaceCookie c) {
        static const char *const names[_PLACE_COOKIE_MAX] = {
                [PLACE_COOKIE_KEEP] = "keep",
                [PLACE_COOKIE_NEW] = "new",
                [PLACE_COOKIE_JOIN] = "join",
        };
        return (unsigned) c < _PLACE_COOKIE_MAX ? names[c] : "?";
}

PlaceState *place_state_free(PlaceState *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; s->pol && i < s->n_pol; i++)
                free(s->pol[i].groups);
        free(s->pol);
        free(s->load);
        free(s->capacity);
        free(s->sources);
        free(s->procs);
        policy_index_free(s->index);
        free(s);
        return NULL;
}

/* The logical node holding a CPU, -1 (topology_node_of_cpu(), kept here so
 * that this file links without the observe modules). */
static int node_of_cpu(const Topology *t, unsigned cpu) {
        for (size_t i = 0; i < t->n_numa_nodes; i++)
                if (bitmap_isset(t->numa_nodes[i].cpus, cpu))
                        return (int) i;
        return -1;
}

/* Where a leaf group's domain comes in the planner's domain order. */
static uint64_t domain_key(const Topology *t, const PlanGroup *g) {
        int first = bitmap_next(g->cpus, 0);
        uint64_t cpu = first >= 0 ? (uint64_t) first : 0;

        switch (g->kind) {
        case PLAN_DOMAIN_LLC: {
                /* LLCs in logical order; the parts of a split LLC by node. */
                int node = first >= 0 ? node_of_cpu(t, (unsigned) first) : -1;

                return ((uint64_t) (uint32_t) g->domain << 40) | ((uint64_t) (uint32_t) (node + 1) << 24) | cpu;
        }
        case PLAN_DOMAIN_NODE:
                /* The domain is the node's os number; the planner walks nodes in logical order. */
                for (size_t i = 0; i < t->n_numa_nodes; i++)
                        if ((int) t->numa_nodes[i].os_index == g->domain)
                                return ((uint64_t) i << 40) | cpu;
                return UINT64_MAX;
        case PLAN_DOMAIN_PACKAGE:
                return ((uint64_t) (uint32_t) g->domain << 40) | cpu;
        default:
                return cpu;
        }
}

/* Does the plan's kernel-wide outcome come from this policy in part? */
static bool kernel_uses(const Plan *plan, size_t policy) {
        const PolicyKernelPlan *k = plan->kernel;

        if (!k)
                return false;
        if (k->cgroup_mode_policy == (int) policy)
                return true;
        for (size_t i = 0; i < k->n_features; i++)
                if (k->feature_policy[i] == (int) policy)
                        return true;
        for (size_t i = 0; i < k->n_conflicts; i++)
                if (k->conflicts[i].winner == policy || k->conflicts[i].loser == policy)
                        return true;
        return false;
}

typedef struct KeyedGroup {
        uint64_t key;
        int group;
} KeyedGroup;

static int compare_keyed(const void *a, const void *b) {
        const KeyedGroup *x = a, *y = b;

        if (x->key != y->key)
                return (x->key > y->key) - (x->key < y->key);
        return (x->group > y->group) - (x->group < y->group);
}

static int compare_proc(const void *a, const void *b) {
        const PlaceProc *x = a, *y = b;

        if (x->tgid != y->tgid)
                return (x->tgid > y->tgid) - (x->tgid < y->tgid);
        return (x->group > y->group) - (x->group < y->group);
}

static PlaceProc *find_proc(const PlaceState *s, pid_t tgid) {
        size_t lo = 0, hi = s->n_procs;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (s->procs[mid].tgid < tgid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < s->n_procs && s->procs[lo].tgid == tgid ? &s->procs[lo] : NULL;
}

/* The pack step of the planner's pick_domain(), over the policy's groups
 * in domain order from the cursor: the position it stops at (n_groups when
 * it runs past the last group). */
static size_t pack_step(const unsigned *load, const unsigned *cap, const int *g, size_t n, size_t cursor,
                        unsigned need) {
        while (cursor < n && load[g[cursor]] > 0 && load[g[cursor]] + need > cap[g[cursor]])
                cursor++;
        return cursor;
}

/* The least loaded relative to its size, first on a tie: where the planner
 * puts a spread process, and a pack one once every domain is full. */
static size_t least_loaded(const unsigned *load, const unsigned *cap, const int *g, size_t n) {
        size_t best = 0;

        for (size_t i = 1; i < n; i++)
                if ((uint64_t) load[g[i]] * MAX(cap[g[best]], 1u) < (uint64_t) load[g[best]] * MAX(cap[g[i]], 1u))
                        best = i;
        return best;
}

typedef struct Member {
        int policy;
        pid_t tgid;
        int group;
} Member;

static int compare_member(const void *a, const void *b) {
        const Member *x = a, *y = b;

        if (x->policy != y->policy)
                return (x->policy > y->policy) - (x->policy < y->policy);
        return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

/* Where each pack policy's cursor stands after the plan: the planner's
 * placement replayed (processes in tgid order, their threads as need).
 * When the replay does not end in the plan's groups and loads (a group path
 * clash, a plan from elsewhere), the cursor is taken to be on the last
 * group, or past it when some group is over its capacity. */
static int find_cursors(PlaceState *s) {
        const Plan *plan = s->plan;
        _cleanup_free_ Member *m = calloc(MAX(plan->n_tasks, (size_t) 1), sizeof(Member));
        _cleanup_free_ unsigned *load = calloc(MAX(plan->n_groups, (size_t) 1), sizeof(unsigned));
        _cleanup_free_ int *pos = malloc(MAX(plan->n_groups, (size_t) 1) * sizeof(int));

        if (!m || !load || !pos)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_tasks; i++)
                m[i] = (Member) { plan->tasks[i].policy, plan->tasks[i].tgid, plan->tasks[i].group };
        if (plan->n_tasks > 0)
                qsort(m, plan->n_tasks, sizeof(Member), compare_member);
        for (size_t g = 0; g < plan->n_groups; g++)
                pos[g] = -1;

        /* Each pack policy with groups: its members are one run of m. */
        for (size_t i = 0; i < s->n_pol; i++) {
                PlacePolicy *pp = &s->pol[i];
                size_t a, cursor = 0;
                bool ok = true;

                if (!pp->active || s->policies->policies[i]->place.spread != POLICY_SPREAD_PACK || pp->n_groups == 0)
                        continue;
                for (size_t g = 0; g < pp->n_groups; g++)
                        pos[pp->groups[g]] = (int) g;
                /* The first member of the policy. */
                {
                        size_t lo = 0, hi = plan->n_tasks;

                        while (lo < hi) {
                                size_t mid = lo + (hi - lo) / 2;

                                if (m[mid].policy < (int) i)
                                        lo = mid + 1;
                                else
                                        hi = mid;
                        }
                        a = lo;
                }
                while (a < plan->n_tasks && m[a].policy == (int) i && ok) {
                        size_t b = a, at;
                        unsigned need;

                        while (b < plan->n_tasks && m[b].policy == m[a].policy && m[b].tgid == m[a].tgid)
                                b++;
                        need = (unsigned) (b - a);
                        cursor = pack_step(load, s->capacity, pp->groups, pp->n_groups, cursor, need);
                        if (cursor < pp->n_groups)
                                at = cursor;
                        else if (pp->n_groups < pp->n_domains)
                                at = SIZE_MAX; /* a domain without a group: not this plan */
                        else
                                at = least_loaded(load, s->capacity, pp->groups, pp->n_groups);
                        ok = at != SIZE_MAX && m[a].group >= 0 && (size_t) m[a].group < plan->n_groups &&
                             pos[m[a].group] == (int) at;
                        if (ok)
                                load[pp->groups[at]] += need;
                        a = b;
                }
                for (size_t g = 0; g < pp->n_groups && ok; g++)
                        ok = load[pp->groups[g]] == plan->groups[pp->groups[g]].n_tasks;
                if (!ok) {
                        cursor = pp->n_groups - 1;
                        for (size_t g = 0; g + 1 < pp->n_groups; g++)
                                if (s->load[pp->groups[g]] > s->capacity[pp->groups[g]])
                                        cursor = pp->n_groups;
                }
                pp->cursor = cursor;
                for (size_t g = 0; g < pp->n_groups; g++)
                        pos[pp->groups[g]] = -1;
        }
        return 0;
}

/* One policy as a pick sees it: in force with [place] (active), or with
 * [match] alone and setting nothing yet (kernel_only); the facts it
 * matches on; its groups in the planner's domain order (keyed: scratch for
 * as many as the plan has groups). */
static int policy_from_plan(PlaceState *s, size_t i, const bool *in_force, KeyedGroup *keyed) {
        const Plan *plan = s->plan;
        const Policy *pol = s->policies->policies[i];
        PlacePolicy *pp = &s->pol[i];
        size_t n = 0;
        int k;

        pp->cookie_group = -1;
        pp->active = in_force[i] && pol->enabled && pol->place.present;
        pp->kernel_only = in_force[i] && pol->enabled && !pol->place.present && pol->has_match &&
                          !kernel_uses(plan, i);
        if (!pp->active && !pp->kernel_only)
                return 0;
        for (unsigned f = 0; f < _POLICY_MATCH_FIELD_MAX; f++)
                if (pol->match.fields[f].n > 0)
                        pp->facts |= PLACE_FACT(f);
        /* The scope judges by the cgroup: read it too, unless nothing the
         * scope could say applies to a policy that names its processes. */
        if (!policy_match_names(&pol->match) || pol->match.exclude.n > 0 || (s->scope && s->scope->protect.n > 0))
                pp->facts |= PLACE_FACT(POLICY_MATCH_CGROUP);
        s->facts |= pp->facts;
        if (!pp->active)
                return 0;
        if ((k = plan_count_domains(s->topology, pol, &pp->n_domains)) < 0)
                return k;

        for (size_t g = 0; g < plan->n_groups; g++) {
                const PlanGroup *pg = &plan->groups[g];

                if (pg->policy != (int) i)
                        continue;
                keyed[n++] = (KeyedGroup) { domain_key(s->topology, pg), (int) g };
                s->capacity[g] = pg->capacity;
        }
        if (n > 0) {
                qsort(keyed, n, sizeof(KeyedGroup), compare_keyed);
                pp->groups = malloc(n * sizeof(int));
                if (!pp->groups)
                        return -ENOMEM;
                for (size_t g = 0; g < n; g++)
                        pp->groups[g] = keyed[g].group;
                pp->n_groups = n;
        }
        return 0;
}

/* The index of the policies a pick looks at (active or kernel_only). */
static int index_policies(PlaceState *s) {
        _cleanup_free_ bool *take = calloc(MAX(s->n_pol, (size_t) 1), sizeof(bool));

        if (!take)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_pol; i++)
                take[i] = s->pol[i].active || s->pol[i].kernel_only;
        return policy_index_new(s->policies, take, &s->index);
}

/* The plan's processes, each with the group of its first thread (the
 * planner keeps a process's threads of one policy together). */
static int procs_from_plan(PlaceState *s) {
        const Plan *plan = s->plan;

        s->procs = calloc(MAX(plan->n_tasks, (size_t) 1), sizeof(PlaceProc));
        if (!s->procs)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_tasks; i++)
                s->procs[i] = (PlaceProc) { plan->tasks[i].tgid, plan->tasks[i].group, 1, false };
        if (plan->n_tasks > 0)
                qsort(s->procs, plan->n_tasks, sizeof(PlaceProc), compare_proc);
        for (size_t i = 0; i < plan->n_tasks; i++)
                if (s->n_procs > 0 && s->procs[s->n_procs - 1].tgid == s->procs[i].tgid)
                        s->procs[s->n_procs - 1].threads++;
                else
                        s->procs[s->n_procs++] = s->procs[i];
        s->procs_cap = MAX(plan->n_tasks, (size_t) 1);
        s->procs_limit = s->n_procs + PLACE_TRACKED_MAX;
        return 0;
}

/* Each policy's cookie group (cookie = group), and the members to take a
 * group's cookie from. */
static void sources_from_plan(PlaceState *s) {
        const Plan *plan = s->plan;

        for (size_t c = 0; c < plan->n_cookie_groups; c++) {
                const PlanCookieGroup *cg = &plan->cookie_groups[c];

                for (size_t m = 0; m < PLACE_COOKIE_SOURCES_MAX; m++)
                        s->sources[c][m] = -1;
                if (cg->tgid == 0 && cg->policy >= 0 && (size_t) cg->policy < s->policies->n &&
                    s->pol[cg->policy].cookie_group < 0)
                        s->pol[cg->policy].cookie_group = (int) c;
        }
        /* Sources: main threads first (they live as long as their process,
         * short of a leader that exits alone), then any. */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < plan->n_tasks; i++) {
                        const PlanTask *pt = &plan->tasks[i];
                        int *src;
                        size_t m = 0;

                        if (pt->cookie_group < 0 || (size_t) pt->cookie_group >= plan->n_cookie_groups ||
                            (pass == 0) != (pt->tid == pt->tgid))
                                continue;
                        src = s->sources[pt->cookie_group];
                        while (m < PLACE_COOKIE_SOURCES_MAX && src[m] >= 0)
                                m++;
                        if (m < PLACE_COOKIE_SOURCES_MAX)
                                src[m] = (int) i;
                }
}

int place_state_new(const Plan *plan, const PolicySet *ps, const bool *in_force, const Scope *scope, const Topology *t,
                    PlaceState **ret) {
        _cleanup_(place_state_freep) PlaceState *s = calloc(1, sizeof(PlaceState));
        _cleanup_free_ KeyedGroup *keyed = NULL;
        int k;

        if (!s)
                return -ENOMEM;
        s->plan = plan;
        s->policies = ps;
        s->topology = t;
        s->scope = scope;
        s->facts = PLACE_FACT_COMM;
        s->pol = calloc(MAX(ps->n, (size_t) 1), sizeof(PlacePolicy));
        s->n_pol = s->pol ? ps->n : 0;
        s->load = calloc(MAX(plan->n_groups, (size_t) 1), sizeof(unsigned));
        s->capacity = calloc(MAX(plan->n_groups, (size_t) 1), sizeof(unsigned));
        s->sources = malloc(MAX(plan->n_cookie_groups, (size_t) 1) * sizeof(*s->sources));
        keyed = calloc(MAX(plan->n_groups, (size_t) 1), sizeof(KeyedGroup));
        if (!s->pol || !s->load || !s->capacity || !s->sources || !keyed)
                return -ENOMEM;

        for (size_t i = 0; i < ps->n; i++)
                if ((k = policy_from_plan(s, i, in_force, keyed)) < 0)
                        return k;
        if ((k = index_policies(s)) < 0)
                return k;
        for (size_t g = 0; g < plan->n_groups; g++)
                s->load[g] = plan->groups[g].n_tasks;
        if ((k = procs_from_plan(s)) < 0 || (k = find_cursors(s)) < 0)
                return k;
        sources_from_plan(s);
        *ret = TAKE_PTR(s);
        return 0;
}

const Plan *place_state_plan(const PlaceState *s) {
        return s->plan;
}

unsigned place_state_facts(const PlaceState *s) {
        return s->facts;
}

unsigned place_state_load(const PlaceState *s, int group) {
        return group >= 0 && (size_t) group < s->plan->n_groups ? s->load[group] : 0;
}

/* Do the facts the process has that this policy matches on take it? Facts
 * not read yet are not looked at. */
static bool known_facts_match(const Policy *pol, unsigned facts, const PlaceProcess *p) {
        for (unsigned f = 0; f < _POLICY_MATCH_FIELD_MAX; f++) {
                PolicyMatch one = {};

                if (!(facts & p->have & PLACE_FACT(f)))
                        continue;
                one.fields[f] = pol->match.fields[f];
                if (!policy_match_task(&one, &p->match))
                        return false;
        }
        return true;
}

/* Does the scope let the policy act on the process (scope_admits(), the
 * planner's rule)? Its facts are all known by then. */
static bool scope_lets(const PlaceState *s, const Policy *pol, const PlaceProcess *p) {
        return scope_admits(s->scope, p->tgid, policy_match_names(&pol->match), &pol->match.exclude, p->match.cgroup);
}

/* The policies that may take the process, in set order (comm is always
 * known to the fast path; without it, every one a pick looks at). */
static PolicyWalk walk(const PlaceState *s, const PlaceProcess *p) {
        return policy_index_walk(s->index, p->have & PLACE_FACT_COMM ? p->match.comm : NULL);
}

/* Does a policy with [match] and no [place] that sets nothing in the plan
 * yet take the process (then the kernel-wide settings may change)? As the
 * planner matches it: an unsampled task counts as class other. 1 yes, 0
 * no, or -1 and *ret_need when facts are missing. */
static int kernel_match(const PlaceState *s, const PlaceProcess *p, unsigned *ret_need) {
        size_t i;

        for (PolicyWalk w = walk(s, p); policy_walk_next(&w, &i);) {
                const PlacePolicy *pp = &s->pol[i];
                const Policy *pol = s->policies->policies[i];

                if (!pp->kernel_only || !known_facts_match(pol, pp->facts, p))
                        continue;
                if (pp->facts & ~p->have) {
                        *ret_need = pp->facts & ~p->have;
                        return -1;
                }
                if (!scope_lets(s, pol, p))
                        continue;
                if (pol->match.classes == 0 || (pol->match.classes & (1u << POLICY_CLASS_OTHER)))
                        return 1;
        }
        return 0;
}

/* The first policy that takes the process, as described in place.h. */
static void select_policy(const PlaceState *s, const PlaceProcess *p, PlacePick *ret) {
        size_t i;

        for (PolicyWalk w = walk(s, p); policy_walk_next(&w, &i);) {
                const PlacePolicy *pp = &s->pol[i];
                const Policy *pol = s->policies->policies[i];
                unsigned missing;

                if (!pp->active || !known_facts_match(pol, pp->facts, p))
                        continue;
                missing = pp->facts & ~p->have;
                if (missing) {
                        /* It may take the process: read what it looks at (and
                         * only that) before deciding. */
                        ret->verdict = PLACE_NEED_FACTS;
                        ret->need = missing;
                        return;
                }
                if (!scope_lets(s, pol, p))
                        continue;
                if (pol->match.classes == 0) {
                        ret->verdict = PLACE_GROUP;
                        ret->policy = (int) i;
                        return;
                }
                if (pol->match.classes & (1u << POLICY_CLASS_OTHER)) {
                        /* The planner would put it here as "other" now, and
                         * maybe elsewhere once classified: not a guess to make. */
                        ret->verdict = PLACE_WAIT_CLASS;
                        ret->policy = (int) i;
                        return;
                }
                /* It needs a class an unsampled task cannot have: the
                 * planner passes it by too. */
        }
        ret->verdict = PLACE_NONE;
}

static int pick_group(const PlaceState *s, const PlacePolicy *pp, PolicySpread spread, unsigned need) {
        size_t n = pp->n_groups, c;
        const int *g = pp->groups;

        if (n == 0)
                return -1; /* its first process: the pass makes its group */
        if (spread == POLICY_SPREAD_PACK) {
                c = pack_step(s->load, s->capacity, g, n, pp->cursor, need);
                if (c < n)
                        return g[c];
                if (n < pp->n_domains)
                        return -1; /* the planner opens the next domain */
                /* Every domain in use and full. */
                return g[least_loaded(s->load, s->capacity, g, n)];
        }
        if (n < pp->n_domains)
                return -1; /* an empty domain is the least loaded */
        return g[least_loaded(s->load, s->capacity, g, n)];
}

void place_pick(const PlaceState *s, const PlaceProcess *p, PlacePick *ret) {
        const Plan *plan = s->plan;
        const PlanTask *pt;
        const Policy *pol;
        PlacePick r = { .verdict = PLACE_NONE, .policy = -1, .group = -1, .cookie_group = -1 };

        switch (kernel_match(s, p, &r.need)) {
        case -1:
                r.verdict = PLACE_NEED_FACTS;
                *ret = r;
                return;
        case 1:
                r.kernel = true;
                break;
        }
        select_policy(s, p, &r);
        if (r.verdict != PLACE_GROUP) {
                *ret = r;
                return;
        }
        pol = s->policies->policies[r.policy];

        pt = plan_find_task(plan, p->tgid);
        if (pt && !p->unapplied && (p->start_time == 0 || pt->start_time == p->start_time) && pt->policy == r.policy) {
                /* An exec of a process the plan places already, same policy. */
                r.verdict = PLACE_PLANNED;
                r.group = pt->group;
                *ret = r;
                return;
        }
        {
                const PlaceProc *pp = find_proc(s, p->tgid);

                if (pp && pp->fresh && pp->group >= 0 && plan->groups[pp->group].policy == r.policy) {
                        /* Placed by the fast path already (its fork, now its
                         * exec), for the same policy: nothing changes. */
                        r.verdict = PLACE_PLANNED;
                        r.group = pp->group;
                        *ret = r;
                        return;
                }
        }

        r.group = pick_group(s, &s->pol[r.policy], pol->place.spread, MAX(p->n_threads, 1u));
        if (r.group < 0) {
                r.verdict = PLACE_NEED_PASS;
                *ret = r;
                return;
        }
        if (plan->cookies_allowed && pol->place.cookie == POLICY_COOKIE_PROCESS)
                r.cookie = PLACE_COOKIE_NEW;
        else if (plan->cookies_allowed && pol->place.cookie == POLICY_COOKIE_GROUP) {
                r.cookie = PLACE_COOKIE_JOIN;
                r.cookie_group = s->pol[r.policy].cookie_group;
        }
        *ret = r;
}

static void load_sub(PlaceState *s, int group, unsigned n) {
        if (group >= 0 && (size_t) group < s->plan->n_groups)
                s->load[group] -= MIN(s->load[group], n);
}

void place_commit(PlaceState *s, const PlacePick *pick, pid_t tgid, unsigned n_threads) {
        PlaceProc *pp;
        size_t at;

        if (pick->verdict != PLACE_GROUP || pick->group < 0 || (size_t) pick->group >= s->plan->n_groups)
                return;
        n_threads = MAX(n_threads, 1u);
        if (pick->policy >= 0 && (size_t) pick->policy < s->n_pol &&
            s->policies->policies[pick->policy]->place.spread == POLICY_SPREAD_PACK) {
                PlacePolicy *pol = &s->pol[pick->policy];

                /* The cursor moves as the planner's would for this process. */
                pol->cursor = pack_step(s->load, s->capacity, pol->groups, pol->n_groups, pol->cursor, n_threads);
        }
        s->load[pick->group] += n_threads;
        pp = find_proc(s, tgid);
        if (pp) {
                /* It leaves the group it counted in (an exec that changed its policy). */
                if (pp->group >= 0)
                        load_sub(s, pp->group, pp->threads);
                *pp = (PlaceProc) { tgid, pick->group, n_threads, true };
                return;
        }
        if (s->n_procs >= s->procs_limit)
                return; /* not tracked: its exit will not lower the load */
        if (s->n_procs == s->procs_cap) {
                size_t cap = s->procs_cap * 2;
                PlaceProc *np = realloc(s->procs, cap * sizeof(PlaceProc));

                if (!np)
                        return;
                s->procs = np;
                s->procs_cap = cap;
        }
        /* New pids mostly come last. */
        at = s->n_procs;
        while (at > 0 && s->procs[at - 1].tgid > tgid)
                at--;
        memmove(&s->procs[at + 1], &s->procs[at], (s->n_procs - at) * sizeof(PlaceProc));
        s->procs[at] = (PlaceProc) { tgid, pick->group, n_threads, true };
        s->n_procs++;
}

void place_note_exit(PlaceState *s, pid_t tgid, pid_t tid) {
        PlaceProc *pp = find_proc(s, tgid);

        if (!pp || pp->group < 0)
                return;
        if (tid == tgid) {
                /* The main thread: the process is taken as gone (a leader
                 * exiting alone is rare; the next plan counts again). */
                load_sub(s, pp->group, pp->threads);
                pp->group = -1;
                pp->threads = 0;
        } else if (pp->threads > 1) {
                load_sub(s, pp->group, 1);
                pp->threads--;
        }
}

void place_note_thread(PlaceState *s, pid_t tgid) {
        PlaceProc *pp = find_proc(s, tgid);

        if (!pp || pp->group < 0)
                return;
        s->load[pp->group]++;
        pp->threads++;
}

size_t place_cookie_sources(const PlaceState *s, const PlacePick *pick, PlaceSource *ret, size_t max) {
        size_t n = 0;
        int c = pick->cookie_group;

        if (pick->cookie != PLACE_COOKIE_JOIN || pick->policy < 0 || (size_t) pick->policy >= s->policies->n)
                return 0;
        if (c >= 0 && (size_t) c < s->plan->n_cookie_groups)
                for (size_t i = 0; i < PLACE_COOKIE_SOURCES_MAX && n < max && s->sources[c][i] >= 0; i++) {
                        const PlanTask *pt = &s->plan->tasks[s->sources[c][i]];

                        ret[n++] = (PlaceSource) { pt->tid, pt->start_time };
                }
        if (n < max && s->pol[pick->policy].fresh_source.tid > 0)
                ret[n++] = s->pol[pick->policy].fresh_source;
        return n;
}

void place_note_cookie(PlaceState *s, int policy, pid_t tid, uint64_t start_time) {
        if (policy >= 0 && (size_t) policy < s->policies->n && tid > 0)
                s->pol[policy].fresh_source = (PlaceSource) { tid, start_time };
}

void place_fresh_sources(const PlaceState *s, PlaceSource *ret) {
        for (size_t i = 0; i < s->policies->n; i++)
                ret[i] = s->pol[i].fresh_source;
}

void place_set_fresh_sources(PlaceState *s, const PlaceSource *src, size_t n) {
        for (size_t i = 0; i < n && i < s->policies->n; i++)
                s->pol[i].fresh_source = src[i];
}
