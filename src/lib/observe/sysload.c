/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sysload.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

#define SYSLOAD_TEXT_MAX (1024u * 1024u) /* thousands of CPUs, one line each */

/* A decimal number at *p, not past end; advances *p. -ERANGE on overflow. */
static int parse_u64(const char **p, const char *end, uint64_t *ret) {
        uint64_t v = 0;
        const char *q = *p;

        if (q >= end || *q < '0' || *q > '9')
                return -EINVAL;
        for (; q < end && *q >= '0' && *q <= '9'; q++) {
                if (v > (UINT64_MAX - (uint64_t) (*q - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*q - '0');
        }
        *p = q;
        *ret = v;
        return 0;
}

/* The line starting with key (at the start of a line), or NULL. */
static const char *find_line(const char *text, size_t len, const char *key) {
        size_t k = strlen(key);

        for (const char *p = text; p && (size_t) (p - text) + k <= len;) {
                if (strncmp(p, key, k) == 0)
                        return p + k;
                p = memchr(p, '\n', len - (size_t) (p - text));
                if (p)
                        p++;
        }
        return NULL;
}

int sysload_parse(const char *text, size_t len, SysLoad *ret) {
        uint64_t v[8] = {};
        const char *p, *end = text + len;
        unsigned n = 0;

        p = find_line(text, len, "cpu ");
        if (!p)
                return -EINVAL;
        /* user nice system idle iowait irq softirq steal [guest guest_nice] */
        while (n < ELEMENTSOF(v) && p < end) {
                while (p < end && *p == ' ')
                        p++;
                if (parse_u64(&p, end, &v[n]) < 0)
                        break;
                n++;
        }
        if (n < 4)
                return -EINVAL;
        *ret = (SysLoad) { .busy_ticks = v[0] + v[1] + v[2] + v[5] + v[6] + v[7] };
        p = find_line(text, len, "ctxt ");
        if (p)
                (void) parse_u64(&p, end, &ret->ctxt);
        return 0;
}

int sysload_read(const Root *root, SysLoad *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int k;

        k = root_read_file(root, "proc/stat", SYSLOAD_TEXT_MAX, &text, &len);
        if (k < 0)
                return k;
        return sysload_parse(text, len, ret);
}

int sysload_parse_loadavg(const char *text, size_t len, uint64_t *ret_centi) {
        const char *p = text, *end = text + len;
        uint64_t whole, frac = 0;
        unsigned digits = 0;

        int k = parse_u64(&p, end, &whole);

        if (k < 0)
                return k;
        if (whole > UINT64_MAX / 100 - 1)
                return -ERANGE;
        if (p < end && *p == '.')
                for (p++; p < end && *p >= '0' && *p <= '9'; p++)
                        if (digits < 2) {
                                frac = frac * 10 + (uint64_t) (*p - '0');
                                digits++;
                        }
        if (digits == 1)
                frac *= 10;
        if (p < end && *p != ' ' && *p != '\n')
                return -EINVAL;
        *ret_centi = whole * 100 + frac;
        return 0;
}

int sysload_read_percent(const Root *root, unsigned n_cpus, unsigned *ret_percent) {
        _cleanup_free_ char *text = NULL;
        uint64_t centi;
        size_t len;
        int k;

        if (n_cpus == 0)
                return -EINVAL;
        k = root_read_file(root, "proc/loadavg", SYSLOAD_TEXT_MAX, &text, &len);
        if (k < 0)
                return k;
        if ((k = sysload_parse_loadavg(text, len, &centi)) < 0)
                return k;
        *ret_percent = (unsigned) MIN(centi / n_cpus, (uint64_t) SYSLOAD_PERCENT_MAX);
        return 0;
}

bool sysload_idle(const SysLoad *a, const SysLoad *b, uint64_t own_usec, uint64_t slack_ticks, long ticks_per_sec) {
        uint64_t busy, own;

        if (b->busy_ticks < a->busy_ticks || ticks_per_sec <= 0)
                return false; /* counters went back: say busy, scan */
        busy = b->busy_ticks - a->busy_ticks;
        own = own_usec * (uint64_t) ticks_per_sec / 1000000u;
        return busy <= own + slack_ticks;
}

bool sysload_quiet(const SysLoad *a, const SysLoad *b, uint64_t own_switches, uint64_t max_switches) {
        if (b->ctxt < a->ctxt)
                return false;
        return b->ctxt - a->ctxt <= 2 * own_switches + max_switches;
}
