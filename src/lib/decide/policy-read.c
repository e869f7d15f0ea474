/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "policy-read.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/escape.h"
#include "base/root.h"
#include "base/util.h"

/* Opened without blocking (a FIFO's open() waits for a writer, a
 * device's may do anything) and without following a symbolic link, then
 * refused unless it is a regular file, before a byte is read: a file in
 * policies.d cannot hang the daemon's loop on a reload. */
int read_text_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int flags;

        fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EBADFD; /* a FIFO or device could block or never end */
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
                return negative_errno();
        return read_full_fd(fd, max, ret, ret_len);
}

typedef struct Texts {
        IniSource *items;
        char **buffers; /* owned: the texts */
        char **names;   /* owned: the paths */
        size_t n;
} Texts;

static void texts_done(Texts *t) {
        for (size_t i = 0; i < t->n; i++) {
                free(t->buffers[i]);
                free(t->names[i]);
        }
        free(t->items);
        free(t->buffers);
        free(t->names);
        *t = (Texts) {};
}

static int io_error(Diagnostics *d, const char *path, int err) {
        if (err == -EFBIG)
                return diag_add(d, DIAG_ERROR, path, 0, "limit", "file is larger than the limit of %u bytes",
                                POLICY_FILE_SIZE_MAX);
        if (err == -EBADFD)
                return diag_add(d, DIAG_ERROR, path, 0, "io", "not a regular file (a FIFO, socket or device): not read");
        if (err == -ELOOP)
                return diag_add(d, DIAG_ERROR, path, 0, "io", "a symbolic link: topod reads only regular files");
        return diag_add(d, DIAG_ERROR, path, 0, "io", "cannot read: %s", strerror(-err));
}

/* The line (1-based) of byte off in text. */
static unsigned line_of(const char *text, size_t off) {
        unsigned line = 1;

        for (size_t i = 0; i < off; i++)
                line += text[i] == '\n';
        return line;
}

/* Read one file into t. 1 when added, 0 when it failed (reported), <0 OOM. */
static int texts_add(Texts *t, const char *path, size_t max, Diagnostics *d) {
        _cleanup_free_ char *buf = NULL, *name = NULL;
        size_t len = 0;
        void *n;
        int k;

        k = read_text_file(path, max, &buf, &len);
        if (k == -ENOMEM)
                return k;
        if (k < 0) {
                k = io_error(d, path, k);
                return k < 0 ? k : 0;
        }
        {
                /* Policies and the configuration are UTF-8 text; a bad
                 * byte is refused where it is, before it reaches a name
                 * or a message. */
                size_t bad;

                if (!utf8_valid(buf, len, &bad)) {
                        k = diag_add(d, DIAG_ERROR, path, line_of(buf, bad), "syntax",
                                     "byte 0x%02x at offset %zu is not valid UTF-8 text (or is a NUL)",
                                     (unsigned char) buf[bad], bad);
                        return k < 0 ? k : 0;
                }
        }
        name = strdup(path);
        if (!name)
                return -ENOMEM;
        if (!(n = realloc(t->items, (t->n + 1) * sizeof(IniSource))))
                return -ENOMEM;
        t->items = n;
        if (!(n = realloc(t->buffers, (t->n + 1) * sizeof(char *))))
                return -ENOMEM;
        t->buffers = n;
        if (!(n = realloc(t->names, (t->n + 1) * sizeof(char *))))
                return -ENOMEM;
        t->names = n;
        t->items[t->n] = (IniSource) { .file = name, .text = buf, .len = len };
        t->buffers[t->n] = TAKE_PTR(buf);
        t->names[t->n] = TAKE_PTR(name);
        t->n++;
        return 1;
}

static bool endswith(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);

        return a >= b && streq(s + a - b, suffix);
}

static int name_compare(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The names in dir ending in suffix, sorted; at most max+1 (so the caller
 * can tell "too many"). -ENOENT etc. when the directory cannot be read. */
static int list_dir(const char *dir, const char *suffix, size_t max, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        DIR *dp;
        struct dirent *de;
        size_t n = 0;
        int k = 0;

        if (!l)
                return -ENOMEM;
        dp = opendir(dir);
        if (!dp)
                return negative_errno();
        while ((de = readdir(dp))) {
                if (de->d_name[0] == '.' || !endswith(de->d_name, suffix) || strlen(de->d_name) == strlen(suffix))
                        continue;
                if (de->d_type == DT_DIR)
                        continue;
                if (n > max)
                        break;
                k = strv_push_dup(&l, de->d_name);
                if (k < 0)
                        break;
                n++;
        }
        closedir(dp);
        if (k < 0)
                return k;
        if (n > 1)
                qsort(l, n, sizeof(char *), name_compare);
        *ret = TAKE_PTR(l);
        return 0;
}

static int join_path(const char *dir, const char *name, char **ret) {
        size_t n = strlen(dir);

        return asprintf(ret, "%s%s%s", dir, n > 0 && dir[n - 1] == '/' ? "" : "/", name) < 0 ? -ENOMEM : 0;
}

/* Past POLICY_COUNT_MAX nothing is loaded: a partial set would apply an
 * arbitrary subset of what the operator wrote. */
static int too_many(Diagnostics *d, const char *where, Texts *t, PolicySet **ret) {
        int k = diag_add(d, DIAG_ERROR, where, 0, "limit", "more than %u policy files", POLICY_COUNT_MAX);

        if (k < 0)
                return k;
        texts_done(t);
        *ret = policy_set_new();
        return *ret ? -EINVAL : -ENOMEM;
}

int policy_read_paths(char *const *paths, size_t n_paths, Diagnostics *d, PolicySet **ret) {
        _cleanup_(texts_done) Texts t = {};
        bool bad = false;
        int k;

        for (size_t i = 0; i < n_paths; i++) {
                struct stat st;

                if (stat(paths[i], &st) < 0) {
                        k = io_error(d, paths[i], negative_errno());
                        if (k < 0)
                                return k;
                        bad = true;
                        continue;
                }
                if (S_ISDIR(st.st_mode)) {
                        _cleanup_strv_free_ char **names = NULL;

                        k = list_dir(paths[i], ".ini", POLICY_COUNT_MAX, &names);
                        if (k == -ENOMEM)
                                return k;
                        if (k < 0) {
                                if ((k = io_error(d, paths[i], k)) < 0)
                                        return k;
                                bad = true;
                                continue;
                        }
                        for (char **nm = names; *nm; nm++) {
                                _cleanup_free_ char *p = NULL;

                                if (t.n >= POLICY_COUNT_MAX)
                                        return too_many(d, paths[i], &t, ret);
                                if ((k = join_path(paths[i], *nm, &p)) < 0)
                                        return k;
                                k = texts_add(&t, p, POLICY_FILE_SIZE_MAX, d);
                                if (k < 0)
                                        return k;
                                bad = bad || k == 0;
                        }
                        continue;
                }
                if (t.n >= POLICY_COUNT_MAX)
                        return too_many(d, paths[i], &t, ret);
                k = texts_add(&t, paths[i], POLICY_FILE_SIZE_MAX, d);
                if (k < 0)
                        return k;
                bad = bad || k == 0;
        }

        k = policy_set_parse(t.items, t.n, d, ret);
        if (k == -EINVAL || (k >= 0 && bad))
                return -EINVAL;
        return k;
}

int config_read(const char *path, bool must_exist, Diagnostics *d, Config **ret) {
        _cleanup_(texts_done) Texts main_text = {}, dropins = {};
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *dir = NULL;
        struct stat st;
        bool bad = false;
        int k;

        if (stat(path, &st) < 0 && errno == ENOENT && !must_exist)
                ; /* no file: the defaults */
        else {
                k = texts_add(&main_text, path, CONFIG_FILE_SIZE_MAX, d);
                if (k < 0)
                        return k;
                bad = k == 0;
        }

        if (asprintf(&dir, "%s.d", path) < 0)
                return -ENOMEM;
        k = list_dir(dir, ".conf", CONFIG_DROPINS_MAX, &names);
        if (k == -ENOMEM)
                return k;
        if (k < 0 && k != -ENOENT && k != -ENOTDIR) {
                if ((k = io_error(d, dir, k)) < 0)
                        return k;
                bad = true;
        }
        for (char **nm = names; nm && *nm; nm++) {
                _cleanup_free_ char *p = NULL;

                if (dropins.n >= CONFIG_DROPINS_MAX) {
                        k = diag_add(d, DIAG_ERROR, dir, 0, "limit", "more than %u drop-in files", CONFIG_DROPINS_MAX);
                        if (k < 0)
                                return k;
                        bad = true;
                        break;
                }
                if ((k = join_path(dir, *nm, &p)) < 0)
                        return k;
                k = texts_add(&dropins, p, CONFIG_FILE_SIZE_MAX, d);
                if (k < 0)
                        return k;
                bad = bad || k == 0;
        }
        k = config_parse_all(main_text.n > 0 ? &main_text.items[0] : NULL, dropins.items, dropins.n, d, ret);
        if (k == -EINVAL || (k >= 0 && bad))
                return -EINVAL;
        return k;
}
