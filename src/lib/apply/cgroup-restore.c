/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Restore (cgroup_restore()): the journaled processes back where they came
 * from, the others out of topod's cgroups, the cgroups topod created
 * removed and the controllers it enabled disabled, each entry forgotten
 * once done. And what shares its steps: the processes the plan let go of
 * put back (cgroup_release_unplanned()), the threads in topod's cgroups.
 *
 * A process forked in one of topod's groups after its parent was placed
 * has no entry: it goes back with its parent, to the original of its
 * nearest journaled ancestor along the PPid chain while they live. The
 * chain is walked at restore time rather than each fork journaled from
 * the fast path: a fork changes nothing (the child is born in its
 * parent's group), so it costs nothing until a restore, and the journal
 * keeps its entries as they are. One whose chain is broken (an ancestor
 * exited, the child reparented) goes to the nearest cgroup above that
 * topod did not create, as before. */
#include "apply/cgroup-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe/proc-cgroup.h"

/* The nearest cgroup at or above path that exists and that topod did not
 * create. */
static int escape_target(const CgroupEnv *env, const Journal *j, const char *path, char **ret) {
        _cleanup_free_ char *cur = strdup(path);
        int k;

        if (!cur)
                return -ENOMEM;
        /* " (deleted)": the kernel's mark for a removed cgroup; its parent may live. */
        if (strchr(cur, ' '))
                *strchr(cur, ' ') = '\0';
        for (;;) {
                char *up;

                if (streq(cur, "/"))
                        break;
                if (!cgroup_owned(j, cur)) {
                        k = cgroup_exists(env, cur);
                        if (k < 0 && k != -ENOENT)
                                return k;
                        if (k > 0)
                                break;
                }
                k = cgroup_path_parent(cur, &up);
                if (k < 0)
                        return k;
                free(cur);
                cur = up;
        }
        *ret = TAKE_PTR(cur);
        return 0;
}

/* Whether cg has controllers enabled for its children (unreadable: no). */
static bool holds_children_controllers(const CgroupEnv *env, const char *cg) {
        _cleanup_free_ char *text = NULL;

        return cgroup_read_attr(env, cg, "cgroup.subtree_control", &text) >= 0 && *strstrip(text);
}

/* ref, a pin on process pid, moved to thread tid of it (the one
 * proc_cgroup_read_process() read): a move written and checked through a
 * thread that lives. */
static int repin(const CgroupEnv *env, PidRef *ref, pid_t tid) {
        uint64_t st;
        int k;

        if (tid == ref->tid)
                return 0;
        pidref_done(ref);
        k = pidref_read_start_time(env->root, -1, tid, &st);
        return k < 0 ? k : pidref_acquire(env->root, env->pidref, tid, st, ref);
}

/* Task entry i back where it was; *forget set when its entry is done with
 * (the caller forgets them all in one sweep: forgetting each on its own
 * rebuilds the journal's index each time, quadratic in the entries). */
static int restore_task(const CgroupEnv *env, CgroupReport *r, Journal *j, size_t i, bool *forget) {
        const JournalTask *jt = &j->tasks[i];
        _cleanup_free_ char *dest = NULL, *now = NULL;
        PidRef ref = PIDREF_NULL;
        pid_t tid = jt->tid, by;
        uint64_t st = jt->start_time;
        CgroupResult *it;
        int k;

        k = escape_target(env, j, jt->cgroup, &dest);
        if (k < 0)
                return k;
        it = cgroup_item_new(r, CGROUP_ITEM_MOVE, dest, NULL);
        if (!it)
                return -ENOMEM;
        it->pid = it->tgid = tid;
        it->back = true;
        k = pidref_acquire(env->root, env->pidref, tid, st, &ref);
        if (k == -ESRCH) {
                cgroup_item_ok(it, CGROUP_VANISHED);
                *forget = true;
                return 0;
        }
        if (k < 0)
                return cgroup_item_fail(it, k, "cannot take a handle on the task");
        k = proc_cgroup_read_process(env->root, tid, env->bin, &now, &by);
        if (k >= 0 && (k = repin(env, &ref, by)) == -ESRCH)
                k = -EAGAIN; /* that thread exited just now: the process may live on; next time */
        it->pid = by;
        if (k == -ESRCH) {
                pidref_done(&ref);
                cgroup_item_ok(it, CGROUP_VANISHED);
                *forget = true;
                return 0;
        }
        if (k < 0) {
                pidref_done(&ref);
                return cgroup_item_fail(it, k, "cannot read where the task is");
        }
        cgroup_set_str(&it->from, now);
        if (streq(now, dest)) {
                pidref_done(&ref);
                cgroup_item_ok(it, CGROUP_ALREADY);
                *forget = true;
                return 0;
        }
        k = cgroup_move_process(env, it, &ref, dest, CGROUP_MOVE_CHECK_READ_BACK, NULL);
        /* A cgroup that has domain controllers enabled for its children
         * holds no processes (EBUSY): the original was removed and the one
         * above it is such a cgroup, or the original became one. The next
         * one up that topod did not make (those above have the controllers
         * too: in practice the root cgroup, which takes any). Else the same
         * failure at every pass, and topod's cgroup never empties. Not for
         * an EBUSY of another cause (a deadline task the CPUs there have no
         * bandwidth for). */
        while (k != -ENOMEM && it->outcome == CGROUP_FAILED && it->error == -EBUSY && !streq(dest, "/") &&
               holds_children_controllers(env, dest)) {
                _cleanup_free_ char *up = NULL, *next = NULL;

                if ((k = cgroup_path_parent(dest, &up)) < 0 || (k = escape_target(env, j, up, &next)) < 0)
                        break; /* the EBUSY stays reported */
                free(dest);
                dest = TAKE_PTR(next);
                cgroup_set_str(&it->path, dest);
                it->reason = mfree(it->reason);
                k = cgroup_move_process(env, it, &ref, dest, CGROUP_MOVE_CHECK_READ_BACK, NULL);
        }
        pidref_done(&ref);
        if (k == -ENOMEM)
                return k;
        *forget = it->outcome != CGROUP_FAILED;
        return 0;
}

int cgroup_release_unplanned(const CgroupEnv *env_in, const Plan *plan, Journal *journal, CgroupReport *r) {
        _cleanup_free_ bool *forget = NULL;
        _cleanup_free_ pid_t *planned = NULL;
        CgroupEnv env;
        int k;

        if (!journal || journal->n_tasks == 0)
                return 0;
        if ((k = cgroup_env_check(env_in, plan, &env)) < 0)
                return k;
        forget = calloc(journal->n_tasks, sizeof(bool));
        planned = malloc(MAX(plan->n_tasks, (size_t) 1) * sizeof(pid_t));
        if (!forget || !planned)
                return -ENOMEM;
        /* By process: a policy may place a process for some of its
         * threads only (a class, a thread name), not its main thread. */
        for (size_t t = 0; t < plan->n_tasks; t++)
                planned[t] = plan->tasks[t].tgid;
        qsort(planned, plan->n_tasks, sizeof(pid_t), compare_pid);
        for (size_t i = journal->n_tasks; i > 0; i--) {
                const JournalTask *jt = &journal->tasks[i - 1];
                _cleanup_free_ char *now = NULL;
                pid_t by;

                /* Placed by this plan; named by a pin (the fast path's:
                 * the next prune names it); or changed since the scan, or
                 * left by it, or count lost: not this plan's to say. */
                if (bsearch(&jt->tid, planned, plan->n_tasks, sizeof(pid_t), compare_pid) ||
                    pidref_ident_is_pidfs(jt->start_time) || yield_changed(env.yield, jt->tid))
                        continue;
                /* Only from a group of topod's that this plan no longer
                 * has: its policy left force, or a reload removed it (the
                 * groups of policies in force stay while empty: a class
                 * that flickers, a cgroup = match, a process the scan
                 * could not read are not let go). Where it is now is read
                 * again, pinned, by the move. */
                if (proc_cgroup_read_process(env.root, jt->tid, env.bin, &now, &by) < 0 ||
                    !cgroup_path_is_below(now, plan->cgroup_root) || cgroup_plan_has(plan, now))
                        continue;
                if ((k = restore_task(&env, r, journal, i - 1, &forget[i - 1])) == -ENOMEM)
                        return k;
        }
        (void) journal_forget_tasks(journal, forget);
        return 0;
}

int cgroup_created_threads(const CgroupEnv *env, const Journal *journal, pid_t **ret, size_t *ret_n) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0, cap = 0, u = 0;
        int k;

        *ret = NULL;
        *ret_n = 0;
        for (size_t i = 0; i < journal->n_cgroups; i++) {
                _cleanup_free_ char *path = NULL, *text = NULL;

                if (strstr(journal->cgroups[i], CGROUP_SUBTREE_MARK))
                        continue; /* a controller it enabled, not a cgroup */
                k = cgroup_fs_path(env, journal->cgroups[i], "cgroup.threads", &path);
                if (k < 0)
                        return k;
                k = root_read_file(env->root, path, CGROUP_PROCS_MAX, &text, NULL);
                if (k == -ENOENT || k == -ENODEV)
                        continue; /* removed meanwhile */
                if (k < 0)
                        return k;
                for (char *p = text, *save = NULL, *tok; (tok = strtok_r(p, "\n", &save)); p = NULL) {
                        pid_t tid;

                        if (!cgroup_parse_procs_line(tok, &tid))
                                continue;
                        if (n == cap) {
                                pid_t *m = realloc(tids, (cap = MAX(cap * 2, (size_t) 64)) * sizeof(pid_t));

                                if (!m)
                                        return -ENOMEM;
                                tids = m;
                        }
                        tids[n++] = tid;
                }
        }
        if (n > 0)
                qsort(tids, n, sizeof(pid_t), compare_pid);
        for (size_t i = 0; i < n; i++)
                if (u == 0 || tids[u - 1] != tids[i])
                        tids[u++] = tids[i];
        *ret = TAKE_PTR(tids);
        *ret_n = u;
        return 0;
}

/* The journal's task entries as they were before step 1 forgot them:
 * where the ancestors of a forked process came from. Sorted by tid. */
typedef struct Origin {
        pid_t tid;
        uint64_t start_time;
        char *cgroup;
} Origin;

typedef struct Origins {
        Origin *items;
        size_t n;
} Origins;

#define FORK_ANCESTORS_MAX 64u /* ancestors looked at */

static int compare_origin(const void *a, const void *b) {
        const Origin *x = a, *y = b;

        return (x->tid > y->tid) - (x->tid < y->tid);
}

static void origins_done(Origins *o) {
        for (size_t i = 0; i < o->n; i++)
                free(o->items[i].cgroup);
        o->items = mfree(o->items);
        o->n = 0;
}

static int origins_take(const Journal *j, Origins *ret) {
        Origins o = { .items = calloc(MAX(j->n_tasks, (size_t) 1), sizeof(Origin)) };

        if (!o.items)
                return -ENOMEM;
        for (; o.n < j->n_tasks; o.n++) {
                o.items[o.n] = (Origin) { j->tasks[o.n].tid, j->tasks[o.n].start_time, strdup(j->tasks[o.n].cgroup) };
                if (!o.items[o.n].cgroup) {
                        origins_done(&o);
                        return -ENOMEM;
                }
        }
        qsort(o.items, o.n, sizeof(Origin), compare_origin);
        *ret = o;
        return 0;
}

/* The original of pid's nearest journaled ancestor (a live one, the same
 * process the entry names: its start time, or any of its tid when the
 * entry names it by a pidfd's inode), or NULL. */
static const char *fork_origin(const CgroupEnv *env, const Origins *o, pid_t pid) {
        for (unsigned depth = 0; depth < FORK_ANCESTORS_MAX && o && o->n > 0; depth++) {
                Origin key = { .tid = 0 };
                const Origin *at;
                ProcStat st;
                uint64_t start;

                if (pidref_read_stat(env->root, -1, pid, &st) < 0 || st.ppid <= 1 ||
                    pidref_read_start_time(env->root, -1, st.ppid, &start) < 0)
                        return NULL;
                key.tid = st.ppid;
                at = bsearch(&key, o->items, o->n, sizeof(Origin), compare_origin);
                if (at) {
                        /* the run of entries with this tid */
                        while (at > o->items && at[-1].tid == key.tid)
                                at--;
                        for (; at < o->items + o->n && at->tid == key.tid; at++)
                                if (at->start_time == start || pidref_ident_is_pidfs(at->start_time))
                                        return at->cgroup;
                }
                pid = st.ppid;
        }
        return NULL;
}

/* Processes in a cgroup topod created that the journal does not know. */
static int evict_unknown(const CgroupEnv *env, CgroupReport *r, const Journal *j, const Origins *origins,
                         const char *cg) {
        _cleanup_free_ char *path = NULL, *text = NULL, *dest = NULL;
        int k;

        k = cgroup_fs_path(env, cg, "cgroup.procs", &path);
        if (k < 0)
                return k;
        k = root_read_file(env->root, path, CGROUP_PROCS_MAX, &text, NULL);
        if (k == -ENOENT)
                return 0;
        if (k == -ENOMEM)
                return k;
        if (k < 0) {
                CgroupResult *it = cgroup_item_new(r, CGROUP_ITEM_MOVE, cg, NULL);

                if (!it)
                        return -ENOMEM;
                return cgroup_item_fail(it, k, "cannot read cgroup.procs: %s", cgroup_errno_reason(k));
        }
        for (char *p = text, *save = NULL, *tok; (tok = strtok_r(p, "\n", &save)); p = NULL) {
                _cleanup_free_ char *now = NULL, *with_parent = NULL;
                const char *origin;
                PidRef ref = PIDREF_NULL;
                CgroupResult *it;
                uint64_t st;
                pid_t pid;

                if (!cgroup_parse_procs_line(tok, &pid))
                        continue;
                if (!dest) {
                        _cleanup_free_ char *up = NULL;

                        k = cgroup_path_parent(cg, &up);
                        if (k < 0)
                                return k;
                        k = escape_target(env, j, up, &dest);
                        if (k < 0)
                                return k;
                }
                /* Forked after its parent was placed: back with it. */
                origin = fork_origin(env, origins, pid);
                if (origin && (k = escape_target(env, j, origin, &with_parent)) < 0)
                        return k;
                it = cgroup_item_new(r, CGROUP_ITEM_MOVE, with_parent ?: dest, NULL);
                if (!it)
                        return -ENOMEM;
                it->pid = it->tgid = pid;
                cgroup_set_str(&it->from, cg);
                /* Its identity now; then still in cg, so still the one listed. */
                k = pidref_read_start_time(env->root, -1, pid, &st);
                if (k >= 0)
                        k = pidref_acquire(env->root, env->pidref, pid, st, &ref);
                if (k >= 0) {
                        pid_t by;

                        k = proc_cgroup_read_process(env->root, pid, env->bin, &now, &by);
                        /* Left by itself. Or its main thread exited here and
                         * the rest left: to go as well when they are in
                         * another of topod's, whose cgroup.procs does not
                         * list the process. */
                        if (k >= 0 && !streq(now, cg) && !cgroup_owned(j, now))
                                k = -ESRCH;
                        if (k >= 0 && (k = repin(env, &ref, by)) == -ESRCH)
                                k = -EAGAIN;
                        it->pid = by;
                }
                if (k == -ESRCH) {
                        pidref_done(&ref);
                        cgroup_item_ok(it, CGROUP_VANISHED);
                        continue;
                }
                if (k < 0) {
                        pidref_done(&ref);
                        cgroup_item_fail(it, k, "cannot take a handle on the task");
                        continue;
                }
                k = cgroup_move_process(env, it, &ref, with_parent ?: dest, CGROUP_MOVE_CHECK_READ_BACK, NULL);
                pidref_done(&ref);
                if (k == -ENOMEM)
                        return k;
                if (it->outcome == CGROUP_DONE && with_parent)
                        cgroup_set_str(&it->reason, "not journaled (forked after its parent was placed): moved back "
                                                    "with it, to its nearest journaled ancestor's original cgroup");
                else if (it->outcome == CGROUP_DONE)
                        cgroup_set_str(&it->reason, "not journaled (placed by someone else, or its parent is gone): "
                                                    "moved to the nearest cgroup topod did not create");
        }
        return 0;
}

static int undo_controller(const CgroupEnv *env, CgroupReport *r, Journal *j, const char *entry) {
        _cleanup_free_ char *cg = NULL, *cur = NULL, *word = NULL, *mark = strdup(entry);
        const char *m = strstr(entry, CGROUP_SUBTREE_MARK), *ctl;
        CgroupResult *it;
        int k;

        if (!mark)
                return -ENOMEM;
        ctl = m + strlen(CGROUP_SUBTREE_MARK);
        cg = m == entry ? strdup("/") : strndup(entry, (size_t) (m - entry));
        if (!cg || asprintf(&word, "-%s", ctl) < 0)
                return -ENOMEM;
        it = cgroup_item_new(r, CGROUP_ITEM_CONTROLLER, cg, word);
        if (!it)
                return -ENOMEM;
        k = cgroup_read_attr(env, cg, "cgroup.subtree_control", &cur);
        if (k == -ENOENT) {
                cgroup_item_ok(it, CGROUP_ALREADY); /* the cgroup is gone */
                (void) journal_forget_cgroup(j, mark);
                return 0;
        }
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return cgroup_item_fail(it, k, "cannot read cgroup.subtree_control: %s", cgroup_errno_reason(k));
        cgroup_set_str(&it->found, cur);
        if (!cgroup_word_listed(cur, ctl)) {
                cgroup_item_ok(it, CGROUP_ALREADY);
                (void) journal_forget_cgroup(j, mark);
                return 0;
        }
        k = cgroup_write_attr(env, cg, "cgroup.subtree_control", word);
        if (k == -ENOMEM)
                return k;
        if (k == -EBUSY)
                /* A child (not topod's) uses it: leave it on, keep the entry. */
                return cgroup_item_fail(it, k, "busy: a child cgroup still has %s enabled", ctl);
        if (k < 0)
                return cgroup_item_fail(it, k, "%s", cgroup_errno_reason(k));
        cur = mfree(cur);
        k = cgroup_read_attr(env, cg, "cgroup.subtree_control", &cur);
        if (k < 0)
                return cgroup_item_fail(it, k, "written, but the read-back failed");
        if (cgroup_word_listed(cur, ctl)) {
                cgroup_set_str(&it->found, cur);
                return cgroup_item_fail(it, -EIO, "written, but the read-back still lists it");
        }
        cgroup_item_ok(it, CGROUP_DONE);
        (void) journal_forget_cgroup(j, mark);
        return 0;
}

/* Best effort, no report: cg no longer a partition, and no exclusive CPUs. */
static void dissolve(const CgroupEnv *env, const char *cg) {
        _cleanup_free_ char *part = NULL, *excl = NULL;

        if (cgroup_read_attr(env, cg, "cpuset.cpus.partition", &part) >= 0 && !streq(part, "member"))
                (void) cgroup_write_attr(env, cg, "cpuset.cpus.partition", "member");
        if (cgroup_read_attr(env, cg, "cpuset.cpus.exclusive", &excl) >= 0 && *excl)
                (void) cgroup_write_attr(env, cg, "cpuset.cpus.exclusive", "\n");
}

static int remove_dir(const CgroupEnv *env, CgroupReport *r, Journal *j, const char *entry) {
        _cleanup_free_ char *cg = strdup(entry), *path = NULL;
        CgroupResult *it;
        int k;

        if (!cg)
                return -ENOMEM;
        it = cgroup_item_new(r, CGROUP_ITEM_RMDIR, cg, NULL);
        if (!it)
                return -ENOMEM;
        k = cgroup_fs_path(env, cg, NULL, &path);
        if (k < 0)
                return k;
        k = env->ops->rmdir(env->ops->userdata, env->root, path);
        if (k == -ENOENT) {
                cgroup_item_ok(it, CGROUP_ALREADY);
                (void) journal_forget_cgroup(j, cg);
                return 0;
        }
        if (k == -ENOMEM)
                return k;
        if (k < 0) {
                /* It stays (a process topod never knew of is inside): give
                 * its CPUs back all the same, or a remote partition would
                 * keep them from the machine after topod is gone. */
                dissolve(env, cg);
                return cgroup_item_fail(it, k, "rmdir: %s", cgroup_errno_reason(k));
        }
        k = cgroup_exists(env, cg);
        if (k > 0)
                return cgroup_item_fail(it, -EIO, "rmdir returned, but the directory is still there");
        cgroup_item_ok(it, CGROUP_DONE);
        (void) journal_forget_cgroup(j, cg);
        return 0;
}

/* Whether cg is at, below or on the path to root: where topod makes its
 * tree (the cgroups above a root it creates when missing, and enables its
 * controllers in). */
static bool on_root_path(const char *cg, const char *root) {
        return root && (cgroup_path_is_below(cg, root) || cgroup_path_is_below(root, cg));
}

/* "cgroup" entry i's cgroup (a controller's: the cgroup it was enabled in)
 * is where topod makes its tree: the configuration's or one the journal
 * recorded. */
static bool entry_is_topods(const CgroupEnv *env, const Journal *j, const char *entry) {
        const char *m = strstr(entry, CGROUP_SUBTREE_MARK);
        _cleanup_free_ char *cg = m ? (m == entry ? strdup("/") : strndup(entry, (size_t) (m - entry))) : NULL;
        const char *path = m ? cg : entry;

        /* no memory: not touched, and reported as foreign */
        return path && cgroup_restore_path_is_topods(env, j, path);
}

int cgroup_report_foreign(CgroupReport *r, CgroupItemKind kind, const char *name) {
        CgroupResult *it = cgroup_item_new(r, kind, name, NULL);

        if (!it)
                return -ENOMEM;
        cgroup_item_ok(it, CGROUP_SKIPPED);
        cgroup_set_str(&it->reason, "journaled, but outside topod's cgroup_root: not topod's, left alone (the entry "
                                    "is forgotten)");
        return 0;
}

bool cgroup_restore_path_is_topods(const CgroupEnv *env, const Journal *j, const char *cg) {
        if (on_root_path(cg, env->cgroup_root))
                return true;
        for (size_t i = 0; i < j->n_cgroup_roots; i++)
                if (on_root_path(cg, j->cgroup_roots[i]))
                        return true;
        return false;
}

/* An entry (a cgroup, or a controller's cgroup) of the old root's tree
 * that the new root's does not use: at or below old_root, neither on the
 * path down to new_root nor inside its tree. */
static bool entry_retires(const char *entry, const char *old_root, const char *new_root) {
        const char *m = strstr(entry, CGROUP_SUBTREE_MARK);
        _cleanup_free_ char *cg = m ? (m == entry ? strdup("/") : strndup(entry, (size_t) (m - entry))) : NULL;
        const char *path = m ? cg : entry;

        if (!path || !cgroup_path_is_below(path, old_root))
                return false;
        return !new_root || (!cgroup_path_is_below(new_root, path) && !cgroup_path_is_below(path, new_root));
}

/* The cgroups topod created and the controllers it enabled, newest first
 * (children before parents, a parent's controllers after its children
 * went): all of them, or with old_root those of its tree that the root in
 * use does not need (entry_retires()). An entry undone leaves the journal,
 * so the index is checked against its count at each step. */
static int undo_created(const CgroupEnv *env, CgroupReport *r, Journal *journal, const char *old_root) {
        for (size_t i = journal->n_cgroups; i > 0; i--) {
                _cleanup_free_ char *entry = NULL;

                if (i > journal->n_cgroups ||
                    (old_root && !entry_retires(journal->cgroups[i - 1], old_root, env->cgroup_root)))
                        continue;
                if (!(entry = strdup(journal->cgroups[i - 1])))
                        return -ENOMEM;
                if (strstr(entry, CGROUP_SUBTREE_MARK))
                        CGROUP_STEP(undo_controller(env, r, journal, entry));
                else
                        CGROUP_STEP(remove_dir(env, r, journal, entry));
        }
        return 0;
}

/* 0. The "cgroup" entries outside every cgroup_root (a damaged or edited
 *    journal naming /system.slice), reported and forgotten before any step
 *    reads them: none is removed, none taken for topod's, so that no
 *    process is moved into or out of it but by its own task entry. */
static int drop_foreign(const CgroupEnv *env, CgroupReport *r, Journal *j) {
        for (size_t i = j->n_cgroups; i > 0; i--) {
                _cleanup_free_ char *entry = NULL;

                if (entry_is_topods(env, j, j->cgroups[i - 1]))
                        continue;
                if (!(entry = strdup(j->cgroups[i - 1])))
                        return -ENOMEM;
                if (cgroup_report_foreign(r, strstr(entry, CGROUP_SUBTREE_MARK) ? CGROUP_ITEM_CONTROLLER
                                                                                 : CGROUP_ITEM_RMDIR, entry) < 0)
                        return -ENOMEM;
                (void) journal_forget_cgroup(j, entry);
        }
        return 0;
}

int cgroup_restore(const CgroupEnv *env_in, Journal *journal, CgroupReport *r) {
        _cleanup_(origins_done) Origins origins = {};
        size_t start = r->n;
        CgroupEnv env;
        int k;

        k = cgroup_env_check(env_in, NULL, &env);
        if (k < 0)
                return k;
        if ((k = drop_foreign(&env, r, journal)) < 0)
                return k;
        /* Before step 1 forgets them: where forked children go (step 2). */
        if ((k = origins_take(journal, &origins)) < 0)
                return k;

        /* 1. Journaled processes back, their entries forgotten together
         *    after (those that failed stay). */
        if (journal->n_tasks > 0) {
                _cleanup_free_ bool *forget = calloc(journal->n_tasks, sizeof(bool));

                if (!forget)
                        return -ENOMEM;
                for (size_t i = journal->n_tasks; i > 0; i--)
                        CGROUP_STEP(restore_task(&env, r, journal, i - 1, &forget[i - 1]));
                (void) journal_forget_tasks(journal, forget);
        }

        /* 2. Whatever else sits in topod's cgroups. */
        for (size_t i = 0; i < journal->n_cgroups; i++)
                if (!strstr(journal->cgroups[i], CGROUP_SUBTREE_MARK))
                        CGROUP_STEP(evict_unknown(&env, r, journal, &origins, journal->cgroups[i]));

        /* 3. Created cgroups and enabled controllers, newest first: children
         *    before parents, a parent's controllers after its children went. */
        CGROUP_STEP(undo_created(&env, r, journal, NULL));

        k = cgroup_journal_commit(journal);
        if (k < 0)
                return k;
        return (int) MIN(cgroup_report_failed_since(r, start), (size_t) INT32_MAX);
}

int cgroup_retire_root(const CgroupEnv *env_in, Journal *journal, const char *old_root, CgroupReport *r) {
        _cleanup_(origins_done) Origins origins = {};
        size_t start = r->n;
        CgroupEnv env;
        int k;

        if (!old_root || streq(old_root, "/") || (env_in->cgroup_root && streq(old_root, env_in->cgroup_root)))
                return 0;
        k = cgroup_env_check(env_in, NULL, &env);
        if (k < 0)
                return k;
        if ((k = origins_take(journal, &origins)) < 0)
                return k;
        /* 1. Whatever still sits in the old tree's cgroups (the pass moved
         *    what the plan places, and let go of the journaled rest). */
        for (size_t i = 0; i < journal->n_cgroups; i++)
                if (!strstr(journal->cgroups[i], CGROUP_SUBTREE_MARK) &&
                    entry_retires(journal->cgroups[i], old_root, env.cgroup_root))
                        CGROUP_STEP(evict_unknown(&env, r, journal, &origins, journal->cgroups[i]));
        /* 2. Its cgroups and controllers, newest first, as a restore. */
        CGROUP_STEP(undo_created(&env, r, journal, old_root));
        k = cgroup_journal_commit(journal);
        if (k < 0)
                return k;
        return (int) MIN(cgroup_report_failed_since(r, start), (size_t) INT32_MAX);
}
