/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Checks over a parsed PolicySet, beyond what one file can say: conflicts
 * and shadowing between policies, and, when given the machine, what this
 * kernel and topology make of them. Pure: the Topology and KernelCaps are
 * parameters (NULL for an offline check); the findings are appended to a
 * Diagnostics list. Errors in single files are the parser's (policy.h). */

#include <stdint.h>

#include "diag.h"
#include "observe/kernelcaps.h"
#include "observe/topology.h"
#include "policy.h"

/* Offline checks, always run:
 *   conflict             two enabled policies that can be in force together set the
 *                        same feature, cgroup_mode or [kernel] setting differently (the
 *                        earlier in precedence wins; the warning is at the loser's line)
 *   shadowed             an enabled policy whose [place] is never used: one ahead of it
 *                        matches every task it matches whenever it is in force
 *   unknown-cgroup-mode  (offline only) a cgroup_mode word outside the modes topod knows
 * With the machine (topology and/or caps non-NULL), for enabled policies:
 *   unknown-feature      a [features] name the kernel does not list
 *   no-features          sched features are not readable on this kernel
 *   no-cgroup-mode       cgroup_mode on a kernel without it
 *   unknown-cgroup-mode  a mode the kernel does not list
 *   no-setting           a [kernel] setting this kernel does not have (removed, too
 *                        old, or built without it: base/sched-settings.h says which)
 *   setting-unknown      a [kernel] setting the probe cannot tell is there (not root: EACCES)
 *   setting-read-only    a [kernel] setting whose file does not open for writing (lockdown)
 *   unknown-choice       a word the kernel's file (preempt) does not list
 *   never-holds          a [when] line this machine can never satisfy
 *   no-core-sched        cookie != none where core scheduling is unavailable
 *   no-schedstats        a [when] forced_idle band where the kernel accounts no forced
 *                        idle (kernel.sched_schedstats off): it always reads 0%
 *   avx-untellable       class = avx where arch_status cannot tell AVX-512 work
 *                        (polluted by the C library, or no AVX-512 line) and no
 *                        other evidence exists: the classifier never votes avx
 *   cpu-not-present      an explicit cpu list naming CPUs the machine lacks
 * kernel_version is POLICY_KERNEL_VERSION() of the running kernel, 0 when
 * unknown (kernel lines are then not judged). Returns 0 or -ENOMEM. */
int check_policy_set(const PolicySet *s, const Topology *topology, const KernelCaps *caps, uint64_t kernel_version,
                     Diagnostics *d);

/* The machine facts a [when] sees, from the observed values (load unset). */
void check_machine_from(const Topology *topology, const KernelCaps *caps, uint64_t kernel_version, PolicyMachine *ret);
