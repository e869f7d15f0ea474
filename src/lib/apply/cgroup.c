/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/bitmap.h"
#include "base/util.h"
#include "observe/proc-cgroup.h"
#include "observe/tasks.h"

/* The controllers topod's tree needs, in the order they are enabled. */
static const char *const controllers[] = { "cpuset", "cpu" };

/* Marks a journal "cgroup" entry as "controller enabled here" (see cgroup.h). */
#define SUBTREE_MARK "/cgroup.subtree_control/"

/* ---- the kernel's side -------------------------------------------------- */

static const char *rel_path(const char *path) {
        while (*path == '/')
                path++;
        return *path ? path : ".";
}

static int kernel_mkdir(void *userdata, const Root *root, const char *path) {
        (void) userdata;
        return mkdirat(root_fd(root), rel_path(path), 0755) < 0 ? negative_errno() : 0;
}

static int kernel_rmdir(void *userdata, const Root *root, const char *path) {
        (void) userdata;
        /* cgroupfs: rmdir of an empty cgroup (its interface files go with it);
         * EBUSY while it has tasks or child cgroups. */
        return unlinkat(root_fd(root), rel_path(path), AT_REMOVEDIR) < 0 ? negative_errno() : 0;
}

static int kernel_write(void *userdata, const Root *root, const char *path, const char *value) {
        (void) userdata;
        return root_write_value(root, path, value);
}

const CgroupOps cgroup_ops_kernel = {
        .mkdir = kernel_mkdir,
        .rmdir = kernel_rmdir,
        .write = kernel_write,
};

/* ---- held cgroup.procs files --------------------------------------------- */

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
/* More groups than this in one plan: the rest are opened per move. */
#define CGROUP_HELD_FDS_MAX 256u

/* Cgroups remembered by id; past this many the oldest is replaced. */
#define CGROUP_HELD_ORIGINS_MAX 64u

struct CgroupHeld {
        size_t n;
        char *path[CGROUP_HELD_FDS_MAX]; /* relative to the Root, as fs_path() makes it */
        int fd[CGROUP_HELD_FDS_MAX];     /* -EBADF: not a cgroup2 file, written by path */
        /* The cgroups processes were found in: id -> path as proc/PID/cgroup
         * gave it. */
        size_t n_origins, next_origin;
        uint64_t origin_id[CGROUP_HELD_ORIGINS_MAX];
        char *origin_path[CGROUP_HELD_ORIGINS_MAX];
        bool no_ids; /* the kernel cannot tell (pidfd_cgroup_id: -EOPNOTSUPP) */
        uint64_t reads, hits;
};

int cgroup_held_new(CgroupHeld **ret) {
        CgroupHeld *f = calloc(1, sizeof(CgroupHeld));

        if (!f)
                return -ENOMEM;
        *ret = f;
        return 0;
}

void cgroup_held_close_files(CgroupHeld *f) {
        if (!f)
                return;
        for (size_t i = 0; i < f->n; i++) {
                free(f->path[i]);
                closep(&f->fd[i]);
        }
        f->n = 0;
}

void cgroup_held_forget_origins(CgroupHeld *f) {
        if (!f)
                return;
        for (size_t i = 0; i < f->n_origins; i++)
                free(f->origin_path[i]);
        f->n_origins = f->next_origin = 0;
}

void cgroup_held_clear(CgroupHeld *f) {
        cgroup_held_close_files(f);
        cgroup_held_forget_origins(f);
}

CgroupHeld *cgroup_held_free(CgroupHeld *f) {
        cgroup_held_clear(f);
        free(f);
        return NULL;
}

CgroupHeldStats cgroup_held_stats(const CgroupHeld *f) {
        if (!f)
                return (CgroupHeldStats) {};
        return (CgroupHeldStats) { .origins = f->n_origins, .reads = f->reads, .hits = f->hits };
}

static const char *held_origin_find(const CgroupHeld *f, uint64_t id) {
        for (size_t i = 0; i < f->n_origins; i++)
                if (f->origin_id[i] == id)
                        return f->origin_path[i];
        return NULL;
}

static void held_origin_add(CgroupHeld *f, uint64_t id, const char *path) {
        char *copy = strdup(path);
        size_t i;

        if (!copy)
                return; /* read again next time */
        if (f->n_origins < CGROUP_HELD_ORIGINS_MAX)
                i = f->n_origins++;
        else {
                i = f->next_origin;
                f->next_origin = (f->next_origin + 1) % CGROUP_HELD_ORIGINS_MAX;
                free(f->origin_path[i]);
        }
        f->origin_id[i] = id;
        f->origin_path[i] = copy;
}

static void held_fd_drop(CgroupHeld *f, size_t i) {
        free(f->path[i]);
        closep(&f->fd[i]);
        f->path[i] = f->path[f->n - 1];
        f->fd[i] = f->fd[f->n - 1];
        f->n--;
}

/* The held file for path, opened now if need be: its index, or -1 (write by
 * path). */
static ssize_t held_fd_get(CgroupHeld *f, const Root *root, const char *path) {
        struct statfs sf;
        char *copy;
        int fd;

        for (size_t i = 0; i < f->n; i++)
                if (streq(f->path[i], path))
                        return f->fd[i] >= 0 ? (ssize_t) i : -1;
        if (f->n >= CGROUP_HELD_FDS_MAX)
                return -1;
        fd = root_openat(root, path, O_WRONLY | O_NOCTTY);
        if (fd < 0)
                return -1; /* the write by path says why */
        if (fstatfs(fd, &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC) {
                closep(&fd);
                fd = -EBADF;
        }
        copy = strdup(path);
        if (!copy) {
                closep(&fd);
                return -1;
        }
        f->path[f->n] = copy;
        f->fd[f->n] = fd < 0 ? -EBADF : fd;
        f->n++;
        return fd >= 0 ? (ssize_t) f->n - 1 : -1;
}

/* ---- reports ------------------------------------------------------------ */

int cgroup_report_new(CgroupReport **ret) {
        CgroupReport *r = calloc(1, sizeof(CgroupReport));

        if (!r)
                return -ENOMEM;
        *ret = r;
        return 0;
}

static void result_done(CgroupResult *it) {
        free(it->path);
        free(it->value);
        free(it->found);
        free(it->from);
        free(it->reason);
}

void cgroup_report_clear(CgroupReport *r) {
        for (size_t i = 0; i < r->n; i++)
                result_done(&r->items[i]);
        free(r->items);
        *r = (CgroupReport) {};
}

CgroupReport *cgroup_report_free(CgroupReport *r) {
        if (!r)
                return NULL;
        cgroup_report_clear(r);
        free(r);
        return NULL;
}

size_t cgroup_report_count(const CgroupReport *r, CgroupOutcome o) {
        size_t n = 0;

        for (size_t i = 0; i < r->n; i++)
                n += r->items[i].outcome == o;
        return n;
}

const char *cgroup_outcome_to_string(CgroupOutcome o) {
        static const char *const names[_CGROUP_OUTCOME_MAX] = {
                [CGROUP_DONE] = "done",         [CGROUP_ALREADY] = "already", [CGROUP_SKIPPED] = "skipped",
                [CGROUP_VANISHED] = "vanished", [CGROUP_FAILED] = "failed",
        };
        return (unsigned) o < _CGROUP_OUTCOME_MAX ? names[o] : "unknown";
}

const char *cgroup_item_kind_to_string(CgroupItemKind k) {
        static const char *const names[_CGROUP_ITEM_MAX] = {
                [CGROUP_ITEM_CONTROLLER] = "controller", [CGROUP_ITEM_MKDIR] = "mkdir",
                [CGROUP_ITEM_CPUS] = "cpuset.cpus",      [CGROUP_ITEM_MEMS] = "cpuset.mems",
                [CGROUP_ITEM_WEIGHT] = "cpu.weight",     [CGROUP_ITEM_PARTITION] = "cpuset.cpus.partition",
                [CGROUP_ITEM_EFFECTIVE] = "cpuset.cpus.effective", [CGROUP_ITEM_EXCLUSIVE] = "cpuset.cpus.exclusive",
                [CGROUP_ITEM_MOVE] = "move",             [CGROUP_ITEM_RMDIR] = "rmdir",
        };
        return (unsigned) k < _CGROUP_ITEM_MAX ? names[k] : "unknown";
}

bool cgroup_error_is_temporary(int error) {
        switch (abs(error)) {
        case EACCES:
        case EPERM:
        case ENOENT:
        case EINVAL:
        case EOPNOTSUPP:
        case EROFS:
                return false;
        default:
                return true;
        }
}

/* A new item, outcome FAILED until said otherwise, taking *path (set to
 * NULL; freed on failure). NULL: out of memory. */
static CgroupResult *item_new_take(CgroupReport *r, CgroupItemKind kind, char **path, const char *value) {
        CgroupResult *it;

        if (r->n == r->allocated) {
                /* Small first: a placement's report has an item or two. */
                size_t m = r->allocated ? r->allocated * 2 : 4;
                CgroupResult *p = realloc(r->items, m * sizeof(CgroupResult));

                if (!p) {
                        *path = mfree(*path);
                        return NULL;
                }
                r->items = p;
                r->allocated = m;
        }
        it = &r->items[r->n];
        *it = (CgroupResult) { .kind = kind, .outcome = CGROUP_FAILED, .path = TAKE_PTR(*path) };
        it->value = value ? strdup(value) : NULL;
        if (!it->path || (value && !it->value)) {
                result_done(it);
                return NULL;
        }
        r->n++;
        return it;
}

/* The same, with a copy of path. */
static CgroupResult *item_new(CgroupReport *r, CgroupItemKind kind, const char *path, const char *value) {
        char *copy = strdup(path);

        return copy ? item_new_take(r, kind, &copy, value) : NULL;
}

/* Replace an owned string; on lack of memory the field becomes NULL (a
 * report without that detail beats no report). */
static void set_str(char **field, const char *s) {
        free(*field);
        *field = s ? strdup(s) : NULL;
}

_printf_(3, 4) static int item_fail(CgroupResult *it, int error, const char *fmt, ...) {
        va_list ap;

        free(it->reason);
        it->reason = NULL;
        va_start(ap, fmt);
        if (vasprintf(&it->reason, fmt, ap) < 0)
                it->reason = NULL;
        va_end(ap);
        it->outcome = CGROUP_FAILED;
        it->error = error < 0 ? error : -EIO;
        return it->error;
}

static int item_ok(CgroupResult *it, CgroupOutcome o) {
        it->outcome = o;
        it->error = 0;
        return 0;
}

/* What a failed write or mkdir in cgroupfs means, for the report. */
static const char *errno_reason(int err) {
        switch (-err) {
        case EACCES:
        case EPERM:
                return "permission denied (not root, or not delegated to us)";
        case ENOENT:
                return "no such file (cgroup gone, or the controller is not enabled in the parent)";
        case EBUSY:
                return "busy (tasks or child cgroups in the way)";
        case EINVAL:
                return "the kernel refused the value (EINVAL)";
        case EOPNOTSUPP:
                return "not supported here (a threaded cgroup in the way?)";
        case ESRCH:
                return "no such task";
        default:
                return "the kernel's file could not be written";
        }
}

/* ---- paths -------------------------------------------------------------- */

/* "/a" + "b/c" -> "/a/b/c"; "/" + "b" -> "/b". */
static int cg_join(const char *a, const char *b, char **ret) {
        *ret = strjoin(streq(a, "/") ? "" : a, "/", b);
        return *ret ? 0 : -ENOMEM;
}

/* "/a/b" -> "/a"; "/a" -> "/". */
static int cg_parent(const char *path, char **ret) {
        const char *slash = strrchr(path, '/');

        *ret = slash && slash != path ? strndup(path, (size_t) (slash - path)) : strdup("/");
        return *ret ? 0 : -ENOMEM;
}

/* cg as it follows the mount in a path: the root cgroup ("/") adds nothing. */
static const char *cg_below_mount(const char *cg) {
        return streq(cg, "/") ? "" : cg;
}

/* The file's path relative to the Root: <mount><cgroup>/<file>. file NULL:
 * the directory. */
static int fs_path(const CgroupEnv *env, const char *cg, const char *file, char **ret) {
        const char *c = cg_below_mount(cg);

        *ret = file ? strjoin(env->mount, c, "/", file) : strjoin(env->mount, *c ? c : "/");
        return *ret ? 0 : -ENOMEM;
}

bool cgroup_path_is_below(const char *path, const char *top) {
        size_t n = strlen(top);

        if (streq(top, "/"))
                return path[0] == '/';
        return strneq(path, top, n) && (path[n] == '\0' || path[n] == '/');
}

/* A relative path of components that are not empty, "." or "..", without
 * control characters: a plan's group path. */
static bool rel_path_valid(const char *p) {
        size_t n = strlen(p);

        if (n == 0 || n >= JOURNAL_PATH_MAX - 256)
                return false;
        for (const char *c = p; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return false;
        for (const char *c = p;;) {
                size_t len = strcspn(c, "/");

                if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!c[len])
                        return true;
                c += len + 1;
        }
}

static bool root_path_valid(const char *p) {
        return p && p[0] == '/' && p[1] && rel_path_valid(p + 1);
}

static int read_attr(const CgroupEnv *env, const char *cg, const char *file, char **ret) {
        _cleanup_free_ char *path = NULL;
        char *text;
        int k;

        k = fs_path(env, cg, file, &path);
        if (k < 0)
                return k;
        k = root_read_file(env->root, path, CGROUP_ATTR_MAX, &text, NULL);
        if (k < 0)
                return k;
        {
                const char *s = strstrip(text); /* the kernel ends values with a newline */

                memmove(text, s, strlen(s) + 1);
        }
        *ret = text;
        return 0;
}

static int write_attr(const CgroupEnv *env, const char *cg, const char *file, const char *value) {
        _cleanup_free_ char *path = NULL;
        int k;

        k = fs_path(env, cg, file, &path);
        if (k < 0)
                return k;
        return env->ops->write(env->ops->userdata, env->root, path, value);
}

/* A pid into cg's cgroup.procs, through the held file where there is one. */
static int write_procs(const CgroupEnv *env, const char *cg, const char *num) {
        _cleanup_free_ char *long_path = NULL;
        /* The path on the stack as a rule: a move a placement. */
        char buf[512];
        const char *path = buf;
        size_t len = strlen(num);
        ssize_t i, n;
        int k;

        k = strjoin_buf(buf, sizeof(buf), env->mount, cg_below_mount(cg), "/cgroup.procs");
        if (k < 0) {
                k = fs_path(env, cg, "cgroup.procs", &long_path);
                if (k < 0)
                        return k;
                path = long_path;
        }
        if (env->held && env->ops == &cgroup_ops_kernel &&
            (i = held_fd_get(env->held, env->root, path)) >= 0) {
                do
                        n = write(env->held->fd[i], num, len);
                while (n < 0 && errno == EINTR);
                if (n >= 0)
                        return (size_t) n == len ? 0 : -EIO;
                if (errno != ENODEV && errno != ENOENT)
                        return negative_errno();
                /* Its cgroup was removed (maybe made again): by path. */
                held_fd_drop(env->held, (size_t) i);
        }
        return env->ops->write(env->ops->userdata, env->root, path, num);
}

static int cg_exists(const CgroupEnv *env, const char *cg) {
        _cleanup_free_ char *path = NULL;
        int k;

        k = fs_path(env, cg, NULL, &path);
        if (k < 0)
                return k;
        return root_exists(env->root, path);
}

/* Has topod created this cgroup (by the journal)? */
static bool journal_has_cgroup(const Journal *j, const char *cg) {
        if (!j)
                return false;
        for (size_t i = 0; i < j->n_cgroups; i++)
                if (streq(j->cgroups[i], cg))
                        return true;
        return false;
}

static bool word_listed(const char *text, const char *word) {
        size_t n = strlen(word);

        for (const char *p = text; (p = strstr(p, word)); p += n)
                if ((p == text || p[-1] == ' ' || p[-1] == '\n') && (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
                        return true;
        return false;
}

static int journal_commit_maybe(Journal *j) {
        return j && j->dir ? journal_commit(j) : 0;
}

/* ---- where a pinned process is ----------------------------------------- */

/* ref, a pin on process pid, moved to thread tid of it (the one
 * proc_cgroup_read_process() read): a move written and checked through a
 * thread that lives. */
static int repin(const CgroupEnv *env, PidRef *ref, pid_t tid) {
        uint64_t st;
        int k;

        if (tid == ref->tid)
                return 0;
        pidref_done(ref);
        k = pidref_read_start_time(env->root, -1, tid, &st);
        return k < 0 ? k : pidref_acquire(env->root, env->pidref, tid, st, ref);
}

/* Where the process pinned by ref is now: by the kernel's id of its cgroup
 * where the kernel gives one and the path of that id is known (CgroupHeld),
 * else read from proc/PID/cgroup and, when the id is the same after the
 * read as before it (the process did not move meanwhile), remembered. */
static int task_cgroup(const CgroupEnv *env, const PidRef *ref, char **ret) {
        CgroupHeld *f = env->held;
        uint64_t id = 0, again = 0;
        bool by_id = f && !f->no_ids && ref->pidfd >= 0 && env->pidref && env->pidref->pidfd_cgroup_id;
        int k;

        if (by_id) {
                k = env->pidref->pidfd_cgroup_id(ref->pidfd, env->pidref->userdata, &id);
                if (k == -ESRCH)
                        return k;
                if (k == -EOPNOTSUPP || k == -EPERM || k == -EACCES)
                        f->no_ids = true; /* not this kernel's, or an outer seccomp filter's refusal */
                by_id = k >= 0;
        }
        if (by_id) {
                const char *known = held_origin_find(f, id);

                if (known) {
                        f->hits++;
                        *ret = strdup(known);
                        return *ret ? 0 : -ENOMEM;
                }
        }
        if (f)
                f->reads++;
        k = proc_cgroup_read(env->root, ref->tid, env->bin, ret);
        if (k < 0 || !by_id)
                return k;
        k = env->pidref->pidfd_cgroup_id(ref->pidfd, env->pidref->userdata, &again);
        if (k == -ESRCH) {
                /* Reaped during the read: what was read may be another
                 * process's that took the number. */
                *ret = mfree(*ret);
                return k;
        }
        if (k >= 0 && again == id)
                held_origin_add(f, id, *ret);
        return 0;
}

/* ---- the tree ----------------------------------------------------------- */

/* +controller in cg's subtree_control unless there. owned: topod created
 * cg, so nothing is journaled (the directory goes on restore). */
static int ensure_controller(const CgroupEnv *env, CgroupReport *r, Journal *j, const char *cg, const char *ctl,
                             bool owned) {
        _cleanup_free_ char *cur = NULL, *avail = NULL, *word = NULL, *mark = NULL;
        CgroupResult *it;
        bool recorded = false;
        int k;

        if (asprintf(&word, "+%s", ctl) < 0)
                return -ENOMEM;
        it = item_new(r, CGROUP_ITEM_CONTROLLER, cg, word);
        if (!it)
                return -ENOMEM;
        k = read_attr(env, cg, "cgroup.subtree_control", &cur);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return item_fail(it, k, "cannot read cgroup.subtree_control: %s", errno_reason(k));
        set_str(&it->found, cur);
        if (word_listed(cur, ctl))
                return item_ok(it, CGROUP_ALREADY);

        /* Enabled only when the cgroup may have it: listed in its cgroup.controllers. */
        k = read_attr(env, cg, "cgroup.controllers", &avail);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return item_fail(it, k, "cannot read cgroup.controllers: %s", errno_reason(k));
        if (!word_listed(avail, ctl))
                return item_fail(it, -ENOENT, "the %s controller is not available here (not in cgroup.controllers)",
                                 ctl);

        if (j && !owned) {
                if (asprintf(&mark, "%s%s%s", streq(cg, "/") ? "" : cg, SUBTREE_MARK, ctl) < 0)
                        return -ENOMEM;
                k = journal_record_cgroup(j, mark);
                recorded = k > 0;
                if (k >= 0)
                        k = journal_commit_maybe(j);
                if (k < 0)
                        return item_fail(it, k, "the change could not be journaled: not changed");
                it->journaled = true;
        }
        k = write_attr(env, cg, "cgroup.subtree_control", word);
        if (k < 0) {
                if (recorded) {
                        (void) journal_forget_cgroup(j, mark);
                        (void) journal_commit_maybe(j);
                        it->journaled = false;
                }
                if (k == -EBUSY)
                        return item_fail(it, k,
                                         "busy: the cgroup has tasks of its own (no internal processes in cgroup v2)");
                return item_fail(it, k, "%s", errno_reason(k));
        }
        cur = mfree(cur);
        k = read_attr(env, cg, "cgroup.subtree_control", &cur);
        if (k < 0)
                return item_fail(it, k, "written, but the read-back failed");
        if (!word_listed(cur, ctl)) {
                set_str(&it->found, cur);
                return item_fail(it, -EIO, "written, but the read-back does not list it");
        }
        return item_ok(it, CGROUP_DONE);
}

/* mkdir unless there, journaled first. *ret_created: topod's own (created
 * now or journaled as created before). */
static int ensure_dir(const CgroupEnv *env, CgroupReport *r, Journal *j, const char *cg, bool *ret_owned) {
        CgroupResult *it;
        _cleanup_free_ char *path = NULL;
        bool recorded = false;
        int k;

        it = item_new(r, CGROUP_ITEM_MKDIR, cg, NULL);
        if (!it)
                return -ENOMEM;
        k = cg_exists(env, cg);
        if (k < 0)
                return item_fail(it, k, "cannot look at the directory: %s", errno_reason(k));
        if (k > 0) {
                *ret_owned = journal_has_cgroup(j, cg);
                return item_ok(it, CGROUP_ALREADY);
        }
        if (j) {
                k = journal_record_cgroup(j, cg);
                recorded = k > 0;
                if (k >= 0)
                        k = journal_commit_maybe(j);
                if (k == -ENOMEM)
                        return k;
                if (k < 0)
                        return item_fail(it, k, "the new cgroup could not be journaled: not created");
                it->journaled = true;
        }
        k = fs_path(env, cg, NULL, &path);
        if (k < 0)
                return k;
        k = env->ops->mkdir(env->ops->userdata, env->root, path);
        if (k == -EEXIST) {
                /* Someone else made it meanwhile: not ours to remove. */
                if (recorded) {
                        (void) journal_forget_cgroup(j, cg);
                        (void) journal_commit_maybe(j);
                        it->journaled = false;
                }
                *ret_owned = false;
                return item_ok(it, CGROUP_ALREADY);
        }
        if (k < 0) {
                if (recorded) {
                        (void) journal_forget_cgroup(j, cg);
                        (void) journal_commit_maybe(j);
                        it->journaled = false;
                }
                return item_fail(it, k, "mkdir: %s", errno_reason(k));
        }
        *ret_owned = true;
        return item_ok(it, CGROUP_DONE);
}

typedef bool (*ValueEqual)(const char *cur, const char *want);

static bool bitmap_text_equal(const char *a, const char *b) {
        _cleanup_(bitmap_freep) Bitmap *x = NULL, *y = NULL;

        return bitmap_parse_list(a, &x) >= 0 && bitmap_parse_list(b, &y) >= 0 && bitmap_equal(x, y);
}

static bool uint_text_equal(const char *a, const char *b) {
        char *e1, *e2;
        unsigned long x, y;

        errno = 0;
        x = strtoul(a, &e1, 10);
        y = strtoul(b, &e2, 10);
        return errno == 0 && e1 != a && e2 != b && !*e1 && !*e2 && x == y;
}

/* Write file = want unless equal already, then read back. */
static int set_attr(const CgroupEnv *env, CgroupReport *r, CgroupItemKind kind, const char *cg, const char *file,
                    const char *want, ValueEqual eq) {
        _cleanup_free_ char *cur = NULL;
        CgroupResult *it;
        int k;

        it = item_new(r, kind, cg, want);
        if (!it)
                return -ENOMEM;
        k = read_attr(env, cg, file, &cur);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return item_fail(it, k, "cannot read %s: %s", file, errno_reason(k));
        set_str(&it->found, cur);
        if (eq(cur, want))
                return item_ok(it, CGROUP_ALREADY);
        /* An empty value clears: as a newline (a write of nothing does not
         * reach the kernel). */
        k = write_attr(env, cg, file, *want ? want : "\n");
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return item_fail(it, k, "%s", errno_reason(k));
        cur = mfree(cur);
        k = read_attr(env, cg, file, &cur);
        if (k < 0)
                return item_fail(it, k, "written, but the read-back failed");
        if (!eq(cur, want)) {
                set_str(&it->found, cur);
                return item_fail(it, -EIO, "written, but it reads back \"%s\"", cur);
        }
        return item_ok(it, CGROUP_DONE);
}

static int set_bitmap(const CgroupEnv *env, CgroupReport *r, CgroupItemKind kind, const char *cg, const char *file,
                      const Bitmap *b) {
        _cleanup_free_ char *s = NULL;
        int k;

        k = bitmap_format_list(b, &s);
        if (k < 0)
                return k;
        return set_attr(env, r, kind, cg, file, s, bitmap_text_equal);
}

static int set_weight(const CgroupEnv *env, CgroupReport *r, const char *cg, unsigned weight) {
        _cleanup_free_ char *idle = NULL;
        char want[16];
        CgroupResult *it;
        int k;

        snprintf(want, sizeof(want), "%u", weight);
        /* While cpu.idle is 1 the kernel refuses cpu.weight with EINVAL: the
         * group is SCHED_IDLE as a whole and its weight means nothing. */
        k = read_attr(env, cg, "cpu.idle", &idle);
        if (k == -ENOMEM)
                return k;
        if (k >= 0 && streq(idle, "1")) {
                it = item_new(r, CGROUP_ITEM_WEIGHT, cg, want);
                if (!it)
                        return -ENOMEM;
                set_str(&it->reason, "cpu.idle is 1: the kernel refuses cpu.weight (EINVAL) while the group is idle");
                return item_ok(it, CGROUP_SKIPPED);
        }
        return set_attr(env, r, CGROUP_ITEM_WEIGHT, cg, "cpu.weight", want, uint_text_equal);
}

/* cpuset.cpus.partition: "member", "root", "isolated", or "root invalid
 * (<why>)" — the kernel accepts the write and says in the file whether the
 * partition is valid. */
static int set_partition(const CgroupEnv *env, CgroupReport *r, const char *cg, bool exclusive) {
        _cleanup_free_ char *cur = NULL;
        const char *want = exclusive ? "root" : "member";
        CgroupResult *it;
        int k;

        k = read_attr(env, cg, "cpuset.cpus.partition", &cur);
        if (k == -ENOMEM)
                return k;
        if (!exclusive && (k < 0 || streq(cur, "member")))
                return 0; /* nothing asked, nothing to undo: no item */
        it = item_new(r, CGROUP_ITEM_PARTITION, cg, want);
        if (!it)
                return -ENOMEM;
        if (k < 0)
                return item_fail(it, k, "cannot read cpuset.cpus.partition: %s", errno_reason(k));
        set_str(&it->found, cur);
        if (streq(cur, want))
                return item_ok(it, CGROUP_ALREADY);
        k = write_attr(env, cg, "cpuset.cpus.partition", want);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return item_fail(it, k, "%s", errno_reason(k));
        cur = mfree(cur);
        k = read_attr(env, cg, "cpuset.cpus.partition", &cur);
        if (k < 0)
                return item_fail(it, k, "written, but the read-back failed");
        set_str(&it->found, cur);
        if (streq(cur, want))
                return item_ok(it, CGROUP_DONE);
        /* "root invalid (Parent is not a partition root)" and the like: the
         * kernel's reason is the report; not fatal, the group still works as
         * a member. */
        return item_fail(it, -EINVAL, "%s", cur);
}

/* ---- exclusive groups ---------------------------------------------------
 *
 * A partition root whose parent is not one (a "remote" partition, Linux
 * 6.7) takes its CPUs through cpuset.cpus.exclusive, which must hold them
 * in every cgroup above it below the root cgroup: topod's root and the
 * groups on the way down. Written top-down before the partition (each a
 * subset of its parent's), and where they shrink (a group no longer
 * exclusive), bottom-up and partition first. Only in cgroups topod created:
 * a root it did not create, or one below cgroups it did not, is reported
 * and the partition fails with the kernel's own reason. Kernels without the
 * file keep the older rule (a partition's parent must be one). Removing the
 * groups on restore gives the CPUs back. */

/* The CPUs of the exclusive groups at path or below it (path NULL: all). */
static int exclusive_under(const Plan *plan, const char *path, Bitmap **ret) {
        _cleanup_(bitmap_freep) Bitmap *b = bitmap_new();
        size_t n = path ? strlen(path) : 0;
        int k;

        if (!b)
                return -ENOMEM;
        for (size_t g = 0; g < plan->n_groups; g++) {
                const PlanGroup *pg = &plan->groups[g];

                if (!pg->exclusive || !pg->cpus)
                        continue;
                if (path && !streq(pg->path, path) && !(strneq(pg->path, path, n) && pg->path[n] == '/'))
                        continue;
                if ((k = bitmap_or(b, pg->cpus)) < 0)
                        return k;
        }
        *ret = TAKE_PTR(b);
        return 0;
}

/* cpuset.cpus.exclusive of cg toward want. shrink (the bottom-up pass):
 * only if it holds CPUs beyond want, and then only those go; else to want
 * if it differs. No file (a
 * kernel before 6.7), or nothing to do: no item. As the other writers, a
 * negative errno means a failed item; only ENOMEM stops the caller. */
static int set_exclusive(const CgroupEnv *env, CgroupReport *r, const char *cg, const Bitmap *want, bool shrink) {
        _cleanup_(bitmap_freep) Bitmap *have = NULL;
        _cleanup_free_ char *cur = NULL, *w = NULL;
        int k;

        k = read_attr(env, cg, "cpuset.cpus.exclusive", &cur);
        if (k == -ENOENT)
                return 0;
        if (k == -ENOMEM)
                return k;
        if (k >= 0 && bitmap_parse_list(cur, &have) >= 0 &&
            (shrink ? bitmap_is_subset(have, want) : bitmap_equal(want, have)))
                return 0; /* nothing to do this way */
        if (shrink && have) {
                /* Only drop what is no longer asked: each value stays within
                 * its parent's until the parents have grown. */
                _cleanup_(bitmap_freep) Bitmap *keep = bitmap_copy(have);

                if (!keep)
                        return -ENOMEM;
                BITMAP_FOREACH(c, have)
                        if (!bitmap_isset(want, (unsigned) c))
                                bitmap_clear(keep, (unsigned) c);
                k = bitmap_format_list(keep, &w);
        } else
                k = bitmap_format_list(want, &w);
        if (k < 0)
                return k;
        return set_attr(env, r, CGROUP_ITEM_EXCLUSIVE, cg, "cpuset.cpus.exclusive", w, bitmap_text_equal);
}

/* The cgroups above topod's root up to (not with) the root cgroup, then
 * the root itself: where the exclusive CPUs of all groups must be. */
static int exclusive_chain(const char *cgroup_root, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        for (const char *c = cgroup_root + 1; *c;) {
                size_t len = strcspn(c, "/");
                char *p = strndup(cgroup_root, (size_t) (c - cgroup_root) + len), **nl;

                if (!p || !(nl = realloc(l, (n + 2) * sizeof(char *)))) {
                        free(p);
                        return -ENOMEM;
                }
                l = nl;
                l[n++] = p;
                l[n] = NULL;
                c += len;
                while (*c == '/')
                        c++;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* Is cg (a full path) one of the plan's groups? */
static bool plan_has_cgroup(const Plan *plan, const char *cg) {
        size_t n = strlen(plan->cgroup_root);

        if (!strneq(cg, plan->cgroup_root, n) || cg[n] != '/')
                return false;
        for (size_t g = 0; g < plan->n_groups; g++)
                if (streq(plan->groups[g].path, cg + n + 1))
                        return true;
        return false;
}

/* Before the groups are written: the exclusive CPUs that shrink, bottom-up
 * (partitions dissolved first; groups topod made that the plan no longer
 * has too), and those that grow in the cgroups above topod's groups,
 * top-down (the groups grow as they are written). Returns in
 * *ret_exclusive whether the groups' values are to be written: exclusive
 * CPUs are in play (some group asks, or topod's root holds some still)
 * and the cgroups above may carry them. */
static int exclusive_prepare(const CgroupEnv *env, const Plan *plan, Journal *journal, CgroupReport *r,
                             bool chain_owned, bool *ret_exclusive) {
        _cleanup_(bitmap_freep) Bitmap *all = NULL, *held = NULL, *none = bitmap_new();
        _cleanup_free_ char *cur = NULL;
        _cleanup_strv_free_ char **chain = NULL;
        size_t n_chain;
        int k;

        *ret_exclusive = false;
        if (!none || (k = exclusive_under(plan, NULL, &all)) < 0)
                return -ENOMEM;
        k = read_attr(env, plan->cgroup_root, "cpuset.cpus.exclusive", &cur);
        if (k == -ENOMEM)
                return k;
        if (k < 0 || bitmap_parse_list(cur, &held) < 0)
                return 0; /* no such file (before 6.7), or no root yet: the older rule */
        if (bitmap_is_empty(all) && bitmap_is_empty(held))
                return 0; /* nothing exclusive, now or before: nothing to read per group */
        if ((k = exclusive_chain(plan->cgroup_root, &chain)) < 0)
                return k;
        n_chain = strv_length(chain);

        /* Shrink, leaves first: groups topod made that the plan dropped
         * (the journal lists them parents first), then the plan's: one no
         * longer exclusive stops being a partition, then each value drops
         * to what is still asked below it. */
        for (size_t i = journal ? journal->n_cgroups : 0; i > 0; i--) {
                const char *cg = journal->cgroups[i - 1];

                if (strv_contains(chain, cg) || plan_has_cgroup(plan, cg) ||
                    !cgroup_path_is_below(cg, plan->cgroup_root) || cg_exists(env, cg) <= 0)
                        continue;
                if ((k = set_partition(env, r, cg, false)) == -ENOMEM ||
                    (k = set_exclusive(env, r, cg, none, true)) == -ENOMEM)
                        return k;
        }
        for (size_t g = plan->n_groups; g > 0; g--) {
                const PlanGroup *pg = &plan->groups[g - 1];
                _cleanup_(bitmap_freep) Bitmap *x = NULL;
                _cleanup_free_ char *cg = NULL;

                if (!rel_path_valid(pg->path) || cg_join(plan->cgroup_root, pg->path, &cg) < 0)
                        continue;
                if (cg_exists(env, cg) <= 0)
                        continue;
                if (!pg->exclusive && (k = set_partition(env, r, cg, false)) == -ENOMEM)
                        return k;
                if ((k = exclusive_under(plan, pg->path, &x)) < 0 || (k = set_exclusive(env, r, cg, x, true)) == -ENOMEM)
                        return -ENOMEM;
        }
        /* The cgroups above: only those topod made (not someone else's value). */
        if (!chain_owned) {
                CgroupResult *it;

                if (bitmap_is_empty(all))
                        return 0;
                it = item_new(r, CGROUP_ITEM_EXCLUSIVE, plan->cgroup_root, NULL);
                if (!it)
                        return -ENOMEM;
                item_fail(it, -EPERM,
                          "exclusive groups need cpuset.cpus.exclusive in every cgroup above them, and %s (or one "
                          "above it) was not created by topod: not written, so they cannot be partitions",
                          plan->cgroup_root);
                return 0; /* nor in the groups: their partitions fail with the kernel's reason */
        }
        for (size_t i = n_chain; i > 0; i--)
                if ((k = set_exclusive(env, r, chain[i - 1], all, true)) == -ENOMEM)
                        return k;
        for (size_t i = 0; i < n_chain; i++)
                if ((k = set_exclusive(env, r, chain[i], all, false)) == -ENOMEM)
                        return k;
        *ret_exclusive = true;
        return 0;
}

/* Take from want the CPUs of the valid partitions strictly below group g. */
static int exclusive_taken_below(const CgroupEnv *env, const Plan *plan, size_t g, Bitmap *want) {
        size_t n = strlen(plan->groups[g].path);

        for (size_t h = 0; h < plan->n_groups; h++) {
                const PlanGroup *ph = &plan->groups[h];
                _cleanup_free_ char *cg = NULL, *part = NULL;

                if (h == g || !ph->exclusive || !ph->cpus || !strneq(ph->path, plan->groups[g].path, n) ||
                    ph->path[n] != '/')
                        continue;
                if (cg_join(plan->cgroup_root, ph->path, &cg) < 0)
                        return -ENOMEM;
                if (read_attr(env, cg, "cpuset.cpus.partition", &part) < 0 || !streq(part, "root"))
                        continue;
                BITMAP_FOREACH(c, ph->cpus)
                        bitmap_clear(want, (unsigned) c);
        }
        return 0;
}

static int check_effective(const CgroupEnv *env, CgroupReport *r, const char *cg, const Bitmap *cpus) {
        _cleanup_free_ char *want = NULL, *cur = NULL;
        CgroupResult *it;
        int k;

        k = bitmap_format_list(cpus, &want);
        if (k < 0)
                return k;
        it = item_new(r, CGROUP_ITEM_EFFECTIVE, cg, want);
        if (!it)
                return -ENOMEM;
        k = read_attr(env, cg, "cpuset.cpus.effective", &cur);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return item_fail(it, k, "cannot read cpuset.cpus.effective: %s", errno_reason(k));
        set_str(&it->found, cur);
        if (!bitmap_text_equal(cur, want))
                /* CPUs offline, outside the parent's, or taken by a sibling's partition. */
                return item_fail(it, -EIO, "effective CPUs %s differ from the planned %s", cur, want);
        return item_ok(it, CGROUP_DONE);
}

static bool group_has_children(const Plan *plan, size_t i) {
        size_t n = strlen(plan->groups[i].path);

        for (size_t c = 0; c < plan->n_groups; c++)
                if (c != i && strneq(plan->groups[c].path, plan->groups[i].path, n) && plan->groups[c].path[n] == '/')
                        return true;
        return false;
}

static bool have_ctl(const CgroupEnv *env, const char *ctl) {
        if (!env->controllers)
                return true;
        for (char *const *c = env->controllers; *c; c++)
                if (streq(*c, ctl))
                        return true;
        return false;
}

/* One item per controller the mount lacks: what is not done, and why. */
static int report_missing_ctl(const CgroupEnv *env, CgroupReport *r, const char *cg) {
        static const struct {
                const char *ctl, *what;
        } needs[] = {
                { "cpuset", "cpuset.cpus, cpuset.mems and partitions are not written" },
                { "cpu", "cpu.weight is not written" },
        };

        for (size_t i = 0; i < ELEMENTSOF(needs); i++) {
                _cleanup_free_ char *word = NULL;
                CgroupResult *it;

                if (have_ctl(env, needs[i].ctl))
                        continue;
                if (asprintf(&word, "+%s", needs[i].ctl) < 0 || !(it = item_new(r, CGROUP_ITEM_CONTROLLER, cg, word)))
                        return -ENOMEM;
                if (asprintf(&it->reason, "the cgroup2 mount has no %s controller (bound to cgroup v1?): groups and "
                                          "moves only; %s",
                             needs[i].ctl, needs[i].what) < 0)
                        return -ENOMEM;
                item_ok(it, CGROUP_SKIPPED);
        }
        return 0;
}

static int env_check(const CgroupEnv *env, const Plan *plan, CgroupEnv *ret) {
        if (!env->mount || env->mount[0] != '/')
                return -ENOENT; /* no cgroup2 mount found */
        if (plan && !root_path_valid(plan->cgroup_root))
                return -EINVAL;
        *ret = *env;
        if (!ret->ops)
                ret->ops = &cgroup_ops_kernel;
        if (!ret->pidref)
                ret->pidref = &pidref_ops_host;
        return 0;
}

static size_t failed_since(const CgroupReport *r, size_t from) {
        size_t n = 0;

        for (size_t i = from; i < r->n; i++)
                n += r->items[i].outcome == CGROUP_FAILED;
        return n;
}

/* Walk each step; only out-of-memory stops the walk. */
#define STEP(expr)                              \
        do {                                    \
                int _k = (expr);                \
                if (_k == -ENOMEM)              \
                        return _k;              \
        } while (0)

int cgroup_apply_tree(const CgroupEnv *env_in, const Plan *plan, Journal *journal, CgroupReport *r) {
        _cleanup_free_ char *cur = NULL;
        size_t start = r->n;
        bool owned = false, chain_owned = false, exclusive = false;
        CgroupEnv env;
        int k;

        k = env_check(env_in, plan, &env);
        if (k < 0)
                return k;

        /* 1. The path from the mount down to topod's root: controllers in
         *    each ancestor (journaled where topod did not create it), missing
         *    directories created. */
        cur = strdup("/");
        if (!cur)
                return -ENOMEM;
        chain_owned = true;
        for (const char *c = plan->cgroup_root + 1; *c;) {
                size_t len = strcspn(c, "/");
                _cleanup_free_ char *comp = strndup(c, len), *next = NULL;
                size_t before;

                if (!comp)
                        return -ENOMEM;
                before = r->n;
                for (size_t i = 0; i < ELEMENTSOF(controllers); i++)
                        if (have_ctl(&env, controllers[i]))
                                STEP(ensure_controller(&env, r, journal, cur, controllers[i], owned));
                if (failed_since(r, before) > 0)
                        return (int) failed_since(r, start); /* nothing below can work */
                k = cg_join(cur, comp, &next);
                if (k < 0)
                        return k;
                before = r->n;
                STEP(ensure_dir(&env, r, journal, next, &owned));
                if (failed_since(r, before) > 0)
                        return (int) failed_since(r, start);
                chain_owned = chain_owned && owned;
                free(cur);
                cur = TAKE_PTR(next);
                c += len;
                while (*c == '/')
                        c++;
        }

        /* 2. topod's root and each group, parents first (the plan's order). */
        if (plan->n_groups > 0) {
                for (size_t i = 0; i < ELEMENTSOF(controllers); i++)
                        if (have_ctl(&env, controllers[i]))
                                STEP(ensure_controller(&env, r, journal, plan->cgroup_root, controllers[i], owned));
                STEP(report_missing_ctl(&env, r, plan->cgroup_root));
        }
        if (have_ctl(&env, "cpuset")) {
                k = exclusive_prepare(&env, plan, journal, r, chain_owned, &exclusive);
                if (k < 0)
                        return k;
        }
        for (size_t g = 0; g < plan->n_groups; g++) {
                const PlanGroup *pg = &plan->groups[g];
                _cleanup_free_ char *cg = NULL;
                bool g_owned = false;
                size_t before = r->n;

                if (!rel_path_valid(pg->path)) {
                        CgroupResult *it = item_new(r, CGROUP_ITEM_MKDIR, pg->path, NULL);

                        if (!it)
                                return -ENOMEM;
                        item_fail(it, -EINVAL, "not a cgroup path below topod's root");
                        continue;
                }
                k = cg_join(plan->cgroup_root, pg->path, &cg);
                if (k < 0)
                        return k;
                STEP(ensure_dir(&env, r, journal, cg, &g_owned));
                if (failed_since(r, before) > 0)
                        continue; /* its children fail on their own mkdir */
                if (group_has_children(plan, g))
                        for (size_t i = 0; i < ELEMENTSOF(controllers); i++)
                                if (have_ctl(&env, controllers[i]))
                                        STEP(ensure_controller(&env, r, journal, cg, controllers[i], g_owned));
                if (have_ctl(&env, "cpuset")) {
                        if (pg->cpus && !bitmap_is_empty(pg->cpus))
                                STEP(set_bitmap(&env, r, CGROUP_ITEM_CPUS, cg, "cpuset.cpus", pg->cpus));
                        if (pg->mems && !bitmap_is_empty(pg->mems))
                                STEP(set_bitmap(&env, r, CGROUP_ITEM_MEMS, cg, "cpuset.mems", pg->mems));
                        if (exclusive) {
                                _cleanup_(bitmap_freep) Bitmap *x = NULL;

                                if (exclusive_under(plan, pg->path, &x) < 0)
                                        return -ENOMEM;
                                STEP(set_exclusive(&env, r, cg, x, false));
                        }
                        STEP(set_partition(&env, r, cg, pg->exclusive));
                }
                if (pg->weight > 0 && have_ctl(&env, "cpu"))
                        STEP(set_weight(&env, r, cg, pg->weight));
        }

        /* 3. Read back what the kernel made of the cpusets, once all are written. */
        for (size_t g = 0; g < plan->n_groups; g++) {
                const PlanGroup *pg = &plan->groups[g];
                _cleanup_free_ char *cg = NULL;

                if (!pg->cpus || bitmap_is_empty(pg->cpus) || !rel_path_valid(pg->path) || !have_ctl(&env, "cpuset"))
                        continue;
                k = cg_join(plan->cgroup_root, pg->path, &cg);
                if (k < 0)
                        return k;
                if (cg_exists(&env, cg) <= 0)
                        continue; /* its mkdir failed: reported */
                if (exclusive) {
                        /* The CPUs of valid partitions below are theirs alone:
                         * not in this group's effective set any more. */
                        _cleanup_(bitmap_freep) Bitmap *want = bitmap_copy(pg->cpus);

                        if (!want || (k = exclusive_taken_below(&env, plan, g, want)) < 0)
                                return -ENOMEM;
                        /* All taken: the kernel gives it its parent's, no
                         * plan of ours to check against. */
                        if (!bitmap_is_empty(want))
                                STEP(check_effective(&env, r, cg, want));
                        continue;
                }
                STEP(check_effective(&env, r, cg, pg->cpus));
        }
        return (int) MIN(failed_since(r, start), (size_t) INT32_MAX);
}

/* ---- processes ---------------------------------------------------------- */

typedef struct SortEntry {
        pid_t tgid, tid;
        int group;
        size_t idx;
} SortEntry;

static int sort_entry_cmp(const void *a, const void *b) {
        const SortEntry *x = a, *y = b;

        if (x->tgid != y->tgid)
                return x->tgid < y->tgid ? -1 : 1;
        if (x->group != y->group)
                return x->group < y->group ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void cgroup_processes_free(CgroupProcess *p, size_t n) {
        if (!p)
                return;
        for (size_t i = 0; i < n; i++)
                free(p[i].tasks);
        free(p);
}

int cgroup_plan_processes(const Plan *plan, CgroupProcess **ret, size_t *ret_n) {
        _cleanup_free_ SortEntry *e = NULL;
        CgroupProcess *out = NULL;
        size_t n = 0, n_out = 0;

        e = calloc(MAX(plan->n_tasks, 1u), sizeof(SortEntry));
        if (!e)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_tasks; i++) {
                const PlanTask *t = &plan->tasks[i];

                if (t->group < 0 || (size_t) t->group >= plan->n_groups || t->tid <= 0 || t->tgid <= 0)
                        continue;
                e[n++] = (SortEntry) { .tgid = t->tgid, .tid = t->tid, .group = t->group, .idx = i };
        }
        qsort(e, n, sizeof(SortEntry), sort_entry_cmp);

        out = calloc(MAX(n, 1u), sizeof(CgroupProcess));
        if (!out)
                return -ENOMEM;
        for (size_t a = 0; a < n;) {
                size_t b = a, best_a = a, best_n = 0;
                bool best_leader = false;
                pid_t best_min = 0;
                CgroupProcess *p = &out[n_out];

                while (b < n && e[b].tgid == e[a].tgid)
                        b++;
                /* Runs of one group within [a, b), each sorted by tid. */
                for (size_t s = a; s < b;) {
                        size_t t = s;
                        bool leader = false;

                        while (t < b && e[t].group == e[s].group) {
                                leader = leader || e[t].tid == e[t].tgid;
                                t++;
                        }
                        if (t - s > best_n || (t - s == best_n && ((leader && !best_leader) ||
                                                                   (leader == best_leader && e[s].tid < best_min)))) {
                                best_a = s;
                                best_n = t - s;
                                best_leader = leader;
                                best_min = e[s].tid;
                        }
                        s = t;
                }
                p->tgid = e[a].tgid;
                p->group = e[best_a].group;
                p->n_planned = (unsigned) (b - a);
                p->tasks = calloc(best_n, sizeof(size_t));
                if (!p->tasks) {
                        cgroup_processes_free(out, n_out);
                        return -ENOMEM;
                }
                /* The main thread first: the journal names a process by it. */
                for (size_t i = best_a; i < best_a + best_n; i++)
                        if (e[i].tid == e[i].tgid)
                                p->tasks[p->n_tasks++] = e[i].idx;
                for (size_t i = best_a; i < best_a + best_n; i++)
                        if (e[i].tid != e[i].tgid)
                                p->tasks[p->n_tasks++] = e[i].idx;
                n_out++;
                a = b;
        }
        *ret = out;
        *ret_n = n_out;
        return 0;
}

/* Take a handle on the first planned thread of the process that is still
 * the one the plan meant. -ESRCH: none is. */
static int acquire_process(const CgroupEnv *env, const Plan *plan, const CgroupProcess *p, PidRef *ret,
                           const PlanTask **ret_task) {
        int k = -ESRCH;

        for (size_t i = 0; i < p->n_tasks; i++) {
                const PlanTask *t = &plan->tasks[p->tasks[i]];

                k = pidref_acquire(env->root, env->pidref, t->tid, t->start_time, ret);
                if (k == -ESRCH)
                        continue;
                if (k >= 0)
                        *ret_task = t;
                return k;
        }
        return -ESRCH;
}

/* The start time of the process's main thread while tid (of the same
 * process) is held: the main thread's number cannot be reused while any
 * thread of the process lives. */
static int leader_start_time(const CgroupEnv *env, const PlanTask *t, uint64_t *ret) {
        if (t->tid == t->tgid) {
                *ret = t->start_time;
                return 0;
        }
        return pidref_read_start_time(env->root, -1, t->tgid, ret);
}

/* A write the kernel took, by whether the thread written lived after it:
 * alive 1, 0, or a negative errno (it could not be told). */
static int moved_outcome(CgroupResult *it, int alive) {
        if (alive == 0)
                return item_ok(it, CGROUP_VANISHED);
        if (alive < 0)
                return item_fail(it, alive, "moved, but whether the task lives could not be told");
        return item_ok(it, CGROUP_DONE);
}

typedef enum MoveCheck {
        MOVE_CHECK_ALIVE,     /* the thread lived after the write: it moved */
        MOVE_CHECK_READ_BACK, /* and proc/<tid>/cgroup names cg now */
        MOVE_CHECK_LATER,     /* neither: the caller's check after its own act tells
                               * (CgroupMove.check_later) */
} MoveCheck;

/* Write tid to cg's cgroup.procs and check: the item's outcome. ref is the
 * thread written. *ret_written: the kernel took the write (may be NULL).
 * The fast path leaves the read-back to the next pass: a write the kernel
 * took, to a thread alive throughout, moved it. */
static int move_one(const CgroupEnv *env, CgroupResult *it, const PidRef *ref, const char *cg, MoveCheck check,
                    bool *ret_written) {
        _cleanup_free_ char *after = NULL;
        char num[21];
        int k;

        (void) format_u64(num, (uint64_t) ref->tid);
        k = write_procs(env, cg, num);
        if (ret_written)
                *ret_written = k >= 0;
        if (k == -ESRCH)
                return item_ok(it, CGROUP_VANISHED);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return item_fail(it, k, "writing cgroup.procs: %s", errno_reason(k));
        if (check == MOVE_CHECK_LATER)
                return item_ok(it, CGROUP_DONE);
        k = pidref_alive(ref, env->root, env->pidref);
        if (k <= 0 || check == MOVE_CHECK_ALIVE)
                return moved_outcome(it, k);
        k = proc_cgroup_read(env->root, ref->tid, env->bin, &after);
        if (k >= 0 && !streq(after, cg)) {
                pid_t by;

                /* Its main thread may have exited: the live threads tell. */
                after = mfree(after);
                k = proc_cgroup_read_process(env->root, ref->tid, env->bin, &after, &by);
        }
        if (k == -ESRCH)
                return item_ok(it, CGROUP_VANISHED);
        if (k < 0)
                return item_fail(it, k, "moved, but /proc/%d/cgroup could not be read back", (int) ref->tid);
        if (!streq(after, cg)) {
                set_str(&it->found, after);
                return item_fail(it, -EIO, "moved, but /proc/%d/cgroup reads %s", (int) ref->tid, after);
        }
        return item_ok(it, CGROUP_DONE);
}

/* The processes in cg now, from its cgroup.procs, sorted. None when it
 * cannot be read, or when cg is not a plain domain cgroup (cgroup.type): a
 * threaded domain's cgroup.procs lists every process with its main thread
 * anywhere in its threaded subtree. Then every process is looked at one by
 * one. */
typedef struct Members {
        bool read;
        pid_t *pids;
        size_t n;
} Members;

/* One line of cgroup.procs: a pid, or false. */
static bool parse_procs_line(const char *line, pid_t *ret) {
        char *end;
        long pid;

        errno = 0;
        pid = strtol(line, &end, 10);
        if (errno || *end || pid <= 0 || pid > INT32_MAX)
                return false;
        *ret = (pid_t) pid;
        return true;
}

static int members_add(Members *m, size_t *cap, pid_t pid) {
        if (m->n == *cap) {
                size_t c = *cap ? *cap * 2 : 64;
                pid_t *np = realloc(m->pids, c * sizeof(pid_t));

                if (!np)
                        return -ENOMEM;
                m->pids = np;
                *cap = c;
        }
        m->pids[m->n++] = pid;
        return 0;
}

static int members_read(const CgroupEnv *env, const char *cg, Members *m) {
        _cleanup_free_ char *type = NULL, *path = NULL, *text = NULL;
        size_t cap = 0;
        int k;

        m->read = true;
        k = read_attr(env, cg, "cgroup.type", &type);
        if (k == -ENOMEM)
                return k;
        if (k < 0 || !streq(strstrip(type), "domain"))
                return 0;
        if (fs_path(env, cg, "cgroup.procs", &path) < 0)
                return -ENOMEM;
        k = root_read_file(env->root, path, CGROUP_PROCS_MAX, &text, NULL);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return 0;
        for (char *p = text, *save = NULL, *tok; (tok = strtok_r(p, "\n", &save)); p = NULL) {
                pid_t pid;

                if (parse_procs_line(tok, &pid) && (k = members_add(m, &cap, pid)) < 0)
                        return k;
        }
        if (m->n > 1)
                qsort(m->pids, m->n, sizeof(pid_t), compare_pid);
        return 0;
}

/* Every process there is now: the numbers /proc lists (a process's, while
 * any thread of it lives: its leader stays until the last one has gone). */
static int processes_read(const CgroupEnv *env, Members *m) {
        int k = tasks_list_processes(env->root, -1, &m->pids, &m->n);

        if (k == -ENODATA)
                return 0; /* not read: no procfs there */
        if (k < 0)
                return k;
        m->read = true;
        return 0;
}

/* At this many journal entries to check, cgroup_journal_prune() lists
 * /proc. */
#define CGROUP_PRUNE_LIST_MIN 32u

static bool members_has(const Members *m, pid_t pid) {
        return m->n > 0 && bsearch(&pid, m->pids, m->n, sizeof(pid_t), compare_pid);
}

static void members_free(Members *m, size_t n) {
        for (size_t i = 0; m && i < n; i++)
                free(m[i].pids);
        free(m);
}

typedef struct Pending {
        size_t proc;     /* index into the processes */
        size_t item;     /* index into the report */
        pid_t tgid;
        uint64_t leader_start;
        bool recorded;   /* journal entry made by this batch */
        PidRef ref;      /* the handle step 1 took, kept for the move (the first
                          * CGROUP_PASS_PINS_MAX; PIDREF_NULL for the others) */
        const PlanTask *task; /* the thread ref holds */
} Pending;

/* Handles a pass keeps from looking at a process to moving it: a pin and a
 * stat read fewer per move, within a bound on the descriptors held. */
#define CGROUP_PASS_PINS_MAX 256u

/* Is the process somewhere else than from now (or unreadable)? Gone: no. */
static bool moved_since(const CgroupEnv *env, const Plan *plan, const CgroupProcess *p, const char *from) {
        _cleanup_free_ char *now = NULL;
        const PlanTask *t = NULL;
        PidRef ref = PIDREF_NULL;
        int k;

        k = acquire_process(env, plan, p, &ref, &t);
        if (k == -ESRCH)
                return false;
        if (k >= 0) {
                k = task_cgroup(env, &ref, &now);
                pidref_done(&ref);
        }
        if (k == -ESRCH)
                return false;
        return k < 0 || !from || !streq(now, from);
}

int cgroup_apply_tasks(const CgroupEnv *env_in, const Plan *plan, Journal *journal, CgroupReport *r) {
        CgroupProcess *procs = NULL;
        Members *members = NULL;
        _cleanup_free_ Pending *pend = NULL;
        size_t n_procs = 0, n_pend = 0, start = r->n;
        CgroupEnv env;
        int k;

        k = env_check(env_in, plan, &env);
        if (k < 0)
                return k;
        k = cgroup_plan_processes(plan, &procs, &n_procs);
        if (k < 0)
                return k;
        pend = calloc(MAX(n_procs, 1u), sizeof(Pending));
        members = calloc(MAX(plan->n_groups, (size_t) 1), sizeof(Members));
        if (!pend || !members) {
                k = -ENOMEM;
                goto finish;
        }

        /* 1. Where is each process now? Record the originals of those that
         *    move, and commit once before the first move. A process its
         *    group's cgroup.procs lists is there already: one read of that
         *    file per group, not a pin and a read of /proc for each of its
         *    processes every pass (most are where the last pass or the fast
         *    path put them). */
        for (size_t i = 0; i < n_procs; i++) {
                const CgroupProcess *p = &procs[i];
                _cleanup_free_ char *cg = NULL, *now = NULL;
                const PlanTask *t = NULL;
                PidRef ref = PIDREF_NULL;
                uint64_t lst = 0;
                CgroupResult *it;

                yield_now(env.yield);
                if (!rel_path_valid(plan->groups[p->group].path))
                        continue; /* reported by the tree */
                if (cg_join(plan->cgroup_root, plan->groups[p->group].path, &cg) < 0 ||
                    !(it = item_new(r, CGROUP_ITEM_MOVE, cg, NULL))) {
                        k = -ENOMEM;
                        goto finish;
                }
                it->tgid = p->tgid;
                it->pid = plan->tasks[p->tasks[0]].tid;
                if (!members[p->group].read && (k = members_read(&env, cg, &members[p->group])) < 0)
                        goto finish;
                /* Listed: there (or, when the planned process has gone,
                 * another that took its number is: nothing to do either;
                 * someone who moves it after the read is the next pass's). */
                if (members_has(&members[p->group], p->tgid)) {
                        set_str(&it->from, cg);
                        item_ok(it, CGROUP_ALREADY);
                        continue;
                }
                if (yield_changed(env.yield, p->tgid)) {
                        set_str(&it->reason, YIELD_CHANGED_REASON);
                        item_ok(it, CGROUP_SKIPPED);
                        continue;
                }
                k = acquire_process(&env, plan, p, &ref, &t);
                if (k == -ESRCH) {
                        item_ok(it, CGROUP_VANISHED);
                        continue;
                }
                if (k < 0) {
                        item_fail(it, k, "cannot take a handle on the task");
                        continue;
                }
                it->pid = t->tid;
                k = task_cgroup(&env, &ref, &now);
                if (k >= 0)
                        k = leader_start_time(&env, t, &lst);
                if (k >= 0 && pidref_alive(&ref, env.root, env.pidref) == 0)
                        k = -ESRCH; /* the leader's number might have been reused meanwhile */
                if (k < 0)
                        pidref_done(&ref);
                if (k == -ESRCH) {
                        item_ok(it, CGROUP_VANISHED);
                        continue;
                }
                if (k < 0) {
                        item_fail(it, k, "cannot read where the task is");
                        continue;
                }
                set_str(&it->from, now);
                if (streq(now, cg)) {
                        pidref_done(&ref);
                        item_ok(it, CGROUP_ALREADY);
                        continue;
                }
                pend[n_pend] = (Pending) { .proc = i, .item = r->n - 1, .tgid = p->tgid, .leader_start = lst,
                                           .ref = PIDREF_NULL, .task = t };
                if (n_pend < CGROUP_PASS_PINS_MAX)
                        pend[n_pend].ref = ref;
                else
                        pidref_done(&ref);
                if (journal && !cgroup_path_is_below(now, plan->cgroup_root)) {
                        k = journal_record_task(journal, p->tgid, lst, now);
                        if (k < 0)
                                pidref_done(&pend[n_pend].ref);
                        if (k == -ENOMEM)
                                goto finish;
                        if (k < 0) {
                                item_fail(it, k, "the original cgroup could not be journaled: not moved");
                                continue;
                        }
                        pend[n_pend].recorded = k > 0;
                        it->journaled = true;
                }
                n_pend++;
        }
        k = journal_commit_maybe(journal);
        if (k < 0) {
                for (size_t i = 0; i < n_pend; i++) {
                        CgroupResult *it = &r->items[pend[i].item];

                        it->journaled = false;
                        item_fail(it, k, "the journal could not be committed: not moved");
                }
                goto finish;
        }

        /* 2. Move. */
        for (size_t i = 0; i < n_pend; i++) {
                const CgroupProcess *p = &procs[pend[i].proc];
                CgroupResult *it = &r->items[pend[i].item];
                const PlanTask *t = NULL;
                PidRef ref = PIDREF_NULL;
                bool written = false;

                yield_now(env.yield);
                if (yield_changed(env.yield, p->tgid)) {
                        pidref_done(&pend[i].ref);
                        set_str(&it->reason, YIELD_CHANGED_REASON);
                        item_ok(it, CGROUP_SKIPPED);
                        /* The entry recorded above: the fast path, which may
                         * have moved it meanwhile, found it and relies on it.
                         * Where it still is in the original, nobody moved it:
                         * moot. */
                        if (pend[i].recorded && !moved_since(&env, plan, p, it->from)) {
                                (void) journal_forget_task(journal, pend[i].tgid, pend[i].leader_start);
                                it->journaled = false;
                        }
                        continue;
                }
                /* The handle step 1 took, if kept and its thread still
                 * the one it was (a while ago: yields, the commit, the
                 * moves before; its tid may name another since): one
                 * check, no pin, no stat read. Else a live thread of the
                 * process is taken, as without one. */
                if (pidref_is_set(&pend[i].ref) && pidref_alive(&pend[i].ref, env.root, env.pidref) > 0) {
                        ref = pend[i].ref; /* handed over */
                        pend[i].ref = PIDREF_NULL;
                        t = pend[i].task;
                        k = 0;
                } else {
                        pidref_done(&pend[i].ref);
                        k = acquire_process(&env, plan, p, &ref, &t);
                }
                if (k == -ESRCH)
                        item_ok(it, CGROUP_VANISHED);
                else if (k < 0)
                        item_fail(it, k, "cannot take a handle on the task");
                else {
                        it->pid = t->tid;
                        k = move_one(&env, it, &ref, it->path, MOVE_CHECK_READ_BACK, &written);
                        pidref_done(&ref);
                        if (k == -ENOMEM)
                                goto finish;
                }
                /* An entry recorded for a process that did not move (gone, or
                 * refused) is moot; one that moved stays even if the thread
                 * written exited afterwards (the rest of the process may live). */
                if (pend[i].recorded && !written) {
                        (void) journal_forget_task(journal, pend[i].tgid, pend[i].leader_start);
                        it->journaled = false;
                }
        }
        k = journal_commit_maybe(journal);
        if (k < 0)
                goto finish; /* only forgotten entries were not committed: harmless */
        k = (int) MIN(failed_since(r, start), (size_t) INT32_MAX);

finish:
        for (size_t i = 0; pend && i < n_pend; i++)
                pidref_done(&pend[i].ref);
        members_free(members, plan->n_groups);
        cgroup_processes_free(procs, n_procs);
        return k;
}

int cgroup_apply(const CgroupEnv *env, const Plan *plan, Journal *journal, CgroupReport *r) {
        int a, b;

        a = cgroup_apply_tree(env, plan, journal, r);
        if (a < 0)
                return a;
        b = cgroup_apply_tasks(env, plan, journal, r);
        if (b < 0)
                return b;
        return a + b;
}

/* ---- the fast path -------------------------------------------------------- */

static void moves_release(CgroupMove *moves, size_t n, FdBin *bin) {
        for (size_t i = 0; i < n; i++) {
                if (!moves[i].keep_ref)
                        pidref_done_into(&moves[i].ref, bin);
                moves[i].pending = false;
        }
}

void cgroup_moves_release(CgroupMove *moves, size_t n, FdBin *bin) {
        for (size_t i = 0; moves && i < n; i++)
                pidref_done_into(&moves[i].ref, bin);
}

int cgroup_move_prepare(const CgroupEnv *env_in, const char *cgroup_root, CgroupMove *moves, size_t n, Journal *journal,
                        CgroupReport *r) {
        size_t failed = 0;
        CgroupEnv env;
        int k;

        for (size_t i = 0; i < n; i++) {
                moves[i].item = SIZE_MAX;
                moves[i].pending = moves[i].recorded = moves[i].unchecked = false;
                moves[i].ref = PIDREF_NULL;
        }
        k = env_check(env_in, NULL, &env);
        if (k < 0)
                return k;
        if (!root_path_valid(cgroup_root))
                return -EINVAL;

        for (size_t i = 0; i < n; i++) {
                CgroupMove *m = &moves[i];
                _cleanup_free_ char *cg = NULL, *now = NULL;
                const char *from;
                CgroupResult *it;

                /* The report takes the path, and the original (from). */
                if (cg_join(cgroup_root, m->group ?: "", &cg) < 0 || !(it = item_new_take(r, CGROUP_ITEM_MOVE, &cg, NULL)))
                        return -ENOMEM;
                m->item = r->n - 1;
                it->tgid = it->pid = m->tgid;
                if (!m->group || !rel_path_valid(m->group)) {
                        item_fail(it, -EINVAL, "not a cgroup path below topod's root");
                        continue;
                }
                /* The handle is held until the write is checked: the thread
                 * alive then held its tid throughout, so the cgroup read here
                 * (the original journaled) was its own. */
                if (m->start_time == 0) {
                        PidRefOps by_stat = *env.pidref;

                        by_stat.pidfs_idents = false;
                        k = pidref_acquire_current(env.root, m->by_start_time ? &by_stat : env.pidref, m->tgid,
                                                   &m->ref);
                        if (k >= 0)
                                m->start_time = m->ref.start_time;
                } else
                        k = pidref_acquire_process(env.root, env.pidref, m->tgid, m->start_time, &m->ref);
                if (k == -ESRCH) {
                        item_ok(it, CGROUP_VANISHED);
                        continue;
                }
                if (k < 0) {
                        item_fail(it, k, "cannot take a handle on the task");
                        continue;
                }
                k = task_cgroup(&env, &m->ref, &now);
                if (k == -ENOMEM)
                        return k;
                if (k < 0) {
                        pidref_done_into(&m->ref, env_in->bin);
                        if (k == -ESRCH)
                                item_ok(it, CGROUP_VANISHED);
                        else
                                item_fail(it, k, "cannot read where the task is");
                        continue;
                }
                free(it->from);
                from = it->from = TAKE_PTR(now);
                if (streq(from, it->path)) {
                        if (!m->keep_ref)
                                pidref_done_into(&m->ref, env_in->bin);
                        item_ok(it, CGROUP_ALREADY);
                        continue;
                }
                if (journal && !cgroup_path_is_below(from, cgroup_root)) {
                        k = journal_record_task(journal, m->tgid, m->start_time, from);
                        if (k == -ENOMEM)
                                return k;
                        if (k < 0) {
                                pidref_done_into(&m->ref, env_in->bin);
                                item_fail(it, k, "the original cgroup could not be journaled: not moved");
                                continue;
                        }
                        m->recorded = k > 0;
                        it->journaled = true;
                }
                m->pending = true;
        }
        /* Pending items read "failed" until written: not counted. */
        for (size_t i = 0; i < n; i++)
                failed += !moves[i].pending && moves[i].item < r->n && r->items[moves[i].item].outcome == CGROUP_FAILED;
        return (int) MIN(failed, (size_t) INT32_MAX);
}

int cgroup_move_finish(const CgroupEnv *env_in, CgroupMove *moves, size_t n, Journal *journal, int journal_error,
                       CgroupReport *r) {
        size_t failed = 0;
        bool pending = false;
        CgroupEnv env;
        int k;

        for (size_t i = 0; i < n; i++)
                pending = pending || moves[i].pending;
        if (!pending) {
                moves_release(moves, n, env_in->bin);
                goto count;
        }
        k = env_check(env_in, NULL, &env);
        if (k < 0)
                journal_error = k; /* cannot happen after a prepare that left moves pending */

        for (size_t i = 0; i < n; i++) {
                CgroupMove *m = &moves[i];
                bool later = m->check_later && m->keep_ref, written = false;
                CgroupResult *it;

                if (!m->pending) {
                        if (!m->keep_ref)
                                pidref_done_into(&m->ref, env_in->bin);
                        continue;
                }
                it = &r->items[m->item];
                if (journal_error < 0) {
                        it->journaled = false;
                        item_fail(it, journal_error, "the journal could not be committed: not moved");
                } else {
                        k = move_one(&env, it, &m->ref, it->path, later ? MOVE_CHECK_LATER : MOVE_CHECK_ALIVE,
                                     &written);
                        if (k == -ENOMEM) {
                                moves_release(moves, n, env_in->bin);
                                return k;
                        }
                        m->unchecked = later && written && it->outcome == CGROUP_DONE;
                }
                if (!m->keep_ref || !written)
                        pidref_done_into(&m->ref, env_in->bin);
                m->pending = false;
                /* Recorded for a process that did not move: moot. */
                if (m->recorded && !written) {
                        (void) journal_forget_task(journal, m->tgid, m->start_time);
                        it->journaled = false;
                }
        }
count:
        for (size_t i = 0; i < n; i++)
                if (moves[i].item < r->n && r->items[moves[i].item].outcome == CGROUP_FAILED)
                        failed++;
        return (int) MIN(failed, (size_t) INT32_MAX);
}

CgroupOutcome cgroup_move_settle(const CgroupEnv *env_in, CgroupMove *m, int alive, CgroupReport *r) {
        CgroupResult *it;
        CgroupEnv env;

        if (m->item >= r->n)
                return CGROUP_FAILED;
        it = &r->items[m->item];
        if (!m->unchecked)
                return it->outcome;
        m->unchecked = false;
        if (alive < 0)
                alive = env_check(env_in, NULL, &env) < 0 ? -EINVAL : pidref_alive(&m->ref, env.root, env.pidref);
        (void) moved_outcome(it, alive);
        return it->outcome;
}

int cgroup_journal_prune(const CgroupEnv *env, const Plan *plan, Journal *journal) {
        const PidRefOps *ops = env->pidref ?: &pidref_ops_host;
        _cleanup_free_ uint64_t *name = NULL;
        _cleanup_free_ bool *drop = NULL;
        _cleanup_free_ pid_t *live_pids = NULL;
        _cleanup_free_ JournalCookie *moot = NULL;
        _cleanup_free_ uint64_t *moot_to = NULL;
        Members live = {};
        bool any = false, renamed = false;
        size_t n, total, n_moot = 0, n_cookies;

        if (!journal || (journal->n_tasks == 0 && journal->n_cookies == 0))
                return 0;
        total = journal->n_tasks;
        n_cookies = journal->n_cookies;
        drop = calloc(MAX(total, (size_t) 1), sizeof(bool));
        name = calloc(MAX(total, (size_t) 1), sizeof(uint64_t));
        moot = calloc(total + n_cookies + 1, sizeof(JournalCookie));
        moot_to = calloc(total + n_cookies + 1, sizeof(uint64_t)); /* all 0: forgotten */
        if (!drop || !name || !moot || !moot_to)
                return -ENOMEM;
        for (size_t i = 0, checked = 0; i < total; i++) {
                const JournalTask *jt = &journal->tasks[i];
                const PlanTask *pt = plan ? plan_find_task(plan, jt->tid) : NULL;
                ProcStat st;
                int k;

                if (pt && pt->start_time == jt->start_time)
                        continue; /* planned now: alive at the last scan, checked by its move */
                /* Placed by the fast path during the pass, or left by an
                 * exec storm's scan: the next pass's (no pin and no read
                 * of each, with the lock held, for hundreds of them). Not
                 * all when the pass lost count of them: the upkeep must
                 * go on. */
                if (yield_known_changed(env->yield, jt->tid))
                        continue;
                /* Died whole since (the events tell: every thread exited,
                 * no task has the number now): reaped or a zombie, nothing
                 * to restore. No pin and no read. */
                if (yield_known_dead(env->yield, jt->tid)) {
                        drop[i] = any = true;
                        continue;
                }
                /* Many to check (an exec storm's, most of them gone): one
                 * listing of /proc tells which are, where a handle on each
                 * costs a system call or four (a second and more of a
                 * pass in the test guest). A number not listed has no
                 * process: not the entry's, whatever comes after. Without
                 * the listing (an error, no procfs), one by one. */
                if (++checked == CGROUP_PRUNE_LIST_MIN) {
                        k = processes_read(env, &live);
                        live_pids = live.pids;
                        if (k == -ENOMEM)
                                return k;
                }
                if (live.read && !members_has(&live, jt->tid)) {
                        drop[i] = any = true;
                        continue;
                }
                if (pidref_ident_is_pidfs(jt->start_time)) {
                        /* Known by its pidfd's inode (the fast path's): pinned
                         * by it, or gone. Alive, it is named by its start time
                         * from now on, so that later passes find it planned
                         * without a pin: read through the pin. */
                        k = pidref_read_stat_pinned(env->root, ops, jt->tid, jt->start_time, &st);
                        if (k > 0) {
                                name[i] = st.start_time;
                                renamed = true;
                        }
                        /* Exited since: a zombie read then is the pinned one,
                         * or the pinned one was reaped; either way gone
                         * (nothing of an exited process to restore). */
                        drop[i] = k == -ESRCH || (k == 0 && procfs_stat_exited(&st));
                } else {
                        k = pidref_read_stat(env->root, -1, jt->tid, &st);
                        /* Gone, exited and waiting to be reaped, or its
                         * number names another process now. Anything else
                         * (EACCES, EMFILE) keeps the entry. */
                        drop[i] = k == -ESRCH || (k >= 0 && (st.start_time != jt->start_time || procfs_stat_exited(&st)));
                }
                any = any || drop[i];
        }
        /* A forgotten task's cookie entry, under the same name, is moot too. */
        for (size_t i = 0; i < total; i++)
                if (drop[i])
                        moot[n_moot++] = (JournalCookie) { journal->tasks[i].tid, journal->tasks[i].start_time };
        /* The fast path's cookie entries of processes that were in their
         * group already (no move, no task entry), named by their pidfd's
         * inode (main threads, which /proc lists): one not listed has
         * gone. Else clearing it (unplanned) took the cookie applier's
         * thread a pidfd_open() each, with the lock held: after an exec
         * storm, hundreds. Any entry of a task known dead (no task has its
         * number: yield_known_dead()) is moot, whatever names it. */
        if (!live.read && n_cookies >= CGROUP_PRUNE_LIST_MIN) {
                size_t pidfs = 0;

                for (size_t i = 0; i < n_cookies; i++)
                        pidfs += pidref_ident_is_pidfs(journal->cookies[i].start_time);
                if (pidfs >= CGROUP_PRUNE_LIST_MIN && processes_read(env, &live) == -ENOMEM)
                        return -ENOMEM;
                live_pids = live.pids;
        }
        for (size_t i = 0; i < n_cookies; i++) {
                const JournalCookie *jc = &journal->cookies[i];

                if ((live.read && pidref_ident_is_pidfs(jc->start_time) && !members_has(&live, jc->tid)) ||
                    yield_known_dead(env->yield, jc->tid))
                        moot[n_moot++] = *jc;
        }
        (void) journal_rename_cookies(journal, moot, moot_to, n_moot);
        /* One sweep: after an exec storm most of the entries go at once. */
        n = any ? journal_forget_tasks(journal, drop) : 0;
        if (renamed) {
                /* The entries that stayed, in order: their new names. */
                size_t u = 0;

                for (size_t i = 0; i < total; i++)
                        if (!drop[i])
                                name[u++] = name[i];
                (void) journal_name_tasks(journal, name);
        }
        return (int) MIN(n, (size_t) INT32_MAX);
}

/* ---- restore ------------------------------------------------------------ */

/* The nearest cgroup at or above path that exists and that topod did not
 * create. */
static int escape_target(const CgroupEnv *env, const Journal *j, const char *path, char **ret) {
        _cleanup_free_ char *cur = strdup(path);
        int k;

        if (!cur)
                return -ENOMEM;
        /* " (deleted)": the kernel's mark for a removed cgroup; its parent may live. */
        if (strchr(cur, ' '))
                *strchr(cur, ' ') = '\0';
        for (;;) {
                char *up;

                if (streq(cur, "/"))
                        break;
                if (!journal_has_cgroup(j, cur)) {
                        k = cg_exists(env, cur);
                        if (k < 0 && k != -ENOENT)
                                return k;
                        if (k > 0)
                                break;
                }
                k = cg_parent(cur, &up);
                if (k < 0)
                        return k;
                free(cur);
                cur = up;
        }
        *ret = TAKE_PTR(cur);
        return 0;
}

/* Whether cg has controllers enabled for its children (unreadable: no). */
static bool holds_children_controllers(const CgroupEnv *env, const char *cg) {
        _cleanup_free_ char *text = NULL;

        return read_attr(env, cg, "cgroup.subtree_control", &text) >= 0 && *strstrip(text);
}

/* Task entry i back where it was; *forget set when its entry is done with
 * (the caller forgets them all in one sweep: one each rebuilt the journal's
 * index each time, quadratic in the entries at every stop). */
static int restore_task(const CgroupEnv *env, CgroupReport *r, Journal *j, size_t i, bool *forget) {
        const JournalTask *jt = &j->tasks[i];
        _cleanup_free_ char *dest = NULL, *now = NULL;
        PidRef ref = PIDREF_NULL;
        pid_t tid = jt->tid, by;
        uint64_t st = jt->start_time;
        CgroupResult *it;
        int k;

        k = escape_target(env, j, jt->cgroup, &dest);
        if (k < 0)
                return k;
        it = item_new(r, CGROUP_ITEM_MOVE, dest, NULL);
        if (!it)
                return -ENOMEM;
        it->pid = it->tgid = tid;
        it->back = true;
        k = pidref_acquire(env->root, env->pidref, tid, st, &ref);
        if (k == -ESRCH) {
                item_ok(it, CGROUP_VANISHED);
                *forget = true;
                return 0;
        }
        if (k < 0)
                return item_fail(it, k, "cannot take a handle on the task");
        k = proc_cgroup_read_process(env->root, tid, env->bin, &now, &by);
        if (k >= 0 && (k = repin(env, &ref, by)) == -ESRCH)
                k = -EAGAIN; /* that thread exited just now: the process may live on; next time */
        it->pid = by;
        if (k == -ESRCH) {
                pidref_done(&ref);
                item_ok(it, CGROUP_VANISHED);
                *forget = true;
                return 0;
        }
        if (k < 0) {
                pidref_done(&ref);
                return item_fail(it, k, "cannot read where the task is");
        }
        set_str(&it->from, now);
        if (streq(now, dest)) {
                pidref_done(&ref);
                item_ok(it, CGROUP_ALREADY);
                *forget = true;
                return 0;
        }
        k = move_one(env, it, &ref, dest, MOVE_CHECK_READ_BACK, NULL);
        /* A cgroup that has domain controllers enabled for its children
         * holds no processes (EBUSY): the original was removed and the one
         * above it is such a cgroup, or the original became one. The next
         * one up that topod did not make (those above have the controllers
         * too: in practice the root cgroup, which takes any). Else the same
         * failure at every pass, and topod's cgroup never empties. Not for
         * an EBUSY of another cause (a deadline task the CPUs there have no
         * bandwidth for). */
        while (k != -ENOMEM && it->outcome == CGROUP_FAILED && it->error == -EBUSY && !streq(dest, "/") &&
               holds_children_controllers(env, dest)) {
                _cleanup_free_ char *up = NULL, *next = NULL;

                if ((k = cg_parent(dest, &up)) < 0 || (k = escape_target(env, j, up, &next)) < 0)
                        break; /* the EBUSY stays reported */
                free(dest);
                dest = TAKE_PTR(next);
                set_str(&it->path, dest);
                it->reason = mfree(it->reason);
                k = move_one(env, it, &ref, dest, MOVE_CHECK_READ_BACK, NULL);
        }
        pidref_done(&ref);
        if (k == -ENOMEM)
                return k;
        *forget = it->outcome != CGROUP_FAILED;
        return 0;
}

int cgroup_release_unplanned(const CgroupEnv *env_in, const Plan *plan, Journal *journal, CgroupReport *r) {
        _cleanup_free_ bool *forget = NULL;
        _cleanup_free_ pid_t *planned = NULL;
        CgroupEnv env;
        int k;

        if (!journal || journal->n_tasks == 0)
                return 0;
        if ((k = env_check(env_in, plan, &env)) < 0)
                return k;
        forget = calloc(journal->n_tasks, sizeof(bool));
        planned = malloc(MAX(plan->n_tasks, (size_t) 1) * sizeof(pid_t));
        if (!forget || !planned)
                return -ENOMEM;
        /* By process: a policy may place a process for some of its
         * threads only (a class, a thread name), not its main thread. */
        for (size_t t = 0; t < plan->n_tasks; t++)
                planned[t] = plan->tasks[t].tgid;
        qsort(planned, plan->n_tasks, sizeof(pid_t), compare_pid);
        for (size_t i = journal->n_tasks; i > 0; i--) {
                const JournalTask *jt = &journal->tasks[i - 1];
                _cleanup_free_ char *now = NULL;
                pid_t by;

                /* Placed by this plan; named by a pin (the fast path's:
                 * the next prune names it); or changed since the scan, or
                 * left by it, or count lost: not this plan's to say. */
                if (bsearch(&jt->tid, planned, plan->n_tasks, sizeof(pid_t), compare_pid) ||
                    pidref_ident_is_pidfs(jt->start_time) || yield_changed(env.yield, jt->tid))
                        continue;
                /* Only from a group of topod's that this plan no longer
                 * has: its policy left force, or a reload removed it (the
                 * groups of policies in force stay while empty: a class
                 * that flickers, a cgroup = match, a process the scan
                 * could not read are not let go). Where it is now is read
                 * again, pinned, by the move. */
                if (proc_cgroup_read_process(env.root, jt->tid, env.bin, &now, &by) < 0 ||
                    !cgroup_path_is_below(now, plan->cgroup_root) || plan_has_cgroup(plan, now))
                        continue;
                if ((k = restore_task(&env, r, journal, i - 1, &forget[i - 1])) == -ENOMEM)
                        return k;
        }
        (void) journal_forget_tasks(journal, forget);
        return 0;
}

int cgroup_created_threads(const CgroupEnv *env, const Journal *journal, pid_t **ret, size_t *ret_n) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0, cap = 0, u = 0;
        int k;

        *ret = NULL;
        *ret_n = 0;
        for (size_t i = 0; i < journal->n_cgroups; i++) {
                _cleanup_free_ char *path = NULL, *text = NULL;

                if (strstr(journal->cgroups[i], SUBTREE_MARK))
                        continue; /* a controller it enabled, not a cgroup */
                k = fs_path(env, journal->cgroups[i], "cgroup.threads", &path);
                if (k < 0)
                        return k;
                k = root_read_file(env->root, path, CGROUP_PROCS_MAX, &text, NULL);
                if (k == -ENOENT || k == -ENODEV)
                        continue; /* removed meanwhile */
                if (k < 0)
                        return k;
                for (char *p = text, *save = NULL, *tok; (tok = strtok_r(p, "\n", &save)); p = NULL) {
                        pid_t tid;

                        if (!parse_procs_line(tok, &tid))
                                continue;
                        if (n == cap) {
                                pid_t *m = realloc(tids, (cap = MAX(cap * 2, (size_t) 64)) * sizeof(pid_t));

                                if (!m)
                                        return -ENOMEM;
                                tids = m;
                        }
                        tids[n++] = tid;
                }
        }
        if (n > 0)
                qsort(tids, n, sizeof(pid_t), compare_pid);
        for (size_t i = 0; i < n; i++)
                if (u == 0 || tids[u - 1] != tids[i])
                        tids[u++] = tids[i];
        *ret = TAKE_PTR(tids);
        *ret_n = u;
        return 0;
}

/* Processes in a cgroup topod created that the journal does not know. */
static int evict_unknown(const CgroupEnv *env, CgroupReport *r, const Journal *j, const char *cg) {
        _cleanup_free_ char *path = NULL, *text = NULL, *dest = NULL;
        int k;

        k = fs_path(env, cg, "cgroup.procs", &path);
        if (k < 0)
                return k;
        k = root_read_file(env->root, path, CGROUP_PROCS_MAX, &text, NULL);
        if (k == -ENOENT)
                return 0;
        if (k == -ENOMEM)
                return k;
        if (k < 0) {
                CgroupResult *it = item_new(r, CGROUP_ITEM_MOVE, cg, NULL);

                if (!it)
                        return -ENOMEM;
                return item_fail(it, k, "cannot read cgroup.procs: %s", errno_reason(k));
        }
        for (char *p = text, *save = NULL, *tok; (tok = strtok_r(p, "\n", &save)); p = NULL) {
                _cleanup_free_ char *now = NULL;
                PidRef ref = PIDREF_NULL;
                CgroupResult *it;
                uint64_t st;
                pid_t pid;

                if (!parse_procs_line(tok, &pid))
                        continue;
                if (!dest) {
                        _cleanup_free_ char *up = NULL;

                        k = cg_parent(cg, &up);
                        if (k < 0)
                                return k;
                        k = escape_target(env, j, up, &dest);
                        if (k < 0)
                                return k;
                }
                it = item_new(r, CGROUP_ITEM_MOVE, dest, NULL);
                if (!it)
                        return -ENOMEM;
                it->pid = it->tgid = pid;
                set_str(&it->from, cg);
                /* Its identity now; then still in cg, so still the one listed. */
                k = pidref_read_start_time(env->root, -1, pid, &st);
                if (k >= 0)
                        k = pidref_acquire(env->root, env->pidref, pid, st, &ref);
                if (k >= 0) {
                        pid_t by;

                        k = proc_cgroup_read_process(env->root, pid, env->bin, &now, &by);
                        /* Left by itself. Or its main thread exited here and
                         * the rest left: to go as well when they are in
                         * another of topod's, whose cgroup.procs does not
                         * list the process. */
                        if (k >= 0 && !streq(now, cg) && !journal_has_cgroup(j, now))
                                k = -ESRCH;
                        if (k >= 0 && (k = repin(env, &ref, by)) == -ESRCH)
                                k = -EAGAIN;
                        it->pid = by;
                }
                if (k == -ESRCH) {
                        pidref_done(&ref);
                        item_ok(it, CGROUP_VANISHED);
                        continue;
                }
                if (k < 0) {
                        pidref_done(&ref);
                        item_fail(it, k, "cannot take a handle on the task");
                        continue;
                }
                k = move_one(env, it, &ref, dest, MOVE_CHECK_READ_BACK, NULL);
                pidref_done(&ref);
                if (k == -ENOMEM)
                        return k;
                if (it->outcome == CGROUP_DONE) {
                        set_str(&it->reason, "not journaled (forked after the move, or placed by someone else): "
                                             "moved to the nearest cgroup topod did not create");
                }
        }
        return 0;
}

static int undo_controller(const CgroupEnv *env, CgroupReport *r, Journal *j, const char *entry) {
        _cleanup_free_ char *cg = NULL, *cur = NULL, *word = NULL, *mark = strdup(entry);
        const char *m = strstr(entry, SUBTREE_MARK), *ctl;
        CgroupResult *it;
        int k;

        if (!mark)
                return -ENOMEM;
        ctl = m + strlen(SUBTREE_MARK);
        cg = m == entry ? strdup("/") : strndup(entry, (size_t) (m - entry));
        if (!cg || asprintf(&word, "-%s", ctl) < 0)
                return -ENOMEM;
        it = item_new(r, CGROUP_ITEM_CONTROLLER, cg, word);
        if (!it)
                return -ENOMEM;
        k = read_attr(env, cg, "cgroup.subtree_control", &cur);
        if (k == -ENOENT) {
                item_ok(it, CGROUP_ALREADY); /* the cgroup is gone */
                (void) journal_forget_cgroup(j, mark);
                return 0;
        }
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return item_fail(it, k, "cannot read cgroup.subtree_control: %s", errno_reason(k));
        set_str(&it->found, cur);
        if (!word_listed(cur, ctl)) {
                item_ok(it, CGROUP_ALREADY);
                (void) journal_forget_cgroup(j, mark);
                return 0;
        }
        k = write_attr(env, cg, "cgroup.subtree_control", word);
        if (k == -ENOMEM)
                return k;
        if (k == -EBUSY)
                /* A child (not topod's) uses it: leave it on, keep the entry. */
                return item_fail(it, k, "busy: a child cgroup still has %s enabled", ctl);
        if (k < 0)
                return item_fail(it, k, "%s", errno_reason(k));
        cur = mfree(cur);
        k = read_attr(env, cg, "cgroup.subtree_control", &cur);
        if (k < 0)
                return item_fail(it, k, "written, but the read-back failed");
        if (word_listed(cur, ctl)) {
                set_str(&it->found, cur);
                return item_fail(it, -EIO, "written, but the read-back still lists it");
        }
        item_ok(it, CGROUP_DONE);
        (void) journal_forget_cgroup(j, mark);
        return 0;
}

/* Best effort, no report: cg no longer a partition, and no exclusive CPUs. */
static void dissolve(const CgroupEnv *env, const char *cg) {
        _cleanup_free_ char *part = NULL, *excl = NULL;

        if (read_attr(env, cg, "cpuset.cpus.partition", &part) >= 0 && !streq(part, "member"))
                (void) write_attr(env, cg, "cpuset.cpus.partition", "member");
        if (read_attr(env, cg, "cpuset.cpus.exclusive", &excl) >= 0 && *excl)
                (void) write_attr(env, cg, "cpuset.cpus.exclusive", "\n");
}

static int remove_dir(const CgroupEnv *env, CgroupReport *r, Journal *j, const char *entry) {
        _cleanup_free_ char *cg = strdup(entry), *path = NULL;
        CgroupResult *it;
        int k;

        if (!cg)
                return -ENOMEM;
        it = item_new(r, CGROUP_ITEM_RMDIR, cg, NULL);
        if (!it)
                return -ENOMEM;
        k = fs_path(env, cg, NULL, &path);
        if (k < 0)
                return k;
        k = env->ops->rmdir(env->ops->userdata, env->root, path);
        if (k == -ENOENT) {
                item_ok(it, CGROUP_ALREADY);
                (void) journal_forget_cgroup(j, cg);
                return 0;
        }
        if (k == -ENOMEM)
                return k;
        if (k < 0) {
                /* It stays (a process topod never knew of is inside): give
                 * its CPUs back all the same, or a remote partition would
                 * keep them from the machine after topod is gone. */
                dissolve(env, cg);
                return item_fail(it, k, "rmdir: %s", errno_reason(k));
        }
        k = cg_exists(env, cg);
        if (k > 0)
                return item_fail(it, -EIO, "rmdir returned, but the directory is still there");
        item_ok(it, CGROUP_DONE);
        (void) journal_forget_cgroup(j, cg);
        return 0;
}

int cgroup_restore(const CgroupEnv *env_in, Journal *journal, CgroupReport *r) {
        size_t start = r->n;
        CgroupEnv env;
        int k;

        k = env_check(env_in, NULL, &env);
        if (k < 0)
                return k;

        /* 1. Journaled processes back, their entries forgotten together
         *    after (those that failed stay). */
        if (journal->n_tasks > 0) {
                _cleanup_free_ bool *forget = calloc(journal->n_tasks, sizeof(bool));

                if (!forget)
                        return -ENOMEM;
                for (size_t i = journal->n_tasks; i > 0; i--)
                        STEP(restore_task(&env, r, journal, i - 1, &forget[i - 1]));
                (void) journal_forget_tasks(journal, forget);
        }

        /* 2. Whatever else sits in topod's cgroups. */
        for (size_t i = 0; i < journal->n_cgroups; i++)
                if (!strstr(journal->cgroups[i], SUBTREE_MARK))
                        STEP(evict_unknown(&env, r, journal, journal->cgroups[i]));

        /* 3. Created cgroups and enabled controllers, newest first: children
         *    before parents, a parent's controllers after its children went. */
        for (size_t i = journal->n_cgroups; i > 0; i--) {
                _cleanup_free_ char *entry = strdup(journal->cgroups[i - 1]);

                if (!entry)
                        return -ENOMEM;
                if (strstr(entry, SUBTREE_MARK))
                        STEP(undo_controller(&env, r, journal, entry));
                else
                        STEP(remove_dir(&env, r, journal, entry));
        }

        k = journal_commit_maybe(journal);
        if (k < 0)
                return k;
        return (int) MIN(failed_since(r, start), (size_t) INT32_MAX);
}
