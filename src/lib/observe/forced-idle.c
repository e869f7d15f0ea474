/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Forced idle readers (forced-idle.h): their own file because the
 * pipeline (the [when] forced_idle band), explain and status read them,
 * and the formats are the kernel's, nobody else's. */

#include "forced-idle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/util.h"

#define FORCED_IDLE_FILE_MAX (64u * 1024u)

/* The value after "key" at the start of a line ("key VALUE" or
 * "key  : VALUE"), or NULL. */
static const char *line_value(const char *text, size_t len, const char *key) {
        size_t kl = strlen(key);

        for (const char *l = text, *end = text + len; l && l < end;) {
                const char *nl = memchr(l, '\n', (size_t) (end - l));

                if ((size_t) (end - l) > kl && memcmp(l, key, kl) == 0 && (l[kl] == ' ' || l[kl] == ':' || l[kl] == '\t')) {
                        const char *v = l + kl;

                        while (v < end && (*v == ' ' || *v == '\t' || *v == ':'))
                                v++;
                        return v;
                }
                l = nl ? nl + 1 : NULL;
        }
        return NULL;
}

static int parse_u64_at(const char *v, uint64_t *ret) {
        char *end;
        unsigned long long x;

        if (!v || *v < '0' || *v > '9')
                return -EINVAL;
        errno = 0;
        x = strtoull(v, &end, 10);
        if (errno || (*end && *end != '\n' && *end != '.' && *end != ' '))
                return -EINVAL;
        *ret = x;
        return 0;
}

int forced_idle_parse_cpu_stat(const char *text, size_t len, ForcedIdleStat *ret) {
        ForcedIdleStat s = {};
        const char *v;
        int k;

        if (!(v = line_value(text, len, "usage_usec")))
                return -ENODATA;
        if ((k = parse_u64_at(v, &s.usage_usec)) < 0)
                return k;
        if ((v = line_value(text, len, "core_sched.force_idle_usec"))) {
                if ((k = parse_u64_at(v, &s.force_idle_usec)) < 0)
                        return k;
                s.has_force_idle = true;
        }
        *ret = s;
        return 0;
}

int forced_idle_read_cgroup(const Root *root, const char *mount, const char *cgroup, ForcedIdleStat *ret) {
        _cleanup_free_ char *rel = NULL, *text = NULL;
        size_t len = 0;
        int k;

        if (!mount || !cgroup)
                return -EINVAL;
        rel = strjoin(mount + (mount[0] == '/'), streq(cgroup, "/") ? "" : cgroup, "/cpu.stat");
        if (!rel)
                return -ENOMEM;
        if ((k = root_read_file(root, rel, FORCED_IDLE_FILE_MAX, &text, &len)) < 0)
                return k;
        return forced_idle_parse_cpu_stat(text, len, ret);
}

/* "core_forceidle_sum                           :          12.345678":
 * milliseconds and nanoseconds (kernel/sched/debug.c, PN_SCHEDSTAT). */
int forced_idle_parse_task_sched(const char *text, size_t len, uint64_t *ret_usec) {
        const char *v = line_value(text, len, "core_forceidle_sum");
        uint64_t ms, ns = 0;
        int k;

        if (!v)
                return -ENODATA;
        if ((k = parse_u64_at(v, &ms)) < 0)
                return k;
        v = strchr(v, '.');
        if (v && v[1] >= '0' && v[1] <= '9') {
                /* six digits of nanoseconds within the millisecond */
                unsigned digits = 0;

                for (v++; *v >= '0' && *v <= '9' && digits < 6; v++, digits++)
                        ns = ns * 10 + (uint64_t) (*v - '0');
                for (; digits < 6; digits++)
                        ns *= 10;
        }
        if (ms > UINT64_MAX / 1000u)
                return -EINVAL;
        *ret_usec = ms * 1000u + ns / 1000u;
        return 0;
}

int forced_idle_read_task(const Root *root, pid_t tid, uint64_t *ret_usec) {
        char rel[48];
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int k;

        if (tid <= 0)
                return -EINVAL;
        (void) snprintf(rel, sizeof(rel), "proc/%d/sched", (int) tid);
        if ((k = root_read_file(root, rel, FORCED_IDLE_FILE_MAX, &text, &len)) < 0)
                return k;
        return forced_idle_parse_task_sched(text, len, ret_usec);
}

void forced_idle_groups_free(ForcedIdleGroup *g, size_t n) {
        for (size_t i = 0; g && i < n; i++) {
                free(g[i].policy);
                free(g[i].path);
        }
        free(g);
}
