/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "plan.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* A candidate domain of one policy while tasks are being placed. */
typedef struct Domain {
        PlanDomainKind kind;
        int id;           /* LLC / node / package id, -1 */
        int node;         /* for the nested path: the node (os number) it lies in, -1 */
        Bitmap *cpus;     /* owned */
        unsigned capacity;
        unsigned load;
        int group;        /* Plan group, once used; -1 */
        bool split;       /* the part of an LLC that spans nodes */
} Domain;

typedef struct Builder {
        const PlanInputs *in;
        Plan *plan;
        size_t groups_cap;
} Builder;

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

_printf_(2, 3) static int note(Plan *p, const char *fmt, ...) {
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

static const char *group_name(const Policy *pol) {
        return pol->place.group ? pol->place.group : pol->name;
}

/* Node os numbers whose CPUs meet these CPUs: the group's cpuset.mems. */
static int mems_of(const Topology *t, const Bitmap *cpus, Bitmap **ret) {
        _cleanup_(bitmap_freep) Bitmap *m = bitmap_new();
        int k;

        if (!m)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_numa_nodes; i++)
                if (bitmap_intersects(t->numa_nodes[i].cpus, cpus) &&
                    (k = bitmap_set(m, t->numa_nodes[i].os_index)) < 0)
                        return k;
        if (bitmap_is_empty(m)) /* CPUs outside every node: any memory */
                for (size_t i = 0; i < t->n_numa_nodes; i++)
                        if ((k = bitmap_set(m, t->numa_nodes[i].os_index)) < 0)
                                return k;
        *ret = TAKE_PTR(m);
        return 0;
}

/* Is a an ancestor directory of b (a path prefix ending at a '/')? */
static bool group_is_above(const PlanGroup *a, const PlanGroup *b) {
        size_t n = strlen(a->path);

        return strneq(a->path, b->path, n) && b->path[n] == '/';
}

/* An exclusive group is a cpuset partition: the kernel makes it valid only
 * when no sibling's cpuset.cpus overlaps it (6.12: "Cpu list in
 * cpuset.cpus not exclusive", measured in the test guest), and no group
 * outside it runs on its CPUs after. So its CPUs are taken from every
 * group but itself and the directories above it (which hold them), and
 * the plan says so. The exclusive groups are taken in order: one that
 * would leave another group without a CPU (with those the ones before
 * took) keeps them, and is not exclusive. mems follow the CPUs left. */
static int take_exclusive(Plan *p, const Topology *t) {
        _cleanup_(bitmap_freep) Bitmap *left = NULL;
        int k;

        for (size_t e = 0; e < p->n_groups; e++) {
                PlanGroup *x = &p->groups[e];

                if (!x->exclusive)
                        continue;
                for (size_t i = 0; i < p->n_groups && x->exclusive; i++) {
                        const PlanGroup *g = &p->groups[i];

                        if (i == e || g->policy < 0 || g->exclusive || group_is_above(g, x) || group_is_above(x, g))
                                continue;
                        /* What g keeps: its CPUs but the accepted exclusive
                         * groups' (those before x) and x's, each where g is
                         * not on its line. */
                        bitmap_free(left);
                        if (!(left = bitmap_copy(g->cpus)))
                                return -ENOMEM;
                        for (size_t o = 0; o <= e; o++) {
                                const PlanGroup *y = &p->groups[o];

                                if (!y->exclusive || group_is_above(g, y) || group_is_above(y, g))
                                        continue;
                                BITMAP_FOREACH(c, y->cpus)
                                        bitmap_clear(left, (unsigned) c);
                        }
                        if (!bitmap_is_empty(left))
                                continue;
                        x->exclusive = false;
                        if ((k = note(p, "%s: exclusive CPUs would leave %s none: not exclusive", x->path, g->path)) <
                            0)
                                return k;
                }
        }
        for (size_t e = 0; e < p->n_groups; e++) {
                const PlanGroup *x = &p->groups[e];

                if (!x->exclusive)
                        continue;
                for (size_t i = 0; i < p->n_groups; i++) {
                        PlanGroup *g = &p->groups[i];
                        _cleanup_free_ char *list = NULL;

                        if (i == e || group_is_above(g, x) || group_is_above(x, g) ||
                            !bitmap_intersects(g->cpus, x->cpus))
                                continue;
                        BITMAP_FOREACH(c, x->cpus)
                                bitmap_clear(g->cpus, (unsigned) c);
                        bitmap_free(g->mems);
                        g->mems = NULL;
                        if ((k = mems_of(t, g->cpus, &g->mems)) < 0 || (k = bitmap_format_list(x->cpus, &list)) < 0)
                                return k;
                        if ((k = note(p, "%s: CPUs %s taken by the exclusive %s", g->path, list, x->path)) < 0)
                                return k;
                }
        }
        return 0;
}

/* What a group of these CPUs holds: PUs, or whole cores (a group with
 * cookies owns whole cores). */
static unsigned plan_capacity(const Topology *t, const Bitmap *cpus, bool whole_cores) {
        unsigned n = 0;

        if (!whole_cores)
                return bitmap_count(cpus);
        for (size_t i = 0; i < t->n_cores; i++)
                if (bitmap_is_subset(t->cores[i].cpus, cpus))
                        n++;
        return n;
}

static void domains_free(Domain *d, size_t n) {
        for (size_t i = 0; i < n; i++)
                bitmap_free(d[i].cpus);
        free(d);
}

static int first_node_os(const Topology *t, const Bitmap *logical_nodes) {
        int first = bitmap_next(logical_nodes, 0);

        return first >= 0 && (size_t) first < t->n_numa_nodes ? (int) t->numa_nodes[first].os_index : -1;
}

/* The candidate domains of a policy's [place] cpus. */
static int domains_for(const Topology *t, const Policy *pol, bool whole_cores, Domain **ret, size_t *ret_n) {
        Domain *d = NULL;
        size_t n = 0;

#define ADD(kind_, id_, node_, cpus_)                                                                \
        do {                                                                                         \
                Domain *_nd = realloc(d, (n + 1) * sizeof(Domain));                                  \
                if (!_nd) {                                                                          \
                        domains_free(d, n);                                                          \
                        return -ENOMEM;                                                              \
                }                                                                                    \
                d = _nd;                                                                             \
                d[n] = (Domain) { .kind = (kind_), .id = (id_), .node = (node_), .group = -1 };     \
                d[n].cpus = bitmap_copy(cpus_);                                                      \
                if (!d[n].cpus) {                                                                    \
                        domains_free(d, n);                                                          \
                        return -ENOMEM;                                                              \
                }                                                                                    \
                d[n].capacity = plan_capacity(t, d[n].cpus, whole_cores);                              \
                n++;                                                                                 \
        } while (0)

        switch (pol->place.cpus) {
        case POLICY_CPUS_LLC:
                /* An LLC shared by several NUMA nodes (sub-NUMA clustering)
                 * is one domain per node: its part in each, so memory stays
                 * local. */
                for (size_t i = 0; i < t->n_llcs; i++) {
                        if (bitmap_count(t->llcs[i].numa_nodes) <= 1) {
                                ADD(PLAN_DOMAIN_LLC, (int) i, first_node_os(t, t->llcs[i].numa_nodes), t->llcs[i].cpus);
                                continue;
                        }
                        BITMAP_FOREACH(nd, t->llcs[i].numa_nodes) {
                                _cleanup_(bitmap_freep) Bitmap *part = bitmap_copy(t->llcs[i].cpus);

                                if (!part) {
                                        domains_free(d, n);
                                        return -ENOMEM;
                                }
                                for (size_t w = 0; w < part->n_words; w++)
                                        part->words[w] &= w < t->numa_nodes[nd].cpus->n_words ? t->numa_nodes[nd].cpus->words[w] : 0;
                                if (bitmap_is_empty(part))
                                        continue;
                                ADD(PLAN_DOMAIN_LLC, (int) i, (int) t->numa_nodes[nd].os_index, part);
                                d[n - 1].split = true;
                        }
                }
                break;
        case POLICY_CPUS_NODE:
                for (size_t i = 0; i < t->n_numa_nodes; i++)
                        if (!bitmap_is_empty(t->numa_nodes[i].cpus))
                                ADD(PLAN_DOMAIN_NODE, (int) t->numa_nodes[i].os_index, (int) t->numa_nodes[i].os_index,
                                    t->numa_nodes[i].cpus);
                break;
        case POLICY_CPUS_PACKAGE:
                for (size_t i = 0; i < t->n_packages; i++)
                        ADD(PLAN_DOMAIN_PACKAGE, (int) i, -1, t->packages[i].cpus);
                break;
        case POLICY_CPUS_EXPLICIT: {
                _cleanup_(bitmap_freep) Bitmap *b = bitmap_copy(pol->place.cpu_list);
                size_t w;

                if (!b)
                        return -ENOMEM;
                /* Only CPUs the machine has. */
                w = b->n_words;
                for (size_t i = 0; i < w; i++)
                        b->words[i] &= i < t->cpus->n_words ? t->cpus->words[i] : 0;
                if (!bitmap_is_empty(b))
                        ADD(PLAN_DOMAIN_EXPLICIT, -1, -1, b);
                break;
        }
        case POLICY_CPUS_ALL:
        default:
                ADD(PLAN_DOMAIN_ALL, -1, -1, t->cpus);
        }
#undef ADD
        *ret = d;
        *ret_n = n;
        return 0;
}

static int pick_domain(const Domain *d, size_t n, unsigned need, PolicySpread spread, size_t *cursor) {
        size_t best = 0;

        if (spread == POLICY_SPREAD_PACK) {
                /* Fill in id order; a process larger than a domain still
                 * takes an empty one. */
                while (*cursor < n && d[*cursor].load > 0 && d[*cursor].load + need > d[*cursor].capacity)
                        (*cursor)++;
                if (*cursor < n)
                        return (int) *cursor;
        }
        /* spread, or pack with every domain full: the least loaded relative
         * to its size (whole cores for a cookie'd policy), first on a tie. */
        for (size_t i = 1; i < n; i++)
                if ((uint64_t) d[i].load * MAX(d[best].capacity, 1u) < (uint64_t) d[best].load * MAX(d[i].capacity, 1u))
                        best = i;
        return (int) best;
}

static int add_group(Builder *b, const char *path, int policy, PlanDomainKind kind, int domain, const Bitmap *cpus,
                     int *ret_index) {
        Plan *p = b->plan;
        PlanGroup *g;
        int k;

        for (size_t i = 0; i < p->n_groups; i++)
                if (streq(p->groups[i].path, path)) {
                        /* The same path for something else (a group named
                         * like an inner directory, or like another
                         * policy's derived name): refuse, never merge. */
                        if (p->groups[i].policy != policy || p->groups[i].kind != kind)
                                return -EEXIST;
                        /* An inner directory shared by several leaves: its
                         * cpuset covers them all. */
                        if (kind == PLAN_DOMAIN_INNER && (k = bitmap_or(p->groups[i].cpus, cpus)) < 0)
                                return k;
                        *ret_index = (int) i;
                        return 0;
                }
        if (p->n_groups == b->groups_cap) {
                size_t n = b->groups_cap ? b->groups_cap * 2 : 16;
                PlanGroup *ng = realloc(p->groups, n * sizeof(PlanGroup));

                if (!ng)
                        return -ENOMEM;
                p->groups = ng;
                b->groups_cap = n;
        }
        g = &p->groups[p->n_groups];
        *g = (PlanGroup) { .policy = policy, .kind = kind, .domain = domain, .weight = POLICY_WEIGHT_DEFAULT };
        g->path = strdup(path);
        g->cpus = bitmap_copy(cpus);
        if (!g->path || !g->cpus) {
                free(g->path);
                bitmap_free(g->cpus);
                return -ENOMEM;
        }
        p->n_groups++;
        *ret_index = (int) p->n_groups - 1;
        return 0;
}

/* The CPUs of the node a domain lies in (for the node's inner directory):
 * the node's, or the domain's own where it spans nodes. */
static const Bitmap *node_cpus(const Topology *t, const Domain *dom) {
        for (size_t i = 0; i < t->n_numa_nodes; i++)
                if ((int) t->numa_nodes[i].os_index == dom->node && bitmap_is_subset(dom->cpus, t->numa_nodes[i].cpus))
                        return t->numa_nodes[i].cpus;
        return dom->cpus;
}

/* The leaf for (policy, domain), with its inner directories when nested. */
static int group_for(Builder *b, int policy, Domain *dom) {
        const Policy *pol = b->in->policies->policies[policy];
        const Topology *t = b->in->topology;
        _cleanup_free_ char *path = NULL;
        const char *name = group_name(pol);

        int idx, k;

        if (dom->group >= 0)
                return dom->group;
        if (b->plan->hierarchy == CONFIG_HIERARCHY_NESTED) {
                char node[32], llc[64];

                if (dom->node >= 0) {
                        snprintf(node, sizeof(node), "node%d", dom->node);
                        if ((k = add_group(b, node, -1, PLAN_DOMAIN_INNER, dom->node, node_cpus(t, dom), &idx)) < 0)
                                return k;
                }
                if (dom->kind == PLAN_DOMAIN_LLC) {
                        snprintf(llc, sizeof(llc), "node%d/llc%d", dom->node, dom->id);
                        if ((k = add_group(b, llc, -1, PLAN_DOMAIN_INNER, dom->id, dom->cpus, &idx)) < 0)
                                return k;
                        k = asprintf(&path, "%s/%s", llc, name);
                } else if (dom->kind == PLAN_DOMAIN_NODE)
                        k = asprintf(&path, "node%d/%s", dom->node, name);
                else if (dom->kind == PLAN_DOMAIN_PACKAGE)
                        k = asprintf(&path, "package%d/%s", dom->id, name);
                else
                        k = asprintf(&path, "%s", name);
        } else {
                if (dom->kind == PLAN_DOMAIN_LLC && dom->split)
                        k = asprintf(&path, "%s-llc%d-node%d", name, dom->id, dom->node);
                else if (dom->kind == PLAN_DOMAIN_LLC)
                        k = asprintf(&path, "%s-llc%d", name, dom->id);
                else if (dom->kind == PLAN_DOMAIN_NODE)
                        k = asprintf(&path, "%s-node%d", name, dom->node);
                else if (dom->kind == PLAN_DOMAIN_PACKAGE)
                        k = asprintf(&path, "%s-package%d", name, dom->id);
                else
                        k = asprintf(&path, "%s", name);
        }
        if (k < 0)
                return -ENOMEM;
        if (b->plan->hierarchy == CONFIG_HIERARCHY_NESTED && dom->kind == PLAN_DOMAIN_PACKAGE) {
                char pkg[32];

                snprintf(pkg, sizeof(pkg), "package%d", dom->id);
                if ((k = add_group(b, pkg, -1, PLAN_DOMAIN_INNER, dom->id, dom->cpus, &idx)) < 0)
                        return k;
        }
        if ((k = add_group(b, path, policy, dom->kind, dom->id, dom->cpus, &idx)) < 0)
                return k;
        b->plan->groups[idx].exclusive = pol->place.exclusive;
        b->plan->groups[idx].capacity = dom->capacity;
        dom->group = idx;
        return idx;
}

typedef struct Member {
        size_t task; /* index into in->tasks */
        int policy;
} Member;

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

static unsigned usage_of(const PlanInputs *in, const char *path, bool *ret_known) {
        for (size_t i = 0; i < in->n_usage; i++)
                if (in->usage[i].path && streq(in->usage[i].path, path)) {
                        *ret_known = true;
                        return in->usage[i].concurrency_permille;
                }
        *ret_known = false;
        return 1000;
}

static int set_weight(Plan *p, const PlanInputs *in, PlanGroup *g) {
        const Policy *pol = in->policies->policies[g->policy];
        unsigned base = pol->place.weight ? pol->place.weight : POLICY_WEIGHT_DEFAULT, ncpus = bitmap_count(g->cpus);
        uint64_t w = base;
        const char *mode = p->mode;
        int k = 0;

        if (!mode)
                k = asprintf(&g->weight_why, "policy weight %u", base);
        else if (p->mode_written)
                k = asprintf(&g->weight_why, "policy weight %u (the kernel applies cgroup_mode %s)", base, mode);
        else if (!p->mode_emulated)
                /* A kernel with modes, not this one: nothing to emulate
                 * either (the plan's note says it is not set). */
                k = asprintf(&g->weight_why, "policy weight %u (cgroup_mode %s not among the kernel's: not set)", base,
                             mode);
        else if (streq(mode, "max")) {
                w = (uint64_t) base * MAX(ncpus, 1u);
                k = asprintf(&g->weight_why, "max emulated: %u x %u CPUs", base, ncpus);
        } else if (streq(mode, "concur")) {
                bool known;
                unsigned conc = usage_of(in, g->path, &known);
                unsigned capped = MIN(conc, ncpus * 1000u);
                unsigned factor = MAX((capped + 500u) / 1000u, 1u);

                w = (uint64_t) base * factor;
                k = known ? asprintf(&g->weight_why, "concur emulated: %u x min(concurrency %u.%03u, %u CPUs) = %u x %u", base,
                                     conc / 1000, conc % 1000, ncpus, base, factor)
                          : asprintf(&g->weight_why, "concur emulated: %u x 1 (concurrency not measured yet)", base);
        } else if (streq(mode, "tasks")) {
                w = (uint64_t) base * MAX(g->n_runnable, 1u);
                k = asprintf(&g->weight_why, "tasks emulated: %u x %u runnable threads", base, MAX(g->n_runnable, 1u));
        } else if (streq(mode, "smp"))
                k = asprintf(&g->weight_why, "smp emulated: policy weight %u as is", base);
        else if (streq(mode, "up")) {
                k = asprintf(&g->weight_why, "policy weight %u (up cannot be emulated)", base);
                if (k >= 0)
                        k = note(p, "cgroup_mode up cannot be emulated without the kernel's sched/cgroup_mode: weights kept as "
                                    "written");
        } else {
                k = asprintf(&g->weight_why, "policy weight %u (cgroup_mode %s unknown: not emulated)", base, mode);
        }
        if (k < 0)
                return -ENOMEM;
        if (w > PLAN_WEIGHT_MAX) {
                char *s;

                if (asprintf(&s, "%s, capped at %u", g->weight_why, PLAN_WEIGHT_MAX) < 0)
                        return -ENOMEM;
                free(g->weight_why);
                g->weight_why = s;
                w = PLAN_WEIGHT_MAX;
        }
        g->weight = (unsigned) MAX(w, (uint64_t) PLAN_WEIGHT_MIN);
        return 0;
}

static int compare_group_index(const void *a, const void *b, void *userdata) {
        const PlanGroup *g = userdata;

        return strcmp(g[*(const size_t *) a].path, g[*(const size_t *) b].path);
}

int plan_count_domains(const Topology *t, const Policy *pol, size_t *ret) {
        Domain *d = NULL;
        size_t n = 0;
        int k = domains_for(t, pol, false, &d, &n);

        if (k < 0)
                return k;
        domains_free(d, n);
        *ret = n;
        return 0;
}

/* A policy's candidate domains, computed once per plan (a note when it has
 * none on this machine). */
static int ensure_domains(Plan *p, const Topology *t, const Policy *policy, Domain **domains, size_t *n_domains) {
        bool whole = policy->place.cookie != POLICY_COOKIE_NONE && p->cookies_allowed;
        int k;

        if (*domains)
                return 0;
        k = domains_for(t, policy, whole, domains, n_domains);
        if (k < 0)
                return k;
        if (*n_domains == 0)
                return note(p, "%s: none of its cpus exist on this machine; its tasks are left alone", policy->name);
        return 0;
}

static void indexes_free(PolicyIndex *(*x)[_POLICY_CLASS_MAX]) {
        for (size_t c = 0; c < _POLICY_CLASS_MAX; c++)
                policy_index_free((*x)[c]);
}

int plan_build(const PlanInputs *in, Plan **ret) {
        _cleanup_(plan_freep) Plan *p = calloc(1, sizeof(Plan));
        const Topology *t = in->topology;
        const KernelCaps *caps = in->caps;
        const PolicySet *ps = in->policies;
        Builder b = { .in = in };
        Member *members = NULL;
        size_t n_members = 0;
        _cleanup_(indexes_free) PolicyIndex *index[_POLICY_CLASS_MAX] = {}; /* per class: the policies that can take it */
        _cleanup_free_ bool *take = NULL;
        Domain **domains = NULL;
        size_t *n_domains = NULL, *cursor = NULL;
        int *remap = NULL;
        int k = 0;

        if (!p)
                return -ENOMEM;
        b.plan = p;
        p->cgroup_root = strdup(in->config->cgroup_root);
        if (!p->cgroup_root)
                return -ENOMEM;

        /* Hierarchy. */
        p->hierarchy = in->config->hierarchy;
        if (p->hierarchy == CONFIG_HIERARCHY_AUTO)
                p->hierarchy = caps->cgroup_mode.available ? CONFIG_HIERARCHY_NESTED : CONFIG_HIERARCHY_FLAT;

        /* Kernel-wide settings and the mode. A policy with [match] but no
         * [place] sets them only while a task it matches is there. */
        {
                _cleanup_free_ bool *kernel_in_force = calloc(MAX(ps->n, (size_t) 1), sizeof(bool));
                _cleanup_free_ bool *waiting = calloc(MAX(ps->n, (size_t) 1), sizeof(bool));
                _cleanup_(policy_index_freep) PolicyIndex *x = NULL;
                size_t n_waiting = 0;

                if (!kernel_in_force || !waiting)
                        return -ENOMEM;
                for (size_t i = 0; i < ps->n; i++) {
                        const Policy *pol = ps->policies[i];

                        kernel_in_force[i] = in->in_force[i];
                        waiting[i] = kernel_in_force[i] && pol->has_match && !pol->place.present;
                        if (waiting[i])
                                kernel_in_force[i] = false;
                        n_waiting += waiting[i];
                }
                /* Which of them a task matches: each task against the ones
                 * that could take it (by its comm), not each of them
                 * against every task. */
                if (n_waiting > 0 && (k = policy_index_new(ps, waiting, &x)) < 0)
                        return k;
                for (size_t t_ = 0; t_ < in->n_tasks && n_waiting > 0; t_++) {
                        const PolicyTask *task = &in->tasks[t_].match;
                        size_t c;

                        if (in->tasks[t_].kernel_thread)
                                continue;
                        for (PolicyWalk w = policy_index_walk(x, task->comm ?: ""); policy_walk_next(&w, &c);)
                                if (!kernel_in_force[c] && policy_match_task(&ps->policies[c]->match, task)) {
                                        kernel_in_force[c] = true;
                                        n_waiting--;
                                }
                }
                k = policy_set_resolve_kernel(ps, kernel_in_force, &p->kernel);
                if (k < 0)
                        return k;
        }
        p->mode = p->kernel->cgroup_mode;
        if (p->mode && streq(p->mode, "keep"))
                p->mode = NULL;
        if (p->mode) {
                if (caps->cgroup_mode.available && strv_contains(caps->cgroup_modes, p->mode))
                        p->mode_written = true;
                else if (caps->cgroup_mode.available) {
                        if ((k = note(p, "cgroup_mode %s is not among the kernel's modes: not set", p->mode)) < 0)
                                return k;
                } else
                        p->mode_emulated = true;
        }

        /* Cookies: the interlocks. */
        p->cookies_allowed = caps->core_sched.available && caps->smt_active && !caps->sched_ext_active;

        /* Which policy places each task: the first in precedence order that
         * is in force, places, and matches. Per class, over only the
         * policies that can take that class, and of those the ones that
         * name the task's comm and the ones that match otherwise
         * (policy_index_new()): a thousand policies cost a thread only the
         * few that could apply to it. */
        take = calloc(MAX(ps->n, (size_t) 1), sizeof(bool));
        members = calloc(MAX(in->n_tasks, (size_t) 1), sizeof(Member));
        if (!members || !take) {
                k = -ENOMEM;
                goto finish;
        }
        for (unsigned c = 0; c < _POLICY_CLASS_MAX; c++) {
                for (size_t i = 0; i < ps->n; i++) {
                        const Policy *pol = ps->policies[i];

                        take[i] = in->in_force[i] && pol->enabled && pol->place.present &&
                                  (!pol->match.classes || (pol->match.classes & (1u << c)));
                }
                if ((k = policy_index_new(ps, take, &index[c])) < 0)
                        goto finish;
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
                        if (policy_match_task(&ps->policies[c]->match, task))
                                pol = (int) c;
                if (pol < 0)
                        continue;
                members[n_members++] = (Member) { .task = i, .policy = pol };
        }
        qsort_r(members, n_members, sizeof(Member), compare_member, (void *) in);

        domains = calloc(MAX(ps->n, (size_t) 1), sizeof(Domain *));
        n_domains = calloc(MAX(ps->n, (size_t) 1), sizeof(size_t));
        cursor = calloc(MAX(ps->n, (size_t) 1), sizeof(size_t));
        p->tasks = calloc(MAX(n_members, (size_t) 1), sizeof(PlanTask));
        if (!domains || !n_domains || !cursor || !p->tasks) {
                k = -ENOMEM;
                goto finish;
        }

        /* Place processes: members are sorted by policy, tgid, tid. */
        for (size_t i = 0; i < n_members;) {
                int pol = members[i].policy;
                const Policy *policy = ps->policies[pol];
                pid_t tgid = in->tasks[members[i].task].tgid;
                size_t j = i;
                int d, g;

                while (j < n_members && members[j].policy == pol && in->tasks[members[j].task].tgid == tgid)
                        j++;
                if ((k = ensure_domains(p, t, policy, &domains[pol], &n_domains[pol])) < 0)
                        goto finish;
                if (n_domains[pol] == 0) {
                        i = j;
                        continue;
                }
                d = pick_domain(domains[pol], n_domains[pol], (unsigned) (j - i), policy->place.spread, &cursor[pol]);
                domains[pol][d].load += (unsigned) (j - i);
                g = group_for(&b, pol, &domains[pol][d]);
                if (g == -EEXIST) {
                        domains[pol][d].load -= (unsigned) (j - i);
                        k = note(p, "%s: its group's cgroup path clashes with another group's; its tasks are left alone "
                                    "(rename its [place] group)", policy->name);
                        if (k < 0)
                                goto finish;
                        i = j;
                        continue;
                }
                if (g < 0) {
                        k = g;
                        goto finish;
                }
                for (; i < j; i++) {
                        const PlanTaskInput *ti = &in->tasks[members[i].task];

                        p->tasks[p->n_tasks++] = (PlanTask) {
                                .tid = ti->tid,
                                .tgid = ti->tgid,
                                .start_time = ti->start_time,
                                .class = ti->match.class,
                                .policy = pol,
                                .group = g,
                                .cookie_group = -1,
                        };
                        p->groups[g].n_tasks++;
                        p->groups[g].n_runnable += ti->runnable;
                }
        }

        /* Groups of the plan in force that this one would drop only because
         * their tasks are gone stay, empty: the fast path (place.h) places
         * the next process there at once, and short-lived processes do not
         * make the tree churn. in->keep is the plan in force under the same
         * policy set (NULL after a reload: indexes would not match). */
        for (size_t i = 0; in->keep && i < in->keep->n_groups; i++) {
                const PlanGroup *og = &in->keep->groups[i];
                int pol = og->policy;

                if (pol < 0 || (size_t) pol >= ps->n || !in->in_force[pol] || !ps->policies[pol]->enabled ||
                    !ps->policies[pol]->place.present)
                        continue;
                if ((k = ensure_domains(p, t, ps->policies[pol], &domains[pol], &n_domains[pol])) < 0)
                        goto finish;
                for (size_t d = 0; d < n_domains[pol]; d++) {
                        Domain *dom = &domains[pol][d];
                        int g;

                        /* Its CPUs, or fewer: those an exclusive group took. */
                        if (dom->kind != og->kind || dom->id != og->domain || bitmap_is_empty(og->cpus) ||
                            !bitmap_is_subset(og->cpus, dom->cpus))
                                continue;
                        g = group_for(&b, pol, dom);
                        if (g < 0 && g != -EEXIST) {
                                k = g;
                                goto finish;
                        }
                        break;
                }
        }

        /* Sort groups by path (parents sort before their children) and
         * renumber the tasks' references. */
        remap = malloc(MAX(p->n_groups, (size_t) 1) * sizeof(int));
        if (!remap) {
                k = -ENOMEM;
                goto finish;
        }
        {
                size_t *order = malloc(MAX(p->n_groups, (size_t) 1) * sizeof(size_t));
                PlanGroup *sorted = malloc(MAX(p->n_groups, (size_t) 1) * sizeof(PlanGroup));

                if (!order || !sorted) {
                        free(order);
                        free(sorted);
                        k = -ENOMEM;
                        goto finish;
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
                b.groups_cap = p->n_groups;
                free(order);
        }
        for (size_t i = 0; i < p->n_tasks; i++)
                p->tasks[i].group = remap[p->tasks[i].group];

        /* cpuset.mems, exclusivity and weights of every group. */
        for (size_t i = 0; i < p->n_groups; i++) {
                PlanGroup *g = &p->groups[i];

                if ((k = mems_of(t, g->cpus, &g->mems)) < 0)
                        goto finish;
                if (g->policy < 0) {
                        if (asprintf(&g->weight_why, "intermediate directory") < 0) {
                                k = -ENOMEM;
                                goto finish;
                        }
                        continue;
                }
                if (g->exclusive)
                        for (size_t o = 0; o < i; o++)
                                if (p->groups[o].exclusive && bitmap_intersects(p->groups[o].cpus, g->cpus)) {
                                        g->exclusive = false;
                                        if ((k = note(p, "%s: exclusive CPUs overlap those of %s: not exclusive", g->path,
                                                      p->groups[o].path)) < 0)
                                                goto finish;
                                        break;
                                }
        }
        if ((k = take_exclusive(p, t)) < 0)
                goto finish;
        for (size_t i = 0; i < p->n_groups; i++)
                if (p->groups[i].policy >= 0 && (k = set_weight(p, in, &p->groups[i])) < 0)
                        goto finish;

        /* Cookie groups. */
        for (size_t i = 0; i < p->n_tasks; i++) {
                PlanTask *pt = &p->tasks[i];
                const Policy *policy = ps->policies[pt->policy];
                pid_t key;

                if (policy->place.cookie == POLICY_COOKIE_NONE)
                        continue;
                if (!p->cookies_allowed) {
                        k = note(p, "no core-scheduling cookies: %s",
                                 !caps->core_sched.available ? caps->core_sched.reason ?: "core scheduling unavailable"
                                 : !caps->smt_active       ? "SMT is off"
                                                           : "a sched_ext scheduler is running (core scheduling with "
                                                             "sched_ext is reported to hang hosts)");
                        if (k < 0)
                                goto finish;
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

                        if (!ng) {
                                k = -ENOMEM;
                                goto finish;
                        }
                        p->cookie_groups = ng;
                        ng[p->n_cookie_groups] = (PlanCookieGroup) { .policy = pt->policy, .tgid = key };
                        pt->cookie_group = (int) p->n_cookie_groups++;
                }
                p->cookie_groups[pt->cookie_group].n_tasks++;
        }
        qsort(p->tasks, p->n_tasks, sizeof(PlanTask), compare_task);
        k = 0;

finish:
        if (domains)
                for (size_t i = 0; i < ps->n; i++)
                        if (domains[i])
                                domains_free(domains[i], n_domains[i]);
        free(domains);
        free(n_domains);
        free(cursor);
        free(members);
        free(remap);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(p);
        return 0;
}

const PlanTask *plan_find_task(const Plan *p, pid_t tid) {
        PlanTask key = { .tid = tid };

        return p->n_tasks ? bsearch(&key, p->tasks, p->n_tasks, sizeof(PlanTask), compare_task) : NULL;
}

static const char *policy_name(const PolicySet *ps, int i) {
        return i >= 0 && (size_t) i < ps->n ? ps->policies[i]->name : NULL;
}

static int list_string(const Bitmap *b, char **ret) {
        return bitmap_format_list(b, ret);
}

int plan_print_text(FILE *f, const Plan *p, const PolicySet *ps) {
        int k;

        fprintf(f, "Plan: %s hierarchy under %s\n", p->hierarchy == CONFIG_HIERARCHY_NESTED ? "nested" : "flat",
                p->cgroup_root);
        if (p->mode)
                fprintf(f, "cgroup_mode: %s (%s, from %s)\n", p->mode,
                        p->mode_written ? "written" : p->mode_emulated ? "emulated by cpu.weight" : "not set",
                        policy_name(ps, p->kernel->cgroup_mode_policy) ?: "?");
        else
                fputs("cgroup_mode: kept as it is\n", f);
        for (size_t i = 0; i < p->kernel->n_features; i++)
                fprintf(f, "feature: %s%s (from %s)\n", p->kernel->features[i].on ? "" : "NO_",
                        p->kernel->features[i].name, policy_name(ps, p->kernel->feature_policy[i]) ?: "?");
        for (size_t i = 0; i < p->kernel->n_conflicts; i++)
                fprintf(f, "conflict: %s: %s wins over %s\n", p->kernel->conflicts[i].what,
                        policy_name(ps, (int) p->kernel->conflicts[i].winner) ?: "?",
                        policy_name(ps, (int) p->kernel->conflicts[i].loser) ?: "?");
        for (size_t i = 0; i < p->n_groups; i++) {
                const PlanGroup *g = &p->groups[i];
                _cleanup_free_ char *cpus = NULL, *mems = NULL;

                if ((k = list_string(g->cpus, &cpus)) < 0 || (k = list_string(g->mems, &mems)) < 0)
                        return k;
                fprintf(f, "group %s: cpus %s mems %s%s weight %u (%s)", g->path, cpus, mems,
                        g->exclusive ? " exclusive" : "", g->weight, g->weight_why);
                if (g->policy >= 0)
                        fprintf(f, ", policy %s, %u tasks", policy_name(ps, g->policy), g->n_tasks);
                fputc('\n', f);
        }
        for (size_t i = 0; i < p->n_cookie_groups; i++)
                fprintf(f, "cookie %zu: policy %s%s, %u tasks\n", i, policy_name(ps, p->cookie_groups[i].policy),
                        p->cookie_groups[i].tgid ? " process" : "", p->cookie_groups[i].n_tasks);
        for (size_t i = 0; i < p->n_tasks; i++) {
                const PlanTask *t = &p->tasks[i];

                fprintf(f, "task %d (process %d, %s): %s → %s", (int) t->tid, (int) t->tgid,
                        policy_class_to_string(t->class), policy_name(ps, t->policy), p->groups[t->group].path);
                if (t->cookie_group >= 0)
                        fprintf(f, ", cookie %d", t->cookie_group);
                fputc('\n', f);
        }
        for (char **n = p->notes; n && *n; n++)
                fprintf(f, "note: %s\n", *n);
        return 0;
}

int plan_print_json(Json *j, const Plan *p, const PolicySet *ps) {
        int k;

        json_object_begin(j);
        json_kv_string(j, "hierarchy", p->hierarchy == CONFIG_HIERARCHY_NESTED ? "nested" : "flat");
        json_kv_string(j, "cgroup_root", p->cgroup_root);
        json_key(j, "cgroup_mode");
        json_object_begin(j);
        json_kv_string(j, "mode", p->mode);
        json_kv_bool(j, "written", p->mode_written);
        json_kv_bool(j, "emulated", p->mode_emulated);
        json_kv_string(j, "policy", policy_name(ps, p->kernel->cgroup_mode_policy));
        json_object_end(j);
        json_key(j, "features");
        json_array_begin(j);
        for (size_t i = 0; i < p->kernel->n_features; i++) {
                json_object_begin(j);
                json_kv_string(j, "name", p->kernel->features[i].name);
                json_kv_bool(j, "on", p->kernel->features[i].on);
                json_kv_string(j, "policy", policy_name(ps, p->kernel->feature_policy[i]));
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "conflicts");
        json_array_begin(j);
        for (size_t i = 0; i < p->kernel->n_conflicts; i++) {
                json_object_begin(j);
                json_kv_string(j, "what", p->kernel->conflicts[i].what);
                json_kv_string(j, "winner", policy_name(ps, (int) p->kernel->conflicts[i].winner));
                json_kv_string(j, "loser", policy_name(ps, (int) p->kernel->conflicts[i].loser));
                json_object_end(j);
        }
        json_array_end(j);
        json_kv_bool(j, "cookies_allowed", p->cookies_allowed);
        json_key(j, "groups");
        json_array_begin(j);
        for (size_t i = 0; i < p->n_groups; i++) {
                const PlanGroup *g = &p->groups[i];
                _cleanup_free_ char *cpus = NULL, *mems = NULL;

                if ((k = list_string(g->cpus, &cpus)) < 0 || (k = list_string(g->mems, &mems)) < 0)
                        return k;
                json_object_begin(j);
                json_kv_string(j, "path", g->path);
                json_kv_string(j, "policy", policy_name(ps, g->policy));
                json_kv_string(j, "domain", plan_domain_kind_to_string(g->kind));
                json_kv_int(j, "domain_id", g->domain);
                json_kv_string(j, "cpus", cpus);
                json_kv_string(j, "mems", mems);
                json_kv_bool(j, "exclusive", g->exclusive);
                json_kv_uint(j, "weight", g->weight);
                json_kv_string(j, "weight_why", g->weight_why);
                json_kv_uint(j, "tasks", g->n_tasks);
                json_kv_uint(j, "runnable", g->n_runnable);
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "cookie_groups");
        json_array_begin(j);
        for (size_t i = 0; i < p->n_cookie_groups; i++) {
                json_object_begin(j);
                json_kv_uint(j, "id", i);
                json_kv_string(j, "policy", policy_name(ps, p->cookie_groups[i].policy));
                json_kv_int(j, "process", p->cookie_groups[i].tgid);
                json_kv_uint(j, "tasks", p->cookie_groups[i].n_tasks);
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "tasks");
        json_array_begin(j);
        for (size_t i = 0; i < p->n_tasks; i++) {
                const PlanTask *t = &p->tasks[i];

                json_object_begin(j);
                json_kv_int(j, "tid", t->tid);
                json_kv_int(j, "tgid", t->tgid);
                json_kv_string(j, "class", policy_class_to_string(t->class));
                json_kv_string(j, "policy", policy_name(ps, t->policy));
                json_kv_string(j, "group", p->groups[t->group].path);
                json_key(j, "cookie_group");
                if (t->cookie_group < 0)
                        json_null(j);
                else
                        json_int(j, t->cookie_group);
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "notes");
        json_array_begin(j);
        for (char **n = p->notes; n && *n; n++)
                json_string(j, *n);
        json_array_end(j);
        json_object_end(j);
        return 0;
}
