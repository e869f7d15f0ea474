/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A burst of messages per interval, then silence and, once the interval
 * is over, a count of what was held back. Pure: the caller gives the time
 * (CLOCK_MONOTONIC, microseconds), so the tests give theirs. */

#include <stdbool.h>
#include <stdint.h>

typedef struct RateLimit {
        uint64_t interval_usec;
        unsigned burst;
        uint64_t begin_usec; /* of the interval under way */
        unsigned n;          /* let through in it */
        unsigned suppressed; /* held back in it */
        bool started;
} RateLimit;

#define RATELIMIT_INIT(interval, b) ((RateLimit) { .interval_usec = (interval), .burst = (b) })

/* May a message go out at now? *ret_suppressed: when now begins a new
 * interval, how many the one before held back (to be said first), else 0.
 * A clock that goes back begins a new interval. */
bool ratelimit_below(RateLimit *rl, uint64_t now_usec, unsigned *ret_suppressed);

/* How many an interval that has ended by now held back (0: none, or the
 * interval still runs); that count is then forgotten. For the end of a
 * batch, so that a count is said even when no message follows. */
unsigned ratelimit_flush(RateLimit *rl, uint64_t now_usec);
