/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "root.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct Root {
        int fd;
        char *path;
};

static const char *skip_slashes(const char *rel) {
        while (*rel == '/')
                rel++;
        return *rel ? rel : ".";
}

int root_open(const char *path, Root **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *p = NULL;
        Root *r;

        if (!path || !*path)
                path = "/";

        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();

        /* Canonical form: no trailing slashes except for "/" itself. */
        p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (size_t n = strlen(p); n > 1 && p[n - 1] == '/'; n--)
                p[n - 1] = '\0';

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->fd = TAKE_FD(fd);
        r->path = TAKE_PTR(p);
        *ret = r;
        return 0;
}

Root *root_free(Root *r) {
        if (!r)
                return NULL;
        if (r->fd >= 0)
                close(r->fd);
        free(r->path);
        free(r);
        return NULL;
}

const char *root_path(const Root *r) {
        return r->path;
}

bool root_is_host(const Root *r) {
        return streq(r->path, "/");
}

int root_fd(const Root *r) {
        return r->fd;
}

int root_host_path(const Root *r, const char *rel, char **ret) {
        char *s;
        int k;

        rel = skip_slashes(rel);
        if (streq(rel, "."))
                k = asprintf(&s, "%s", r->path);
        else if (root_is_host(r))
                k = asprintf(&s, "/%s", rel);
        else
                k = asprintf(&s, "%s/%s", r->path, rel);
        if (k < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int root_openat(const Root *r, const char *rel, int flags) {
        int fd = openat(r->fd, skip_slashes(rel), flags | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

ssize_t read_into(int fd, char *buf, size_t size) {
        size_t len = 0;

        if (size == 0)
                return -EINVAL;
        while (len < size - 1) {
                ssize_t n = read(fd, buf + len, size - 1 - len);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        buf[len] = '\0';
        return (ssize_t) len;
}

ssize_t read_record(int fd, char *buf, size_t size) {
        size_t len = 0;

        if (size == 0)
                return -EINVAL;
        while (len < size - 1) {
                size_t want = size - 1 - len;
                ssize_t n = read(fd, buf + len, want);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                len += (size_t) n;
                if ((size_t) n < want)
                        break; /* short: the end (or 0: the end) */
        }
        buf[len] = '\0';
        return (ssize_t) len;
}

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;

        /* Grow until a read stops short of the buffer: that was the end. */
        for (;;) {
                size_t ncap = cap ? cap * 2 : 4096 + 1;
                char *nbuf;
                ssize_t n;

                if (ncap > max + 2)
                        ncap = max + 2; /* one byte past max tells "too big", one for the NUL */
                if (ncap <= cap)
                        return -EFBIG;
                nbuf = realloc(buf, ncap);
                if (!nbuf)
                        return -ENOMEM;
                buf = nbuf;
                cap = ncap;
                n = read_into(fd, buf + len, cap - len);
                if (n < 0)
                        return (int) n;
                len += (size_t) n;
                if (len > max)
                        return -EFBIG;
                if (len < cap - 1)
                        break;
        }
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = len;
        return 0;
}

int root_read_file(const Root *r, const char *rel, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;

        fd = root_openat(r, rel, O_RDONLY | O_NOCTTY);
        if (fd < 0)
                return fd;
        return read_full_fd(fd, max, ret, ret_len);
}

int root_read_line(const Root *r, const char *rel, char **ret) {
        char *s;
        int k;

        k = root_read_file(r, rel, 64 * 1024, &s, NULL);
        if (k < 0)
                return k;
        s[strcspn(s, "\n")] = '\0';
        *ret = s;
        return 0;
}

int root_write_value(const Root *r, const char *rel, const char *value) {
        _cleanup_close_ int fd = root_openat(r, rel, O_WRONLY | O_NOCTTY);
        size_t len = strlen(value);
        ssize_t n;

        if (fd < 0)
                return fd;
        do
                n = write(fd, value, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return negative_errno();
        return (size_t) n == len ? 0 : -EIO;
}

int root_exists(const Root *r, const char *rel) {
        struct stat st;

        if (fstatat(r->fd, skip_slashes(rel), &st, 0) >= 0)
                return 1;
        if (errno == ENOENT || errno == ENOTDIR)
                return 0;
        return negative_errno();
}
