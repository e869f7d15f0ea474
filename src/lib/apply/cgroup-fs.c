/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cgroup2 files as the writer reaches them: the kernel's ops, paths
 * below the mount, one attribute read or written, the journal's view of
 * which cgroups topod created, the environment a call runs in, and the
 * process lists of cgroup.procs and /proc. Every other file of the writer
 * goes through these. */
#include "apply/cgroup-internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "observe/tasks.h"

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

/* ---- paths and attribute files ----------------------------------------- */

/* "/a" + "b/c" -> "/a/b/c"; "/" + "b" -> "/b". */
int cgroup_path_join(const char *a, const char *b, char **ret) {
        *ret = strjoin(streq(a, "/") ? "" : a, "/", b);
        return *ret ? 0 : -ENOMEM;
}

/* "/a/b" -> "/a"; "/a" -> "/". */
int cgroup_path_parent(const char *path, char **ret) {
        const char *slash = strrchr(path, '/');

        *ret = slash && slash != path ? strndup(path, (size_t) (slash - path)) : strdup("/");
        return *ret ? 0 : -ENOMEM;
}

/* The file's path relative to the Root: <mount><cgroup>/<file>. file NULL:
 * the directory. */
int cgroup_fs_path(const CgroupEnv *env, const char *cg, const char *file, char **ret) {
        const char *c = cgroup_path_below_mount(cg);

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
bool cgroup_rel_path_valid(const char *p) {
        size_t n = strlen(p);

        if (n == 0 || n >= JOURNAL_PATH_MAX - 256)
                return false;
        for (const char *c = p; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return false;
        return path_components_safe(p);
}

bool cgroup_root_path_valid(const char *p) {
        return p && p[0] == '/' && p[1] && cgroup_rel_path_valid(p + 1);
}

int cgroup_read_attr(const CgroupEnv *env, const char *cg, const char *file, char **ret) {
        _cleanup_free_ char *path = NULL;
        char *text;
        int k;

        k = cgroup_fs_path(env, cg, file, &path);
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

int cgroup_write_attr(const CgroupEnv *env, const char *cg, const char *file, const char *value) {
        _cleanup_free_ char *path = NULL;
        int k;

        k = cgroup_fs_path(env, cg, file, &path);
        if (k < 0)
                return k;
        return env->ops->write(env->ops->userdata, env->root, path, value);
}

int cgroup_exists(const CgroupEnv *env, const char *cg) {
        _cleanup_free_ char *path = NULL;
        int k;

        k = cgroup_fs_path(env, cg, NULL, &path);
        if (k < 0)
                return k;
        return root_exists(env->root, path);
}

/* Is word one of the words of an attribute's value (cgroup.controllers,
 * cgroup.subtree_control)? */
bool cgroup_word_listed(const char *text, const char *word) {
        size_t n = strlen(word);

        for (const char *p = text; (p = strstr(p, word)); p += n)
                if ((p == text || p[-1] == ' ' || p[-1] == '\n') && (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
                        return true;
        return false;
}

/* ---- the journal, the plan, the environment ----------------------------- */

/* Has topod created this cgroup (by the journal)? */
bool cgroup_owned(const Journal *j, const char *cg) {
        if (!j)
                return false;
        for (size_t i = 0; i < j->n_cgroups; i++)
                if (streq(j->cgroups[i], cg))
                        return true;
        return false;
}

/* Commit when the journal has a directory (a journal in memory has none). */
int cgroup_journal_commit(Journal *j) {
        return j && j->dir ? journal_commit(j) : 0;
}

/* Is cg (a full path) one of the plan's groups? */
bool cgroup_plan_has(const Plan *plan, const char *cg) {
        size_t n = strlen(plan->cgroup_root);

        if (!strneq(cg, plan->cgroup_root, n) || cg[n] != '/')
                return false;
        for (size_t g = 0; g < plan->n_groups; g++)
                if (streq(plan->groups[g].path, cg + n + 1))
                        return true;
        return false;
}

/* The environment a call runs in, its defaults filled in (the kernel's ops,
 * the host's pidref ops): -ENOENT without a cgroup2 mount, -EINVAL for a
 * plan whose cgroup_root is not a valid absolute path. */
int cgroup_env_check(const CgroupEnv *env, const Plan *plan, CgroupEnv *ret) {
        if (!env->mount || env->mount[0] != '/')
                return -ENOENT; /* no cgroup2 mount found */
        if (plan && !cgroup_root_path_valid(plan->cgroup_root))
                return -EINVAL;
        *ret = *env;
        if (!ret->ops)
                ret->ops = &cgroup_ops_kernel;
        if (!ret->pidref)
                ret->pidref = &pidref_ops_host;
        return 0;
}

/* ---- process lists ------------------------------------------------------ */

/* One line of cgroup.procs: a pid, or false. */
bool cgroup_parse_procs_line(const char *line, pid_t *ret) {
        char *end;
        long pid;

        errno = 0;
        pid = strtol(line, &end, 10);
        if (errno || *end || pid <= 0 || pid > INT32_MAX)
                return false;
        *ret = (pid_t) pid;
        return true;
}

static int members_add(CgroupMembers *m, size_t *cap, pid_t pid) {
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

int cgroup_members_read(const CgroupEnv *env, const char *cg, CgroupMembers *m) {
        _cleanup_free_ char *type = NULL, *path = NULL, *text = NULL;
        size_t cap = 0;
        int k;

        m->read = true;
        k = cgroup_read_attr(env, cg, "cgroup.type", &type);
        if (k == -ENOMEM)
                return k;
        if (k < 0 || !streq(strstrip(type), "domain"))
                return 0;
        if (cgroup_fs_path(env, cg, "cgroup.procs", &path) < 0)
                return -ENOMEM;
        k = root_read_file(env->root, path, CGROUP_PROCS_MAX, &text, NULL);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return 0;
        for (char *p = text, *save = NULL, *tok; (tok = strtok_r(p, "\n", &save)); p = NULL) {
                pid_t pid;

                if (cgroup_parse_procs_line(tok, &pid) && (k = members_add(m, &cap, pid)) < 0)
                        return k;
        }
        if (m->n > 1)
                qsort(m->pids, m->n, sizeof(pid_t), compare_pid);
        return 0;
}

/* Every process there is now: the numbers /proc lists (a process's, while
 * any thread of it lives: its leader stays until the last one has gone). */
int cgroup_members_read_proc(const CgroupEnv *env, CgroupMembers *m) {
        int k = tasks_list_processes(env->root, -1, &m->pids, &m->n);

        if (k == -ENODATA)
                return 0; /* not read: no procfs there */
        if (k < 0)
                return k;
        m->read = true;
        return 0;
}

bool cgroup_members_has(const CgroupMembers *m, pid_t pid) {
        return m->n > 0 && bsearch(&pid, m->pids, m->n, sizeof(pid_t), compare_pid);
}

void cgroup_members_free(CgroupMembers *m, size_t n) {
        for (size_t i = 0; m && i < n; i++)
                free(m[i].pids);
        free(m);
}
