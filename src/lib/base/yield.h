/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Long work that lets another thread in between items: a scan of /proc
 * between processes, a pass's moves and cookies between processes. The
 * daemon's placer places new processes meanwhile, from the plan in force;
 * the work must then leave alone what changed since the facts it works
 * from were read (a process that exec'd, renamed itself or was born since
 * the scan): the next pass has it.
 *
 * The yield point is called only where the caller's state is whole: no
 * iterator into something the other thread may grow, the journal holding
 * every original of what was moved. Hooks NULL: never yields, nothing
 * changes meanwhile. The pipeline's fast path provides them
 * (pipeline/fastpath.h): observe and apply only call them. */

#include <stdbool.h>
#include <sys/types.h>

/* The reason given for what is left alone. */
#define YIELD_CHANGED_REASON "changed since the scan (exec, rename or new): the fast path places it, the next pass checks it"

typedef struct YieldHooks {
        void (*yield)(void *userdata);
        /* Did this process exec, rename itself or begin since the scan, or
         * did the scan leave it for the next (an exec storm's)? True for
         * every process when the caller lost count: leave all alone. */
        bool (*changed)(void *userdata, pid_t tgid);
        /* The same, false where the caller lost count: for what only
         * saves work by leaving a process alone (the journal's upkeep). */
        bool (*known_changed)(void *userdata, pid_t tgid);
        /* Has this process died whole, every thread exited (told by the
         * events; observe/lives.h), with no sign since the scan that its
         * number is in use again? Maybe not reaped: /proc lists it. False
         * when not known: look. */
        bool (*dead)(void *userdata, pid_t tgid);
        void *userdata;
} YieldHooks;

static inline void yield_now(const YieldHooks *h) {
        if (h && h->yield)
                h->yield(h->userdata);
}

static inline bool yield_changed(const YieldHooks *h, pid_t tgid) {
        return h && h->changed && h->changed(h->userdata, tgid);
}

static inline bool yield_known_changed(const YieldHooks *h, pid_t tgid) {
        return h && h->known_changed && h->known_changed(h->userdata, tgid);
}

static inline bool yield_known_dead(const YieldHooks *h, pid_t tgid) {
        return h && h->dead && h->dead(h->userdata, tgid);
}
