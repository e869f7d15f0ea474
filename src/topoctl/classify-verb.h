/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topoctl classify: watch the machine's threads for a few sample intervals
 * and print each one's class, the evidence, and the policy whose [match] it
 * meets — what the daemon decides, without changing anything. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ClassifyVerbArgs {
        const char *root;
        const char *config;   /* topod.conf; NULL: /etc/topod/topod.conf below root, if present */
        const char *policies; /* a policies dir or file; NULL: the config's policies_dir */
        unsigned samples;     /* scans after the first; 0: enough to fill the window and dwell */
        uint64_t interval_usec; /* 0: the config's sample_interval */
        pid_t pid;            /* 0: every thread; else that process (tgid) or thread */
        bool all;             /* kernel threads too */
        bool events;          /* list the proc-connector events seen meanwhile */
        bool json;
} ClassifyVerbArgs;

int topoctl_classify(const ClassifyVerbArgs *a);
