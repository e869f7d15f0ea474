/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Exclusive groups: the cpuset.cpus.exclusive values that let a group be a
 * partition root, and what the tree's read-back must leave out for them.
 *
 * A partition root whose parent is not one (a "remote" partition, Linux
 * 6.7) takes its CPUs through cpuset.cpus.exclusive, which must hold them
 * in every cgroup above it below the root cgroup: topod's root and the
 * groups on the way down. Written top-down before the partition (each a
 * subset of its parent's), and where they shrink (a group no longer
 * exclusive), bottom-up and partition first. Only in cgroups topod created:
 * a root it did not create, or one below cgroups it did not, is reported
 * and the partition fails with the kernel's own reason. Kernels without the
 * file keep the older rule (a partition's parent must be one). Removing the
 * groups on restore gives the CPUs back. */
#include "apply/cgroup-internal.h"

#include <stdlib.h>
#include <string.h>

/* The CPUs of the exclusive groups at path or below it (path NULL: all). */
int cgroup_exclusive_under(const Plan *plan, const char *path, Bitmap **ret) {
        _cleanup_(bitmap_freep) Bitmap *b = bitmap_new();
        size_t n = path ? strlen(path) : 0;
        int k;

        if (!b)
                return -ENOMEM;
        for (size_t g = 0; g < plan->n_groups; g++) {
                const PlanGroup *pg = &plan->groups[g];

                if (!pg->exclusive || !pg->cpus)
                        continue;
                if (path && !streq(pg->path, path) && !(strneq(pg->path, path, n) && pg->path[n] == '/'))
                        continue;
                if ((k = bitmap_or(b, pg->cpus)) < 0)
                        return k;
        }
        *ret = TAKE_PTR(b);
        return 0;
}

/* cpuset.cpus.exclusive of cg toward want. shrink (the bottom-up pass):
 * only if it holds CPUs beyond want, and then only those go; else to want
 * if it differs. No file (a
 * kernel before 6.7), or nothing to do: no item. As the other writers, a
 * negative errno means a failed item; only ENOMEM stops the caller. */
int cgroup_set_exclusive(const CgroupEnv *env, CgroupReport *r, const char *cg, const Bitmap *want, bool shrink) {
        _cleanup_(bitmap_freep) Bitmap *have = NULL;
        _cleanup_free_ char *cur = NULL, *w = NULL;
        int k;

        k = cgroup_read_attr(env, cg, "cpuset.cpus.exclusive", &cur);
        if (k == -ENOENT)
                return 0;
        if (k == -ENOMEM)
                return k;
        if (k >= 0 && bitmap_parse_list(cur, &have) >= 0 &&
            (shrink ? bitmap_is_subset(have, want) : bitmap_equal(want, have)))
                return 0; /* nothing to do this way */
        if (shrink && have) {
                /* Only drop what is no longer asked: each value stays within
                 * its parent's until the parents have grown. */
                _cleanup_(bitmap_freep) Bitmap *keep = bitmap_copy(have);

                if (!keep)
                        return -ENOMEM;
                BITMAP_FOREACH(c, have)
                        if (!bitmap_isset(want, (unsigned) c))
                                bitmap_clear(keep, (unsigned) c);
                k = bitmap_format_list(keep, &w);
        } else
                k = bitmap_format_list(want, &w);
        if (k < 0)
                return k;
        return cgroup_set_attr(env, r, CGROUP_ITEM_EXCLUSIVE, cg, "cpuset.cpus.exclusive", w, cgroup_bitmap_text_equal);
}

/* The cgroups above topod's root up to (not with) the root cgroup, then
 * the root itself: where the exclusive CPUs of all groups must be. */
static int exclusive_chain(const char *cgroup_root, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        for (const char *c = cgroup_root + 1; *c;) {
                size_t len = strcspn(c, "/");
                char *p = strndup(cgroup_root, (size_t) (c - cgroup_root) + len), **nl;

                if (!p || !(nl = realloc(l, (n + 2) * sizeof(char *)))) {
                        free(p);
                        return -ENOMEM;
                }
                l = nl;
                l[n++] = p;
                l[n] = NULL;
                c += len;
                while (*c == '/')
                        c++;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* Before the groups are written: the exclusive CPUs that shrink, bottom-up
 * (partitions dissolved first; groups topod made that the plan no longer
 * has too), and those that grow in the cgroups above topod's groups,
 * top-down (the groups grow as they are written). Returns in
 * *ret_exclusive whether the groups' values are to be written: exclusive
 * CPUs are in play (some group asks, or topod's root holds some still)
 * and the cgroups above may carry them. */
int cgroup_exclusive_prepare(const CgroupEnv *env, const Plan *plan, Journal *journal, CgroupReport *r,
                             bool chain_owned, bool *ret_exclusive) {
        _cleanup_(bitmap_freep) Bitmap *all = NULL, *held = NULL, *none = bitmap_new();
        _cleanup_free_ char *cur = NULL;
        _cleanup_strv_free_ char **chain = NULL;
        size_t n_chain;
        int k;

        *ret_exclusive = false;
        if (!none || (k = cgroup_exclusive_under(plan, NULL, &all)) < 0)
                return -ENOMEM;
        k = cgroup_read_attr(env, plan->cgroup_root, "cpuset.cpus.exclusive", &cur);
        if (k == -ENOMEM)
                return k;
        if (k < 0 || bitmap_parse_list(cur, &held) < 0)
                return 0; /* no such file (before 6.7), or no root yet: the older rule */
        if (bitmap_is_empty(all) && bitmap_is_empty(held))
                return 0; /* nothing exclusive, now or before: nothing to read per group */
        if ((k = exclusive_chain(plan->cgroup_root, &chain)) < 0)
                return k;
        n_chain = strv_length(chain);

        /* Shrink, leaves first: groups topod made that the plan dropped
         * (the journal lists them parents first), then the plan's: one no
         * longer exclusive stops being a partition, then each value drops
         * to what is still asked below it. */
        for (size_t i = journal ? journal->n_cgroups : 0; i > 0; i--) {
                const char *cg = journal->cgroups[i - 1];

                if (strv_contains(chain, cg) || cgroup_plan_has(plan, cg) ||
                    !cgroup_path_is_below(cg, plan->cgroup_root) || cgroup_exists(env, cg) <= 0)
                        continue;
                if ((k = cgroup_set_partition(env, r, cg, false)) == -ENOMEM ||
                    (k = cgroup_set_exclusive(env, r, cg, none, true)) == -ENOMEM)
                        return k;
        }
        for (size_t g = plan->n_groups; g > 0; g--) {
                const PlanGroup *pg = &plan->groups[g - 1];
                _cleanup_(bitmap_freep) Bitmap *x = NULL;
                _cleanup_free_ char *cg = NULL;

                if (!cgroup_rel_path_valid(pg->path) || cgroup_path_join(plan->cgroup_root, pg->path, &cg) < 0)
                        continue;
                if (cgroup_exists(env, cg) <= 0)
                        continue;
                if (!pg->exclusive && (k = cgroup_set_partition(env, r, cg, false)) == -ENOMEM)
                        return k;
                if ((k = cgroup_exclusive_under(plan, pg->path, &x)) < 0 ||
                    (k = cgroup_set_exclusive(env, r, cg, x, true)) == -ENOMEM)
                        return -ENOMEM;
        }
        /* The cgroups above: only those topod made (not someone else's value). */
        if (!chain_owned) {
                CgroupResult *it;

                if (bitmap_is_empty(all))
                        return 0;
                it = cgroup_item_new(r, CGROUP_ITEM_EXCLUSIVE, plan->cgroup_root, NULL);
                if (!it)
                        return -ENOMEM;
                cgroup_item_fail(it, -EPERM,
                          "exclusive groups need cpuset.cpus.exclusive in every cgroup above them, and %s (or one "
                          "above it) was not created by topod: not written, so they cannot be partitions",
                          plan->cgroup_root);
                return 0; /* nor in the groups: their partitions fail with the kernel's reason */
        }
        for (size_t i = n_chain; i > 0; i--)
                if ((k = cgroup_set_exclusive(env, r, chain[i - 1], all, true)) == -ENOMEM)
                        return k;
        for (size_t i = 0; i < n_chain; i++)
                if ((k = cgroup_set_exclusive(env, r, chain[i], all, false)) == -ENOMEM)
                        return k;
        *ret_exclusive = true;
        return 0;
}

/* Take from want the CPUs of the valid partitions strictly below group g. */
int cgroup_exclusive_taken_below(const CgroupEnv *env, const Plan *plan, size_t g, Bitmap *want) {
        size_t n = strlen(plan->groups[g].path);

        for (size_t h = 0; h < plan->n_groups; h++) {
                const PlanGroup *ph = &plan->groups[h];
                _cleanup_free_ char *cg = NULL, *part = NULL;

                if (h == g || !ph->exclusive || !ph->cpus || !strneq(ph->path, plan->groups[g].path, n) ||
                    ph->path[n] != '/')
                        continue;
                if (cgroup_path_join(plan->cgroup_root, ph->path, &cg) < 0)
                        return -ENOMEM;
                if (cgroup_read_attr(env, cg, "cpuset.cpus.partition", &part) < 0 || !streq(part, "root"))
                        continue;
                BITMAP_FOREACH(c, ph->cpus)
                        bitmap_clear(want, (unsigned) c);
        }
        return 0;
}
