/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The planner's domains and tree: the candidate domains a policy's [place]
 * cpus make on the machine, the domain each process takes, and the cgroup
 * tree built of them (leaf paths, inner directories, cpusets, exclusive
 * partitions). Its own file: plan.c decides who goes where, this says what
 * "where" is. */
#include "plan-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unit-name.h"
#include "base/util.h"

/* A policy's leaf name: its [place] group, or the policy's own. */
static const char *group_name(const Policy *pol) {
        return pol->place.group ? pol->place.group : pol->name;
}

/* Node os numbers whose CPUs meet these CPUs: the group's cpuset.mems. */
int plan_mems_of(const Topology *t, const Bitmap *cpus, Bitmap **ret) {
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
 * when no sibling's cpuset.cpus overlaps it (6.12 says "Cpu list in
 * cpuset.cpus not exclusive" otherwise), and no group
 * outside it runs on its CPUs after. So its CPUs are taken from every
 * group but itself and the directories above it (which hold them), and
 * the plan says so. The exclusive groups are taken in order: one that
 * would leave another group without a CPU (with those the ones before
 * took) keeps them, and is not exclusive. mems follow the CPUs left. */
int plan_take_exclusive(Plan *p, const Topology *t) {
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
                        if ((k = plan_note(p, "%s: exclusive CPUs would leave %s none: not exclusive", x->path, g->path)) <
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
                        if ((k = plan_mems_of(t, g->cpus, &g->mems)) < 0 || (k = bitmap_format_list(x->cpus, &list)) < 0)
                                return k;
                        if ((k = plan_note(p, "%s: CPUs %s taken by the exclusive %s", g->path, list, x->path)) < 0)
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

void plan_domains_free(Domain *d, size_t n) {
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
                        plan_domains_free(d, n);                                                          \
                        return -ENOMEM;                                                              \
                }                                                                                    \
                d = _nd;                                                                             \
                d[n] = (Domain) { .kind = (kind_), .id = (id_), .node = (node_), .group = -1 };     \
                d[n].cpus = bitmap_copy(cpus_);                                                      \
                if (!d[n].cpus) {                                                                    \
                        plan_domains_free(d, n);                                                          \
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
                                        plan_domains_free(d, n);
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

/* The domain a process of need threads goes to; pack moves the cursor. */
int plan_pick_domain(const Domain *d, size_t n, unsigned need, PolicySpread spread, size_t *cursor) {
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

int plan_slice_path(const char *root_slice, const char *path, char **ret) {
        _cleanup_free_ char *out = NULL, *prefix = NULL;
        size_t rl = strlen(root_slice);
        const char *c = path;

        if (unit_name_type(root_slice, rl) != UNIT_TYPE_SLICE || streq(root_slice, "-.slice"))
                return -EINVAL;
        if (!(prefix = strndup(root_slice, rl - strlen(".slice"))) || !(out = strdup("")))
                return -ENOMEM;
        for (;;) {
                const char *slash = strchr(c, '/');
                _cleanup_free_ char *part = strndup(c, slash ? (size_t) (slash - c) : strlen(c)), *esc = NULL;
                char *np = NULL, *no = NULL;

                if (!part || !(esc = unit_name_escape_part(part)))
                        return -ENOMEM;
                if (asprintf(&np, "%s-%s", prefix, esc) < 0)
                        return -ENOMEM;
                free(prefix);
                prefix = np;
                if (strlen(prefix) + strlen(".slice") > UNIT_NAME_MAX)
                        return -EINVAL;
                if (asprintf(&no, "%s%s%s.slice", out, *out ? "/" : "", prefix) < 0)
                        return -ENOMEM;
                free(out);
                out = no;
                if (!slash)
                        break;
                c = slash + 1;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* The slice cgroup_root names (its last component), for plan_slice_path(). */
static const char *root_slice(const Plan *p) {
        const char *s = strrchr(p->cgroup_root, '/');

        return s ? s + 1 : p->cgroup_root;
}

static int add_group(Builder *b, const char *given, int policy, PlanDomainKind kind, int domain, const Bitmap *cpus,
                     int *ret_index) {
        _cleanup_free_ char *sliced = NULL;
        const char *path = given;
        Plan *p = b->plan;
        PlanGroup *g;
        int k;

        if (p->slices) {
                if ((k = plan_slice_path(root_slice(p), given, &sliced)) < 0)
                        return k;
                path = sliced;
        }

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
int plan_group_for(Builder *b, int policy, Domain *dom) {
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

int plan_count_domains(const Topology *t, const Policy *pol, size_t *ret) {
        Domain *d = NULL;
        size_t n = 0;
        int k = domains_for(t, pol, false, &d, &n);

        if (k < 0)
                return k;
        plan_domains_free(d, n);
        *ret = n;
        return 0;
}

/* A policy's candidate domains, computed once per plan (a note when it has
 * none on this machine). */
int plan_domains_ensure(Plan *p, const Topology *t, const Policy *policy, Domain **domains, size_t *n_domains) {
        bool whole = policy->place.cookie != POLICY_COOKIE_NONE && p->cookies_allowed;
        int k;

        if (*domains)
                return 0;
        k = domains_for(t, policy, whole, domains, n_domains);
        if (k < 0)
                return k;
        if (*n_domains == 0)
                return plan_note(p, "%s: none of its cpus exist on this machine; its tasks are left alone", policy->name);
        return 0;
}
