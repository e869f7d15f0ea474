/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Moves of processes: the plan's threads grouped by process, each process
 * into its group (cgroup_apply_tasks(): where each is found first, the
 * originals journaled and committed once, then the moves), and the one
 * move every writer of this module makes, a pid into cgroup.procs checked
 * after. */
#include "apply/cgroup-internal.h"

#include <stdlib.h>
#include <string.h>

#include "observe/proc-cgroup.h"

/* ---- the plan's processes ----------------------------------------------- */

typedef struct SortEntry {
        pid_t tgid, tid;
        int group;
        size_t idx;
} SortEntry;

static int sort_entry_cmp(const void *a, const void *b) {
        const SortEntry *x = a, *y = b;

        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        if (x->group != y->group)
                return x->group < y->group ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void cgroup_processes_free(CgroupProcess *p, size_t n) {
        if (!p)
                return;
        for (size_t i = 0; i < n; i++)
                free(p[i].tasks);
        free(p);
}

int cgroup_plan_processes(const Plan *plan, CgroupProcess **ret, size_t *ret_n) {
        _cleanup_free_ SortEntry *e = NULL;
        CgroupProcess *out = NULL;
        size_t n = 0, n_out = 0;

        e = calloc(MAX(plan->n_tasks, 1u), sizeof(SortEntry));
        if (!e)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_tasks; i++) {
                const PlanTask *t = &plan->tasks[i];

                if (t->group < 0 || (size_t) t->group >= plan->n_groups || t->tid <= 0 || t->tgid <= 0)
                        continue;
                e[n++] = (SortEntry) { .tgid = t->tgid, .tid = t->tid, .group = t->group, .idx = i };
        }
        qsort(e, n, sizeof(SortEntry), sort_entry_cmp);

        out = calloc(MAX(n, 1u), sizeof(CgroupProcess));
        if (!out)
                return -ENOMEM;
        for (size_t a = 0; a < n;) {
                size_t b = a, best_a = a, best_n = 0;
                bool best_leader = false;
                pid_t best_min = 0;
                CgroupProcess *p = &out[n_out];

                while (b < n && e[b].tgid == e[a].tgid)
                        b++;
                /* Runs of one group within [a, b), each sorted by tid. */
                for (size_t s = a; s < b;) {
                        size_t t = s;
                        bool leader = false;

                        while (t < b && e[t].group == e[s].group) {
                                leader = leader || e[t].tid == e[t].tgid;
                                t++;
                        }
                        if (t - s > best_n || (t - s == best_n && ((leader && !best_leader) ||
                                                                   (leader == best_leader && e[s].tid < best_min)))) {
                                best_a = s;
                                best_n = t - s;
                                best_leader = leader;
                                best_min = e[s].tid;
                        }
                        s = t;
                }
                p->tgid = e[a].tgid;
                p->group = e[best_a].group;
                p->n_planned = (unsigned) (b - a);
                p->tasks = calloc(best_n, sizeof(size_t));
                if (!p->tasks) {
                        cgroup_processes_free(out, n_out);
                        return -ENOMEM;
                }
                /* The main thread first: the journal names a process by it. */
                for (size_t i = best_a; i < best_a + best_n; i++)
                        if (e[i].tid == e[i].tgid)
                                p->tasks[p->n_tasks++] = e[i].idx;
                for (size_t i = best_a; i < best_a + best_n; i++)
                        if (e[i].tid != e[i].tgid)
                                p->tasks[p->n_tasks++] = e[i].idx;
                n_out++;
                a = b;
        }
        *ret = out;
        *ret_n = n_out;
        return 0;
}

/* ---- one process moved ---------------------------------------------------- */

/* Take a handle on the first planned thread of the process that is still
 * the one the plan meant. -ESRCH: none is. */
static int acquire_process(const CgroupEnv *env, const Plan *plan, const CgroupProcess *p, PidRef *ret,
                           const PlanTask **ret_task) {
        int k = -ESRCH;

        for (size_t i = 0; i < p->n_tasks; i++) {
                const PlanTask *t = &plan->tasks[p->tasks[i]];

                k = pidref_acquire(env->root, env->pidref, t->tid, t->start_time, ret);
                if (k == -ESRCH)
                        continue;
                if (k >= 0)
                        *ret_task = t;
                return k;
        }
        return -ESRCH;
}

/* The start time of the process's main thread while tid (of the same
 * process) is held: the main thread's number cannot be reused while any
 * thread of the process lives. */
static int leader_start_time(const CgroupEnv *env, const PlanTask *t, uint64_t *ret) {
        if (t->tid == t->tgid) {
                *ret = t->start_time;
                return 0;
        }
        return pidref_read_start_time(env->root, -1, t->tgid, ret);
}

/* A write the kernel took, by whether the thread written lived after it:
 * alive 1, 0, or a negative errno (it could not be told). */
int cgroup_moved_outcome(CgroupResult *it, int alive) {
        if (alive == 0)
                return cgroup_item_ok(it, CGROUP_VANISHED);
        if (alive < 0)
                return cgroup_item_fail(it, alive, "moved, but whether the task lives could not be told");
        return cgroup_item_ok(it, CGROUP_DONE);
}

/* Write tid to cg's cgroup.procs and check: the item's outcome. ref is the
 * thread written. *ret_written: the kernel took the write (may be NULL).
 * The fast path leaves the read-back to the next pass: a write the kernel
 * took, to a thread alive throughout, moved it. */
int cgroup_move_process(const CgroupEnv *env, CgroupResult *it, const PidRef *ref, const char *cg,
                        CgroupMoveCheck check, bool *ret_written) {
        _cleanup_free_ char *after = NULL;
        char num[21];
        int k;

        (void) format_u64(num, (uint64_t) ref->tid);
        k = cgroup_write_procs(env, cg, num);
        if (ret_written)
                *ret_written = k >= 0;
        if (k == -ESRCH)
                return cgroup_item_ok(it, CGROUP_VANISHED);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return cgroup_item_fail(it, k, "writing cgroup.procs: %s", cgroup_errno_reason(k));
        if (check == CGROUP_MOVE_CHECK_LATER)
                return cgroup_item_ok(it, CGROUP_DONE);
        k = pidref_alive(ref, env->root, env->pidref);
        if (k <= 0 || check == CGROUP_MOVE_CHECK_ALIVE)
                return cgroup_moved_outcome(it, k);
        k = proc_cgroup_read(env->root, ref->tid, env->bin, &after);
        if (k >= 0 && !streq(after, cg)) {
                pid_t by;

                /* Its main thread may have exited: the live threads tell. */
                after = mfree(after);
                k = proc_cgroup_read_process(env->root, ref->tid, env->bin, &after, &by);
        }
        if (k == -ESRCH)
                return cgroup_item_ok(it, CGROUP_VANISHED);
        if (k < 0)
                return cgroup_item_fail(it, k, "moved, but /proc/%d/cgroup could not be read back", (int) ref->tid);
        if (!streq(after, cg)) {
                cgroup_set_str(&it->found, after);
                return cgroup_item_fail(it, -EIO, "moved, but /proc/%d/cgroup reads %s", (int) ref->tid, after);
        }
        return cgroup_item_ok(it, CGROUP_DONE);
}

/* ---- the plan's moves, step by step -------------------------------------- */

typedef struct Pending {
        size_t proc;     /* index into the processes */
        size_t item;     /* index into the report */
        pid_t tgid;
        uint64_t leader_start;
        bool recorded;   /* journal entry made by this batch */
        PidRef ref;      /* the handle step 1 took, kept for the move (the first
                          * CGROUP_PASS_PINS_MAX; PIDREF_NULL for the others) */
        const PlanTask *task; /* the thread ref holds */
} Pending;

/* Handles a pass keeps from looking at a process to moving it: a pin and a
 * stat read fewer per move, within a bound on the descriptors held. */
#define CGROUP_PASS_PINS_MAX 256u

/* Is the process somewhere else than from now (or unreadable)? Gone: no. */
static bool moved_since(const CgroupEnv *env, const Plan *plan, const CgroupProcess *p, const char *from) {
        _cleanup_free_ char *now = NULL;
        const PlanTask *t = NULL;
        PidRef ref = PIDREF_NULL;
        int k;

        k = acquire_process(env, plan, p, &ref, &t);
        if (k == -ESRCH)
                return false;
        if (k >= 0) {
                k = cgroup_of_pinned(env, &ref, &now);
                pidref_done(&ref);
        }
        if (k == -ESRCH)
                return false;
        return k < 0 || !from || !streq(now, from);
}

/* One cgroup_apply_tasks(): the plan's processes, their groups' members
 * (read once each), and the processes to move. */
typedef struct TaskBatch {
        const CgroupEnv *env;
        const Plan *plan;
        Journal *journal;
        CgroupReport *r;
        CgroupProcess *procs;
        size_t n_procs;
        CgroupMembers *members; /* one per plan group */
        Pending *pend;
        size_t n_pend;
} TaskBatch;

static void task_batch_done(TaskBatch *b) {
        for (size_t i = 0; b->pend && i < b->n_pend; i++)
                pidref_done(&b->pend[i].ref);
        free(b->pend);
        cgroup_members_free(b->members, b->plan ? b->plan->n_groups : 0);
        cgroup_processes_free(b->procs, b->n_procs);
}

/* Settled without a handle: listed in its group's cgroup.procs, or changed
 * since the scan. 1 settled, 0 to be looked at, or -ENOMEM. */
static int locate_listed(TaskBatch *b, const CgroupProcess *p, const char *cg, CgroupResult *it) {
        CgroupMembers *m = &b->members[p->group];
        int k;

        if (!m->read && (k = cgroup_members_read(b->env, cg, m)) < 0)
                return k;
        /* Listed: there (or, when the planned process has gone,
         * another that took its number is: nothing to do either;
         * someone who moves it after the read is the next pass's). */
        if (cgroup_members_has(m, p->tgid)) {
                cgroup_set_str(&it->from, cg);
                cgroup_item_ok(it, CGROUP_ALREADY);
                return 1;
        }
        if (yield_changed(b->env->yield, p->tgid)) {
                cgroup_set_str(&it->reason, YIELD_CHANGED_REASON);
                cgroup_item_ok(it, CGROUP_SKIPPED);
                return 1;
        }
        return 0;
}

/* A handle on the process (*ref, the thread *ret_task), where it is
 * (*ret_now) and its main thread's start time (*ret_leader_start): 0. 1
 * when the item is settled without them (vanished, failed). */
static int locate_pinned(TaskBatch *b, const CgroupProcess *p, CgroupResult *it, PidRef *ref,
                         const PlanTask **ret_task, char **ret_now, uint64_t *ret_leader_start) {
        const CgroupEnv *env = b->env;
        const char *failed = "cannot take a handle on the task";
        int k;

        k = acquire_process(env, b->plan, p, ref, ret_task);
        if (k >= 0) {
                it->pid = (*ret_task)->tid;
                failed = "cannot read where the task is";
                k = cgroup_of_pinned(env, ref, ret_now);
                if (k >= 0)
                        k = leader_start_time(env, *ret_task, ret_leader_start);
                if (k >= 0 && pidref_alive(ref, env->root, env->pidref) == 0)
                        k = -ESRCH; /* the leader's number might have been reused meanwhile */
                if (k < 0)
                        pidref_done(ref);
        }
        if (k == -ESRCH)
                cgroup_item_ok(it, CGROUP_VANISHED);
        else if (k < 0)
                cgroup_item_fail(it, k, "%s", failed);
        return k < 0;
}

/* Process i to move from now: a Pending entry that takes ref (kept for the
 * first CGROUP_PASS_PINS_MAX), the original recorded in the journal. 0, or
 * -ENOMEM. */
static int locate_pend(TaskBatch *b, size_t i, CgroupResult *it, PidRef ref, const PlanTask *t, uint64_t lst,
                       const char *now) {
        const CgroupProcess *p = &b->procs[i];
        Pending *pd = &b->pend[b->n_pend];
        int k;

        *pd = (Pending) { .proc = i, .item = b->r->n - 1, .tgid = p->tgid, .leader_start = lst, .ref = PIDREF_NULL,
                          .task = t };
        if (b->n_pend < CGROUP_PASS_PINS_MAX)
                pd->ref = ref;
        else
                pidref_done(&ref);
        if (b->journal && !cgroup_path_is_below(now, b->plan->cgroup_root)) {
                k = journal_record_task(b->journal, p->tgid, lst, now);
                if (k < 0)
                        pidref_done(&pd->ref);
                if (k == -ENOMEM)
                        return k;
                if (k < 0) {
                        cgroup_item_fail(it, k, "the original cgroup could not be journaled: not moved");
                        return 0;
                }
                pd->recorded = k > 0;
                it->journaled = true;
        }
        b->n_pend++;
        return 0;
}

/* 1. Where process i is now: its item, and when it is to move a Pending
 *    entry with its original recorded. 0, or -ENOMEM. */
static int locate_process(TaskBatch *b, size_t i) {
        const CgroupProcess *p = &b->procs[i];
        const Plan *plan = b->plan;
        _cleanup_free_ char *cg = NULL, *now = NULL;
        const PlanTask *t = NULL;
        PidRef ref = PIDREF_NULL;
        uint64_t lst = 0;
        CgroupResult *it;
        int k;

        yield_now(b->env->yield);
        if (!cgroup_rel_path_valid(plan->groups[p->group].path))
                return 0; /* reported by the tree */
        if (cgroup_path_join(plan->cgroup_root, plan->groups[p->group].path, &cg) < 0 ||
            !(it = cgroup_item_new(b->r, CGROUP_ITEM_MOVE, cg, NULL)))
                return -ENOMEM;
        it->tgid = p->tgid;
        it->pid = plan->tasks[p->tasks[0]].tid;
        k = locate_listed(b, p, cg, it);
        if (k < 0)
                return k;
        if (k > 0)
                return 0;
        if (locate_pinned(b, p, it, &ref, &t, &now, &lst) > 0)
                return 0;
        cgroup_set_str(&it->from, now);
        if (streq(now, cg)) {
                pidref_done(&ref);
                cgroup_item_ok(it, CGROUP_ALREADY);
                return 0;
        }
        return locate_pend(b, i, it, ref, t, lst, now);
}

/* The originals recorded, committed once before the first move; when the
 * commit fails, nothing moves. */
static int commit_originals(TaskBatch *b) {
        int k = cgroup_journal_commit(b->journal);

        if (k < 0)
                for (size_t i = 0; i < b->n_pend; i++) {
                        CgroupResult *it = &b->r->items[b->pend[i].item];

                        it->journaled = false;
                        cgroup_item_fail(it, k, "the journal could not be committed: not moved");
                }
        return k;
}

/* A pending process that changed since the scan: skipped. */
static void move_skip_changed(TaskBatch *b, Pending *pd, const CgroupProcess *p, CgroupResult *it) {
        pidref_done(&pd->ref);
        cgroup_set_str(&it->reason, YIELD_CHANGED_REASON);
        cgroup_item_ok(it, CGROUP_SKIPPED);
        /* The entry recorded above: the fast path, which may
         * have moved it meanwhile, found it and relies on it.
         * Where it still is in the original, nobody moved it:
         * moot. */
        if (pd->recorded && !moved_since(b->env, b->plan, p, it->from)) {
                (void) journal_forget_task(b->journal, pd->tgid, pd->leader_start);
                it->journaled = false;
        }
}

/* The handle to move a pending process by (*ref, thread *ret_task): the
 * one step 1 took, if kept and its thread still the one it was (a while
 * ago: yields, the commit, the moves before; its tid may name another
 * since): one check, no pin, no stat read. Else a live thread of the
 * process is taken, as without one. -ESRCH: none lives. */
static int move_take_ref(TaskBatch *b, Pending *pd, const CgroupProcess *p, PidRef *ref, const PlanTask **ret_task) {
        const CgroupEnv *env = b->env;

        if (pidref_is_set(&pd->ref) && pidref_alive(&pd->ref, env->root, env->pidref) > 0) {
                *ref = pd->ref; /* handed over */
                pd->ref = PIDREF_NULL;
                *ret_task = pd->task;
                return 0;
        }
        pidref_done(&pd->ref);
        return acquire_process(env, b->plan, p, ref, ret_task);
}

/* 2. Pending move i. 0, or -ENOMEM. */
static int move_pending(TaskBatch *b, size_t i) {
        Pending *pd = &b->pend[i];
        const CgroupProcess *p = &b->procs[pd->proc];
        CgroupResult *it = &b->r->items[pd->item];
        const PlanTask *t = NULL;
        PidRef ref = PIDREF_NULL;
        bool written = false;
        int k;

        yield_now(b->env->yield);
        if (yield_changed(b->env->yield, p->tgid)) {
                move_skip_changed(b, pd, p, it);
                return 0;
        }
        k = move_take_ref(b, pd, p, &ref, &t);
        if (k == -ESRCH)
                cgroup_item_ok(it, CGROUP_VANISHED);
        else if (k < 0)
                cgroup_item_fail(it, k, "cannot take a handle on the task");
        else {
                it->pid = t->tid;
                k = cgroup_move_process(b->env, it, &ref, it->path, CGROUP_MOVE_CHECK_READ_BACK, &written);
                pidref_done(&ref);
                if (k == -ENOMEM)
                        return k;
        }
        /* An entry recorded for a process that did not move (gone, or
         * refused) is moot; one that moved stays even if the thread
         * written exited afterwards (the rest of the process may live). */
        if (pd->recorded && !written) {
                (void) journal_forget_task(b->journal, pd->tgid, pd->leader_start);
                it->journaled = false;
        }
        return 0;
}

int cgroup_apply_tasks(const CgroupEnv *env_in, const Plan *plan, Journal *journal, CgroupReport *r) {
        CgroupEnv env;
        _cleanup_(task_batch_done) TaskBatch b = { .env = &env, .plan = plan, .journal = journal, .r = r };
        size_t start = r->n;
        int k;

        k = cgroup_env_check(env_in, plan, &env);
        if (k < 0)
                return k;
        k = cgroup_plan_processes(plan, &b.procs, &b.n_procs);
        if (k < 0)
                return k;
        b.pend = calloc(MAX(b.n_procs, 1u), sizeof(Pending));
        b.members = calloc(MAX(plan->n_groups, (size_t) 1), sizeof(CgroupMembers));
        if (!b.pend || !b.members)
                return -ENOMEM;

        /* 1. Where is each process now? Record the originals of those that
         *    move, and commit once before the first move. A process its
         *    group's cgroup.procs lists is there already: one read of that
         *    file per group, not a pin and a read of /proc for each of its
         *    processes every pass (most are where the last pass or the fast
         *    path put them). */
        for (size_t i = 0; i < b.n_procs; i++)
                if ((k = locate_process(&b, i)) < 0)
                        return k;
        k = commit_originals(&b);
        if (k < 0)
                return k;

        /* 2. Move. */
        for (size_t i = 0; i < b.n_pend; i++)
                if ((k = move_pending(&b, i)) < 0)
                        return k;
        k = cgroup_journal_commit(journal);
        if (k < 0)
                return k; /* only forgotten entries were not committed: harmless */
        return (int) MIN(cgroup_report_failed_since(r, start), (size_t) INT32_MAX);
}

int cgroup_apply(const CgroupEnv *env, const Plan *plan, Journal *journal, CgroupReport *r) {
        int a, b;

        a = cgroup_apply_tree(env, plan, journal, r);
        if (a < 0)
                return a;
        b = cgroup_apply_tasks(env, plan, journal, r);
        if (b < 0)
                return b;
        return a + b;
}
