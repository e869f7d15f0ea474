/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The systemd driver's apply: the plan's groups as slices, the service
 * units of its processes given their group's values, the other processes
 * moved into scopes (unit.h says what and why). Restore is
 * unit-restore.c's. */
#include "apply/unit-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apply/cgroup-internal.h"
#include "base/unit-name.h"
#include "base/util.h"

const char *unit_last_component(const char *path) {
        const char *s = strrchr(path, '/');

        return s ? s + 1 : path;
}

const char *unit_error_text(const UnitEnv *env, int error) {
        const char *t = env->ops->last_error ? env->ops->last_error(env->ops->userdata) : NULL;

        return t ?: errno_name(error);
}

void unit_settle(const UnitEnv *env, bool (*done)(void *ud), void *ud) {
        for (uint64_t waited = 0; !done(ud) && waited < env->settle_usec; waited += 20000)
                (void) nanosleep(&(struct timespec) { .tv_nsec = 20000000 }, NULL);
}

char *unit_cgroup_value(const CgroupEnv *ce, const char *cg, UnitProperty p, bool effective) {
        static const char *const files[_UNIT_PROP_MAX][2] = {
                [UNIT_PROP_CPUS] = { "cpuset.cpus", "cpuset.cpus.effective" },
                [UNIT_PROP_MEMS] = { "cpuset.mems", "cpuset.mems.effective" },
                [UNIT_PROP_WEIGHT] = { "cpu.weight", "cpu.weight" },
        };
        char *v = NULL;

        return cgroup_read_attr(ce, cg, files[p][effective], &v) < 0 ? NULL : v;
}

static bool value_equal(UnitProperty p, const char *a, const char *b) {
        if (!a || !b)
                return false;
        return p == UNIT_PROP_WEIGHT ? streq(a, b) : cgroup_bitmap_text_equal(a, b);
}

/* A group's values as the plan says them. */
typedef struct Want {
        char *v[_UNIT_PROP_MAX];
} Want;

static void want_done(Want *w) {
        for (UnitProperty p = 0; p < _UNIT_PROP_MAX; p++)
                w->v[p] = mfree(w->v[p]);
}

static int want_of(const PlanGroup *g, Want *ret) {
        char buf[21];

        *ret = (Want) {};
        (void) format_u64(buf, g->weight);
        if (bitmap_format_list(g->cpus, &ret->v[UNIT_PROP_CPUS]) < 0 ||
            bitmap_format_list(g->mems, &ret->v[UNIT_PROP_MEMS]) < 0 || !(ret->v[UNIT_PROP_WEIGHT] = strdup(buf))) {
                want_done(ret);
                return -ENOMEM;
        }
        return 0;
}

/* ---- the tree ------------------------------------------------------------ */

typedef struct Settle {
        const CgroupEnv *ce;
        const Plan *plan;
        const bool *pending; /* per group: asked for, not read back yet */
} Settle;

static bool group_reads_back(const CgroupEnv *ce, const Plan *plan, size_t i) {
        _cleanup_free_ char *cg = NULL;
        Want w;
        bool ok = true;

        if (cgroup_path_join(plan->cgroup_root, plan->groups[i].path, &cg) < 0 || want_of(&plan->groups[i], &w) < 0)
                return false;
        for (UnitProperty p = 0; p < _UNIT_PROP_MAX && ok; p++) {
                _cleanup_free_ char *cur = unit_cgroup_value(ce, cg, p, true);

                ok = value_equal(p, cur, w.v[p]);
        }
        want_done(&w);
        return ok;
}

static bool tree_settled(void *ud) {
        const Settle *s = ud;

        for (size_t i = 0; i < s->plan->n_groups; i++)
                if (s->pending[i] && !group_reads_back(s->ce, s->plan, i))
                        return false;
        return true;
}

/* Start the slice, or set its values when it is there already. */
static int ensure_slice(const UnitEnv *env, CgroupReport *r, const char *name, const UnitValues *v, bool exists) {
        CgroupResult *it = cgroup_item_new(r, exists ? CGROUP_ITEM_CPUS : CGROUP_ITEM_MKDIR, name,
                                           v->v[UNIT_PROP_CPUS] ?: "");
        int k;

        if (!it)
                return -ENOMEM;
        k = exists ? -EEXIST : env->ops->start_slice(env->ops->userdata, name, v);
        if (k == -EEXIST) {
                it->kind = CGROUP_ITEM_CPUS;
                k = v->v[UNIT_PROP_CPUS] ? env->ops->set_properties(env->ops->userdata, name, v) : 0;
        }
        if (k < 0)
                return cgroup_item_fail(it, k, "%s", unit_error_text(env, k));
        return cgroup_item_ok(it, CGROUP_DONE);
}

/* Does every slice on the way from the mount to topod's root belong to
 * topod (journaled as started by it)? */
static bool chain_owned(const Plan *plan, const Journal *journal) {
        UnitRef u[32];
        size_t n = unit_path_units(plan->cgroup_root, u, 32);

        for (size_t i = 0; i < n; i++) {
                char name[UNIT_NAME_MAX + 1];

                snprintf(name, sizeof(name), "%.*s", (int) u[i].len, u[i].name);
                if (!journal || !journal_has_unit(journal, name))
                        return false;
        }
        return n > 0;
}

/* Partitions: systemd has no property for them; written by topod, in its
 * own slices only, with the cgroupfs writer's rules (cgroup-exclusive.c:
 * cpuset.cpus.exclusive on the way down, where the kernel has it). */
static int apply_partitions(const CgroupEnv *ce, const Plan *plan, Journal *journal, CgroupReport *r) {
        bool exclusive = false;
        int k;

        if ((k = cgroup_exclusive_prepare(ce, plan, journal, r, chain_owned(plan, journal), &exclusive)) < 0)
                return k;
        for (size_t i = 0; i < plan->n_groups; i++) {
                const PlanGroup *g = &plan->groups[i];
                _cleanup_(bitmap_freep) Bitmap *x = NULL;
                _cleanup_free_ char *cg = NULL;

                if (!journal || !journal_has_unit(journal, unit_last_component(g->path)))
                        continue;
                if ((k = cgroup_path_join(plan->cgroup_root, g->path, &cg)) < 0)
                        return k;
                if (exclusive && ((k = cgroup_exclusive_under(plan, g->path, &x)) < 0 ||
                                  (k = cgroup_set_exclusive(ce, r, cg, x, false)) == -ENOMEM))
                        return -ENOMEM;
                if (g->policy >= 0 && (k = cgroup_set_partition(ce, r, cg, g->exclusive)) == -ENOMEM)
                        return k;
        }
        return 0;
}

static int apply_tree(const UnitEnv *env, const CgroupEnv *ce, const Plan *plan, Journal *journal, CgroupReport *r) {
        const char *root_name = unit_last_component(plan->cgroup_root);
        _cleanup_free_ bool *pending = calloc(MAX(plan->n_groups, (size_t) 1), sizeof(bool));
        bool root_exists;
        int k;

        if (!pending)
                return -ENOMEM;
        root_exists = cgroup_exists(ce, plan->cgroup_root) > 0;
        /* Journaled before they are asked for: a crash in between leaves
         * an entry for a unit that may not exist, which restore finds gone. */
        if (!root_exists && journal && (k = journal_record_unit(journal, root_name)) < 0)
                return k;
        for (size_t i = 0; i < plan->n_groups; i++) {
                pending[i] = !group_reads_back(ce, plan, i);
                if (pending[i] && journal && (k = journal_record_unit(journal, unit_last_component(plan->groups[i].path))) < 0)
                        return k;
        }
        if ((k = cgroup_journal_commit(journal)) < 0)
                return k;
        if (!root_exists && (k = ensure_slice(env, r, root_name, &(UnitValues) {}, false)) == -ENOMEM)
                return k;
        for (size_t i = 0; i < plan->n_groups; i++) {
                const PlanGroup *g = &plan->groups[i];
                _cleanup_free_ char *cg = NULL;
                Want w;

                if (!pending[i])
                        continue;
                if ((k = cgroup_path_join(plan->cgroup_root, g->path, &cg)) < 0 || (k = want_of(g, &w)) < 0)
                        return k;
                k = ensure_slice(env, r, unit_last_component(g->path),
                                 &(UnitValues) { { w.v[0], w.v[1], w.v[2] } }, cgroup_exists(ce, cg) > 0);
                want_done(&w);
                if (k == -ENOMEM)
                        return k;
        }
        unit_settle(env, tree_settled, &(Settle) { ce, plan, pending });
        if ((k = apply_partitions(ce, plan, journal, r)) < 0)
                return k;
        for (size_t i = 0; i < plan->n_groups; i++) {
                _cleanup_free_ char *cg = NULL, *list = NULL, *cur = NULL;
                CgroupResult *it;

                if ((k = cgroup_path_join(plan->cgroup_root, plan->groups[i].path, &cg)) < 0 ||
                    (k = bitmap_format_list(plan->groups[i].cpus, &list)) < 0)
                        return k;
                if (!(it = cgroup_item_new(r, CGROUP_ITEM_EFFECTIVE, cg, list)))
                        return -ENOMEM;
                if (group_reads_back(ce, plan, i))
                        (void) cgroup_item_ok(it, pending[i] ? CGROUP_DONE : CGROUP_ALREADY);
                else {
                        cur = unit_cgroup_value(ce, cg, UNIT_PROP_CPUS, true);
                        cgroup_set_str(&it->found, cur);
                        (void) cgroup_item_fail(it, -EIO, "systemd did not make the group what the plan says "
                                                          "(cpus, memory nodes and weight read back)");
                }
        }
        return 0;
}

/* ---- processes ----------------------------------------------------------- */

typedef struct Bucket {
        char *unit;     /* a service */
        char *cgroup;   /* its cgroup */
        unsigned *weights;
        pid_t *lowest;
        unsigned n_procs;
} Bucket;

typedef struct Buckets {
        Bucket *items;
        size_t n;
} Buckets;

static void buckets_done(Buckets *b) {
        for (size_t i = 0; i < b->n; i++) {
                free(b->items[i].unit);
                free(b->items[i].cgroup);
                free(b->items[i].weights);
                free(b->items[i].lowest);
        }
        free(b->items);
}

static int bucket_add(Buckets *b, const UnitRef *u, const char *path, const CgroupProcess *p, size_t n_groups) {
        Bucket *x = NULL;

        for (size_t i = 0; i < b->n && !x; i++)
                if (strlen(b->items[i].unit) == u->len && strneq(b->items[i].unit, u->name, u->len))
                        x = &b->items[i];
        if (!x) {
                Bucket *n = realloc(b->items, (b->n + 1) * sizeof(Bucket));

                if (!n)
                        return -ENOMEM;
                b->items = n;
                x = &n[b->n];
                *x = (Bucket) { .unit = strndup(u->name, u->len),
                                .cgroup = strndup(path, (size_t) (u->name + u->len - path)),
                                .weights = calloc(n_groups, sizeof(unsigned)),
                                .lowest = calloc(n_groups, sizeof(pid_t)) };
                if (!x->unit || !x->cgroup || !x->weights || !x->lowest) {
                        b->n++;
                        return -ENOMEM;
                }
                b->n++;
        }
        x->weights[p->group] += (unsigned) p->n_tasks;
        if (x->lowest[p->group] == 0 || p->tgid < x->lowest[p->group])
                x->lowest[p->group] = p->tgid;
        x->n_procs++;
        return 0;
}

/* One property of a service unit: set it, or leave it (already so, or
 * released to someone else's change). Whether it is to be set. */
static int unit_prop_decide(const UnitEnv *env, Journal *journal, CgroupReport *r, const char *unit, UnitProperty p,
                            const char *want, bool *ret_set) {
        _cleanup_free_ char *cur = NULL;
        const JournalUnitProp *e;
        CgroupResult *it;
        int k;

        *ret_set = false;
        if (!(it = cgroup_item_new(r, CGROUP_ITEM_CPUS + p, unit, want)))
                return -ENOMEM;
        if ((k = env->ops->get_property(env->ops->userdata, unit, p, &cur)) < 0)
                return cgroup_item_fail(it, k, "%s", unit_error_text(env, k));
        cgroup_set_str(&it->found, cur);
        e = journal ? journal_get_unit_prop(journal, unit, unit_property_name(p)) : NULL;
        if (e && streq(e->original, JOURNAL_UNIT_RELEASED)) {
                if (streq(cur, e->written)) {
                        cgroup_set_str(&it->reason, "released: set by someone else since topod set it; left alone");
                        return cgroup_item_ok(it, CGROUP_SKIPPED);
                }
                /* Changed again since (a reset, a new value): topod's to
                 * set, from this original. */
                (void) journal_forget_unit_prop(journal, unit, unit_property_name(p));
                e = NULL;
        }
        if (e && !streq(cur, e->written) && !value_equal(p, cur, want)) {
                /* Someone else's change wins: released, and not written
                 * over while the unit holds it. */
                if ((k = journal_release_unit_prop(journal, unit, unit_property_name(p), cur)) < 0)
                        return cgroup_item_fail(it, k, "cannot journal the release");
                cgroup_set_str(&it->reason, "released: set by someone else since topod set it; left alone");
                return cgroup_item_ok(it, CGROUP_SKIPPED);
        }
        if (value_equal(p, cur, want) && e && streq(cur, e->written))
                return cgroup_item_ok(it, CGROUP_ALREADY);
        if (journal) {
                if (e)
                        k = journal_update_unit_prop(journal, unit, unit_property_name(p), want);
                else
                        k = journal_record_unit_prop(journal, unit, unit_property_name(p), cur, want);
                if (k < 0)
                        return cgroup_item_fail(it, k, "cannot journal the original");
        }
        it->journaled = true;
        *ret_set = !value_equal(p, cur, want);
        return cgroup_item_ok(it, *ret_set ? CGROUP_DONE : CGROUP_ALREADY);
}

/* A service unit: its group's values as runtime properties. */
static int apply_service(const UnitEnv *env, const CgroupEnv *ce, const Plan *plan, Journal *journal, CgroupReport *r,
                         const Bucket *b) {
        int g = unit_majority_group(b->weights, b->lowest, plan->n_groups);
        UnitValues v = {};
        bool any = false, all_so = true;
        size_t first = r->n;
        Want w;
        int k;

        if (g < 0)
                return 0;
        if ((k = want_of(&plan->groups[g], &w)) < 0)
                return k;
        /* The unit's files say so already and the journal has it: no call. */
        for (UnitProperty p = 0; p < _UNIT_PROP_MAX && all_so; p++) {
                _cleanup_free_ char *cur = unit_cgroup_value(ce, b->cgroup, p, false);

                all_so = value_equal(p, cur, w.v[p]) && journal &&
                         journal_get_unit_prop(journal, b->unit, unit_property_name(p));
        }
        if (all_so) {
                CgroupResult *it = cgroup_item_new(r, CGROUP_ITEM_CPUS, b->unit, w.v[UNIT_PROP_CPUS]);

                want_done(&w);
                return it ? cgroup_item_ok(it, CGROUP_ALREADY) : -ENOMEM;
        }
        for (UnitProperty p = 0; p < _UNIT_PROP_MAX; p++) {
                bool set;

                if ((k = unit_prop_decide(env, journal, r, b->unit, p, w.v[p], &set)) == -ENOMEM)
                        goto out;
                if (set) {
                        v.v[p] = w.v[p];
                        any = true;
                }
        }
        if (any && (k = cgroup_journal_commit(journal)) < 0) {
                for (size_t i = first; i < r->n; i++)
                        if (r->items[i].outcome == CGROUP_DONE)
                                (void) cgroup_item_fail(&r->items[i], k, "journal commit failed: nothing set");
                goto out;
        }
        if (any && (k = env->ops->set_properties(env->ops->userdata, b->unit, &v)) < 0)
                for (size_t i = first; i < r->n; i++)
                        if (r->items[i].outcome == CGROUP_DONE)
                                (void) cgroup_item_fail(&r->items[i], k, "%s", unit_error_text(env, k));
        {
                char why[96];

                snprintf(why, sizeof(why), "placed through the unit (%u of its processes planned, group %s)",
                         b->n_procs, unit_last_component(plan->groups[g].path));
                for (size_t i = first; i < r->n; i++)
                        if (!r->items[i].reason)
                                cgroup_set_str(&r->items[i].reason, why);
        }
        k = 0;
out:
        want_done(&w);
        return k;
}

/* A process outside service units: into a scope in its group's slice,
 * moved by systemd. */
static int apply_scope(const UnitEnv *env, const CgroupEnv *ce, const Plan *plan, Journal *journal, CgroupReport *r,
                       const CgroupProcess *p, const char *from) {
        const char *slice = unit_last_component(plan->groups[p->group].path);
        _cleanup_free_ char *scope = NULL, *where = NULL, *parent = NULL;
        bool ours = cgroup_path_is_below(from, plan->cgroup_root);
        CgroupResult *it;
        uint64_t st;
        int k;

        if ((k = cgroup_path_join(plan->cgroup_root, plan->groups[p->group].path, &where)) < 0 ||
            (k = cgroup_path_parent(from, &parent)) < 0)
                return k;
        if (asprintf(&scope, "%.*s-%d.scope", (int) (strlen(slice) - strlen(".slice")), slice, (int) p->tgid) < 0)
                return -ENOMEM;
        if (!(it = cgroup_item_new(r, CGROUP_ITEM_MOVE, where, NULL)))
                return -ENOMEM;
        it->tgid = it->pid = p->tgid;
        cgroup_set_str(&it->from, from);
        if (ours && streq(parent, where))
                return cgroup_item_ok(it, CGROUP_ALREADY);
        if (pidref_read_start_time(ce->root, -1, p->tgid, &st) < 0)
                return cgroup_item_ok(it, CGROUP_VANISHED);
        if (journal) {
                /* A process in topod's tree has its original journaled (or lost). */
                if ((!ours && (k = journal_record_task(journal, p->tgid, st, from)) < 0) ||
                    (k = journal_record_unit(journal, scope)) < 0 || (k = cgroup_journal_commit(journal)) < 0)
                        return cgroup_item_fail(it, k, "cannot journal the original");
                it->journaled = true;
        }
        k = env->ops->start_scope(env->ops->userdata, scope, slice, &p->tgid, 1);
        if (k < 0)
                return cgroup_item_fail(it, k, "%s", unit_error_text(env, k));
        cgroup_set_str(&it->reason, scope);
        return cgroup_item_ok(it, CGROUP_DONE);
}

static int apply_processes(const UnitEnv *env, const CgroupEnv *ce, const Plan *plan, Journal *journal,
                           CgroupReport *r) {
        CgroupProcess *procs = NULL;
        Buckets b = {};
        size_t n = 0;
        int k;

        if ((k = cgroup_plan_processes(plan, &procs, &n)) < 0)
                return k;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                pid_t tid;
                UnitRef u;

                if (proc_cgroup_read_process(ce->root, procs[i].tgid, NULL, &path, &tid) < 0)
                        continue; /* gone: the next pass does not plan it */
                if (!cgroup_path_is_below(path, plan->cgroup_root) && unit_from_cgroup(path, &u) >= 0 &&
                    u.type == UNIT_TYPE_SERVICE)
                        k = bucket_add(&b, &u, path, &procs[i], plan->n_groups);
                else
                        k = apply_scope(env, ce, plan, journal, r, &procs[i], path);
                if (k == -ENOMEM)
                        goto out;
        }
        for (size_t i = 0; i < b.n; i++)
                if ((k = apply_service(env, ce, plan, journal, r, &b.items[i])) == -ENOMEM)
                        goto out;
        k = 0;
out:
        buckets_done(&b);
        cgroup_processes_free(procs, n);
        return k;
}

bool unit_process_placed(const Root *root, const Plan *plan, int g, const Journal *journal, pid_t tgid) {
        _cleanup_free_ char *path = NULL, *where = NULL, *parent = NULL, *cpus = NULL;
        const JournalUnitProp *e;
        pid_t tid;
        UnitRef u;

        if (g < 0 || (size_t) g >= plan->n_groups || proc_cgroup_read_process(root, tgid, NULL, &path, &tid) < 0 ||
            cgroup_path_join(plan->cgroup_root, plan->groups[g].path, &where) < 0)
                return false;
        if (cgroup_path_is_below(path, plan->cgroup_root))
                return cgroup_path_parent(path, &parent) >= 0 && streq(parent, where);
        if (!journal || unit_from_cgroup(path, &u) < 0 || u.type != UNIT_TYPE_SERVICE)
                return false;
        {
                char name[UNIT_NAME_MAX + 1];

                snprintf(name, sizeof(name), "%.*s", (int) u.len, u.name);
                e = journal_get_unit_prop(journal, name, unit_property_name(UNIT_PROP_CPUS));
        }
        return e && bitmap_format_list(plan->groups[g].cpus, &cpus) >= 0 && cgroup_bitmap_text_equal(e->written, cpus);
}

int unit_apply(const UnitEnv *env, const Plan *plan, Journal *journal, CgroupReport *report) {
        size_t first = report->n;
        CgroupEnv ce;
        int k;

        if ((k = cgroup_env_check(env->cgroup, plan, &ce)) < 0)
                return k;
        /* Where the slices are, for a restore (as cgroup_apply_tree()). */
        if (journal && journal_record_cgroup_root(journal, plan->cgroup_root) == -ENOMEM)
                return -ENOMEM;
        if ((k = apply_tree(env, &ce, plan, journal, report)) < 0 ||
            (k = apply_processes(env, &ce, plan, journal, report)) < 0)
                return k;
        return (int) cgroup_report_failed_since(report, first);
}
