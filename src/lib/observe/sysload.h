/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* How busy the whole machine was between two readings of /proc/stat: the
 * daemon's idle gate. When nothing but topod itself ran for a sample
 * interval, no thread's class can have moved and no placement can be
 * wrong, so the scan of every thread is skipped (process events still
 * place new tasks, and a full scan still comes every rescan_interval).
 * /proc/stat counts CPU in clock ticks (USER_HZ), which charge whoever is on
 * the CPU at the tick, and context switches exactly: a busy thread shows in
 * the first, a thread that wakes often in the second. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/root.h"

typedef struct SysLoad {
        uint64_t busy_ticks; /* user nice system irq softirq steal, all CPUs */
        uint64_t ctxt;       /* context switches since boot */
} SysLoad;

/* The "cpu " and "ctxt" lines of /proc/stat. -EINVAL when missing. */
int sysload_parse(const char *text, size_t len, SysLoad *ret);
int sysload_read(const Root *root, SysLoad *ret);

/* Did anything but ourselves run between a and b? own_usec: our own CPU
 * time over the same span (getrusage), slack_ticks: what to forgive
 * (tick rounding: one per CPU-second of the span is plenty). */
bool sysload_idle(const SysLoad *a, const SysLoad *b, uint64_t own_usec, uint64_t slack_ticks, long ticks_per_sec);

/* And did few enough context switches happen besides ours? A thread that
 * uses little CPU but wakes often (a latency thread: hundreds of wake-ups
 * a second, well under a tick of CPU) shows here, not in the ticks.
 * own_switches: ours (each of our sleeps costs the CPU two: away from us
 * and back); max_switches: what the rest of the machine may do. */
bool sysload_quiet(const SysLoad *a, const SysLoad *b, uint64_t own_switches, uint64_t max_switches);

/* The load that policies' [when] load = bands name: the kernel's 1-minute
 * load average (/proc/loadavg: runnable and uninterruptible threads) per
 * CPU, in percent: 100 is one thread per CPU. Parse the file's text into
 * the load average in hundredths ("1.23 ..." gives 123); -EINVAL when it
 * is not there. */
int sysload_parse_loadavg(const char *text, size_t len, uint64_t *ret_centi);
/* Read it and divide by n_cpus (> 0): the percent, at most
 * SYSLOAD_PERCENT_MAX. */
#define SYSLOAD_PERCENT_MAX 100000u
int sysload_read_percent(const Root *root, unsigned n_cpus, unsigned *ret_percent);
