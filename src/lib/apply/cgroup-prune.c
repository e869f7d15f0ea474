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

/* One cgroup_journal_prune(): per task entry whether it goes and its new
 * name, the cookie entries that go with them, and /proc listed once many
 * are to be checked. */
typedef struct Prune {
        const CgroupEnv *env;
        const PidRefOps *ops;
        const Plan *plan;
        Journal *journal;
        size_t total, n_cookies; /* entries when it began */
        bool *drop;              /* per task entry: forget it */
        uint64_t *name;          /* per task entry: its new name (start time), or 0 */
        JournalCookie *moot;     /* cookie entries to forget */
        uint64_t *moot_to;       /* their new names: all 0, forgotten */
        size_t n_moot;
        CgroupMembers live;      /* the processes /proc lists, once read */
        size_t checked;          /* entries looked at one by one so far */
        bool any, renamed;
} Prune;

static void prune_done(Prune *p) {
        free(p->drop);
        free(p->name);
        free(p->moot);
        free(p->moot_to);
        free(p->live.pids);
}

/* The arrays for the journal's entries as they are now. */
static int prune_alloc(Prune *p) {
        p->total = p->journal->n_tasks;
        p->n_cookies = p->journal->n_cookies;
        p->drop = calloc(MAX(p->total, (size_t) 1), sizeof(bool));
        p->name = calloc(MAX(p->total, (size_t) 1), sizeof(uint64_t));
        p->moot = calloc(p->total + p->n_cookies + 1, sizeof(JournalCookie));
        p->moot_to = calloc(p->total + p->n_cookies + 1, sizeof(uint64_t)); /* all 0: forgotten */
        if (!p->drop || !p->name || !p->moot || !p->moot_to)
                return -ENOMEM;
        return 0;
}

/* Read task entry i's process (no entry of a process the plan places, or
 * that changed since the scan, gets here): drop[i] when it has gone, and
 * its start time when it is known by its pidfd's inode. */
static void prune_read_task(Prune *p, size_t i) {
        const JournalTask *jt = &p->journal->tasks[i];
        ProcStat st;
        int k;

        if (pidref_ident_is_pidfs(jt->start_time)) {
                /* Known by its pidfd's inode (the fast path's): pinned
                 * by it, or gone. Alive, it is named by its start time
                 * from now on, so that later passes find it planned
                 * without a pin: read through the pin. */
                k = pidref_read_stat_pinned(p->env->root, p->ops, jt->tid, jt->start_time, &st);
                if (k > 0) {
                        p->name[i] = st.start_time;
                        p->renamed = true;
                }
                /* Exited since: a zombie read then is the pinned one,
                 * or the pinned one was reaped; either way gone
                 * (nothing of an exited process to restore). */
                p->drop[i] = k == -ESRCH || (k == 0 && procfs_stat_exited(&st));
        } else {
                k = pidref_read_stat(p->env->root, -1, jt->tid, &st);
                /* Gone, exited and waiting to be reaped, or its
                 * number names another process now. Anything else
                 * (EACCES, EMFILE) keeps the entry. */
                p->drop[i] = k == -ESRCH || (k >= 0 && (st.start_time != jt->start_time || procfs_stat_exited(&st)));
        }
}

/* Whether task entry i goes. 0, or -ENOMEM. */
static int prune_task(Prune *p, size_t i) {
        const JournalTask *jt = &p->journal->tasks[i];
        const PlanTask *pt = p->plan ? plan_find_task(p->plan, jt->tid) : NULL;
        const YieldHooks *yield = p->env->yield;
        int k;

        if (pt && pt->start_time == jt->start_time)
                return 0; /* planned now: alive at the last scan, checked by its move */
        /* Placed by the fast path during the pass, or left by an
         * exec storm's scan: the next pass's (no pin and no read
         * of each, with the lock held, for hundreds of them). Not
         * all when the pass lost count of them: the upkeep must
         * go on. */
        if (yield_known_changed(yield, jt->tid))
                return 0;
        /* Died whole since (the events tell: every thread exited,
         * no task has the number now): reaped or a zombie, nothing
         * to restore. No pin and no read. */
        if (yield_known_dead(yield, jt->tid)) {
                p->drop[i] = p->any = true;
                return 0;
        }
        /* Many to check (an exec storm's, most of them gone): one
         * listing of /proc tells which are, where a handle on each
         * costs a system call or four (for hundreds of entries, most
         * of a pass). A number not listed has no process: not the
         * entry's, whatever comes after. Without the listing (an
         * error, no procfs), one by one. */
        if (++p->checked == CGROUP_PRUNE_LIST_MIN) {
                k = cgroup_members_read_proc(p->env, &p->live);
                if (k == -ENOMEM)
                        return k;
        }
        if (p->live.read && !cgroup_members_has(&p->live, jt->tid)) {
                p->drop[i] = p->any = true;
                return 0;
        }
        prune_read_task(p, i);
        p->any = p->any || p->drop[i];
        return 0;
}

/* Whether each task entry goes. 0, or -ENOMEM. */
static int prune_tasks(Prune *p) {
        for (size_t i = 0; i < p->total; i++) {
                int k = prune_task(p, i);

                if (k < 0)
                        return k;
        }
        return 0;
}

/* The cookie entries that go: those under the names of the task entries
 * that go, and those of processes that have gone. 0, or -ENOMEM. */
static int prune_cookies(Prune *p) {
        const Journal *journal = p->journal;

        /* A forgotten task's cookie entry, under the same name, is moot too. */
        for (size_t i = 0; i < p->total; i++)
                if (p->drop[i])
                        p->moot[p->n_moot++] = (JournalCookie) { journal->tasks[i].tid, journal->tasks[i].start_time };
        /* The fast path's cookie entries of processes that were in their
         * group already (no move, no task entry), named by their pidfd's
         * inode (main threads, which /proc lists): one not listed has
         * gone. Else clearing it (unplanned) costs the cookie applier's
         * thread a pidfd_open() each, with the lock held: after an exec
         * storm, hundreds. Any entry of a task known dead (no task has its
         * number: yield_known_dead()) is moot, whatever names it. */
        if (!p->live.read && p->n_cookies >= CGROUP_PRUNE_LIST_MIN) {
                size_t pidfs = 0;

                for (size_t i = 0; i < p->n_cookies; i++)
                        pidfs += pidref_ident_is_pidfs(journal->cookies[i].start_time);
                if (pidfs >= CGROUP_PRUNE_LIST_MIN && cgroup_members_read_proc(p->env, &p->live) == -ENOMEM)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < p->n_cookies; i++) {
                const JournalCookie *jc = &journal->cookies[i];

                if ((p->live.read && pidref_ident_is_pidfs(jc->start_time) && !cgroup_members_has(&p->live, jc->tid)) ||
                    yield_known_dead(p->env->yield, jc->tid))
                        p->moot[p->n_moot++] = *jc;
        }
        return 0;
}

int cgroup_journal_prune(const CgroupEnv *env, const Plan *plan, Journal *journal) {
        _cleanup_(prune_done) Prune p = {
                .env = env, .ops = env->pidref ?: &pidref_ops_host, .plan = plan, .journal = journal };
        size_t n;
        int k;

        if (!journal || (journal->n_tasks == 0 && journal->n_cookies == 0))
                return 0;
        k = prune_alloc(&p);
        if (k >= 0)
                k = prune_tasks(&p);
        if (k >= 0)
                k = prune_cookies(&p);
        if (k < 0)
                return k;
        (void) journal_rename_cookies(journal, p.moot, p.moot_to, p.n_moot);
        /* One sweep: after an exec storm most of the entries go at once. */
        n = p.any ? journal_forget_tasks(journal, p.drop) : 0;
        if (p.renamed) {
                /* The entries that stayed, in order: their new names. */
                size_t u = 0;

                for (size_t i = 0; i < p.total; i++)
                        if (!p.drop[i])
                                p.name[u++] = p.name[i];
                (void) journal_name_tasks(journal, p.name);
        }
        return (int) MIN(n, (size_t) INT32_MAX);
}
