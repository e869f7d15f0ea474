/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What moves keep between two passes (CgroupHeld, see cgroup.h): the
 * cgroup.procs files of the groups processes are moved into, held open,
 * and the cgroups processes were found in, by the kernel's id. Here too
 * the two uses of them: a pid written to cgroup.procs, and where a pinned
 * process is. */
#include "apply/cgroup-internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "observe/proc-cgroup.h"

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
        char *path[CGROUP_HELD_FDS_MAX]; /* relative to the Root, as cgroup_fs_path() makes it */
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

/* ---- writes to cgroup.procs --------------------------------------------- */

/* A pid into cg's cgroup.procs, through the held file where there is one. */
int cgroup_write_procs(const CgroupEnv *env, const char *cg, const char *num) {
        _cleanup_free_ char *long_path = NULL;
        /* The path on the stack as a rule: a move a placement. */
        char buf[512];
        const char *path = buf;
        size_t len = strlen(num);
        ssize_t i, n;
        int k;

        k = strjoin_buf(buf, sizeof(buf), env->mount, cgroup_path_below_mount(cg), "/cgroup.procs");
        if (k < 0) {
                k = cgroup_fs_path(env, cg, "cgroup.procs", &long_path);
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

/* ---- where a pinned process is ------------------------------------------ */

/* Where the process pinned by ref is now: by the kernel's id of its cgroup
 * where the kernel gives one and the path of that id is known (CgroupHeld),
 * else read from proc/PID/cgroup and, when the id is the same after the
 * read as before it (the process did not move meanwhile), remembered. */
int cgroup_of_pinned(const CgroupEnv *env, const PidRef *ref, char **ret) {
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
