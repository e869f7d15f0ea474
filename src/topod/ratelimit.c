/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ratelimit.h"

static bool interval_over(const RateLimit *rl, uint64_t now_usec) {
        return now_usec < rl->begin_usec || now_usec - rl->begin_usec >= rl->interval_usec;
}

bool ratelimit_below(RateLimit *rl, uint64_t now_usec, unsigned *ret_suppressed) {
        unsigned held = 0;

        if (!rl->started || interval_over(rl, now_usec)) {
                held = rl->started ? rl->suppressed : 0;
                *rl = (RateLimit) { .interval_usec = rl->interval_usec, .burst = rl->burst, .begin_usec = now_usec,
                                    .started = true };
        }
        if (ret_suppressed)
                *ret_suppressed = held;
        if (rl->n < rl->burst) {
                rl->n++;
                return true;
        }
        rl->suppressed++;
        return false;
}

unsigned ratelimit_flush(RateLimit *rl, uint64_t now_usec) {
        unsigned held;

        if (!rl->started || rl->suppressed == 0 || !interval_over(rl, now_usec))
                return 0;
        held = rl->suppressed;
        rl->suppressed = 0;
        return held;
}
