/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The planner's steps (plan_build()) and the Plan's lifetime. What "where"
 * is (domains, the tree) is plan-tree.c's, the kernel-wide settings and the
 * weights plan-mode.c's, printing plan-print.c's. */
#include "plan-internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unit-name.h"
#include "base/util.h"

const char *plan_domain_kind_to_string(PlanDomainKind k) {
        static const char *const names[_PLAN_DOMAIN_MAX] = {
                [PLAN_DOMAIN_LLC] = "llc",   [PLAN_DOMAIN_NODE] = "node",         [PLAN_DOMAIN_PACKAGE] = "package",
                [PLAN_DOMAIN_ALL] = "all",   [PLAN_DOMAIN_EXPLICIT] = "explicit", [PLAN_DOMAIN_INNER] = "inner",
        };
        return (unsigned) k < _PLAN_DOMAIN_MAX ? names[k] : "?";
}

Plan *plan_free(Plan *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_groups; i++) {
                free(p->groups[i].path);
                bitmap_free(p->groups[i].cpus);
                bitmap_free(p->groups[i].mems);
                free(p->groups[i].weight_why);
        }
        free(p->groups);
        free(p->tasks);
        free(p->cookie_groups);
        free(p->cgroup_root);
        strv_free(p->notes);
        policy_kernel_plan_free(p->kernel);
        free(p);
        return NULL;
}

int plan_note(Plan *p, const char *fmt, ...) {
        va_list ap;
        char *s;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        if (strv_contains(p->notes, s)) {
                free(s);
                return 0;
        }
        return strv_consume(&p->notes, s);
}

static int compare_member(const void *a, const void *b, void *userdata) {
        const PlanInputs *in = userdata;
        const Member *x = a, *y = b;
        const PlanTaskInput *tx = &in->tasks[x->task], *ty = &in->tasks[y->task];

        if (x->policy != y->policy)
                return (x->policy > y->policy) - (x->policy < y->policy);
        if (tx->tgid != ty->tgid)
                return (tx->tgid > ty->tgid) - (tx->tgid < ty->tgid);
        return (tx->tid > ty->tid) - (tx->tid < ty->tid);
}

static int compare_task(const void *a, const void *b) {
        const PlanTask *x = a, *y = b;

        return (x->tid > y->tid) - (x->tid < y->tid);
}

static int compare_group_index(const void *a, const void *b, void *userdata) {
        const PlanGroup *g = userdata;

        return strcmp(g[*(const size_t *) a].path, g[*(const size_t *) b].path);
}

static void indexes_free(PolicyIndex *(*x)[_POLICY_CLASS_MAX]) {
        for (size_t c = 0; c < _POLICY_CLASS_MAX; c++)
                policy_index_free((*x)[c]);
}

static void builder_done(Builder *b) {
        const PolicySet *ps = b->in->policies;

        if (b->domains)
                for (size_t i = 0; i < ps->n; i++)
                        if (b->domains[i])
                                plan_domains_free(b->domains[i], b->n_domains[i]);
        free(b->domains);
        free(b->n_domains);
        free(b->cursor);
        free(b->members);
        plan_free(b->plan);
}

/* The tree's root, and its shape: nested or flat (auto: nested where the kernel has modes). */
static int choose_hierarchy(Builder *b) {
        Plan *p = b->plan;

        p->cgroup_root = strdup(b->in->config->cgroup_root);
        if (!p->cgroup_root)
                return -ENOMEM;
        p->slices = b->in->slices;
        if (p->slices) {
                /* A slice's cgroup is where its name says: the root must
                 * be the path of the slice it ends with. */
                const char *last = strrchr(p->cgroup_root, '/');
                _cleanup_free_ char *want = NULL;

                last = last ? last + 1 : p->cgroup_root;
                if (unit_slice_cgroup_path(last, &want) < 0 || !streq(want, p->cgroup_root) || streq(p->cgroup_root, "/"))
                        return -EINVAL;
        }
        p->hierarchy = b->in->config->hierarchy;
        if (p->hierarchy == CONFIG_HIERARCHY_AUTO)
                p->hierarchy = b->in->caps->cgroup_mode.available ? CONFIG_HIERARCHY_NESTED : CONFIG_HIERARCHY_FLAT;
        return 0;
}

/* Whether cookies are given at all: the interlocks. */
static int allow_cookies(Builder *b) {
        const KernelCaps *caps = b->in->caps;

        b->plan->cookies_allowed = caps->core_sched.available && caps->smt_active && !caps->sched_ext_active;
        return 0;
}

/* Which policy places each task: the first in force that places and matches it. */
static int select_members(Builder *b) {
        const PlanInputs *in = b->in;
        const PolicySet *ps = in->policies;
        _cleanup_(indexes_free) PolicyIndex *index[_POLICY_CLASS_MAX] = {}; /* per class: the policies that can take it */
        _cleanup_free_ bool *take = calloc(MAX(ps->n, (size_t) 1), sizeof(bool));
        int k;

        /* Per class, over only the policies that can take that class, and
         * of those the ones that name the task's comm and the ones that
         * match otherwise (policy_index_new()): a thousand policies cost a
         * thread only the few that could apply to it. */
        b->members = calloc(MAX(in->n_tasks, (size_t) 1), sizeof(Member));
        if (!b->members || !take)
                return -ENOMEM;
        for (unsigned c = 0; c < _POLICY_CLASS_MAX; c++) {
                for (size_t i = 0; i < ps->n; i++) {
                        const Policy *pol = ps->policies[i];

                        take[i] = in->in_force[i] && pol->enabled && pol->place.present &&
                                  (!pol->match.classes || (pol->match.classes & (1u << c)));
                }
                if ((k = policy_index_new(ps, take, &index[c])) < 0)
                        return k;
        }
        for (size_t i = 0; i < in->n_tasks; i++) {
                const PolicyTask *task = &in->tasks[i].match;
                int pol = -1;
                size_t c;

                if (in->tasks[i].kernel_thread || task->class < 0 || task->class >= _POLICY_CLASS_MAX)
                        continue;
                /* Without a comm no keyed policy takes it: "" finds at most
                 * the "comm = *" ones, which turn it down as before. */
                for (PolicyWalk w = policy_index_walk(index[task->class], task->comm ?: "");
                     pol < 0 && policy_walk_next(&w, &c);)
                        if (policy_takes(ps->policies[c], &in->config->scope, task))
                                pol = (int) c;
                if (pol < 0)
                        continue;
                b->members[b->n_members++] = (Member) { .task = i, .policy = pol };
        }
        qsort_r(b->members, b->n_members, sizeof(Member), compare_member, (void *) in);
        return 0;
}

/* The domain of one process (members [i, j): its threads, one policy),
 * and its threads into that domain's group. */
static int place_process(Builder *b, size_t i, size_t j) {
        const PlanInputs *in = b->in;
        Plan *p = b->plan;
        int pol = b->members[i].policy;
        const Policy *policy = in->policies->policies[pol];
        Domain *dom;
        int d, g, k;

        if ((k = plan_domains_ensure(p, in->topology, policy, &b->domains[pol], &b->n_domains[pol])) < 0)
                return k;
        if (b->n_domains[pol] == 0)
                return 0;
        d = plan_pick_domain(b->domains[pol], b->n_domains[pol], (unsigned) (j - i), policy->place.spread, &b->cursor[pol]);
        dom = &b->domains[pol][d];
        dom->load += (unsigned) (j - i);
        g = plan_group_for(b, pol, dom);
        if (g == -EEXIST) {
                dom->load -= (unsigned) (j - i);
                return plan_note(p, "%s: its group's cgroup path clashes with another group's; its tasks are left alone "
                                    "(rename its [place] group)", policy->name);
        }
        if (g < 0)
                return g;
        for (; i < j; i++) {
                const PlanTaskInput *ti = &in->tasks[b->members[i].task];

                p->tasks[p->n_tasks] = (PlanTask) {
                        .tid = ti->tid,
                        .tgid = ti->tgid,
                        .start_time = ti->start_time,
                        .class = ti->match.class,
                        .policy = pol,
                        .group = g,
                        .cookie_group = -1,
                };
                if (ti->match.comm)
                        strncpy(p->tasks[p->n_tasks].comm, ti->match.comm, PLAN_COMM_MAX - 1);
                p->n_tasks++;
                p->groups[g].n_tasks++;
                p->groups[g].n_runnable += ti->runnable;
        }
        return 0;
}

/* Where each process goes: its threads together, in policy and tgid order. */
static int place_processes(Builder *b) {
        const PlanInputs *in = b->in;
        size_t n_pol = MAX(in->policies->n, (size_t) 1);
        int k;

        b->domains = calloc(n_pol, sizeof(Domain *));
        b->n_domains = calloc(n_pol, sizeof(size_t));
        b->cursor = calloc(n_pol, sizeof(size_t));
        b->plan->tasks = calloc(MAX(b->n_members, (size_t) 1), sizeof(PlanTask));
        if (!b->domains || !b->n_domains || !b->cursor || !b->plan->tasks)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_members;) {
                int pol = b->members[i].policy;
                pid_t tgid = in->tasks[b->members[i].task].tgid;
                size_t j = i;

                while (j < b->n_members && b->members[j].policy == pol && in->tasks[b->members[j].task].tgid == tgid)
                        j++;
                if ((k = place_process(b, i, j)) < 0)
                        return k;
                i = j;
        }
        return 0;
}

/* Which groups of the plan in force stay, empty. */
static int keep_groups(Builder *b) {
        const PlanInputs *in = b->in;
        const PolicySet *ps = in->policies;
        int k;

        /* Groups of the plan in force that this one would drop only
         * because their tasks are gone stay, empty: the fast path
         * (place.h) places the next process there at once, and
         * short-lived processes do not make the tree churn. in->keep is
         * the plan in force under the same policy set (NULL after a
         * reload: indexes would not match). */
        for (size_t i = 0; in->keep && i < in->keep->n_groups; i++) {
                const PlanGroup *og = &in->keep->groups[i];
                int pol = og->policy;

                if (pol < 0 || (size_t) pol >= ps->n || !in->in_force[pol] || !ps->policies[pol]->enabled ||
                    !ps->policies[pol]->place.present)
                        continue;
                if ((k = plan_domains_ensure(b->plan, in->topology, ps->policies[pol], &b->domains[pol],
                                             &b->n_domains[pol])) < 0)
                        return k;
                for (size_t d = 0; d < b->n_domains[pol]; d++) {
                        Domain *dom = &b->domains[pol][d];
                        int g;

                        /* Its CPUs, or fewer: those an exclusive group took. */
                        if (dom->kind != og->kind || dom->id != og->domain || bitmap_is_empty(og->cpus) ||
                            !bitmap_is_subset(og->cpus, dom->cpus))
                                continue;
                        g = plan_group_for(b, pol, dom);
                        if (g < 0 && g != -EEXIST)
                                return g;
                        break;
                }
        }
        return 0;
}

/* The groups' order: by path (parents first), the tasks' references renumbered. */
static int sort_groups(Builder *b) {
        Plan *p = b->plan;
        _cleanup_free_ int *remap = malloc(MAX(p->n_groups, (size_t) 1) * sizeof(int));
        _cleanup_free_ size_t *order = NULL;
        PlanGroup *sorted;

        if (!remap)
                return -ENOMEM;
        order = malloc(MAX(p->n_groups, (size_t) 1) * sizeof(size_t));
        sorted = malloc(MAX(p->n_groups, (size_t) 1) * sizeof(PlanGroup));
        if (!order || !sorted) {
                free(sorted);
                return -ENOMEM;
        }
        for (size_t i = 0; i < p->n_groups; i++)
                order[i] = i;
        qsort_r(order, p->n_groups, sizeof(size_t), compare_group_index, p->groups);
        for (size_t i = 0; i < p->n_groups; i++) {
                sorted[i] = p->groups[order[i]];
                remap[order[i]] = (int) i;
        }
        free(p->groups);
        p->groups = sorted;
        b->groups_cap = p->n_groups;
        for (size_t i = 0; i < p->n_tasks; i++)
                p->tasks[i].group = remap[p->tasks[i].group];
        return 0;
}

/* Each group's cpuset.mems, and which exclusive groups stay so (their CPUs taken from the others). */
static int settle_cpusets(Builder *b) {
        Plan *p = b->plan;
        int k;

        for (size_t i = 0; i < p->n_groups; i++) {
                PlanGroup *g = &p->groups[i];

                if ((k = plan_mems_of(b->in->topology, g->cpus, &g->mems)) < 0)
                        return k;
                if (g->policy < 0) {
                        if (asprintf(&g->weight_why, "intermediate directory") < 0)
                                return -ENOMEM;
                        continue;
                }
                if (g->exclusive)
                        for (size_t o = 0; o < i; o++)
                                if (p->groups[o].exclusive && bitmap_intersects(p->groups[o].cpus, g->cpus)) {
                                        g->exclusive = false;
                                        if ((k = plan_note(p, "%s: exclusive CPUs overlap those of %s: not exclusive",
                                                           g->path, p->groups[o].path)) < 0)
                                                return k;
                                        break;
                                }
        }
        return plan_take_exclusive(p, b->in->topology);
}

/* Each policy group's cpu.weight, scaled where the cgroup mode is emulated. */
static int weigh_groups(Builder *b) {
        Plan *p = b->plan;
        int k;

        for (size_t i = 0; i < p->n_groups; i++)
                if (p->groups[i].policy >= 0 && (k = plan_set_weight(p, b->in, &p->groups[i])) < 0)
                        return k;
        return 0;
}

/* Which tasks share a cookie: one per policy (group) or per process, none without the interlocks. */
static int group_cookies(Builder *b) {
        const KernelCaps *caps = b->in->caps;
        const PolicySet *ps = b->in->policies;
        Plan *p = b->plan;
        int k;

        for (size_t i = 0; i < p->n_tasks; i++) {
                PlanTask *pt = &p->tasks[i];
                const Policy *policy = ps->policies[pt->policy];
                pid_t key;

                if (policy->place.cookie == POLICY_COOKIE_NONE)
                        continue;
                if (!p->cookies_allowed) {
                        k = plan_note(p, "no core-scheduling cookies: %s",
                                      !caps->core_sched.available ? caps->core_sched.reason ?: "core scheduling unavailable"
                                      : !caps->smt_active       ? "SMT is off"
                                                                : "a sched_ext scheduler is running (core scheduling with "
                                                                  "sched_ext is reported to hang hosts)");
                        if (k < 0)
                                return k;
                        continue;
                }
                key = policy->place.cookie == POLICY_COOKIE_PROCESS ? pt->tgid : 0;
                for (size_t c = 0; c < p->n_cookie_groups; c++)
                        if (p->cookie_groups[c].policy == pt->policy && p->cookie_groups[c].tgid == key) {
                                pt->cookie_group = (int) c;
                                break;
                        }
                if (pt->cookie_group < 0) {
                        PlanCookieGroup *ng = realloc(p->cookie_groups, (p->n_cookie_groups + 1) * sizeof(PlanCookieGroup));

                        if (!ng)
                                return -ENOMEM;
                        p->cookie_groups = ng;
                        ng[p->n_cookie_groups] = (PlanCookieGroup) { .policy = pt->policy, .tgid = key };
                        pt->cookie_group = (int) p->n_cookie_groups++;
                }
                p->cookie_groups[pt->cookie_group].n_tasks++;
        }
        return 0;
}

/* The tasks by tid: plan_find_task() searches them. */
static int sort_tasks(Builder *b) {
        qsort(b->plan->tasks, b->plan->n_tasks, sizeof(PlanTask), compare_task);
        return 0;
}

/* plan_build()'s steps, in order: each decides one thing of the plan. */
static int (*const plan_steps[])(Builder *b) = {
        choose_hierarchy,   /* the tree's root, nested or flat */
        plan_choose_kernel, /* the features and the cgroup mode: written, emulated or not set */
        plan_choose_llc_balancing, /* the kernel's own LLC aggregation: on or off, and by whom */
        allow_cookies,      /* cookies at all: the interlocks */
        select_members,     /* which policy places each task */
        place_processes,    /* the domain, and so the group, of each process */
        keep_groups,        /* the groups of the plan in force that stay, empty */
        sort_groups,        /* the groups' order: by path */
        settle_cpusets,     /* cpuset.mems, and which groups are exclusive */
        weigh_groups,       /* cpu.weight */
        group_cookies,      /* which tasks share a cookie */
        sort_tasks,         /* the tasks' order: by tid */
};

int plan_build(const PlanInputs *in, Plan **ret) {
        _cleanup_(builder_done) Builder b = { .in = in, .plan = calloc(1, sizeof(Plan)) };
        int k;

        if (!b.plan)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(plan_steps); i++)
                if ((k = plan_steps[i](&b)) < 0)
                        return k;
        *ret = TAKE_PTR(b.plan);
        return 0;
}

const PlanTask *plan_find_task(const Plan *p, pid_t tid) {
        PlanTask key = { .tid = tid };

        return p->n_tasks ? bsearch(&key, p->tasks, p->n_tasks, sizeof(PlanTask), compare_task) : NULL;
}
