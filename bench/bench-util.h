/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the benches measure with: the process's CPU time, the wall clock,
 * and its memory as /proc/self/status says. Header only. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double cpu_seconds(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static inline double wall_seconds(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* A "Key:" line of /proc/self/status in KiB ("VmRSS:", "VmHWM:"), or -1. */
static inline long status_kib(const char *key) {
        char line[256];
        long v = -1;
        FILE *f = fopen("/proc/self/status", "re");

        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, strlen(key)) == 0)
                        v = strtol(line + strlen(key), NULL, 10);
        fclose(f);
        return v;
}
