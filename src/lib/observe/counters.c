/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Hardware counters of AVX-512 work (counters.h): event names resolved by
 * libpfm4, per-thread counting events held open for the candidates. */

#include "counters.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/util.h"

/* The AVX-512 FP events, in the order tried (counters.h says whose). */
static const char *const avx512_events[] = {
        "FP_ARITH_INST_RETIRED:512B_PACKED_DOUBLE:512B_PACKED_SINGLE",
        "RETIRED_FP_OPS_BY_WIDTH:PACK512_UOPS_RETIRED",
};

static int host_open(const CounterAttr *a, pid_t tid, void *userdata) {
        struct perf_event_attr attr = {
                .size = sizeof(attr),
                .type = a->type,
                .config = a->config,
                .config1 = a->config1,
                .config2 = a->config2,
                .exclude_kernel = 1,
                .exclude_hv = 1,
        };
        long fd;

        (void) userdata;
        fd = syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
        return fd < 0 ? -errno : (int) fd;
}

static int host_read(int fd, uint64_t *ret_value, void *userdata) {
        uint64_t v;
        ssize_t n;

        (void) userdata;
        n = read(fd, &v, sizeof(v));
        if (n < 0)
                return -errno;
        if (n != sizeof(v))
                return -EIO;
        *ret_value = v;
        return 0;
}

static void host_close(int fd, void *userdata) {
        (void) userdata;
        (void) close(fd);
}

const CounterOps counter_ops_host = { .open = host_open, .read = host_read, .close = host_close };

const char *counter_state_to_string(CounterState s) {
        static const char *const names[_COUNTER_STATE_MAX] = {
                [COUNTER_AVAILABLE] = "available",
                [COUNTER_NO_EVENT] = "no-event",
                [COUNTER_NOT_PERMITTED] = "not-permitted",
                [COUNTER_UNSUPPORTED] = "unsupported",
        };
        return s >= 0 && s < _COUNTER_STATE_MAX ? names[s] : "unknown";
}

CounterState counter_error_state(int error) {
        switch (error) {
        case 0:
                return COUNTER_AVAILABLE;
        case -EACCES:
        case -EPERM:
                return COUNTER_NOT_PERMITTED;
        default:
                return COUNTER_UNSUPPORTED;
        }
}

bool counter_error_is_temporary(int error) {
        return error == -EMFILE || error == -ENFILE || error == -ENOMEM || error == -EAGAIN || error == -EINTR ||
               error == -EBUSY;
}

_printf_(2, 3) static int set_reason(CounterProbe *p, const char *fmt, ...) {
        va_list ap;
        char *s;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        free(p->reason);
        p->reason = s;
        return 0;
}

/* The first AVX-512 event libpfm4 encodes for a PMU present here. */
static int resolve_event(CounterProbe *p) {
        int r = pfm_initialize();

        if (r != PFM_SUCCESS) {
                p->state = COUNTER_NO_EVENT;
                p->error = -ENOENT;
                return set_reason(p, "libpfm4 cannot start (%s): no counter evidence", pfm_strerror(r));
        }
        for (size_t i = 0; i < ELEMENTSOF(avx512_events); i++) {
                struct perf_event_attr attr = { .size = sizeof(attr) };
                char *fstr = NULL;
                pfm_perf_encode_arg_t arg = { .attr = &attr, .fstr = &fstr, .size = sizeof(arg) };

                if (pfm_get_os_event_encoding(avx512_events[i], PFM_PLM3, PFM_OS_PERF_EVENT, &arg) != PFM_SUCCESS)
                        continue;
                p->attr = (CounterAttr) { attr.type, attr.config, attr.config1, attr.config2 };
                p->event = fstr ? fstr : strdup(avx512_events[i]);
                return p->event ? 1 : -ENOMEM;
        }
        p->state = COUNTER_NO_EVENT;
        p->error = -ENOENT;
        return set_reason(p, "no AVX-512 FP event for a PMU present here (libpfm4 knows Intel's "
                             "FP_ARITH_INST_RETIRED.512B_* and AMD Zen 4/5's RETIRED_FP_OPS_BY_WIDTH.PACK512; "
                             "none resolves: no PMU visible, as in a VM without a virtual PMU, or a CPU without AVX-512)");
}

int counters_probe(const CounterOps *ops, CounterProbe *ret) {
        CounterProbe p = {};
        int k, fd;

        ops = ops ?: &counter_ops_host;
        k = resolve_event(&p);
        if (k <= 0) {
                if (k < 0) {
                        counter_probe_done(&p);
                        return k;
                }
                *ret = p;
                return 0;
        }
        fd = ops->open(&p.attr, 0, ops->userdata);
        if (fd >= 0) {
                ops->close(fd, ops->userdata);
                p.state = COUNTER_AVAILABLE;
                k = set_reason(&p, "%s counts AVX-512 FP operations per thread", p.event);
        } else {
                p.state = counter_error_state(fd);
                p.error = fd;
                k = set_reason(&p, p.state == COUNTER_NOT_PERMITTED
                                           ? "%s: perf_event_open() not permitted here (%s: perf_event_paranoid, "
                                             "and no CAP_PERFMON)"
                                           : "%s: perf_event_open() refuses it here (%s: the PMU does not support it)",
                               p.event, errno_name(fd));
        }
        if (k < 0) {
                counter_probe_done(&p);
                return k;
        }
        *ret = p;
        return 0;
}

void counter_probe_done(CounterProbe *p) {
        free(p->event);
        free(p->reason);
        p->event = p->reason = NULL;
}

/* ---- the set ------------------------------------------------------------- */

typedef struct Counter {
        pid_t tid;
        int fd;    /* -1: refused (error) */
        int error;
} Counter;

struct CounterSet {
        CounterOps ops;
        CounterAttr attr;
        Counter *items; /* sorted by tid */
        size_t n;
        CounterSetStats stats;
};

int counter_set_new(const CounterOps *ops, const CounterAttr *attr, CounterSet **ret) {
        CounterSet *s = calloc(1, sizeof(CounterSet));

        if (!s)
                return -ENOMEM;
        s->ops = ops ? *ops : counter_ops_host;
        s->attr = *attr;
        *ret = s;
        return 0;
}

CounterSet *counter_set_free(CounterSet *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n; i++)
                if (s->items[i].fd >= 0)
                        s->ops.close(s->items[i].fd, s->ops.userdata);
        free(s->items);
        free(s);
        return NULL;
}

static const Counter *find(const CounterSet *s, pid_t tid) {
        size_t lo = 0, hi = s->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (s->items[mid].tid == tid)
                        return &s->items[mid];
                if (s->items[mid].tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

int counter_set_sync(CounterSet *s, const pid_t *tids, size_t n) {
        size_t m = MIN(n, (size_t) COUNTERS_MAX), i = 0, j = 0, w = 0, open = 0;
        Counter *items = calloc(MAX(m, (size_t) 1), sizeof(Counter));

        if (!items)
                return -ENOMEM;
        /* Merge: kept, new (opened), dropped (closed). */
        while (i < s->n || j < m) {
                if (j >= m || (i < s->n && s->items[i].tid < tids[j])) {
                        if (s->items[i].fd >= 0)
                                s->ops.close(s->items[i].fd, s->ops.userdata);
                        i++;
                        continue;
                }
                if (i < s->n && s->items[i].tid == tids[j]) {
                        items[w++] = s->items[i++];
                        j++;
                        continue;
                }
                {
                        int fd = s->ops.open(&s->attr, tids[j], s->ops.userdata);

                        if (fd == -ESRCH) { /* gone */
                                j++;
                                continue;
                        }
                        if (fd < 0 && counter_error_is_temporary(fd)) { /* tried again at the next sync */
                                s->stats.refused++;
                                j++;
                                continue;
                        }
                        items[w++] = (Counter) { tids[j], fd >= 0 ? fd : -1, fd >= 0 ? 0 : fd };
                        if (fd >= 0)
                                s->stats.opened++;
                        else
                                s->stats.refused++;
                        j++;
                }
        }
        free(s->items);
        s->items = items;
        s->n = w;
        for (size_t k = 0; k < w; k++)
                open += items[k].fd >= 0;
        return (int) open;
}

int counter_set_read(CounterSet *s, pid_t tid, uint64_t *ret_value) {
        const Counter *c = find(s, tid);

        if (!c)
                return -ENOENT;
        if (c->fd < 0)
                return c->error;
        s->stats.reads++;
        return s->ops.read(c->fd, ret_value, s->ops.userdata);
}

size_t counter_set_size(const CounterSet *s) {
        size_t open = 0;

        for (size_t i = 0; i < s->n; i++)
                open += s->items[i].fd >= 0;
        return open;
}

CounterSetStats counter_set_stats(const CounterSet *s) {
        return s->stats;
}
