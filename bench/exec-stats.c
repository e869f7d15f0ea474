/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The percentile summary every exec ruler prints (exec-bench.h), in a file
 * of its own so that exec-spawn and exec-trace print it alike. */
#include <stdlib.h>
#include <string.h>

#include "exec-bench.h"

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least pct% of the values at or
 * below it. */
static double rank(const uint64_t *sorted, size_t n, unsigned pct) {
        size_t k = (n * pct + 99) / 100;

        return (double) sorted[k ? k - 1 : 0] / 1e3;
}

void latency_stats(uint64_t *ns, size_t n, LatencyStats *ret) {
        double sum = 0;

        memset(ret, 0, sizeof(*ret));
        ret->n = n;
        if (n == 0)
                return;
        qsort(ns, n, sizeof(*ns), cmp_u64);
        for (size_t i = 0; i < n; i++)
                sum += (double) ns[i];
        ret->p50 = rank(ns, n, 50);
        ret->p90 = rank(ns, n, 90);
        ret->p99 = rank(ns, n, 99);
        ret->max = (double) ns[n - 1] / 1e3;
        ret->mean = sum / (double) n / 1e3;
}

void latency_stats_kv(FILE *f, const char *prefix, const LatencyStats *s) {
        fprintf(f, " %sp50=%.1f %sp90=%.1f %sp99=%.1f %smax=%.1f %smean=%.1f", prefix, s->p50, prefix, s->p90, prefix,
                s->p99, prefix, s->max, prefix, s->mean);
}

void latency_stats_json(FILE *f, const LatencyStats *s) {
        fprintf(f, "\"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f, \"max\": %.1f, \"mean\": %.1f", s->p50, s->p90, s->p99,
                s->max, s->mean);
}

void latency_stats_text(FILE *f, const LatencyStats *s) {
        fprintf(f, "p50 %.1f  p90 %.1f  p99 %.1f  max %.1f µs", s->p50, s->p90, s->p99, s->max);
}
