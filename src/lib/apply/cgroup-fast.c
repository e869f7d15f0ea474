/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fast path's moves (cgroup_move_prepare(), _finish(), _settle(), see
 * cgroup.h): a few processes placed between two passes into groups the
 * last pass made, around one journal commit for the whole batch. Nothing
 * of the tree is written here. */
#include "apply/cgroup-internal.h"

#include <stdint.h>
#include <stdlib.h>

static void moves_release(CgroupMove *moves, size_t n, FdBin *bin) {
        for (size_t i = 0; i < n; i++) {
                if (!moves[i].keep_ref)
                        pidref_done_into(&moves[i].ref, bin);
                moves[i].pending = false;
        }
}

void cgroup_moves_release(CgroupMove *moves, size_t n, FdBin *bin) {
        for (size_t i = 0; moves && i < n; i++)
                pidref_done_into(&moves[i].ref, bin);
}

int cgroup_move_prepare(const CgroupEnv *env_in, const char *cgroup_root, CgroupMove *moves, size_t n, Journal *journal,
                        CgroupReport *r) {
        size_t failed = 0;
        CgroupEnv env;
        int k;

        for (size_t i = 0; i < n; i++) {
                moves[i].item = SIZE_MAX;
                moves[i].pending = moves[i].recorded = moves[i].unchecked = false;
                moves[i].ref = PIDREF_NULL;
        }
        k = cgroup_env_check(env_in, NULL, &env);
        if (k < 0)
                return k;
        if (!cgroup_root_path_valid(cgroup_root))
                return -EINVAL;

        for (size_t i = 0; i < n; i++) {
                CgroupMove *m = &moves[i];
                _cleanup_free_ char *cg = NULL, *now = NULL;
                const char *from;
                CgroupResult *it;

                /* The report takes the path, and the original (from). */
                if (cgroup_path_join(cgroup_root, m->group ?: "", &cg) < 0 ||
                    !(it = cgroup_item_new_take(r, CGROUP_ITEM_MOVE, &cg, NULL)))
                        return -ENOMEM;
                m->item = r->n - 1;
                it->tgid = it->pid = m->tgid;
                if (!m->group || !cgroup_rel_path_valid(m->group)) {
                        cgroup_item_fail(it, -EINVAL, "not a cgroup path below topod's root");
                        continue;
                }
                /* The handle is held until the write is checked: the thread
                 * alive then held its tid throughout, so the cgroup read here
                 * (the original journaled) was its own. */
                if (m->start_time == 0) {
                        PidRefOps by_stat = *env.pidref;

                        by_stat.pidfs_idents = false;
                        k = pidref_acquire_current(env.root, m->by_start_time ? &by_stat : env.pidref, m->tgid,
                                                   &m->ref);
                        if (k >= 0)
                                m->start_time = m->ref.start_time;
                } else
                        k = pidref_acquire_process(env.root, env.pidref, m->tgid, m->start_time, &m->ref);
                if (k == -ESRCH) {
                        cgroup_item_ok(it, CGROUP_VANISHED);
                        continue;
                }
                if (k < 0) {
                        cgroup_item_fail(it, k, "cannot take a handle on the task");
                        continue;
                }
                k = cgroup_of_pinned(&env, &m->ref, &now);
                if (k == -ENOMEM)
                        return k;
                if (k < 0) {
                        pidref_done_into(&m->ref, env_in->bin);
                        if (k == -ESRCH)
                                cgroup_item_ok(it, CGROUP_VANISHED);
                        else
                                cgroup_item_fail(it, k, "cannot read where the task is");
                        continue;
                }
                free(it->from);
                from = it->from = TAKE_PTR(now);
                if (streq(from, it->path)) {
                        if (!m->keep_ref)
                                pidref_done_into(&m->ref, env_in->bin);
                        cgroup_item_ok(it, CGROUP_ALREADY);
                        continue;
                }
                if (journal && !cgroup_path_is_below(from, cgroup_root)) {
                        k = journal_record_task(journal, m->tgid, m->start_time, from);
                        if (k == -ENOMEM)
                                return k;
                        if (k < 0) {
                                pidref_done_into(&m->ref, env_in->bin);
                                cgroup_item_fail(it, k, "the original cgroup could not be journaled: not moved");
                                continue;
                        }
                        m->recorded = k > 0;
                        it->journaled = true;
                }
                m->pending = true;
        }
        /* Pending items read "failed" until written: not counted. */
        for (size_t i = 0; i < n; i++)
                failed += !moves[i].pending && moves[i].item < r->n && r->items[moves[i].item].outcome == CGROUP_FAILED;
        return (int) MIN(failed, (size_t) INT32_MAX);
}

int cgroup_move_finish(const CgroupEnv *env_in, CgroupMove *moves, size_t n, Journal *journal, int journal_error,
                       CgroupReport *r) {
        size_t failed = 0;
        bool pending = false;
        CgroupEnv env;
        int k;

        for (size_t i = 0; i < n; i++)
                pending = pending || moves[i].pending;
        if (!pending) {
                moves_release(moves, n, env_in->bin);
                goto count;
        }
        k = cgroup_env_check(env_in, NULL, &env);
        if (k < 0)
                journal_error = k; /* cannot happen after a prepare that left moves pending */

        for (size_t i = 0; i < n; i++) {
                CgroupMove *m = &moves[i];
                bool later = m->check_later && m->keep_ref, written = false;
                CgroupResult *it;

                if (!m->pending) {
                        if (!m->keep_ref)
                                pidref_done_into(&m->ref, env_in->bin);
                        continue;
                }
                it = &r->items[m->item];
                if (journal_error < 0) {
                        it->journaled = false;
                        cgroup_item_fail(it, journal_error, "the journal could not be committed: not moved");
                } else {
                        k = cgroup_move_process(&env, it, &m->ref, it->path,
                                                later ? CGROUP_MOVE_CHECK_LATER : CGROUP_MOVE_CHECK_ALIVE, &written);
                        if (k == -ENOMEM) {
                                moves_release(moves, n, env_in->bin);
                                return k;
                        }
                        m->unchecked = later && written && it->outcome == CGROUP_DONE;
                }
                if (!m->keep_ref || !written)
                        pidref_done_into(&m->ref, env_in->bin);
                m->pending = false;
                /* Recorded for a process that did not move: moot. */
                if (m->recorded && !written) {
                        (void) journal_forget_task(journal, m->tgid, m->start_time);
                        it->journaled = false;
                }
        }
count:
        for (size_t i = 0; i < n; i++)
                if (moves[i].item < r->n && r->items[moves[i].item].outcome == CGROUP_FAILED)
                        failed++;
        return (int) MIN(failed, (size_t) INT32_MAX);
}

CgroupOutcome cgroup_move_settle(const CgroupEnv *env_in, CgroupMove *m, int alive, CgroupReport *r) {
        CgroupResult *it;
        CgroupEnv env;

        if (m->item >= r->n)
                return CGROUP_FAILED;
        it = &r->items[m->item];
        if (!m->unchecked)
                return it->outcome;
        m->unchecked = false;
        if (alive < 0)
                alive = cgroup_env_check(env_in, NULL, &env) < 0 ? -EINVAL
                                                                  : pidref_alive(&m->ref, env.root, env.pidref);
        (void) cgroup_moved_outcome(it, alive);
        return it->outcome;
}
