/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What exec-spawn, topod-probe (exec-probe.c) and exec-trace share: the
 * record a probe sends back, and the percentile summary all rulers print. */
#pragma once

#include <stdint.h>
#include <stdio.h>

/* The probe inherits the write end of the spawner's pipe as this fd. */
#define EXEC_PROBE_FD 3

enum {
        PROBE_PLACED = 1 << 0,       /* in the group (and, if asked, with a cookie) */
        PROBE_AT_START = 1 << 1,     /* already placed at the first look */
        PROBE_COOKIE = 1 << 2,       /* a cookie was required and seen */
        PROBE_NO_COOKIE = 1 << 3,    /* a cookie was asked for, the kernel has none */
        PROBE_BAD_CGROUP = 1 << 4,   /* /proc/self/cgroup unreadable */
};

/* Written in one write() (< PIPE_BUF, so atomic) by each probe. */
typedef struct ProbeRecord {
        int32_t pid;
        uint32_t flags;
        uint64_t latency_ns; /* probe's main() -> placed seen; timeout: time given up */
        uint64_t spawn_ns;   /* the spawner's posix_spawn() call -> placed seen */
        uint32_t polls;
        uint32_t reserved;
} ProbeRecord;

typedef struct LatencyStats {
        size_t n;
        double p50, p90, p99, max, mean; /* microseconds */
} LatencyStats;

/* Sorts ns[] in place; nearest-rank percentiles. n == 0 gives all zero. */
void latency_stats(uint64_t *ns, size_t n, LatencyStats *ret);
/* " p50=… p90=… p99=… max=… mean=…" with a key prefix, µs, one decimal. */
void latency_stats_kv(FILE *f, const char *prefix, const LatencyStats *s);
/* "p50": …, "p90": …, … (no braces) */
void latency_stats_json(FILE *f, const LatencyStats *s);
/* "p50 54.0  p90 80.1  p99 150.3  max 402.0 µs" */
void latency_stats_text(FILE *f, const LatencyStats *s);
