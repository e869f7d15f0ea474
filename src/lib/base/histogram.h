/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A latency histogram with fixed bounds, from 100 µs to 10 s in the 1,
 * 2.5, 5 steps Prometheus' client libraries use, and one bucket past the
 * last bound. Counts per bucket (not cumulative: the printer adds them
 * up), the count and the sum in nanoseconds. Plain value, no allocation:
 * a part of the structure that records into it. */

#include <stddef.h>
#include <stdint.h>

#define HISTOGRAM_BOUNDS 16u

typedef struct Histogram {
        uint64_t buckets[HISTOGRAM_BOUNDS + 1]; /* the last: over the last bound */
        uint64_t count;
        uint64_t sum_ns;
} Histogram;

/* The upper bounds, in nanoseconds (a value equal to a bound is in its
 * bucket), and as Prometheus' le label spells them in seconds. */
static const uint64_t histogram_bounds_ns[HISTOGRAM_BOUNDS] = {
        100000u,   250000u,   500000u,    1000000u,   2500000u,   5000000u,    10000000u,   25000000u,
        50000000u, 100000000u, 250000000u, 500000000u, 1000000000u, 2500000000u, 5000000000u, 10000000000u,
};
static const char *const histogram_bounds_le[HISTOGRAM_BOUNDS] = {
        "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
        "0.05",   "0.1",     "0.25",   "0.5",   "1",      "2.5",   "5",     "10",
};

static inline void histogram_observe(Histogram *h, uint64_t ns) {
        size_t i = 0;

        while (i < HISTOGRAM_BOUNDS && ns > histogram_bounds_ns[i])
                i++;
        h->buckets[i]++;
        h->count++;
        h->sum_ns += ns;
}
