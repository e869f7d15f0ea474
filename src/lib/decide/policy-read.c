/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "policy-read.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "base/escape.h"
#include "base/paths.h"
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

static const char *const layer_names[_POLICY_LAYER_MAX] = { "runtime", "local", "vendor" };
static const char *const layer_dirs[_POLICY_LAYER_MAX] = {
        TOPOD_POLICIES_RUNTIME_DIR,
        TOPOD_POLICIES_LOCAL_DIR,
        TOPOD_POLICIES_VENDOR_DIR,
};

const char *policy_layer_to_string(PolicyLayer l) {
        return l >= 0 && l < _POLICY_LAYER_MAX ? layer_names[l] : NULL;
}

const char *policy_file_state_to_string(PolicyFileState s) {
        static const char *const names[] = { "used", "overridden", "masked", "mask" };

        return s >= 0 && (size_t) s < ELEMENTSOF(names) ? names[s] : "?";
}

/* A host path below the root (NULL: the host itself). */
static int below(const Root *root, const char *path, char **ret) {
        if (!root)
                return (*ret = strdup(path)) ? 0 : -ENOMEM;
        return root_host_path(root, path, ret);
}

int policy_search_init(PolicySearch *s, const Root *root, const char *given, const char *policies_dir) {
        *s = (PolicySearch) {};
        if (given)
                return (s->path = strdup(given)) ? 0 : -ENOMEM;
        if (policies_dir)
                return below(root, policies_dir, &s->path);
        for (size_t l = 0; l < _POLICY_LAYER_MAX; l++)
                if (below(root, layer_dirs[l], &s->dirs[l]) < 0) {
                        policy_search_done(s);
                        return -ENOMEM;
                }
        return 0;
}

void policy_search_done(PolicySearch *s) {
        free(s->path);
        for (size_t l = 0; l < _POLICY_LAYER_MAX; l++)
                free(s->dirs[l]);
        *s = (PolicySearch) {};
}

char *policy_search_describe(const PolicySearch *s) {
        char *r;

        if (s->path)
                return strdup(s->path);
        if (asprintf(&r, "%s, %s and %s", s->dirs[0], s->dirs[1], s->dirs[2]) < 0)
                return NULL;
        return r;
}

bool policy_search_any_dir(const PolicySearch *s) {
        struct stat st;

        if (s->path)
                return false;
        for (size_t l = 0; l < _POLICY_LAYER_MAX; l++)
                if (stat(s->dirs[l], &st) >= 0 && S_ISDIR(st.st_mode))
                        return true;
        return false;
}

void policy_files_done(PolicyFiles *f) {
        for (size_t i = 0; i < f->n; i++) {
                free(f->items[i].path);
                free(f->items[i].by);
        }
        free(f->items);
        *f = (PolicyFiles) {};
}

static int files_add(PolicyFiles *f, const char *path, PolicyLayer l, PolicyFileState state, const char *by) {
        _cleanup_free_ char *p = strdup(path), *b = by ? strdup(by) : NULL;
        PolicyFile *n;

        if (!p || (by && !b))
                return -ENOMEM;
        n = realloc(f->items, (f->n + 1) * sizeof(PolicyFile));
        if (!n)
                return -ENOMEM;
        f->items = n;
        f->items[f->n++] = (PolicyFile) { .path = TAKE_PTR(p), .layer = layer_names[l], .state = state, .by = TAKE_PTR(b) };
        return 0;
}

/* One name in one layer. */
typedef struct Entry {
        char *name;
        PolicyLayer layer;
} Entry;

static int entry_compare(const void *a, const void *b) {
        const Entry *x = a, *y = b;
        int c = strcmp(x->name, y->name);

        return c != 0 ? c : (int) x->layer - (int) y->layer;
}

/* systemd's rule (conf_files_list, null_or_empty): a symbolic link to
 * /dev/null (or /dev/null itself), or an empty regular file, masks the name. 1 when path is a
 * mask, 0 when not, <0 when it cannot be looked at. */
static int is_mask(const char *path) {
        struct stat st;
        char target[16];
        ssize_t n;

        if (lstat(path, &st) < 0)
                return negative_errno();
        if (S_ISLNK(st.st_mode)) {
                n = readlink(path, target, sizeof target - 1);
                if (n < 0)
                        return negative_errno();
                target[n] = 0;
                if (streq(target, "/dev/null"))
                        return 1;
                if (stat(path, &st) < 0)
                        return 0; /* dangling: read, and refused as a link */
                return S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
        }
        if (S_ISCHR(st.st_mode))
                return st.st_rdev == makedev(1, 3);
        return S_ISREG(st.st_mode) && st.st_size == 0;
}

static int search_layers(const PolicySearch *s, Diagnostics *d, PolicySet **ret, PolicyFiles *files) {
        _cleanup_(texts_done) Texts t = {};
        Entry *entries = NULL;
        size_t n_entries = 0;
        bool bad = false;
        int k = 0;

        for (size_t l = 0; l < _POLICY_LAYER_MAX && k >= 0; l++) {
                _cleanup_strv_free_ char **names = NULL;

                k = list_dir(s->dirs[l], ".ini", POLICY_COUNT_MAX, &names);
                if (k == -ENOENT || k == -ENOTDIR) {
                        k = 0; /* a layer that is not there holds nothing */
                        continue;
                }
                if (k == -ENOMEM)
                        break;
                if (k < 0) {
                        if ((k = io_error(d, s->dirs[l], k)) < 0)
                                break;
                        bad = true;
                        continue;
                }
                for (char **nm = names; *nm; nm++) {
                        Entry *n = realloc(entries, (n_entries + 1) * sizeof(Entry));
                        char *name = n ? strdup(*nm) : NULL;

                        if (n)
                                entries = n;
                        if (!name) {
                                k = -ENOMEM;
                                break;
                        }
                        entries[n_entries++] = (Entry) { .name = name, .layer = (PolicyLayer) l };
                }
        }
        if (k >= 0 && n_entries > 1)
                qsort(entries, n_entries, sizeof(Entry), entry_compare);

        for (size_t i = 0; k >= 0 && i < n_entries;) {
                _cleanup_free_ char *winner = NULL;
                size_t j = i + 1;
                int mask;

                while (j < n_entries && streq(entries[j].name, entries[i].name))
                        j++;
                if ((k = join_path(s->dirs[entries[i].layer], entries[i].name, &winner)) < 0)
                        break;
                mask = is_mask(winner);
                if (files && (k = files_add(files, winner, entries[i].layer, mask > 0 ? POLICY_FILE_MASK : POLICY_FILE_USED,
                                            NULL)) < 0)
                        break;
                for (size_t m = i + 1; files && m < j; m++) {
                        _cleanup_free_ char *p = NULL;

                        if ((k = join_path(s->dirs[entries[m].layer], entries[m].name, &p)) < 0 ||
                            (k = files_add(files, p, entries[m].layer,
                                           mask > 0 ? POLICY_FILE_MASKED : POLICY_FILE_OVERRIDDEN, winner)) < 0)
                                break;
                }
                if (k < 0)
                        break;
                i = j;
                if (mask > 0)
                        continue;
                if (t.n >= POLICY_COUNT_MAX) {
                        for (size_t m = 0; m < n_entries; m++)
                                free(entries[m].name);
                        free(entries);
                        return too_many(d, s->dirs[POLICY_LAYER_LOCAL], &t, ret);
                }
                /* a file that cannot be looked at is read, and its reading says why */
                k = texts_add(&t, winner, POLICY_FILE_SIZE_MAX, d);
                if (k < 0)
                        break;
                bad = bad || k == 0;
                k = 0;
        }
        for (size_t m = 0; m < n_entries; m++)
                free(entries[m].name);
        free(entries);
        if (k < 0)
                return k;

        k = policy_set_parse(t.items, t.n, d, ret);
        if (k >= 0 || k == -EINVAL)
                /* each policy's layer, from the file it came from */
                for (size_t i = 0; i < (*ret)->n; i++) {
                        Policy *p = (*ret)->policies[i];

                        for (size_t l = 0; l < _POLICY_LAYER_MAX; l++) {
                                size_t n = strlen(s->dirs[l]);

                                if (strneq(p->file, s->dirs[l], n) && p->file[n] == '/' && !strchr(p->file + n + 1, '/')) {
                                        p->layer = layer_names[l];
                                        break;
                                }
                        }
                }
        if (k == -EINVAL || (k >= 0 && bad))
                return -EINVAL;
        return k;
}

int policy_search_read(const PolicySearch *s, Diagnostics *d, PolicySet **ret, PolicyFiles *ret_files) {
        char *paths[1];
        int k;

        if (ret_files)
                *ret_files = (PolicyFiles) {};
        if (s->path) {
                paths[0] = s->path;
                return policy_read_paths(paths, 1, d, ret);
        }
        k = search_layers(s, d, ret, ret_files);
        if (k < 0 && k != -EINVAL && ret_files)
                policy_files_done(ret_files);
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
