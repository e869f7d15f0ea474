/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "procfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

/* A cursor over a bounded buffer. */
typedef struct Cursor {
        const char *p, *end;
} Cursor;

static void skip_spaces(Cursor *c) {
        while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
                c->p++;
}

static int next_u64(Cursor *c, uint64_t *ret) {
        uint64_t v = 0;
        const char *start;

        skip_spaces(c);
        start = c->p;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
                unsigned d = (unsigned) (*c->p - '0');

                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
                c->p++;
        }
        if (c->p == start)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int next_i64(Cursor *c, int64_t *ret) {
        bool neg = false;
        uint64_t v;
        int k;

        skip_spaces(c);
        if (c->p < c->end && *c->p == '-') {
                neg = true;
                c->p++;
        }
        k = next_u64(c, &v);
        if (k < 0)
                return k;
        if (v > (uint64_t) INT64_MAX)
                return -ERANGE;
        *ret = neg ? -(int64_t) v : (int64_t) v;
        return 0;
}

/* Skip one whitespace-separated field. */
static int skip_field(Cursor *c) {
        skip_spaces(c);
        if (c->p >= c->end || *c->p == '\n')
                return -EINVAL;
        while (c->p < c->end && *c->p != ' ' && *c->p != '\n')
                c->p++;
        return 0;
}

int procfs_parse_stat(const char *text, size_t len, ProcStat *ret) {
        ProcStat s = {};
        Cursor c = { text, text + len };
        const char *open, *close = NULL;
        int64_t i64;
        uint64_t u64;
        int k;

        /* "pid (comm) state ppid …": comm may contain anything, including
         * ')' — the last ')' ends it. */
        open = memchr(text, '(', len);
        if (!open)
                return -EINVAL;
        for (const char *p = text + len; p > open; p--)
                if (p[-1] == ')') {
                        close = p - 1;
                        break;
                }
        if (!close)
                return -EINVAL;

        c.end = open;
        if ((k = next_i64(&c, &i64)) < 0)
                return k;
        if (i64 <= 0 || i64 > INT32_MAX)
                return -EINVAL;
        s.pid = (pid_t) i64;
        {
                size_t n = (size_t) (close - open - 1);
                if (n >= sizeof(s.comm))
                        n = sizeof(s.comm) - 1;
                memcpy(s.comm, open + 1, n);
                s.comm[n] = '\0';
        }

        c = (Cursor) { close + 1, text + len };
        skip_spaces(&c);
        if (c.p >= c.end)
                return -EINVAL;
        s.state = *c.p++;
        /* Field numbers as in proc(5). */
        for (unsigned field = 4; field <= 41; field++) {
                switch (field) {
                case 4: /* ppid */
                        if ((k = next_i64(&c, &i64)) < 0)
                                return k;
                        if (i64 < 0 || i64 > INT32_MAX)
                                return -EINVAL;
                        s.ppid = (pid_t) i64;
                        break;
                case 9: /* flags */
                        if ((k = next_u64(&c, &u64)) < 0)
                                return k;
                        s.flags = (unsigned) u64;
                        break;
                case 14:
                        if ((k = next_u64(&c, &s.utime)) < 0)
                                return k;
                        break;
                case 15:
                        if ((k = next_u64(&c, &s.stime)) < 0)
                                return k;
                        break;
                case 19: /* nice */
                        if ((k = next_i64(&c, &i64)) < 0)
                                return k;
                        if (i64 < -20 || i64 > 19)
                                return -EINVAL;
                        s.nice = (int) i64;
                        break;
                case 20:
                        if ((k = next_u64(&c, &u64)) < 0)
                                return k;
                        s.num_threads = (unsigned) MIN(u64, (uint64_t) UINT32_MAX);
                        break;
                case 22:
                        if ((k = next_u64(&c, &s.start_time)) < 0)
                                return k;
                        break;
                case 39: /* processor */
                        if ((k = next_i64(&c, &i64)) < 0)
                                return k;
                        s.processor = (int) MAX(MIN(i64, (int64_t) INT32_MAX), (int64_t) -1);
                        break;
                case 40:
                        if ((k = next_u64(&c, &u64)) < 0)
                                return k;
                        s.rt_priority = (unsigned) MIN(u64, 99u);
                        break;
                case 41:
                        if ((k = next_u64(&c, &u64)) < 0)
                                return k;
                        s.policy = (unsigned) MIN(u64, 255u);
                        break;
                default:
                        if ((k = skip_field(&c)) < 0)
                                return k;
                }
        }
        *ret = s;
        return 0;
}

/* Find "Key:" at the start of a line; returns the cursor after it. */
static bool find_line(const char *text, size_t len, const char *key, Cursor *ret) {
        size_t klen = strlen(key);
        const char *p = text, *end = text + len;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *le = nl ? nl : end;

                if ((size_t) (le - p) >= klen && memcmp(p, key, klen) == 0) {
                        *ret = (Cursor) { p + klen, le };
                        return true;
                }
                p = le + 1;
        }
        return false;
}

int procfs_parse_status(const char *text, size_t len, ProcStatus *ret) {
        ProcStatus s = {};
        Cursor c;
        uint64_t a, b;
        int k;

        if (find_line(text, len, "Tgid:", &c)) {
                if ((k = next_u64(&c, &a)) < 0)
                        return k;
                if (a > INT32_MAX)
                        return -EINVAL;
                s.tgid = (pid_t) a;
        }
        if (find_line(text, len, "Uid:", &c)) {
                if ((k = next_u64(&c, &a)) < 0 || (k = next_u64(&c, &b)) < 0)
                        return k;
                if (a > UINT32_MAX || b > UINT32_MAX)
                        return -EINVAL;
                s.uid = (uid_t) a;
                s.euid = (uid_t) b;
                s.has_uid = true;
        }
        if (find_line(text, len, "Gid:", &c)) {
                if ((k = next_u64(&c, &a)) < 0 || (k = next_u64(&c, &b)) < 0)
                        return k;
                if (a > UINT32_MAX || b > UINT32_MAX)
                        return -EINVAL;
                s.gid = (gid_t) a;
                s.egid = (gid_t) b;
        }
        if (find_line(text, len, "voluntary_ctxt_switches:", &c) &&
            (k = next_u64(&c, &s.voluntary_ctxt)) >= 0 &&
            find_line(text, len, "nonvoluntary_ctxt_switches:", &c) &&
            (k = next_u64(&c, &s.nonvoluntary_ctxt)) >= 0)
                s.has_ctxt = true;
        *ret = s;
        return 0;
}

int procfs_parse_schedstat(const char *text, size_t len, ProcSchedstat *ret) {
        Cursor c = { text, text + len };
        ProcSchedstat s;
        int k;

        if ((k = next_u64(&c, &s.run_ns)) < 0 || (k = next_u64(&c, &s.wait_ns)) < 0 ||
            (k = next_u64(&c, &s.timeslices)) < 0)
                return k;
        *ret = s;
        return 0;
}

int procfs_parse_arch_status(const char *text, size_t len, ProcAvx *ret_kind, uint64_t *ret_ms) {
        Cursor c;
        int64_t v;
        int k;

        if (!find_line(text, len, "AVX512_elapsed_ms:", &c)) {
                *ret_kind = PROC_AVX_NO_LINE;
                return 0;
        }
        if ((k = next_i64(&c, &v)) < 0)
                return k;
        if (v == -1) {
                *ret_kind = PROC_AVX_NEVER;
                return 0;
        }
        if (v < 0)
                return -EINVAL;
        *ret_kind = PROC_AVX_ELAPSED;
        *ret_ms = (uint64_t) v;
        return 0;
}

int procfs_parse_cgroup(const char *text, size_t len, char **ret) {
        const char *p = text, *end = text + len;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *le = nl ? nl : end;

                if (le - p >= 3 && memcmp(p, "0::", 3) == 0) {
                        char *s = strndup(p + 3, (size_t) (le - p - 3));

                        if (!s)
                                return -ENOMEM;
                        if (memchr(p + 3, '\0', (size_t) (le - p - 3))) {
                                free(s);
                                return -EINVAL;
                        }
                        *ret = s;
                        return 0;
                }
                p = le + 1;
        }
        return -ENODATA;
}

int procfs_format_cmdline(const char *raw, size_t len, size_t max, char **ret) {
        char *s;
        size_t n;

        while (len > 0 && raw[len - 1] == '\0')
                len--;
        n = MIN(len, max);
        s = malloc(n + 1);
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char) raw[i];

                s[i] = ch == '\0' ? ' ' : (ch < 0x20 || ch == 0x7f) ? '?' : (char) ch;
        }
        s[n] = '\0';
        *ret = s;
        return 0;
}
