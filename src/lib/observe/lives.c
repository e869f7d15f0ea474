/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "observe/lives.h"

#include <errno.h>
#include <stdlib.h>

/* An open-addressing table keyed by tgid (0: a free slot), linear probing,
 * at most half full; removal shifts the probe run back, so no tombstones. */
typedef struct Life {
        pid_t tgid;
        uint32_t threads; /* 0: dead */
        uint32_t era;     /* of the death */
} Life;

struct Lives {
        Life *slot;
        size_t cap; /* a power of two, or 0 */
        size_t n, n_dead;
        uint32_t era;
        bool suspended; /* lives_suspend() until lives_resume() */
};

#define LIVES_CAP_MIN 256u

int lives_new(Lives **ret) {
        Lives *l = calloc(1, sizeof(Lives));

        if (!l)
                return -ENOMEM;
        *ret = l;
        return 0;
}

Lives *lives_free(Lives *l) {
        if (l) {
                free(l->slot);
                free(l);
        }
        return NULL;
}

static size_t home(const Lives *l, pid_t tgid) {
        /* Fibonacci hashing: consecutive numbers (a storm's) spread out. */
        return (size_t) (((uint32_t) tgid * 2654435769u) >> 7) & (l->cap - 1);
}

static Life *find(const Lives *l, pid_t tgid) {
        if (l->cap == 0 || tgid <= 0)
                return NULL;
        for (size_t i = home(l, tgid);; i = (i + 1) & (l->cap - 1)) {
                if (l->slot[i].tgid == tgid)
                        return &l->slot[i];
                if (l->slot[i].tgid == 0)
                        return NULL;
        }
}

static void remove_at(Lives *l, size_t i) {
        size_t j = i;

        if (l->slot[i].threads == 0)
                l->n_dead--;
        l->n--;
        /* Pull back each later entry of the run that may sit in the hole. */
        for (;;) {
                size_t h;

                l->slot[i].tgid = 0;
                for (;;) {
                        j = (j + 1) & (l->cap - 1);
                        if (l->slot[j].tgid == 0)
                                return;
                        h = home(l, l->slot[j].tgid);
                        /* Stays when its home is cyclically in (i, j]. */
                        if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
                                continue;
                        break;
                }
                l->slot[i] = l->slot[j];
                i = j;
        }
}

static Life *insert(Lives *l, pid_t tgid);

static int grow(Lives *l) {
        size_t cap = l->cap ? l->cap * 2 : LIVES_CAP_MIN;
        Life *old = l->slot;
        size_t old_cap = l->cap;

        l->slot = calloc(cap, sizeof(Life));
        if (!l->slot) {
                l->slot = old;
                return -ENOMEM;
        }
        l->cap = cap;
        l->n = l->n_dead = 0;
        for (size_t i = 0; i < old_cap; i++)
                if (old[i].tgid != 0) {
                        Life *e = insert(l, old[i].tgid);

                        e->threads = old[i].threads;
                        e->era = old[i].era;
                        l->n_dead += e->threads == 0;
                }
        free(old);
        return 0;
}

/* The entry of tgid, new (alive, no threads yet) if it had none; NULL when
 * full or without memory. */
static Life *insert(Lives *l, pid_t tgid) {
        Life *e = find(l, tgid);
        size_t i;

        if (e)
                return e;
        if ((l->n + 1) * 2 > l->cap && (l->n >= LIVES_MAX || grow(l) < 0))
                return NULL;
        for (i = home(l, tgid); l->slot[i].tgid != 0; i = (i + 1) & (l->cap - 1))
                ;
        l->slot[i] = (Life) { .tgid = tgid, .threads = 1 };
        l->n++;
        return &l->slot[i];
}

void lives_fork(Lives *l, pid_t pid, pid_t tgid) {
        Life *e;

        if (!l || l->suspended || pid <= 0 || tgid <= 0)
                return;
        if (pid == tgid) {
                /* A new process: one thread. Its number was free: whatever
                 * the table said of it (a death) no longer holds. */
                e = insert(l, tgid);
                if (!e)
                        return; /* not counted (had it an entry, insert() gave it) */
                if (e->threads == 0)
                        l->n_dead--;
                e->threads = 1;
                return;
        }
        /* A new thread: its number is in use again. */
        if ((e = find(l, pid)) && e->threads == 0)
                remove_at(l, (size_t) (e - l->slot));
        if ((e = find(l, tgid)) && e->threads > 0)
                e->threads++;
}

void lives_exit(Lives *l, pid_t pid, pid_t tgid) {
        Life *e;

        (void) pid;
        if (!l || l->suspended || !(e = find(l, tgid)) || e->threads == 0)
                return;
        if (--e->threads == 0) {
                e->era = l->era;
                l->n_dead++;
        }
}

void lives_forget(Lives *l) {
        if (!l)
                return;
        free(l->slot);
        l->slot = NULL;
        l->cap = l->n = l->n_dead = 0;
}

void lives_suspend(Lives *l) {
        if (!l)
                return;
        lives_forget(l);
        l->suspended = true;
}

void lives_resume(Lives *l) {
        if (!l || !l->suspended)
                return;
        lives_forget(l); /* what came in between is not whole */
        l->suspended = false;
}

void lives_next_era(Lives *l) {
        if (!l)
                return;
        l->era++;
        /* Removal pulls later entries back into the hole: look at the
         * same slot again after one. */
        for (size_t i = 0; l->n_dead > 0 && i < l->cap;) {
                const Life *e = &l->slot[i];

                if (e->tgid != 0 && e->threads == 0 && l->era - e->era >= LIVES_ERAS)
                        remove_at(l, i);
                else
                        i++;
        }
}

bool lives_dead(const Lives *l, pid_t tgid) {
        const Life *e = l ? find(l, tgid) : NULL;

        return e && e->threads == 0;
}

LivesStats lives_stats(const Lives *l) {
        return l ? (LivesStats) { .counted = l->n - l->n_dead, .dead = l->n_dead } : (LivesStats) {};
}
