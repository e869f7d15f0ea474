/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Shared by the fuzz targets: the entry point's prototype and a fixed
 * machine with every facility (built once, never freed: fuzz targets live
 * for the whole process). */

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "observe/kernelcaps.h"
#include "observe/topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline const Topology *fuzz_topology(void) {
        static Topology t;

        if (!t.cpus) {
                t.n_packages = 2;
                t.n_numa_nodes = 2;
                t.n_llcs = 8;
                t.n_pus = 64;
                t.max_threads_per_core = 2;
                t.cpu_vendor = (char *) "AuthenticAMD";
                if (bitmap_parse_list("0-63", &t.cpus) < 0)
                        abort();
        }
        return &t;
}

static inline const KernelCaps *fuzz_caps(void) {
        static char *features[] = { (char *) "TTWU_QUEUE", (char *) "NO_HRTICK", (char *) "SHARED_RUNQ", NULL };
        static char *modes[] = { (char *) "up", (char *) "smp", (char *) "concur", (char *) "max", (char *) "tasks", NULL };
        static const KernelCaps c = {
                .core_sched = { .available = true },
                .smt = { .available = true },
                .smt_active = true,
                .sched_features = { .available = true },
                .features_readable = true,
                .features = features,
                .cgroup_mode = { .available = true },
                .cgroup_modes = modes,
        };

        return &c;
}
