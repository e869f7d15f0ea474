/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* AVX-512 work counted by the hardware: one per-thread counting event
 * (perf_event_open(2)) on each candidate thread, read at every scan.
 *
 * Why counters. /proc/<pid>/arch_status reports register state, not
 * instructions (observe/kernelcaps.h, KernelAvxEvidence); where the C
 * library leaves AVX-512 registers dirty it calls every process an AVX-512
 * user. A PMU counts the instructions themselves:
 *   - Intel (Skylake-SP and later cores with AVX-512):
 *     FP_ARITH_INST_RETIRED.512B_PACKED_DOUBLE and .512B_PACKED_SINGLE,
 *     512-bit packed floating-point operations retired;
 *   - AMD Zen 4 and Zen 5: RETIRED_FP_OPS_BY_WIDTH.PACK512_UOPS_RETIRED,
 *     512-bit packed FP micro-ops retired.
 * Names are resolved with libpfm4 (Debian's libpfm4), which knows each
 * CPU model's encoding; the first of the names above its tables resolve
 * for a PMU present here is used. Integer AVX-512 work and the string
 * functions' register moves count nothing: the class is about FP crunching,
 * whose frequency licence and port use hurt the SMT sibling.
 *
 * Where it cannot work, and what that means:
 *   - no event resolves: no PMU is visible (a VM without a virtual PMU),
 *     or a CPU without AVX-512 (-ENOENT);
 *   - perf_event_open() refuses: EACCES/EPERM, not permitted here
 *     (perf_event_paranoid, and no CAP_PERFMON: counting other users'
 *     threads needs it); ENOENT/EOPNOTSUPP/ENODEV/EINVAL, the PMU does not
 *     support the event here; EMFILE/ENFILE/ENOMEM, temporary (no room for
 *     another descriptor); ESRCH, the thread has gone.
 * The probe (counters_probe()) opens the event once on our own thread and
 * says which.
 *
 * The system calls go through CounterOps: tests use a fake counter source
 * with recorded readings behind the same interface. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/macro.h"

/* Counters held open at most: the candidates are busy threads, a few per
 * CPU; past this a candidate waits for room. */
#define COUNTERS_MAX 4096u

typedef struct CounterAttr {
        uint32_t type;   /* perf_event_attr.type: PERF_TYPE_RAW, PERF_TYPE_SOFTWARE, ... */
        uint64_t config, config1, config2;
} CounterAttr;

typedef struct CounterOps {
        /* A counting event on thread tid (user space only): an fd, or a
         * negative errno. */
        int (*open)(const CounterAttr *a, pid_t tid, void *userdata);
        /* Its count so far. */
        int (*read)(int fd, uint64_t *ret_value, void *userdata);
        void (*close)(int fd, void *userdata);
        void *userdata;
} CounterOps;

extern const CounterOps counter_ops_host;

typedef enum CounterState {
        COUNTER_AVAILABLE,   /* the event resolved and opened on our thread */
        COUNTER_NO_EVENT,    /* no AVX-512 event for a PMU present here */
        COUNTER_NOT_PERMITTED,
        COUNTER_UNSUPPORTED, /* resolved, but the kernel or PMU refuses it */
        _COUNTER_STATE_MAX,
} CounterState;

typedef struct CounterProbe {
        CounterState state;
        CounterAttr attr;    /* when AVAILABLE */
        char *event;         /* the event's name ("skx::FP_ARITH_INST_RETIRED:512B_PACKED_DOUBLE:..."), or NULL */
        int error;           /* the errno that decided, negative, or 0 */
        char *reason;        /* one line for humans */
} CounterProbe;

const char *counter_state_to_string(CounterState s);

/* Which AVX-512 event this machine has and whether we may open it:
 * resolved with libpfm4, then opened once on the calling thread (ops NULL:
 * counter_ops_host). 0 and *ret filled (state says which), or -ENOMEM. */
int counters_probe(const CounterOps *ops, CounterProbe *ret);
void counter_probe_done(CounterProbe *p);

/* What an open() error means (see above). */
CounterState counter_error_state(int error);
bool counter_error_is_temporary(int error);

/* Counters on a set of threads, by tid. */
typedef struct CounterSet CounterSet;

int counter_set_new(const CounterOps *ops, const CounterAttr *attr, CounterSet **ret);
CounterSet *counter_set_free(CounterSet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(CounterSet *, counter_set_free);

/* Hold counters on exactly these threads (sorted, each once): open those
 * new, close those no longer listed. A thread that has gone is skipped; a
 * permanent refusal of one thread (EACCES on another user's thread) is
 * remembered for it and not tried again while it lives in the list.
 * Returns how many are open, or -ENOMEM. */
int counter_set_sync(CounterSet *s, const pid_t *tids, size_t n);
/* The count of tid's counter: 0, -ENOENT (none open), or the read's errno. */
int counter_set_read(CounterSet *s, pid_t tid, uint64_t *ret_value);
size_t counter_set_size(const CounterSet *s);
/* Opens and their failures since counter_set_new(), for status and bench. */
typedef struct CounterSetStats {
        uint64_t opened, refused, reads;
} CounterSetStats;
CounterSetStats counter_set_stats(const CounterSet *s);
