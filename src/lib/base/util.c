/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *errno_name(int err) {
        const char *n;

        if (err < 0)
                err = -err;
        n = strerrorname_np(err);
        return n ? n : "E?";
}

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **p = l; *p; p++)
                free(*p);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;

        if (l)
                while (l[n])
                        n++;
        return n;
}

bool strv_contains(char *const *l, const char *s) {
        if (l)
                for (char *const *p = l; *p; p++)
                        if (streq(*p, s))
                                return true;
        return false;
}

int strv_consume(char ***l, char *s) {
        size_t n = strv_length(*l);
        char **nl;

        if (!s)
                return -ENOMEM;
        nl = realloc(*l, (n + 2) * sizeof(char *));
        if (!nl) {
                free(s);
                return -ENOMEM;
        }
        nl[n] = s;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

int strv_push_dup(char ***l, const char *s) {
        return strv_consume(l, strdup(s));
}

int strv_split_ws(const char *s, size_t max_items, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        size_t n = 0;

        if (!l)
                return -ENOMEM;
        for (;;) {
                size_t len;
                int k;

                while (isspace((unsigned char) *s))
                        s++;
                if (!*s)
                        break;
                len = 0;
                while (s[len] && !isspace((unsigned char) s[len]))
                        len++;
                if (++n > max_items)
                        return -E2BIG;
                k = strv_consume(&l, strndup(s, len));
                if (k < 0)
                        return k;
                s += len;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int strv_join(char *const *l, const char *sep, char **ret) {
        size_t len = 1, seplen = strlen(sep);
        char *s, *p;

        for (char *const *i = l; i && *i; i++)
                len += strlen(*i) + seplen;
        s = malloc(len);
        if (!s)
                return -ENOMEM;
        p = s;
        for (char *const *i = l; i && *i; i++) {
                if (i != l)
                        p = stpcpy(p, sep);
                p = stpcpy(p, *i);
        }
        *p = '\0';
        *ret = s;
        return 0;
}

char *strjoin_internal(const char *first, ...) {
        va_list ap;
        size_t len = 0;
        char *s, *p;

        va_start(ap, first);
        for (const char *x = first; x; x = va_arg(ap, const char *))
                len += strlen(x);
        va_end(ap);
        s = p = malloc(len + 1);
        if (!s)
                return NULL;
        va_start(ap, first);
        for (const char *x = first; x; x = va_arg(ap, const char *))
                p = stpcpy(p, x);
        va_end(ap);
        return s;
}

int strjoin_buf_internal(char *buf, size_t size, const char *first, ...) {
        va_list ap;
        size_t len = 0;

        if (size == 0)
                return -ENAMETOOLONG;
        va_start(ap, first);
        for (const char *x = first; x; x = va_arg(ap, const char *)) {
                size_t n = strlen(x);

                if (n >= size - len) {
                        va_end(ap);
                        buf[0] = '\0';
                        return -ENAMETOOLONG;
                }
                memcpy(buf + len, x, n);
                len += n;
        }
        va_end(ap);
        buf[len] = '\0';
        return len > (size_t) INT_MAX ? -ENAMETOOLONG : (int) len;
}

size_t format_u64(char buf[static 21], uint64_t v) {
        char d[20];
        size_t n = 0;

        do
                d[n++] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        for (size_t i = 0; i < n; i++)
                buf[i] = d[n - 1 - i];
        buf[n] = '\0';
        return n;
}

bool path_components_safe(const char *p) {
        for (const char *c = p;;) {
                size_t len = strcspn(c, "/");

                if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!c[len])
                        return true;
                c += len + 1;
        }
}

char *strstrip(char *s) {
        char *e;

        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = '\0';
        return s;
}

bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

void fd_bin_put(FdBin *bin, int fd) {
        if (fd < 0)
                return;
        if (!bin || bin->n >= FD_BIN_MAX) {
                closep(&fd);
                return;
        }
        bin->fd[bin->n++] = fd;
}

void fd_bin_empty(FdBin *bin) {
        size_t i = 0;

        if (!bin || bin->n == 0)
                return;
        /* In order, by an insertion sort: they mostly come in order (the
         * kernel gives the lowest free number), where qsort() cost more
         * than the closing. */
        for (size_t a = 1; a < bin->n; a++) {
                int fd = bin->fd[a];
                size_t b = a;

                for (; b > 0 && bin->fd[b - 1] > fd; b--)
                        bin->fd[b] = bin->fd[b - 1];
                bin->fd[b] = fd;
        }
        while (i < bin->n) {
                size_t j = i;

                while (j + 1 < bin->n && bin->fd[j + 1] == bin->fd[j] + 1)
                        j++;
                /* The raw call (glibc wraps it from 2.34 on); a kernel
                 * before 5.9 says ENOSYS: then one by one. */
                if (j == i || syscall(SYS_close_range, (unsigned) bin->fd[i], (unsigned) bin->fd[j], 0u) < 0)
                        for (size_t k = i; k <= j; k++)
                                (void) close(bin->fd[k]);
                i = j + 1;
        }
        bin->n = 0;
}

int compare_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return (x > y) - (x < y);
}

int compare_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return (x > y) - (x < y);
}

bool parse_u64_decimal(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (!*s || (s[0] == '0' && s[1]))
                return false;
        for (const char *c = s; *c; c++) {
                if (*c < '0' || *c > '9')
                        return false;
                if (v > (max - (uint64_t) (*c - '0')) / 10)
                        return false;
                v = v * 10 + (uint64_t) (*c - '0');
        }
        *ret = v;
        return true;
}
