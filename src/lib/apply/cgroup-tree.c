/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tree (cgroup_apply_tree()): the path from the mount to topod's root
 * with the controllers it needs, then each group of the plan with its
 * cpuset, partition and weight, each value written only when it differs
 * and read back, and last the effective CPUs read back against the plan.
 * The exclusive CPUs of partitions have their own file
 * (cgroup-exclusive.c). */
#include "apply/cgroup-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The controllers topod's tree needs, in the order they are enabled. */
static const char *const controllers[] = { "cpuset", "cpu" };

/* ---- directories and controllers ---------------------------------------- */

/* +controller in cg's subtree_control unless there. owned: topod created
 * cg, so nothing is journaled (the directory goes on restore). */
static int ensure_controller(const CgroupEnv *env, CgroupReport *r, Journal *j, const char *cg, const char *ctl,
                             bool owned) {
        _cleanup_free_ char *cur = NULL, *avail = NULL, *word = NULL, *mark = NULL;
        CgroupResult *it;
        bool recorded = false;
        int k;

        if (asprintf(&word, "+%s", ctl) < 0)
                return -ENOMEM;
        it = cgroup_item_new(r, CGROUP_ITEM_CONTROLLER, cg, word);
        if (!it)
                return -ENOMEM;
        k = cgroup_read_attr(env, cg, "cgroup.subtree_control", &cur);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return cgroup_item_fail(it, k, "cannot read cgroup.subtree_control: %s", cgroup_errno_reason(k));
        cgroup_set_str(&it->found, cur);
        if (cgroup_word_listed(cur, ctl))
                return cgroup_item_ok(it, CGROUP_ALREADY);

        /* Enabled only when the cgroup may have it: listed in its cgroup.controllers. */
        k = cgroup_read_attr(env, cg, "cgroup.controllers", &avail);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return cgroup_item_fail(it, k, "cannot read cgroup.controllers: %s", cgroup_errno_reason(k));
        if (!cgroup_word_listed(avail, ctl))
                return cgroup_item_fail(it, -ENOENT,
                                        "the %s controller is not available here (not in cgroup.controllers)", ctl);

        if (j && !owned) {
                if (asprintf(&mark, "%s%s%s", streq(cg, "/") ? "" : cg, CGROUP_SUBTREE_MARK, ctl) < 0)
                        return -ENOMEM;
                k = journal_record_cgroup(j, mark);
                recorded = k > 0;
                if (k >= 0)
                        k = cgroup_journal_commit(j);
                if (k < 0)
                        return cgroup_item_fail(it, k, "the change could not be journaled: not changed");
                it->journaled = true;
        }
        k = cgroup_write_attr(env, cg, "cgroup.subtree_control", word);
        if (k < 0) {
                if (recorded) {
                        (void) journal_forget_cgroup(j, mark);
                        (void) cgroup_journal_commit(j);
                        it->journaled = false;
                }
                if (k == -EBUSY)
                        return cgroup_item_fail(it, k,
                                         "busy: the cgroup has tasks of its own (no internal processes in cgroup v2)");
                return cgroup_item_fail(it, k, "%s", cgroup_errno_reason(k));
        }
        cur = mfree(cur);
        k = cgroup_read_attr(env, cg, "cgroup.subtree_control", &cur);
        if (k < 0)
                return cgroup_item_fail(it, k, "written, but the read-back failed");
        if (!cgroup_word_listed(cur, ctl)) {
                cgroup_set_str(&it->found, cur);
                return cgroup_item_fail(it, -EIO, "written, but the read-back does not list it");
        }
        return cgroup_item_ok(it, CGROUP_DONE);
}

/* mkdir unless there, journaled first. *ret_created: topod's own (created
 * now or journaled as created before). */
static int ensure_dir(const CgroupEnv *env, CgroupReport *r, Journal *j, const char *cg, bool *ret_owned) {
        CgroupResult *it;
        _cleanup_free_ char *path = NULL;
        bool recorded = false;
        int k;

        it = cgroup_item_new(r, CGROUP_ITEM_MKDIR, cg, NULL);
        if (!it)
                return -ENOMEM;
        k = cgroup_exists(env, cg);
        if (k < 0)
                return cgroup_item_fail(it, k, "cannot look at the directory: %s", cgroup_errno_reason(k));
        if (k > 0) {
                *ret_owned = cgroup_owned(j, cg);
                return cgroup_item_ok(it, CGROUP_ALREADY);
        }
        if (j) {
                k = journal_record_cgroup(j, cg);
                recorded = k > 0;
                if (k >= 0)
                        k = cgroup_journal_commit(j);
                if (k == -ENOMEM)
                        return k;
                if (k < 0)
                        return cgroup_item_fail(it, k, "the new cgroup could not be journaled: not created");
                it->journaled = true;
        }
        k = cgroup_fs_path(env, cg, NULL, &path);
        if (k < 0)
                return k;
        k = env->ops->mkdir(env->ops->userdata, env->root, path);
        if (k == -EEXIST) {
                /* Someone else made it meanwhile: not ours to remove. */
                if (recorded) {
                        (void) journal_forget_cgroup(j, cg);
                        (void) cgroup_journal_commit(j);
                        it->journaled = false;
                }
                *ret_owned = false;
                return cgroup_item_ok(it, CGROUP_ALREADY);
        }
        if (k < 0) {
                if (recorded) {
                        (void) journal_forget_cgroup(j, cg);
                        (void) cgroup_journal_commit(j);
                        it->journaled = false;
                }
                return cgroup_item_fail(it, k, "mkdir: %s", cgroup_errno_reason(k));
        }
        *ret_owned = true;
        return cgroup_item_ok(it, CGROUP_DONE);
}

/* ---- values ------------------------------------------------------------- */

bool cgroup_bitmap_text_equal(const char *a, const char *b) {
        _cleanup_(bitmap_freep) Bitmap *x = NULL, *y = NULL;

        return bitmap_parse_list(a, &x) >= 0 && bitmap_parse_list(b, &y) >= 0 && bitmap_equal(x, y);
}

static bool uint_text_equal(const char *a, const char *b) {
        char *e1, *e2;
        unsigned long x, y;

        errno = 0;
        x = strtoul(a, &e1, 10);
        y = strtoul(b, &e2, 10);
        return errno == 0 && e1 != a && e2 != b && !*e1 && !*e2 && x == y;
}

/* Write file = want unless equal already, then read back. */
int cgroup_set_attr(const CgroupEnv *env, CgroupReport *r, CgroupItemKind kind, const char *cg, const char *file,
                    const char *want, CgroupValueEqual eq) {
        _cleanup_free_ char *cur = NULL;
        CgroupResult *it;
        int k;

        it = cgroup_item_new(r, kind, cg, want);
        if (!it)
                return -ENOMEM;
        k = cgroup_read_attr(env, cg, file, &cur);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return cgroup_item_fail(it, k, "cannot read %s: %s", file, cgroup_errno_reason(k));
        cgroup_set_str(&it->found, cur);
        if (eq(cur, want))
                return cgroup_item_ok(it, CGROUP_ALREADY);
        /* An empty value clears: as a newline (a write of nothing does not
         * reach the kernel). */
        k = cgroup_write_attr(env, cg, file, *want ? want : "\n");
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return cgroup_item_fail(it, k, "%s", cgroup_errno_reason(k));
        cur = mfree(cur);
        k = cgroup_read_attr(env, cg, file, &cur);
        if (k < 0)
                return cgroup_item_fail(it, k, "written, but the read-back failed");
        if (!eq(cur, want)) {
                cgroup_set_str(&it->found, cur);
                return cgroup_item_fail(it, -EIO, "written, but it reads back \"%s\"", cur);
        }
        return cgroup_item_ok(it, CGROUP_DONE);
}

static int set_bitmap(const CgroupEnv *env, CgroupReport *r, CgroupItemKind kind, const char *cg, const char *file,
                      const Bitmap *b) {
        _cleanup_free_ char *s = NULL;
        int k;

        k = bitmap_format_list(b, &s);
        if (k < 0)
                return k;
        return cgroup_set_attr(env, r, kind, cg, file, s, cgroup_bitmap_text_equal);
}

static int set_weight(const CgroupEnv *env, CgroupReport *r, const char *cg, unsigned weight) {
        _cleanup_free_ char *idle = NULL;
        char want[16];
        CgroupResult *it;
        int k;

        snprintf(want, sizeof(want), "%u", weight);
        /* While cpu.idle is 1 the kernel refuses cpu.weight with EINVAL: the
         * group is SCHED_IDLE as a whole and its weight means nothing. */
        k = cgroup_read_attr(env, cg, "cpu.idle", &idle);
        if (k == -ENOMEM)
                return k;
        if (k >= 0 && streq(idle, "1")) {
                it = cgroup_item_new(r, CGROUP_ITEM_WEIGHT, cg, want);
                if (!it)
                        return -ENOMEM;
                cgroup_set_str(&it->reason,
                               "cpu.idle is 1: the kernel refuses cpu.weight (EINVAL) while the group is idle");
                return cgroup_item_ok(it, CGROUP_SKIPPED);
        }
        return cgroup_set_attr(env, r, CGROUP_ITEM_WEIGHT, cg, "cpu.weight", want, uint_text_equal);
}

/* cpuset.cpus.partition: "member", "root", "isolated", or "root invalid
 * (<why>)" — the kernel accepts the write and says in the file whether the
 * partition is valid. */
int cgroup_set_partition(const CgroupEnv *env, CgroupReport *r, const char *cg, bool exclusive) {
        _cleanup_free_ char *cur = NULL;
        const char *want = exclusive ? "root" : "member";
        CgroupResult *it;
        int k;

        k = cgroup_read_attr(env, cg, "cpuset.cpus.partition", &cur);
        if (k == -ENOMEM)
                return k;
        if (!exclusive && (k < 0 || streq(cur, "member")))
                return 0; /* nothing asked, nothing to undo: no item */
        it = cgroup_item_new(r, CGROUP_ITEM_PARTITION, cg, want);
        if (!it)
                return -ENOMEM;
        if (k < 0)
                return cgroup_item_fail(it, k, "cannot read cpuset.cpus.partition: %s", cgroup_errno_reason(k));
        cgroup_set_str(&it->found, cur);
        if (streq(cur, want))
                return cgroup_item_ok(it, CGROUP_ALREADY);
        k = cgroup_write_attr(env, cg, "cpuset.cpus.partition", want);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return cgroup_item_fail(it, k, "%s", cgroup_errno_reason(k));
        cur = mfree(cur);
        k = cgroup_read_attr(env, cg, "cpuset.cpus.partition", &cur);
        if (k < 0)
                return cgroup_item_fail(it, k, "written, but the read-back failed");
        cgroup_set_str(&it->found, cur);
        if (streq(cur, want))
                return cgroup_item_ok(it, CGROUP_DONE);
        /* "root invalid (Parent is not a partition root)" and the like: the
         * kernel's reason is the report; not fatal, the group still works as
         * a member. */
        return cgroup_item_fail(it, -EINVAL, "%s", cur);
}

/* ---- the read-back, the controllers the mount has ----------------------- */

static int check_effective(const CgroupEnv *env, CgroupReport *r, const char *cg, const Bitmap *cpus) {
        _cleanup_free_ char *want = NULL, *cur = NULL;
        CgroupResult *it;
        int k;

        k = bitmap_format_list(cpus, &want);
        if (k < 0)
                return k;
        it = cgroup_item_new(r, CGROUP_ITEM_EFFECTIVE, cg, want);
        if (!it)
                return -ENOMEM;
        k = cgroup_read_attr(env, cg, "cpuset.cpus.effective", &cur);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return cgroup_item_fail(it, k, "cannot read cpuset.cpus.effective: %s", cgroup_errno_reason(k));
        cgroup_set_str(&it->found, cur);
        if (!cgroup_bitmap_text_equal(cur, want))
                /* CPUs offline, outside the parent's, or taken by a sibling's partition. */
                return cgroup_item_fail(it, -EIO, "effective CPUs %s differ from the planned %s", cur, want);
        return cgroup_item_ok(it, CGROUP_DONE);
}

static bool group_has_children(const Plan *plan, size_t i) {
        size_t n = strlen(plan->groups[i].path);

        for (size_t c = 0; c < plan->n_groups; c++)
                if (c != i && strneq(plan->groups[c].path, plan->groups[i].path, n) && plan->groups[c].path[n] == '/')
                        return true;
        return false;
}

static bool have_ctl(const CgroupEnv *env, const char *ctl) {
        if (!env->controllers)
                return true;
        for (char *const *c = env->controllers; *c; c++)
                if (streq(*c, ctl))
                        return true;
        return false;
}

/* One item per controller the mount lacks: what is not done, and why. */
static int report_missing_ctl(const CgroupEnv *env, CgroupReport *r, const char *cg) {
        static const struct {
                const char *ctl, *what;
        } needs[] = {
                { "cpuset", "cpuset.cpus, cpuset.mems and partitions are not written" },
                { "cpu", "cpu.weight is not written" },
        };

        for (size_t i = 0; i < ELEMENTSOF(needs); i++) {
                _cleanup_free_ char *word = NULL;
                CgroupResult *it;

                if (have_ctl(env, needs[i].ctl))
                        continue;
                if (asprintf(&word, "+%s", needs[i].ctl) < 0 ||
                    !(it = cgroup_item_new(r, CGROUP_ITEM_CONTROLLER, cg, word)))
                        return -ENOMEM;
                if (asprintf(&it->reason, "the cgroup2 mount has no %s controller (bound to cgroup v1?): groups and "
                                          "moves only; %s",
                             needs[i].ctl, needs[i].what) < 0)
                        return -ENOMEM;
                cgroup_item_ok(it, CGROUP_SKIPPED);
        }
        return 0;
}

/* ---- the tree, step by step --------------------------------------------- */

/* Each controller the mount has, enabled in cg's subtree_control. */
static int ensure_controllers(const CgroupEnv *env, CgroupReport *r, Journal *j, const char *cg, bool owned) {
        for (size_t i = 0; i < ELEMENTSOF(controllers); i++)
                if (have_ctl(env, controllers[i]))
                        CGROUP_STEP(ensure_controller(env, r, j, cg, controllers[i], owned));
        return 0;
}

/* 1. The path from the mount down to topod's root: controllers in each
 *    ancestor (journaled where topod did not create it), missing
 *    directories created. *ret_owned: topod's root is topod's own;
 *    *ret_chain_owned: so is every cgroup on the way to it. 1 when an item
 *    failed (nothing below can work), 0, or -ENOMEM. */
static int tree_ancestors(const CgroupEnv *env, const Plan *plan, Journal *journal, CgroupReport *r, bool *ret_owned,
                          bool *ret_chain_owned) {
        _cleanup_free_ char *cur = NULL;
        bool owned = false, chain_owned = true;
        int k;

        cur = strdup("/");
        if (!cur)
                return -ENOMEM;
        for (const char *c = plan->cgroup_root + 1; *c;) {
                size_t len = strcspn(c, "/");
                _cleanup_free_ char *comp = strndup(c, len), *next = NULL;
                size_t before;

                if (!comp)
                        return -ENOMEM;
                before = r->n;
                CGROUP_STEP(ensure_controllers(env, r, journal, cur, owned));
                if (cgroup_report_failed_since(r, before) > 0)
                        return 1;
                k = cgroup_path_join(cur, comp, &next);
                if (k < 0)
                        return k;
                before = r->n;
                CGROUP_STEP(ensure_dir(env, r, journal, next, &owned));
                if (cgroup_report_failed_since(r, before) > 0)
                        return 1;
                chain_owned = chain_owned && owned;
                free(cur);
                cur = TAKE_PTR(next);
                c += len;
                while (*c == '/')
                        c++;
        }
        *ret_owned = owned;
        *ret_chain_owned = chain_owned;
        return 0;
}

/* 2. One group of the plan: mkdir, controllers for an inner one, its
 *    cpuset values, its partition, its weight. */
static int tree_group(const CgroupEnv *env, const Plan *plan, Journal *journal, CgroupReport *r, size_t g,
                      bool exclusive) {
        const PlanGroup *pg = &plan->groups[g];
        _cleanup_free_ char *cg = NULL;
        bool g_owned = false;
        size_t before = r->n;
        int k;

        if (!cgroup_rel_path_valid(pg->path)) {
                CgroupResult *it = cgroup_item_new(r, CGROUP_ITEM_MKDIR, pg->path, NULL);

                if (!it)
                        return -ENOMEM;
                cgroup_item_fail(it, -EINVAL, "not a cgroup path below topod's root");
                return 0;
        }
        k = cgroup_path_join(plan->cgroup_root, pg->path, &cg);
        if (k < 0)
                return k;
        CGROUP_STEP(ensure_dir(env, r, journal, cg, &g_owned));
        if (cgroup_report_failed_since(r, before) > 0)
                return 0; /* its children fail on their own mkdir */
        if (group_has_children(plan, g))
                CGROUP_STEP(ensure_controllers(env, r, journal, cg, g_owned));
        if (have_ctl(env, "cpuset")) {
                if (pg->cpus && !bitmap_is_empty(pg->cpus))
                        CGROUP_STEP(set_bitmap(env, r, CGROUP_ITEM_CPUS, cg, "cpuset.cpus", pg->cpus));
                if (pg->mems && !bitmap_is_empty(pg->mems))
                        CGROUP_STEP(set_bitmap(env, r, CGROUP_ITEM_MEMS, cg, "cpuset.mems", pg->mems));
                if (exclusive) {
                        _cleanup_(bitmap_freep) Bitmap *x = NULL;

                        if (cgroup_exclusive_under(plan, pg->path, &x) < 0)
                                return -ENOMEM;
                        CGROUP_STEP(cgroup_set_exclusive(env, r, cg, x, false));
                }
                CGROUP_STEP(cgroup_set_partition(env, r, cg, pg->exclusive));
        }
        if (pg->weight > 0 && have_ctl(env, "cpu"))
                CGROUP_STEP(set_weight(env, r, cg, pg->weight));
        return 0;
}

/* 3. What the kernel made of one group's cpuset, once all are written. */
static int tree_read_back(const CgroupEnv *env, const Plan *plan, CgroupReport *r, size_t g, bool exclusive) {
        const PlanGroup *pg = &plan->groups[g];
        _cleanup_free_ char *cg = NULL;
        int k;

        if (!pg->cpus || bitmap_is_empty(pg->cpus) || !cgroup_rel_path_valid(pg->path) || !have_ctl(env, "cpuset"))
                return 0;
        k = cgroup_path_join(plan->cgroup_root, pg->path, &cg);
        if (k < 0)
                return k;
        if (cgroup_exists(env, cg) <= 0)
                return 0; /* its mkdir failed: reported */
        if (exclusive) {
                /* The CPUs of valid partitions below are theirs alone:
                 * not in this group's effective set any more. */
                _cleanup_(bitmap_freep) Bitmap *want = bitmap_copy(pg->cpus);

                if (!want || (k = cgroup_exclusive_taken_below(env, plan, g, want)) < 0)
                        return -ENOMEM;
                /* All taken: the kernel gives it its parent's, no
                 * plan of ours to check against. */
                if (!bitmap_is_empty(want))
                        CGROUP_STEP(check_effective(env, r, cg, want));
                return 0;
        }
        CGROUP_STEP(check_effective(env, r, cg, pg->cpus));
        return 0;
}

int cgroup_apply_tree(const CgroupEnv *env_in, const Plan *plan, Journal *journal, CgroupReport *r) {
        size_t start = r->n;
        bool owned = false, chain_owned = false, exclusive = false;
        CgroupEnv env;
        int k;

        k = cgroup_env_check(env_in, plan, &env);
        if (k < 0)
                return k;
        /* Where this tree is, for a restore by a topod whose topod.conf
         * says another cgroup_root; committed with the first cgroup it
         * journals. A root refused here (too many) is still the
         * configuration's, which the restore knows too. */
        if (journal && journal_record_cgroup_root(journal, plan->cgroup_root) == -ENOMEM)
                return -ENOMEM;
        k = tree_ancestors(&env, plan, journal, r, &owned, &chain_owned);
        if (k < 0)
                return k;
        if (k > 0)
                return (int) cgroup_report_failed_since(r, start);

        /* topod's root, then each group, parents first (the plan's order). */
        if (plan->n_groups > 0) {
                CGROUP_STEP(ensure_controllers(&env, r, journal, plan->cgroup_root, owned));
                CGROUP_STEP(report_missing_ctl(&env, r, plan->cgroup_root));
        }
        if (have_ctl(&env, "cpuset")) {
                k = cgroup_exclusive_prepare(&env, plan, journal, r, chain_owned, &exclusive);
                if (k < 0)
                        return k;
        }
        for (size_t g = 0; g < plan->n_groups; g++) {
                k = tree_group(&env, plan, journal, r, g, exclusive);
                if (k < 0)
                        return k;
        }
        for (size_t g = 0; g < plan->n_groups; g++) {
                k = tree_read_back(&env, plan, r, g, exclusive);
                if (k < 0)
                        return k;
        }
        return (int) MIN(cgroup_report_failed_since(r, start), (size_t) INT32_MAX);
}
