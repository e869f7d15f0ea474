/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal's upkeep between passes (cgroup_journal_prune()): the task
 * entries of processes that have exited forgotten, with the cookie entries
 * under their names, so that the journal, rewritten whole on each commit,
 * holds the living and does not grow with every process that ever passed
 * through topod's groups. */
#include "apply/cgroup-internal.h"

#include <stdint.h>
#include <stdlib.h>

/* At this many journal entries to check, cgroup_journal_prune() lists
 * /proc. */
#define CGROUP_PRUNE_LIST_MIN 32u

int cgroup_journal_prune(const CgroupEnv *env, const Plan *plan, Journal *journal) {
        const PidRefOps *ops = env->pidref ?: &pidref_ops_host;
        _cleanup_free_ uint64_t *name = NULL;
        _cleanup_free_ bool *drop = NULL;
        _cleanup_free_ pid_t *live_pids = NULL;
        _cleanup_free_ JournalCookie *moot = NULL;
        _cleanup_free_ uint64_t *moot_to = NULL;
        CgroupMembers live = {};
        bool any = false, renamed = false;
        size_t n, total, n_moot = 0, n_cookies;

        if (!journal || (journal->n_tasks == 0 && journal->n_cookies == 0))
                return 0;
        total = journal->n_tasks;
        n_cookies = journal->n_cookies;
        drop = calloc(MAX(total, (size_t) 1), sizeof(bool));
        name = calloc(MAX(total, (size_t) 1), sizeof(uint64_t));
        moot = calloc(total + n_cookies + 1, sizeof(JournalCookie));
        moot_to = calloc(total + n_cookies + 1, sizeof(uint64_t)); /* all 0: forgotten */
        if (!drop || !name || !moot || !moot_to)
                return -ENOMEM;
        for (size_t i = 0, checked = 0; i < total; i++) {
                const JournalTask *jt = &journal->tasks[i];
                const PlanTask *pt = plan ? plan_find_task(plan, jt->tid) : NULL;
                ProcStat st;
                int k;

                if (pt && pt->start_time == jt->start_time)
                        continue; /* planned now: alive at the last scan, checked by its move */
                /* Placed by the fast path during the pass, or left by an
                 * exec storm's scan: the next pass's (no pin and no read
                 * of each, with the lock held, for hundreds of them). Not
                 * all when the pass lost count of them: the upkeep must
                 * go on. */
                if (yield_known_changed(env->yield, jt->tid))
                        continue;
                /* Died whole since (the events tell: every thread exited,
                 * no task has the number now): reaped or a zombie, nothing
                 * to restore. No pin and no read. */
                if (yield_known_dead(env->yield, jt->tid)) {
                        drop[i] = any = true;
                        continue;
                }
                /* Many to check (an exec storm's, most of them gone): one
                 * listing of /proc tells which are, where a handle on each
                 * costs a system call or four (a second and more of a
                 * pass in the test guest). A number not listed has no
                 * process: not the entry's, whatever comes after. Without
                 * the listing (an error, no procfs), one by one. */
                if (++checked == CGROUP_PRUNE_LIST_MIN) {
                        k = cgroup_members_read_proc(env, &live);
                        live_pids = live.pids;
                        if (k == -ENOMEM)
                                return k;
                }
                if (live.read && !cgroup_members_has(&live, jt->tid)) {
                        drop[i] = any = true;
                        continue;
                }
                if (pidref_ident_is_pidfs(jt->start_time)) {
                        /* Known by its pidfd's inode (the fast path's): pinned
                         * by it, or gone. Alive, it is named by its start time
                         * from now on, so that later passes find it planned
                         * without a pin: read through the pin. */
                        k = pidref_read_stat_pinned(env->root, ops, jt->tid, jt->start_time, &st);
                        if (k > 0) {
                                name[i] = st.start_time;
                                renamed = true;
                        }
                        /* Exited since: a zombie read then is the pinned one,
                         * or the pinned one was reaped; either way gone
                         * (nothing of an exited process to restore). */
                        drop[i] = k == -ESRCH || (k == 0 && procfs_stat_exited(&st));
                } else {
                        k = pidref_read_stat(env->root, -1, jt->tid, &st);
                        /* Gone, exited and waiting to be reaped, or its
                         * number names another process now. Anything else
                         * (EACCES, EMFILE) keeps the entry. */
                        drop[i] = k == -ESRCH || (k >= 0 && (st.start_time != jt->start_time || procfs_stat_exited(&st)));
                }
                any = any || drop[i];
        }
        /* A forgotten task's cookie entry, under the same name, is moot too. */
        for (size_t i = 0; i < total; i++)
                if (drop[i])
                        moot[n_moot++] = (JournalCookie) { journal->tasks[i].tid, journal->tasks[i].start_time };
        /* The fast path's cookie entries of processes that were in their
         * group already (no move, no task entry), named by their pidfd's
         * inode (main threads, which /proc lists): one not listed has
         * gone. Else clearing it (unplanned) took the cookie applier's
         * thread a pidfd_open() each, with the lock held: after an exec
         * storm, hundreds. Any entry of a task known dead (no task has its
         * number: yield_known_dead()) is moot, whatever names it. */
        if (!live.read && n_cookies >= CGROUP_PRUNE_LIST_MIN) {
                size_t pidfs = 0;

                for (size_t i = 0; i < n_cookies; i++)
                        pidfs += pidref_ident_is_pidfs(journal->cookies[i].start_time);
                if (pidfs >= CGROUP_PRUNE_LIST_MIN && cgroup_members_read_proc(env, &live) == -ENOMEM)
                        return -ENOMEM;
                live_pids = live.pids;
        }
        for (size_t i = 0; i < n_cookies; i++) {
                const JournalCookie *jc = &journal->cookies[i];

                if ((live.read && pidref_ident_is_pidfs(jc->start_time) && !cgroup_members_has(&live, jc->tid)) ||
                    yield_known_dead(env->yield, jc->tid))
                        moot[n_moot++] = *jc;
        }
        (void) journal_rename_cookies(journal, moot, moot_to, n_moot);
        /* One sweep: after an exec storm most of the entries go at once. */
        n = any ? journal_forget_tasks(journal, drop) : 0;
        if (renamed) {
                /* The entries that stayed, in order: their new names. */
                size_t u = 0;

                for (size_t i = 0; i < total; i++)
                        if (!drop[i])
                                name[u++] = name[i];
                (void) journal_name_tasks(journal, name);
        }
        return (int) MIN(n, (size_t) INT32_MAX);
}
