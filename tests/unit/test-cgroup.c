/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cgroup writer against a fake cgroupfs: plain directories and files in
 * a temporary tree, with CgroupOps standing in for the kernel's rules —
 * interface files appear when the parent enables a controller, "no internal
 * processes", EBUSY on rmdir of a busy cgroup, cpu.weight refused while
 * cpu.idle is 1, a partition that may come out invalid, offline CPUs that
 * keep cpuset.cpus.effective short, and cgroup.procs moving whole processes
 * and updating /proc/<pid>/cgroup. */

#include <dirent.h>
#include <sys/stat.h>

#include "apply/cgroup.h"
#include "apply/journal.h"
#include "base/bitmap.h"
#include "base/root.h"
#include "base/util.h"
#include "fake-root.h"
#include "tests.h"

#define MOUNT "/sys/fs/cgroup"
#define TASKS_MAX 32
#define CG_MAX 512 /* a fake cgroup path */

typedef struct FakeTask {
        pid_t tid, tgid;
        pid_t ppid; /* 0: 1 */
        uint64_t start;
        char cgroup[CG_MAX];
        bool dead;
        bool exited; /* a main thread that exited while others live (Z): it stays where it was */
} FakeTask;

typedef struct Fake {
        char *root_dir;
        FakeTask tasks[TASKS_MAX];
        size_t n_tasks;
        const char *partition_text; /* what "root" reads back as; NULL: "root" */
        const char *offline;        /* CPUs missing from every effective set */
        pid_t kill_on_move;         /* exits just before its cgroup.procs write lands */
        pid_t busy_on_move;         /* its cgroup.procs writes refused EBUSY (a deadline task without room) */
        bool exclusive_files;       /* a 6.7+ kernel: cpuset.cpus.exclusive, remote partitions */
        /* pidfds (fake_pidfds): each an fd of /dev/null standing for a tid */
        pid_t pidfd_tid[64];
        bool no_cgroup_ids;         /* pidfd_cgroup_id: a kernel before 6.13 */
        unsigned id_calls;          /* pidfd_cgroup_id calls */
        unsigned id_moved_at;       /* that call (1-based) finds the process moved to /moved.slice */
        unsigned id_gone_at;        /* that call finds it reaped */
        unsigned pidfd_opens;
        char excl_log[1024];        /* the cpuset.cpus.exclusive writes, in order */
        unsigned n_writes, n_mkdirs, n_rmdirs;
} Fake;

static Fake fake;

static void full_path(const char *rel, char *buf, size_t size) {
        snprintf(buf, size, "%s/%s", fake.root_dir, rel[0] == '/' ? rel + 1 : rel);
}

static char *fake_read(const char *rel) {
        char path[PATH_MAX];
        static char buf[4096];
        FILE *f;
        size_t n;

        full_path(rel, path, sizeof(path));
        f = fopen(path, "re");
        if (!f)
                return NULL;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        return strstrip(buf);
}

/* "sys/fs/cgroup/a/b/file" -> cgroup dir "/a/b" */
static void cg_dir_of(const char *path, char *buf, size_t size) {
        ASSERT_STR_PREFIX(path, MOUNT);
        snprintf(buf, size, "%s", path + strlen(MOUNT));
        if (!buf[0])
                snprintf(buf, size, "/");
}

static void cg_file(const char *cg, const char *file, char *buf, size_t size) {
        snprintf(buf, size, "%s%s/%s", MOUNT, streq(cg, "/") ? "" : cg, file);
}

static bool listed(const char *text, const char *word) {
        _cleanup_strv_free_ char **l = NULL;

        ASSERT_OK(strv_split_ws(text ?: "", 64, &l));
        return strv_contains(l, word);
}

static void rewrite_procs(const char *cg) {
        char rel[PATH_MAX], text[1024] = "";

        for (size_t i = 0; i < fake.n_tasks; i++) {
                FakeTask *t = &fake.tasks[i];
                char num[16];

                if (t->dead || t->tid != t->tgid || !streq(t->cgroup, cg))
                        continue;
                snprintf(num, sizeof(num), "%d\n", (int) t->tgid);
                strcat(text, num);
        }
        cg_file(cg, "cgroup.procs", rel, sizeof(rel));
        fake_write(fake.root_dir, rel, text);
}

static void write_task_files(FakeTask *t) {
        char rel[128], text[CG_MAX + 64];
        unsigned threads = 0;

        for (size_t i = 0; i < fake.n_tasks; i++)
                threads += !fake.tasks[i].dead && fake.tasks[i].tgid == t->tgid;
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) t->tid, (int) t->tid);
        snprintf(text, sizeof(text),
                 "%d (t %d) %c %d %d %d 0 -1 0 0 0 0 0 10 5 0 0 20 0 %u 0 %" PRIu64
                 " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2 0 0\n",
                 (int) t->tid, (int) t->tid, t->exited ? 'Z' : 'S', (int) (t->ppid ?: 1), (int) t->tgid, (int) t->tgid,
                 MAX(threads, 1u),
                 t->start);
        fake_write(fake.root_dir, rel, text);
        if (t->tid != t->tgid) { /* listed in its process's task/ too */
                snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) t->tgid, (int) t->tid);
                fake_write(fake.root_dir, rel, text);
        }
        if (t->tid == t->tgid) { /* the process's own, read by a pin through a pidfd */
                snprintf(rel, sizeof(rel), "proc/%d/stat", (int) t->tid);
                fake_write(fake.root_dir, rel, text);
        }
        snprintf(rel, sizeof(rel), "proc/%d/cgroup", (int) t->tid);
        snprintf(text, sizeof(text), "0::%s\n", t->cgroup);
        fake_write(fake.root_dir, rel, text);
}

static void add_task(pid_t tid, pid_t tgid, uint64_t start, const char *cg) {
        FakeTask *t = &fake.tasks[fake.n_tasks++];

        ASSERT_LE(fake.n_tasks, TASKS_MAX);
        *t = (FakeTask) { .tid = tid, .tgid = tgid, .start = start };
        snprintf(t->cgroup, sizeof(t->cgroup), "%s", cg);
        write_task_files(t);
        rewrite_procs(cg);
}

static FakeTask *find_task(pid_t tid) {
        for (size_t i = 0; i < fake.n_tasks; i++)
                if (fake.tasks[i].tid == tid && !fake.tasks[i].dead)
                        return &fake.tasks[i];
        return NULL;
}

/* A one-thread process forked by ppid, in cg (its start time: 10 x pid). */
static void add_child(pid_t pid, pid_t ppid, const char *cg) {
        add_task(pid, pid, 10 * (uint64_t) pid, cg);
        find_task(pid)->ppid = ppid;
        write_task_files(find_task(pid));
}

static void kill_task(pid_t tid) {
        FakeTask *t = find_task(tid);
        char rel[64], path[PATH_MAX];

        ASSERT_NOT_NULL(t);
        t->dead = true;
        snprintf(rel, sizeof(rel), "proc/%d", (int) tid);
        full_path(rel, path, sizeof(path));
        fake_root_remove(strdup(path));
        rewrite_procs(t->cgroup);
}

static const char *task_cgroup(pid_t tid) {
        char rel[64];
        char *s;

        snprintf(rel, sizeof(rel), "proc/%d/cgroup", (int) tid);
        s = fake_read(rel);
        return s && startswith(s, "0::") ? s + 3 : s;
}

/* ---- the fake kernel ------------------------------------------------------ */

static int fk_mkdir(void *userdata, const Root *root, const char *path) {
        char full[PATH_MAX], cg[CG_MAX], parent[CG_MAX], rel[PATH_MAX], ctl[256], eff[256];
        char *slash;

        fake.n_mkdirs++;
        full_path(path, full, sizeof(full));
        if (access(full, F_OK) == 0)
                return -EEXIST;
        if (mkdir(full, 0755) < 0)
                return -errno;
        cg_dir_of(path, cg, sizeof(cg));
        snprintf(parent, sizeof(parent), "%s", cg);
        slash = strrchr(parent, '/');
        if (slash == parent)
                parent[1] = '\0';
        else
                *slash = '\0';
        cg_file(parent, "cgroup.subtree_control", rel, sizeof(rel));
        snprintf(ctl, sizeof(ctl), "%s", fake_read(rel) ?: "");
        cg_file(parent, "cpuset.cpus.effective", rel, sizeof(rel));
        snprintf(eff, sizeof(eff), "%s", fake_read(rel) ?: "");

#define PUT(file, text)                                   \
        do {                                              \
                cg_file(cg, file, rel, sizeof(rel));      \
                fake_write(fake.root_dir, rel, text);     \
        } while (0)
        PUT("cgroup.procs", "");
        PUT("cgroup.type", "domain\n");
        PUT("cgroup.subtree_control", "\n");
        PUT("cgroup.controllers", ctl);
        if (listed(ctl, "cpu")) {
                PUT("cpu.weight", "100\n");
                PUT("cpu.idle", "0\n");
        }
        if (listed(ctl, "cpuset")) {
                PUT("cpuset.cpus", "\n");
                PUT("cpuset.mems", "\n");
                PUT("cpuset.cpus.effective", eff);
                PUT("cpuset.cpus.partition", "member\n");
                if (fake.exclusive_files)
                        PUT("cpuset.cpus.exclusive", "\n");
        }
#undef PUT
        return 0;
}

static int rm_file(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) ftw;
        return flag == FTW_F ? unlink(p) : 0;
}

static int fk_rmdir(void *userdata, const Root *root, const char *path) {
        char full[PATH_MAX], cg[CG_MAX], rel[PATH_MAX];
        struct dirent *de;
        DIR *d;
        char *procs;

        fake.n_rmdirs++;
        full_path(path, full, sizeof(full));
        d = opendir(full);
        if (!d)
                return -errno;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && !streq(de->d_name, ".") && !streq(de->d_name, "..")) {
                        closedir(d);
                        return -EBUSY;
                }
        closedir(d);
        cg_dir_of(path, cg, sizeof(cg));
        cg_file(cg, "cgroup.procs", rel, sizeof(rel));
        procs = fake_read(rel);
        /* Populated: a process listed that is not just a main thread that
         * exited (listed while its threads live, elsewhere: the kernel
         * counts it out). */
        for (char *p = procs, *save = NULL, *tok; procs && (tok = strtok_r(p, "\n", &save)); p = NULL) {
                FakeTask *t = find_task((pid_t) strtol(tok, NULL, 10));

                if (!t || !t->exited)
                        return -EBUSY;
        }
        nftw(full, rm_file, 8, FTW_PHYS);
        return rmdir(full) < 0 ? -errno : 0;
}

/* The children's cgroup.controllers follow the parent's subtree_control,
 * and their interface files appear with it. */
static void propagate(const char *cg, const char *ctl) {
        char dir[PATH_MAX + 512], rel[PATH_MAX], child[CG_MAX + 256];
        struct dirent *de;
        DIR *d;

        snprintf(rel, sizeof(rel), "%s%s", MOUNT, streq(cg, "/") ? "" : cg);
        full_path(rel, dir, sizeof(dir));
        d = opendir(dir);
        ASSERT_NOT_NULL(d);
        while ((de = readdir(d))) {
                if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                snprintf(child, sizeof(child), "%s/%.200s", streq(cg, "/") ? "" : cg, de->d_name);
#define PUT_MISSING(file, text)                                     \
        do {                                                        \
                cg_file(child, file, rel, sizeof(rel));             \
                if (!fake_read(rel))                                \
                        fake_write(fake.root_dir, rel, text);       \
        } while (0)
                cg_file(child, "cgroup.controllers", rel, sizeof(rel));
                fake_write(fake.root_dir, rel, ctl);
                if (listed(ctl, "cpu")) {
                        PUT_MISSING("cpu.weight", "100\n");
                        PUT_MISSING("cpu.idle", "0\n");
                }
                if (listed(ctl, "cpuset")) {
                        PUT_MISSING("cpuset.cpus", "\n");
                        PUT_MISSING("cpuset.mems", "\n");
                        PUT_MISSING("cpuset.cpus.effective", "0-15\n");
                        PUT_MISSING("cpuset.cpus.partition", "member\n");
                }
#undef PUT_MISSING
        }
        closedir(d);
}

static int write_subtree(const char *cg, const char *rel, const char *value) {
        char crel[PATH_MAX], out[256] = "";
        _cleanup_strv_free_ char **cur = NULL, **avail = NULL, **words = NULL;

        cg_file(cg, "cgroup.controllers", crel, sizeof(crel));
        ASSERT_OK(strv_split_ws(fake_read(crel) ?: "", 64, &avail));
        ASSERT_OK(strv_split_ws(fake_read(rel) ?: "", 64, &cur));
        ASSERT_OK(strv_split_ws(value, 64, &words));
        for (char **w = words; *w; w++) {
                const char *c = *w + 1;

                if (**w != '+' && **w != '-')
                        return -EINVAL;
                if (!strv_contains(avail, c))
                        return -ENOENT;
                if (**w == '+') {
                        char *procs;

                        cg_file(cg, "cgroup.procs", crel, sizeof(crel));
                        procs = fake_read(crel);
                        if (!streq(cg, "/") && procs && *procs)
                                return -EBUSY; /* no internal processes */
                        if (!strv_contains(cur, c))
                                ASSERT_OK(strv_push_dup(&cur, c));
                } else
                        for (char **x = cur; *x; x++)
                                if (streq(*x, c)) {
                                        free(*x);
                                        memmove(x, x + 1, (strv_length(x + 1) + 1) * sizeof(char *));
                                        break;
                                }
        }
        /* The kernel lists them in its own order. */
        for (char **a = avail; *a; a++)
                if (strv_contains(cur, *a)) {
                        if (*out)
                                strcat(out, " ");
                        strcat(out, *a);
                }
        strcat(out, "\n");
        fake_write(fake.root_dir, rel, out);
        propagate(cg, out);
        return 0;
}

/* The exclusive CPUs of cg's parent; NULL for a child of the root cgroup
 * (which gives any). */
static Bitmap *parent_exclusive(const char *cg) {
        char parent[CG_MAX], rel[PATH_MAX];
        Bitmap *b = NULL;
        char *slash;

        snprintf(parent, sizeof(parent), "%s", cg);
        slash = strrchr(parent, '/');
        if (slash == parent)
                return NULL;
        *slash = '\0';
        cg_file(parent, "cpuset.cpus.exclusive", rel, sizeof(rel));
        ASSERT_OK(bitmap_parse_list(fake_read(rel) ?: "", &b));
        return b;
}

/* Give (add) or take CPUs in the effective sets of cg's ancestors below the
 * root cgroup, as a remote partition does. */
static void ancestors_effective(const char *cg, const Bitmap *cpus, bool add) {
        char cur[CG_MAX], rel[PATH_MAX];
        char *slash;

        snprintf(cur, sizeof(cur), "%s", cg);
        while ((slash = strrchr(cur, '/')) && slash != cur) {
                _cleanup_(bitmap_freep) Bitmap *eff = NULL;
                _cleanup_free_ char *text = NULL;

                *slash = '\0';
                cg_file(cur, "cpuset.cpus.effective", rel, sizeof(rel));
                ASSERT_OK(bitmap_parse_list(fake_read(rel) ?: "", &eff));
                BITMAP_FOREACH(c, cpus) {
                        if (add)
                                ASSERT_OK(bitmap_set(eff, (unsigned) c));
                        else
                                bitmap_clear(eff, (unsigned) c);
                }
                ASSERT_OK(bitmap_format_list(eff, &text));
                fake_write(fake.root_dir, rel, text);
        }
}

/* cpuset.cpus.exclusive within the parent's (any below the root cgroup);
 * a partition root valid when its exclusive CPUs are (a remote partition). */
static int fake_exclusive_write(const char *cg, const char *file, const char *value) {
        char rel[PATH_MAX], xrel[PATH_MAX];
        _cleanup_(bitmap_freep) Bitmap *want = NULL, *px = parent_exclusive(cg), *own = NULL;
        _cleanup_free_ char *text = NULL;
        const char *cur;

        cg_file(cg, file, rel, sizeof(rel));
        cg_file(cg, "cpuset.cpus.exclusive", xrel, sizeof(xrel));
        if (streq(file, "cpuset.cpus.exclusive")) {
                if (bitmap_parse_list(value, &want) < 0)
                        return -EINVAL;
                if (!bitmap_is_empty(want) && px && !bitmap_is_subset(want, px))
                        return -EINVAL;
                ASSERT_OK(bitmap_format_list(want, &text));
                fake_write(fake.root_dir, rel, text);
                snprintf(fake.excl_log + strlen(fake.excl_log), sizeof(fake.excl_log) - strlen(fake.excl_log),
                         "%s=%s;", cg, text);
                return 0;
        }
        ASSERT_OK(bitmap_parse_list(fake_read(xrel) ?: "", &own));
        cur = fake_read(rel) ?: "";
        if (streq(value, "root")) {
                bool valid = !bitmap_is_empty(own) && (!px || bitmap_is_subset(own, px));

                fake_write(fake.root_dir, rel, valid ? "root" : "root invalid (Invalid cpu list in cpuset.cpus.exclusive)");
                if (valid && !streq(cur, "root"))
                        ancestors_effective(cg, own, false);
                return 0;
        }
        if (!streq(value, "member"))
                return -EINVAL;
        if (streq(cur, "root"))
                ancestors_effective(cg, own, true);
        fake_write(fake.root_dir, rel, "member");
        return 0;
}

/* The kernel's move of a process (a write of one of its threads to
 * cgroup.procs): its threads move, but not a main thread that exited
 * while others live (the kernel skips exiting tasks). */
static void move_process(pid_t tgid, const char *cg) {
        char old[CG_MAX] = "";

        for (size_t i = 0; i < fake.n_tasks; i++) {
                FakeTask *t = &fake.tasks[i];

                if (t->dead || t->tgid != tgid)
                        continue;
                snprintf(old, sizeof(old), "%s", t->cgroup);
                if (t->exited)
                        continue;
                snprintf(t->cgroup, sizeof(t->cgroup), "%s", cg);
                write_task_files(t);
        }
        rewrite_procs(old);
        rewrite_procs(cg);
}

static int fake_kernel_write(void *userdata, const Root *root, const char *path, const char *value) {
        char cg[CG_MAX], rel[PATH_MAX];
        const char *file = strrchr(path, '/') + 1;
        char *slash;

        fake.n_writes++;
        snprintf(rel, sizeof(rel), "%s", path);
        slash = strrchr(rel, '/');
        *slash = '\0';
        cg_dir_of(rel, cg, sizeof(cg));
        snprintf(rel, sizeof(rel), "%s", path);
        if (!fake_read(rel))
                return -ENOENT;

        if (streq(file, "cgroup.subtree_control"))
                return write_subtree(cg, rel, value);
        if (streq(file, "cpuset.cpus")) {
                _cleanup_(bitmap_freep) Bitmap *b = NULL, *off = NULL;
                _cleanup_free_ char *eff = NULL;
                char erel[PATH_MAX];

                if (bitmap_parse_list(value, &b) < 0)
                        return -EINVAL;
                fake_write(fake.root_dir, rel, value);
                ASSERT_OK(bitmap_parse_list(fake.offline ?: "", &off));
                BITMAP_FOREACH(i, off)
                        bitmap_clear(b, (unsigned) i);
                ASSERT_OK(bitmap_format_list(b, &eff));
                cg_file(cg, "cpuset.cpus.effective", erel, sizeof(erel));
                fake_write(fake.root_dir, erel, eff);
                return 0;
        }
        if (streq(file, "cpu.weight")) {
                char irel[PATH_MAX];
                long w = strtol(value, NULL, 10);

                cg_file(cg, "cpu.idle", irel, sizeof(irel));
                if (streq(fake_read(irel) ?: "", "1") || w < 1 || w > 10000)
                        return -EINVAL;
                fake_write(fake.root_dir, rel, value);
                return 0;
        }
        if (streq(file, "cpuset.cpus.exclusive") || (streq(file, "cpuset.cpus.partition") && fake.exclusive_files))
                return fake_exclusive_write(cg, file, value);
        if (streq(file, "cpuset.cpus.partition")) {
                if (streq(value, "root"))
                        fake_write(fake.root_dir, rel, fake.partition_text ?: "root");
                else if (streq(value, "member"))
                        fake_write(fake.root_dir, rel, "member");
                else
                        return -EINVAL;
                return 0;
        }
        if (streq(file, "cgroup.procs")) {
                FakeTask *t = find_task((pid_t) strtol(value, NULL, 10));
                char srel[PATH_MAX];
                char *sub;

                if (t && t->tid == fake.kill_on_move) {
                        kill_task(t->tid);
                        t = NULL;
                }
                if (!t)
                        return -ESRCH;
                if (t->tgid == fake.busy_on_move)
                        return -EBUSY;
                cg_file(cg, "cgroup.subtree_control", srel, sizeof(srel));
                sub = fake_read(srel);
                if (!streq(cg, "/") && sub && *sub)
                        return -EBUSY;
                move_process(t->tgid, cg);
                return 0;
        }
        fake_write(fake.root_dir, rel, value);
        return 0;
}

static const CgroupOps fake_ops = {
        .mkdir = fk_mkdir,
        .rmdir = fk_rmdir,
        .write = fake_kernel_write,
};

static const PidRefOps no_pidfds = {}; /* proc directories through the Root */

/* pidfds with the kernel's ids of cgroups (6.13): a cgroup's id is a hash
 * of its path. */
static uint64_t fake_cgroup_id(const char *cg) {
        uint64_t h = 1469598103934665603ull;

        for (const char *c = cg; *c; c++)
                h = (h ^ (unsigned char) *c) * 1099511628211ull;
        return h ?: 1;
}

static int fp_open(pid_t tid, void *userdata) {
        int fd;

        (void) userdata;
        fake.pidfd_opens++;
        if (!find_task(tid))
                return -ESRCH;
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        ASSERT_LT((size_t) fd, ELEMENTSOF(fake.pidfd_tid));
        fake.pidfd_tid[fd] = tid;
        return fd;
}

static int fp_alive(int pidfd, pid_t tid, void *userdata) {
        FakeTask *t = find_task(tid);

        (void) userdata;
        ASSERT_EQ(fake.pidfd_tid[pidfd], tid);
        /* An exited main thread of a process that lives polls as exited
         * (Linux 6.9 to 6.14, the thread's pidfd). */
        return t && !t->exited ? 1 : 0;
}

static int fp_cgroup_id(int pidfd, void *userdata, uint64_t *ret) {
        FakeTask *t = find_task(fake.pidfd_tid[pidfd]);

        (void) userdata;
        fake.id_calls++;
        if (fake.no_cgroup_ids)
                return -EOPNOTSUPP;
        if (!t || fake.id_calls == fake.id_gone_at)
                return -ESRCH;
        if (fake.id_calls == fake.id_moved_at) {
                snprintf(t->cgroup, sizeof(t->cgroup), "/moved.slice");
                write_task_files(t);
        }
        *ret = fake_cgroup_id(t->cgroup);
        return 0;
}

/* A pidfd's inode: a number per process (its tid and start time), as
 * pidfs gives one per struct pid. */
static int fp_ino(int pidfd, void *userdata, uint64_t *ret) {
        FakeTask *t = find_task(fake.pidfd_tid[pidfd]);

        (void) userdata;
        if (!t)
                return -ESRCH; /* not what fstat() says, but nothing may ask then */
        *ret = 0x10000u + (uint64_t) t->tid * 1000u + t->start;
        return 0;
}

static const PidRefOps fake_pidfds = { .pidfd_open = fp_open, .pidfd_alive = fp_alive, .pidfd_cgroup_id = fp_cgroup_id };
static const PidRefOps fake_pidfs = { .pidfd_open = fp_open, .pidfd_alive = fp_alive, .pidfd_cgroup_id = fp_cgroup_id,
                                      .pidfd_ino = fp_ino, .pidfs_idents = true };

static Root *setup(void) {
        Root *root;

        fake = (Fake) { .root_dir = fake_root_new() };
        fake_write(fake.root_dir, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_write(fake.root_dir, "sys/fs/cgroup/cgroup.subtree_control", "\n");
        fake_write(fake.root_dir, "sys/fs/cgroup/cgroup.procs", "");
        fake_write(fake.root_dir, "sys/fs/cgroup/cpuset.cpus.effective", "0-15\n");
        /* Pre-existing cgroups of someone else (systemd), without controllers. */
        ASSERT_OK(fk_mkdir(NULL, NULL, MOUNT "/system.slice"));
        ASSERT_OK(fk_mkdir(NULL, NULL, MOUNT "/system.slice/a.service"));
        ASSERT_OK(fk_mkdir(NULL, NULL, MOUNT "/user.slice"));
        fake.n_mkdirs = 0;
        ASSERT_OK(root_open(fake.root_dir, &root));
        return root;
}

static void teardown(Root *root) {
        root_free(root);
        fake_root_remove(fake.root_dir);
        fake.root_dir = NULL;
}

static CgroupEnv env_for(const Root *root) {
        return (CgroupEnv) { .root = root, .mount = MOUNT, .ops = &fake_ops, .pidref = &no_pidfds };
}

/* ---- plans ---------------------------------------------------------------- */

static void add_group(Plan *p, const char *path, const char *cpus, const char *mems, unsigned weight, bool excl) {
        PlanGroup *g;

        p->groups = realloc(p->groups, (p->n_groups + 1) * sizeof(PlanGroup));
        ASSERT_NOT_NULL(p->groups);
        g = &p->groups[p->n_groups++];
        *g = (PlanGroup) { .path = strdup(path), .policy = 0, .domain = -1, .weight = weight, .exclusive = excl };
        ASSERT_OK(bitmap_parse_list(cpus, &g->cpus));
        ASSERT_OK(bitmap_parse_list(mems, &g->mems));
}

static void add_plan_task(Plan *p, pid_t tid, pid_t tgid, uint64_t start, int group) {
        p->tasks = realloc(p->tasks, (p->n_tasks + 1) * sizeof(PlanTask));
        ASSERT_NOT_NULL(p->tasks);
        p->tasks[p->n_tasks++] = (PlanTask) {
                .tid = tid, .tgid = tgid, .start_time = start, .policy = 0, .group = group, .cookie_group = -1
        };
}

static Plan *plan_new_root(const char *root) {
        Plan *p = calloc(1, sizeof(Plan));

        ASSERT_NOT_NULL(p);
        p->hierarchy = CONFIG_HIERARCHY_NESTED;
        p->cgroup_root = strdup(root);
        return p;
}

/* node0 {0-7} with llc0 {0-3} w200 and llc1 {4-7} w300 exclusive. */
static Plan *standard_plan(void) {
        Plan *p = plan_new_root("/topod.slice");

        add_group(p, "node0", "0-7", "0", 100, false);
        add_group(p, "node0/llc0", "0-3", "0", 200, false);
        add_group(p, "node0/llc1", "4-7", "0", 300, true);
        add_plan_task(p, 100, 100, 1000, 1);
        add_plan_task(p, 200, 200, 2000, 2);
        add_plan_task(p, 201, 200, 2001, 2);
        return p;
}

static void standard_tasks(void) {
        add_task(100, 100, 1000, "/system.slice/a.service");
        add_task(200, 200, 2000, "/user.slice");
        add_task(201, 200, 2001, "/user.slice");
}

/* The standard tasks, the standard plan applied: its journal, in memory. */
static Journal *apply_standard(const CgroupEnv *env, const Plan *p) {
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        Journal *j = NULL;

        standard_tasks();
        ASSERT_OK(journal_new(NULL, &j));
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_apply(env, p, j, r), 0);
        return j;
}

static const CgroupResult *find_item(const CgroupReport *r, CgroupItemKind kind, const char *path) {
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].kind == kind && streq(r->items[i].path, path))
                        return &r->items[i];
        return NULL;
}

static void dump(const CgroupReport *r) {
        for (size_t i = 0; i < r->n; i++) {
                const CgroupResult *it = &r->items[i];

                printf("  %-22s %-28s %-8s %-9s %s %s\n", cgroup_item_kind_to_string(it->kind), it->path,
                       it->value ?: "", cgroup_outcome_to_string(it->outcome), it->error ? errno_name(it->error) : "",
                       it->reason ?: "");
        }
}

static char *journal_dir(void) {
        char *d;

        ASSERT_GT(asprintf(&d, "%s/run-topod", fake.root_dir), 0);
        return d;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_parse_proc_cgroup(void) {
        _cleanup_free_ char *a = NULL, *b = NULL;
        char *x = NULL;

        ASSERT_OK(proc_cgroup_parse("0::/a/b\n", &a));
        ASSERT_STREQ(a, "/a/b");
        ASSERT_OK(proc_cgroup_parse("12:cpu,cpuacct:/x\n0::/\n", &b));
        ASSERT_STREQ(b, "/");
        ASSERT_ERROR(proc_cgroup_parse("12:cpu:/x\n", &x), ENODATA);
        ASSERT_ERROR(proc_cgroup_parse("0::x\n", &x), EBADMSG);
        ASSERT_ERROR(proc_cgroup_parse("", &x), ENODATA);
        ASSERT_NULL(x);

        ASSERT_TRUE(cgroup_path_is_below("/a/b", "/a"));
        ASSERT_TRUE(cgroup_path_is_below("/a", "/a"));
        ASSERT_FALSE(cgroup_path_is_below("/ab", "/a"));
        ASSERT_TRUE(cgroup_path_is_below("/x", "/"));
}

static void test_plan_processes(void) {
        _cleanup_(plan_freep) Plan *p = plan_new_root("/t");
        CgroupProcess *procs = NULL;
        size_t n = 0;

        add_group(p, "g0", "0", "0", 100, false);
        add_group(p, "g1", "1", "0", 100, false);
        /* Majority wins: 100 goes to g1 with 101 and 102, written as 101. */
        add_plan_task(p, 100, 100, 1, 0);
        add_plan_task(p, 101, 100, 1, 1);
        add_plan_task(p, 102, 100, 1, 1);
        /* A tie: the main thread's group. */
        add_plan_task(p, 200, 200, 1, 1);
        add_plan_task(p, 201, 200, 1, 0);
        /* A tie without the main thread planned: the lowest tid's group. */
        add_plan_task(p, 302, 300, 1, 0);
        add_plan_task(p, 301, 300, 1, 1);
        /* Not placed: ignored. */
        add_plan_task(p, 400, 400, 1, -1);

        ASSERT_OK(cgroup_plan_processes(p, &procs, &n));
        ASSERT_EQ(n, 3);
        ASSERT_EQ(procs[0].tgid, 100);
        ASSERT_EQ(procs[0].group, 1);
        ASSERT_EQ(procs[0].n_planned, 3);
        ASSERT_EQ(procs[0].n_tasks, 2);
        ASSERT_EQ(p->tasks[procs[0].tasks[0]].tid, 101);
        ASSERT_EQ(procs[1].tgid, 200);
        ASSERT_EQ(procs[1].group, 1);
        ASSERT_EQ(p->tasks[procs[1].tasks[0]].tid, 200);
        ASSERT_EQ(procs[2].tgid, 300);
        ASSERT_EQ(procs[2].group, 1);
        ASSERT_EQ(p->tasks[procs[2].tasks[0]].tid, 301);
        cgroup_processes_free(procs, n);
}

static void test_apply_restore(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL, *r2 = NULL, *r3 = NULL;
        CgroupEnv env = env_for(root);
        const CgroupResult *it;
        unsigned writes;

        standard_tasks();
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_apply(&env, p, j, r), 0);
        dump(r);
        ASSERT_EQ(cgroup_report_count(r, CGROUP_FAILED), 0);

        /* The mount's root got the controllers, journaled; the tree exists. */
        ASSERT_STREQ(fake_read("sys/fs/cgroup/cgroup.subtree_control"), "cpuset cpu");
        ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/cgroup.subtree_control"), "cpuset cpu");
        ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/cgroup.subtree_control"), "cpuset cpu");
        ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/llc1/cgroup.subtree_control"), "");
        ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/llc0/cpuset.cpus"), "0-3");
        ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/llc0/cpuset.cpus.effective"), "0-3");
        ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/llc0/cpuset.mems"), "0");
        ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/llc1/cpu.weight"), "300");
        ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/llc1/cpuset.cpus.partition"), "root");
        ASSERT_STREQ(fake_read("sys/fs/cgroup/system.slice/cgroup.subtree_control"), ""); /* not ours */
        it = find_item(r, CGROUP_ITEM_EFFECTIVE, "/topod.slice/node0/llc1");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->outcome, CGROUP_DONE);

        /* Processes moved whole; originals journaled by main thread. */
        ASSERT_STREQ(task_cgroup(100), "/topod.slice/node0/llc0");
        ASSERT_STREQ(task_cgroup(200), "/topod.slice/node0/llc1");
        ASSERT_STREQ(task_cgroup(201), "/topod.slice/node0/llc1");
        it = find_item(r, CGROUP_ITEM_MOVE, "/topod.slice/node0/llc1");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->outcome, CGROUP_DONE);
        ASSERT_TRUE(it->journaled);
        ASSERT_EQ(it->tgid, 200);
        ASSERT_STREQ(it->from, "/user.slice");

        {
                _cleanup_(journal_freep) Journal *disk = NULL;
                JournalError e;

                ASSERT_EQ(journal_load(jdir, &disk, &e), 1);
                ASSERT_EQ(disk->n_tasks, 2);
                ASSERT_STREQ(journal_get_task(disk, 100, 1000)->cgroup, "/system.slice/a.service");
                ASSERT_STREQ(journal_get_task(disk, 200, 2000)->cgroup, "/user.slice");
                ASSERT_EQ(disk->n_cgroups, 6);
                ASSERT_STREQ(disk->cgroups[0], "/cgroup.subtree_control/cpuset");
                ASSERT_STREQ(disk->cgroups[1], "/cgroup.subtree_control/cpu");
                ASSERT_STREQ(disk->cgroups[2], "/topod.slice");
                ASSERT_STREQ(disk->cgroups[5], "/topod.slice/node0/llc1");
        }

        /* Again: everything already so, nothing written, journal untouched.
         * Told by the groups' cgroup.procs, not by each process's files:
         * without them a pin would find 100 gone. */
        writes = fake.n_writes;
        {
                char full[PATH_MAX];

                full_path("proc/100/cgroup", full, sizeof(full));
                ASSERT_OK(unlink(full) < 0 ? -errno : 0);
                full_path("proc/100/task/100/stat", full, sizeof(full));
                ASSERT_OK(unlink(full) < 0 ? -errno : 0);
        }
        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_apply(&env, p, j, r2), 0);
        for (size_t i = 0; i < r2->n; i++)
                if (r2->items[i].kind != CGROUP_ITEM_EFFECTIVE)
                        ASSERT_EQ(r2->items[i].outcome, CGROUP_ALREADY);
        ASSERT_EQ(fake.n_writes, writes);
        ASSERT_FALSE(j->dirty);
        /* Not for a threaded domain, whose cgroup.procs lists processes of
         * its threaded subtree too: each process is looked at (100, its
         * files gone, reads as gone). */
        fake_write(fake.root_dir, "sys/fs/cgroup/topod.slice/node0/llc0/cgroup.type", "domain threaded\n");
        cgroup_report_free(TAKE_PTR(r2));
        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_apply_tasks(&env, p, j, r2), 0);
        it = find_item(r2, CGROUP_ITEM_MOVE, "/topod.slice/node0/llc0");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->tgid, 100);
        ASSERT_EQ(it->outcome, CGROUP_VANISHED);
        fake_write(fake.root_dir, "sys/fs/cgroup/topod.slice/node0/llc0/cgroup.type", "domain\n");
        write_task_files(find_task(100));

        /* A process that came in later by itself (a fork): not journaled. */
        add_task(300, 300, 3000, "/topod.slice/node0/llc0");

        ASSERT_OK(cgroup_report_new(&r3));
        ASSERT_EQ(cgroup_restore(&env, j, r3), 0);
        dump(r3);
        ASSERT_STREQ(task_cgroup(100), "/system.slice/a.service");
        ASSERT_STREQ(task_cgroup(201), "/user.slice");
        ASSERT_STREQ(task_cgroup(300), "/");
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/topod.slice"), 0);
        ASSERT_STREQ(fake_read("sys/fs/cgroup/cgroup.subtree_control"), "");
        ASSERT_TRUE(journal_is_empty(j));
        teardown(TAKE_PTR(root));
}

/* cgroup_root moved (a reload): the new tree built and the processes
 * moved there keep their originals; the old tree goes (a process that
 * came in by itself moved out to the nearest cgroup topod did not make),
 * the controllers on the path both share stay; a restore then puts
 * everything back from the new tree. */
static void test_retire_root(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan(), *p2 = plan_new_root("/topod-b.slice");
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL, *r2 = NULL, *r3 = NULL;
        CgroupEnv env = env_for(root);

        env.cgroup_root = "/topod.slice";
        j = apply_standard(&env, p);
        add_task(300, 300, 3000, "/topod.slice/node0/llc0");

        add_group(p2, "node0", "0-7", "0", 100, false);
        add_group(p2, "node0/llc0", "0-3", "0", 200, false);
        add_group(p2, "node0/llc1", "4-7", "0", 300, false);
        add_plan_task(p2, 100, 100, 1000, 1);
        add_plan_task(p2, 200, 200, 2000, 2);
        add_plan_task(p2, 201, 200, 2001, 2);
        env.cgroup_root = "/topod-b.slice";
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_apply(&env, p2, j, r), 0);
        ASSERT_STREQ(task_cgroup(100), "/topod-b.slice/node0/llc0");
        ASSERT_STREQ(task_cgroup(200), "/topod-b.slice/node0/llc1");

        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_retire_root(&env, j, "/topod.slice", r2), 0);
        dump(r2);
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/topod.slice"), 0);
        ASSERT_GT(root_exists(root, "sys/fs/cgroup/topod-b.slice/node0/llc1"), 0);
        ASSERT_STREQ(task_cgroup(300), "/");
        ASSERT_STREQ(task_cgroup(100), "/topod-b.slice/node0/llc0");
        ASSERT_STREQ(fake_read("sys/fs/cgroup/cgroup.subtree_control"), "cpuset cpu");
        ASSERT_STREQ(journal_get_task(j, 100, 1000)->cgroup, "/system.slice/a.service");
        for (size_t i = 0; i < j->n_cgroups; i++)
                ASSERT_FALSE(cgroup_path_is_below(j->cgroups[i], "/topod.slice"));
        /* Again: nothing of it left to take down. */
        cgroup_report_clear(r2);
        ASSERT_EQ(cgroup_retire_root(&env, j, "/topod.slice", r2), 0);
        ASSERT_EQ(r2->n, 0u);

        ASSERT_OK(cgroup_report_new(&r3));
        ASSERT_EQ(cgroup_restore(&env, j, r3), 0);
        ASSERT_STREQ(task_cgroup(100), "/system.slice/a.service");
        ASSERT_STREQ(task_cgroup(201), "/user.slice");
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/topod-b.slice"), 0);
        ASSERT_STREQ(fake_read("sys/fs/cgroup/cgroup.subtree_control"), "");
        ASSERT_TRUE(journal_is_empty(j));
        teardown(TAKE_PTR(root));
}

/* A pass that lets the fast path in (base/yield.h): it moves each
 * process as before, but leaves alone one that changed meanwhile. The
 * original it recorded already stays if the process was moved meanwhile
 * (the fast path relies on that entry), else it is forgotten. */
typedef struct Interleaved {
        unsigned calls, act_at;
        pid_t changed[4];
        size_t n_changed;
} Interleaved;

static void il_yield(void *userdata) {
        Interleaved *il = userdata;

        if (++il->calls != il->act_at)
                return;
        /* 200 exec'd and the fast path put it elsewhere; 100 exec'd and
         * stayed where it was. */
        move_process(200, "/topod.slice/node0/llc0");
        il->changed[il->n_changed++] = 200;
        il->changed[il->n_changed++] = 100;
}

static bool il_changed(void *userdata, pid_t tgid) {
        Interleaved *il = userdata;

        for (size_t i = 0; i < il->n_changed; i++)
                if (il->changed[i] == tgid)
                        return true;
        return false;
}

/* The standard tasks, a new journal, and the plan applied by a pass whose
 * yields call yield(il): the report. */
static void apply_yielding(const Root *root, const Plan *p, void (*yield)(void *), Interleaved *il, YieldHooks *hooks,
                           const char *jdir, Journal **ret_j, CgroupReport **ret) {
        CgroupEnv env = env_for(root);

        *hooks = (YieldHooks) { .yield = yield, .changed = il_changed, .userdata = il };
        env.yield = hooks;
        standard_tasks();
        ASSERT_OK(journal_new(jdir, ret_j));
        ASSERT_OK(cgroup_report_new(ret));
        ASSERT_EQ(cgroup_apply(&env, p, *ret_j, *ret), 0);
        dump(*ret);
}

static void test_yield_changed(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL, *r2 = NULL;
        Interleaved il = { .act_at = 3 };
        YieldHooks hooks;
        CgroupEnv env = env_for(root);
        const CgroupResult *it;

        /* Two processes looked at (two yields), then the moves: the third
         * comes before the first move, when 200's original is recorded. */
        apply_yielding(root, p, il_yield, &il, &hooks, jdir, &j, &r);
        env.yield = &hooks;
        ASSERT_EQ(il.calls, 4);
        it = find_item(r, CGROUP_ITEM_MOVE, "/topod.slice/node0/llc0");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->tgid, 100);
        ASSERT_EQ(it->outcome, CGROUP_SKIPPED);
        ASSERT_FALSE(it->journaled);
        ASSERT_STREQ(task_cgroup(100), "/system.slice/a.service");
        ASSERT_NULL(journal_get_task(j, 100, 1000));
        it = find_item(r, CGROUP_ITEM_MOVE, "/topod.slice/node0/llc1");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->tgid, 200);
        ASSERT_EQ(it->outcome, CGROUP_SKIPPED);
        ASSERT_STREQ(it->reason, YIELD_CHANGED_REASON);
        ASSERT_STREQ(task_cgroup(200), "/topod.slice/node0/llc0");
        ASSERT_STREQ(task_cgroup(201), "/topod.slice/node0/llc0");
        ASSERT_NOT_NULL(journal_get_task(j, 200, 2000));
        ASSERT_STREQ(journal_get_task(j, 200, 2000)->cgroup, "/user.slice");
        ASSERT_EQ(cgroup_report_count(r, CGROUP_FAILED), 0);

        /* Changed before it was looked at: not looked at, not journaled. */
        il.act_at = 0;
        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_apply_tasks(&env, p, j, r2), 0);
        it = find_item(r2, CGROUP_ITEM_MOVE, "/topod.slice/node0/llc0");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->tgid, 100);
        ASSERT_EQ(it->outcome, CGROUP_SKIPPED);
        ASSERT_FALSE(it->journaled);
        ASSERT_STREQ(task_cgroup(100), "/system.slice/a.service");
        teardown(TAKE_PTR(root));
}

/* 100 exits between the pass's look and its move, and a new process takes
 * its number (a fork: no event the pass asks about). */
static void il_reuse(void *userdata) {
        Interleaved *il = userdata;

        if (++il->calls != il->act_at)
                return;
        kill_task(100);
        add_task(100, 100, 9999, "/user.slice");
}

/* The handle kept from the look is checked before the move: the new
 * process with the old number is left where it is. */
static void test_pass_pin_reused(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        Interleaved il = { .act_at = 3 }; /* the first yield of the moves */
        YieldHooks hooks;
        const CgroupResult *it;

        apply_yielding(root, p, il_reuse, &il, &hooks, jdir, &j, &r);
        ASSERT_STREQ(task_cgroup(100), "/user.slice");
        it = find_item(r, CGROUP_ITEM_MOVE, "/topod.slice/node0/llc0");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->outcome, CGROUP_VANISHED);
        ASSERT_FALSE(it->journaled);
        ASSERT_STREQ(task_cgroup(200), "/topod.slice/node0/llc1");
        teardown(TAKE_PTR(root));
}

/* A pass pins each process it moves once: the handle that looked at it
 * moves it (and is let go of: no descriptor left). */
static void test_pass_pins_once(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        CgroupEnv env = env_for(root);
        int probe;

        env.pidref = &fake_pidfds;
        standard_tasks();
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_OK(cgroup_report_new(&r));
        fake.pidfd_opens = 0;
        ASSERT_EQ(cgroup_apply(&env, p, j, r), 0);
        dump(r);
        ASSERT_EQ(fake.pidfd_opens, 2); /* 100 and 200 (by its main thread) */
        ASSERT_STREQ(task_cgroup(100), "/topod.slice/node0/llc0");
        ASSERT_STREQ(task_cgroup(200), "/topod.slice/node0/llc1");
        ASSERT_STREQ(task_cgroup(201), "/topod.slice/node0/llc1");
        probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ASSERT_GE(probe, 0);
        ASSERT_LT(probe, 8); /* the pins' descriptors were all closed */
        close(probe);
        teardown(TAKE_PTR(root));
}

/* Killed after the journal was written: the next start recovers from it. */
static void test_crash_recovery(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL, *r2 = NULL;
        CgroupEnv env = env_for(root);
        Journal *j = NULL;
        JournalError e;

        standard_tasks();
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_OK(cgroup_apply_tree(&env, p, j, r));
        j = journal_free(j); /* the crash: only the file is left */

        ASSERT_EQ(journal_load(jdir, &j, &e), 1);
        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_restore(&env, j, r2), 0);
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/topod.slice"), 0);
        ASSERT_STREQ(fake_read("sys/fs/cgroup/cgroup.subtree_control"), "");
        ASSERT_STREQ(task_cgroup(200), "/user.slice");
        ASSERT_TRUE(journal_is_empty(j));
        journal_free(j);
        j = NULL;
        ASSERT_EQ(journal_load(jdir, &j, &e), 1);
        ASSERT_TRUE(journal_is_empty(j));
        journal_free(j);
        teardown(TAKE_PTR(root));
}

/* A journal naming cgroups outside topod's cgroup_root (a damaged or edited
 * line): those are reported and left alone, the process inside is not
 * moved, topod's own tree goes. The roots come from the journal (recorded
 * by the apply, through a reload) or from the configuration. */
static void test_restore_foreign(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL, *r2 = NULL, *r3 = NULL;
        CgroupEnv env = env_for(root);
        Journal *j = NULL;
        JournalError e;
        unsigned skipped = 0;

        standard_tasks();
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_OK(cgroup_apply_tree(&env, p, j, r));
        ASSERT_EQ(j->n_cgroup_roots, 1);
        ASSERT_STREQ(j->cgroup_roots[0], "/topod.slice");
        ASSERT_EQ(journal_record_cgroup(j, "/system.slice"), 1);
        ASSERT_EQ(journal_record_cgroup(j, "/system.slice/a.service"), 1);
        ASSERT_EQ(journal_record_cgroup(j, "/system.slice/cgroup.subtree_control/cpu"), 1);
        ASSERT_OK(journal_commit(j));
        j = journal_free(j);

        ASSERT_EQ(journal_load(jdir, &j, &e), 1); /* the root read back from the file */
        ASSERT_EQ(j->n_damaged, 0);
        ASSERT_EQ(j->n_cgroup_roots, 1);
        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_restore(&env, j, r2), 0);
        for (size_t i = 0; i < r2->n; i++) {
                ASSERT_TRUE(r2->items[i].kind != CGROUP_ITEM_MOVE || r2->items[i].pid != 100);
                if (r2->items[i].outcome == CGROUP_SKIPPED && cgroup_path_is_below(r2->items[i].path, "/system.slice"))
                        skipped++;
        }
        ASSERT_EQ(skipped, 3);
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/system.slice/a.service"), 1);
        ASSERT_STREQ(task_cgroup(100), "/system.slice/a.service");
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/topod.slice"), 0);
        ASSERT_TRUE(journal_is_empty(j));
        j = journal_free(j);

        /* No root recorded (a journal of an older topod): the
         * configuration's; without one, nothing is taken for topod's. */
        ASSERT_OK(cgroup_report_new(&r3));
        ASSERT_OK(journal_parse("topod-journal 1\ncgroup /topod.slice\ncgroup /system.slice\nend 2\n", 63, &j, &e));
        ASSERT_OK(cgroup_restore(&env, j, r3));
        ASSERT_EQ(j->n_cgroups, 0);
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/system.slice"), 1);
        j = journal_free(j);
        ASSERT_OK(fk_mkdir(NULL, NULL, MOUNT "/topod.slice"));
        env.cgroup_root = "/topod.slice";
        ASSERT_OK(journal_parse("topod-journal 1\ncgroup /topod.slice\ncgroup /system.slice\nend 2\n", 63, &j, &e));
        ASSERT_OK(cgroup_restore(&env, j, r3));
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/topod.slice"), 0);
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/system.slice"), 1);
        journal_free(j);
        teardown(TAKE_PTR(root));
}

/* A stop with many entries: each moved back or found gone, and every entry
 * forgotten (in one sweep, after the moves). */
static void test_restore_many(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL, *r2 = NULL;
        CgroupEnv env = env_for(root);
        unsigned vanished = 0, moved = 0;

        standard_tasks();
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_apply(&env, p, j, r), 0);
        ASSERT_EQ(j->n_tasks, 2);
        /* Twenty more journaled: the even ones live in topod's groups, the
         * odd ones have gone. */
        for (pid_t tid = 1000; tid < 1020; tid++) {
                ASSERT_EQ(journal_record_task(j, tid, 5000u + (unsigned) tid, "/user.slice"), 1);
                if (tid % 2 == 0)
                        add_task(tid, tid, 5000u + (unsigned) tid, "/topod.slice/node0/llc0");
        }
        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_restore(&env, j, r2), 0);
        for (size_t i = 0; i < r2->n; i++)
                if (r2->items[i].kind == CGROUP_ITEM_MOVE) {
                        vanished += r2->items[i].outcome == CGROUP_VANISHED;
                        moved += r2->items[i].outcome == CGROUP_DONE;
                }
        ASSERT_EQ(vanished, 10);
        ASSERT_EQ(moved, 12); /* ten, and the standard plan's two */
        for (pid_t tid = 1000; tid < 1020; tid += 2)
                ASSERT_STREQ(task_cgroup(tid), "/user.slice");
        ASSERT_STREQ(task_cgroup(100), "/system.slice/a.service");
        ASSERT_STREQ(task_cgroup(200), "/user.slice");
        ASSERT_EQ(j->n_tasks, 0);
        ASSERT_TRUE(journal_is_empty(j));
        teardown(TAKE_PTR(root));
}

static void test_vanished(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        CgroupEnv env = env_for(root);
        const CgroupResult *it;

        standard_tasks();
        kill_task(100);            /* gone before the apply */
        fake.kill_on_move = 200;   /* goes between the check and the write */
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_apply(&env, p, j, r), 0);
        it = find_item(r, CGROUP_ITEM_MOVE, "/topod.slice/node0/llc0");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->outcome, CGROUP_VANISHED);
        ASSERT_EQ(it->error, 0);
        it = find_item(r, CGROUP_ITEM_MOVE, "/topod.slice/node0/llc1");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->outcome, CGROUP_VANISHED);
        ASSERT_FALSE(it->journaled);
        ASSERT_EQ(j->n_tasks, 0);

        /* A reused tid (another start time) is not the planned task. */
        add_task(100, 100, 9999, "/user.slice");
        fake.kill_on_move = 0;
        cgroup_report_free(TAKE_PTR(r));
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_apply_tasks(&env, p, j, r), 0);
        ASSERT_EQ(r->items[0].outcome, CGROUP_VANISHED);
        ASSERT_STREQ(task_cgroup(100), "/user.slice");
        teardown(TAKE_PTR(root));
}

static void test_partition_invalid_and_idle(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL, *r2 = NULL;
        CgroupEnv env = env_for(root);
        const CgroupResult *it;

        fake.partition_text = "root invalid (Parent is not a partition root)";
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_apply_tree(&env, p, NULL, r), 1);
        it = find_item(r, CGROUP_ITEM_PARTITION, "/topod.slice/node0/llc1");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->outcome, CGROUP_FAILED);
        ASSERT_EQ(it->error, -EINVAL);
        ASSERT_STREQ(it->reason, "root invalid (Parent is not a partition root)");
        /* Not fatal: the rest is there. */
        it = find_item(r, CGROUP_ITEM_WEIGHT, "/topod.slice/node0/llc1");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->outcome, CGROUP_DONE);

        /* cpu.idle set: the weight is skipped, not failed. */
        fake_write(fake.root_dir, "sys/fs/cgroup/topod.slice/node0/llc0/cpu.idle", "1\n");
        p->groups[1].weight = 700;
        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_apply_tree(&env, p, NULL, r2), 1); /* the partition again */
        it = find_item(r2, CGROUP_ITEM_WEIGHT, "/topod.slice/node0/llc0");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->outcome, CGROUP_SKIPPED);
        ASSERT_NOT_NULL(it->reason);
        ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/llc0/cpu.weight"), "200");
        teardown(TAKE_PTR(root));
}

/* A 6.7+ kernel: the exclusive llc1 becomes a remote partition through
 * cpuset.cpus.exclusive written top-down; node0 loses its CPUs; again is
 * already so; no longer exclusive, it dissolves and the values go, leaves
 * first; a root topod did not create is not written. */
static void test_exclusive_remote(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_(journal_freep) Journal *j = NULL;
        CgroupEnv env = env_for(root);
        const CgroupResult *it;
        int k;

        fake.exclusive_files = true;
        ASSERT_OK(journal_new(NULL, &j));
        {
                _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;

                ASSERT_OK(cgroup_report_new(&r));
                ASSERT_EQ(cgroup_apply_tree(&env, p, j, r), 0);
                ASSERT_STREQ(fake.excl_log, "/topod.slice=4-7;/topod.slice/node0=4-7;/topod.slice/node0/llc1=4-7;");
                ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/llc1/cpuset.cpus.partition"), "root");
                ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/cpuset.cpus.effective"), "0-3");
                ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/llc0/cpuset.cpus.exclusive"), "");
                it = find_item(r, CGROUP_ITEM_EFFECTIVE, "/topod.slice/node0");
                ASSERT_NOT_NULL(it);
                ASSERT_NE(it->outcome, CGROUP_FAILED);
                ASSERT_STREQ(it->value, "0-3");
        }
        {
                _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;

                fake.excl_log[0] = '\0';
                ASSERT_OK(cgroup_report_new(&r));
                ASSERT_EQ(cgroup_apply_tree(&env, p, j, r), 0);
                ASSERT_STREQ(fake.excl_log, "");
                for (size_t i = 0; i < r->n; i++)
                        ASSERT_TRUE(r->items[i].outcome != CGROUP_DONE || r->items[i].kind == CGROUP_ITEM_EFFECTIVE);
        }
        {
                _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;

                p->groups[2].exclusive = false;
                ASSERT_OK(cgroup_report_new(&r));
                ASSERT_EQ(cgroup_apply_tree(&env, p, j, r), 0);
                ASSERT_STREQ(fake.excl_log, "/topod.slice/node0/llc1=;/topod.slice/node0=;/topod.slice=;");
                ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/llc1/cpuset.cpus.partition"), "member");
                ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/cpuset.cpus.effective"), "0-7");
                it = find_item(r, CGROUP_ITEM_PARTITION, "/topod.slice/node0/llc1");
                ASSERT_NOT_NULL(it);
                ASSERT_EQ(it->outcome, CGROUP_DONE);
                ASSERT_STREQ(it->value, "member");
        }
        teardown(TAKE_PTR(root));

        /* Someone else's /topod.slice: nothing written there, said why. */
        root = setup();
        env = env_for(root);
        fake.exclusive_files = true;
        ASSERT_OK(fk_mkdir(NULL, NULL, MOUNT "/topod.slice"));
        p->groups[2].exclusive = true;
        journal_free(j);
        ASSERT_OK(journal_new(NULL, &j));
        {
                _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;

                ASSERT_OK(cgroup_report_new(&r));
                /* fk_mkdir made it before cpuset was on at the root: make the file. */
                fake_write(fake.root_dir, "sys/fs/cgroup/topod.slice/cpuset.cpus.exclusive", "\n");
                k = cgroup_apply_tree(&env, p, j, r);
                ASSERT_EQ(k, 2);
                it = find_item(r, CGROUP_ITEM_EXCLUSIVE, "/topod.slice");
                ASSERT_NOT_NULL(it);
                ASSERT_EQ(it->outcome, CGROUP_FAILED);
                ASSERT_STR_CONTAINS(it->reason, "not created by topod");
                it = find_item(r, CGROUP_ITEM_PARTITION, "/topod.slice/node0/llc1");
                ASSERT_NOT_NULL(it);
                ASSERT_EQ(it->outcome, CGROUP_FAILED);
                ASSERT_STR_CONTAINS(it->reason, "root invalid");
                ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/cpuset.cpus.exclusive"), "");
        }
        teardown(TAKE_PTR(root));
}

static int apply_with(Root *root, Plan *p, Journal *j) {
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        CgroupEnv env = env_for(root);

        ASSERT_OK(cgroup_report_new(&r));
        return cgroup_apply_tree(&env, p, j, r);
}

#define EXCL(cg) fake_read("sys/fs/cgroup/topod.slice" cg "/cpuset.cpus.exclusive")
#define PART(cg) fake_read("sys/fs/cgroup/topod.slice" cg "/cpuset.cpus.partition")

/* What the exclusive CPUs become as plans change, and when topod stops. */
static void test_exclusive_changes(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan(), *without = plan_new_root("/topod.slice");
        _cleanup_(journal_freep) Journal *j = NULL;

        fake.exclusive_files = true;
        ASSERT_OK(journal_new(NULL, &j));
        ASSERT_EQ(apply_with(root, p, j), 0);

        /* Exclusivity moves from llc1 to llc0, in one pass. */
        p->groups[2].exclusive = false;
        p->groups[1].exclusive = true;
        ASSERT_EQ(apply_with(root, p, j), 0);
        ASSERT_STREQ(PART("/node0/llc0"), "root");
        ASSERT_STREQ(PART("/node0/llc1"), "member");
        ASSERT_STREQ(EXCL("/node0/llc1"), "");
        ASSERT_STREQ(EXCL("/node0"), "0-3");
        ASSERT_STREQ(EXCL(""), "0-3");

        /* llc0 leaves the plan (its processes are gone): it gives its CPUs
         * back though its directory stays until the stop. */
        add_group(without, "node0", "0-7", "0", 100, false);
        add_group(without, "node0/llc1", "4-7", "0", 300, false);
        ASSERT_EQ(apply_with(root, without, j), 0);
        ASSERT_STREQ(PART("/node0/llc0"), "member");
        ASSERT_STREQ(EXCL("/node0/llc0"), "");
        ASSERT_STREQ(EXCL("/node0"), "");
        ASSERT_STREQ(EXCL(""), "");

        /* The stop cannot remove llc1 (a process topod never knew of is
         * in it): it is no partition all the same. */
        p->groups[1].exclusive = false;
        p->groups[2].exclusive = true;
        ASSERT_EQ(apply_with(root, p, j), 0);
        ASSERT_STREQ(PART("/node0/llc1"), "root");
        fake_write(fake.root_dir, "sys/fs/cgroup/topod.slice/node0/llc1/cgroup.procs", "4242\n");
        {
                _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
                CgroupEnv env = env_for(root);

                ASSERT_OK(cgroup_report_new(&r));
                ASSERT_GT(cgroup_restore(&env, j, r), 0);
        }
        ASSERT_STREQ(PART("/node0/llc1"), "member");
        ASSERT_STREQ(EXCL("/node0/llc1"), "");
        ASSERT_STREQ(EXCL("/node0"), "");
        ASSERT_STREQ(EXCL(""), "");
        teardown(TAKE_PTR(root));
}

/* Someone else's /topod.slice keeps the exclusive CPUs someone set there. */
static void test_exclusive_not_ours(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_(journal_freep) Journal *j = NULL;

        fake.exclusive_files = true;
        p->groups[2].exclusive = false;
        ASSERT_OK(fk_mkdir(NULL, NULL, MOUNT "/topod.slice"));
        fake_write(fake.root_dir, "sys/fs/cgroup/topod.slice/cpuset.cpus.exclusive", "12-15");
        ASSERT_OK(journal_new(NULL, &j));
        ASSERT_EQ(apply_with(root, p, j), 0);
        ASSERT_STREQ(EXCL(""), "12-15");
        ASSERT_STR_NOT_CONTAINS(fake.excl_log, "/topod.slice=");
        teardown(TAKE_PTR(root));
}

#undef EXCL
#undef PART

static void test_effective_differs(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        CgroupEnv env = env_for(root);
        const CgroupResult *it;

        fake.offline = "3";
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_apply_tree(&env, p, NULL, r), 2); /* node0 and llc0 */
        it = find_item(r, CGROUP_ITEM_EFFECTIVE, "/topod.slice/node0/llc0");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->outcome, CGROUP_FAILED);
        ASSERT_EQ(it->error, -EIO);
        ASSERT_STREQ(it->found, "0-2");
        teardown(TAKE_PTR(root));
}

/* An ancestor with tasks of its own cannot enable controllers: reported,
 * nothing created below it, nothing left in the journal. */
static void test_internal_process(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        CgroupEnv env = env_for(root);
        const CgroupResult *it;

        free(p->cgroup_root);
        p->cgroup_root = strdup("/system.slice/a.service/topod");
        add_task(100, 100, 1000, "/system.slice/a.service");
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_GT(cgroup_apply_tree(&env, p, j, r), 0);
        dump(r);
        it = find_item(r, CGROUP_ITEM_CONTROLLER, "/system.slice/a.service");
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->outcome, CGROUP_FAILED);
        ASSERT_EQ(it->error, -EBUSY);
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/system.slice/a.service/topod"), 0);
        /* The root's and system.slice's enables are journaled (and undone by restore). */
        ASSERT_EQ(j->n_cgroups, 4);
        ASSERT_STREQ(fake_read("sys/fs/cgroup/system.slice/cgroup.subtree_control"), "cpuset cpu");
        ASSERT_OK(cgroup_restore(&env, j, r));
        ASSERT_STREQ(fake_read("sys/fs/cgroup/cgroup.subtree_control"), "");
        ASSERT_STREQ(fake_read("sys/fs/cgroup/system.slice/cgroup.subtree_control"), "");
        ASSERT_TRUE(journal_is_empty(j));
        teardown(TAKE_PTR(root));
}

/* The original cgroup is gone by restore time: the nearest live ancestor.
 * busy: and that one has controllers enabled for its children, so holds no
 * processes (EBUSY): the next one up, here the root (before, the restore
 * failed the same way every time); but not for an EBUSY of another cause. */
static void restore_gone_original(bool busy) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL, *r2 = NULL;
        CgroupEnv env = env_for(root);
        _cleanup_(journal_freep) Journal *j = apply_standard(&env, p);
        const CgroupResult *it;
        int k;

        ASSERT_OK(fk_rmdir(NULL, NULL, MOUNT "/system.slice/a.service"));
        if (!busy) {
                ASSERT_OK(cgroup_report_new(&r));
                ASSERT_EQ(cgroup_restore(&env, j, r), 0);
                ASSERT_STREQ(task_cgroup(100), "/system.slice");
                ASSERT_TRUE(journal_is_empty(j));
        } else {
                fake_write(fake.root_dir, "sys/fs/cgroup/system.slice/cgroup.subtree_control", "memory");
                /* An EBUSY of another cause, into a cgroup without controllers
                 * for children: no climb, the entry kept for the next try. */
                fake.busy_on_move = 200;
                ASSERT_OK(cgroup_report_new(&r2));
                k = cgroup_restore(&env, j, r2);
                dump(r2);
                ASSERT_GT(k, 0);
                /* 100: its original gone, system.slice refuses it: the root. */
                ASSERT_STREQ(task_cgroup(100), "/");
                it = find_item(r2, CGROUP_ITEM_MOVE, "/");
                ASSERT_NOT_NULL(it);
                ASSERT_TRUE(it->back);
                ASSERT_EQ(it->tgid, 100);
                ASSERT_EQ(it->outcome, CGROUP_DONE);
                ASSERT_NULL(it->reason);
                ASSERT_NULL(journal_get_task(j, 100, 1000));
                /* 200: refused where it belongs, stays, kept. */
                it = find_item(r2, CGROUP_ITEM_MOVE, "/user.slice");
                ASSERT_NOT_NULL(it);
                ASSERT_EQ(it->tgid, 200);
                ASSERT_EQ(it->outcome, CGROUP_FAILED);
                ASSERT_EQ(it->error, -EBUSY);
                ASSERT_NULL(find_item(r2, CGROUP_ITEM_MOVE, "/system.slice"));
                ASSERT_STREQ(task_cgroup(201), "/topod.slice/node0/llc1");
                ASSERT_NOT_NULL(journal_get_task(j, 200, 2000));
                fake.busy_on_move = 0;
                cgroup_report_free(TAKE_PTR(r2));

                ASSERT_OK(cgroup_report_new(&r2));
                k = cgroup_restore(&env, j, r2);
                dump(r2);
                ASSERT_EQ(k, 0);
                ASSERT_STREQ(task_cgroup(201), "/user.slice");
                ASSERT_TRUE(journal_is_empty(j));
        }
        teardown(TAKE_PTR(root));
}

/* A child forked after its parent was placed (born in the parent's group,
 * never journaled) goes back with it on restore: to the original of its
 * nearest journaled ancestor while the chain lives, never to the root
 * cgroup; one whose parent is gone goes to the nearest cgroup topod did
 * not create, as before. */
static void test_restore_forked_child(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        _cleanup_(journal_freep) Journal *j = NULL;
        CgroupEnv env = env_for(root);
        const char *placed;

        j = apply_standard(&env, p);
        placed = find_task(100)->cgroup;
        ASSERT_TRUE(startswith(placed, "/topod.slice/"));
        /* 100's child and grandchild, forked in its group */
        add_child(300, 100, placed);
        add_child(310, 300, placed);
        /* a child of 201's process, in another group */
        add_child(320, 200, find_task(201)->cgroup);
        /* an orphan (its parent gone: reparented to 1) */
        add_task(330, 330, 3300, placed);

        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_restore(&env, j, r), 0);
        dump(r);
        ASSERT_STREQ(task_cgroup(100), "/system.slice/a.service");
        ASSERT_STREQ(task_cgroup(300), "/system.slice/a.service");
        ASSERT_STREQ(task_cgroup(310), "/system.slice/a.service");
        ASSERT_STREQ(task_cgroup(320), "/user.slice");
        ASSERT_STREQ(task_cgroup(330), "/");
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/topod.slice"), 0);
        ASSERT_TRUE(journal_is_empty(j));
        teardown(TAKE_PTR(root));
}

static void test_restore_nearest_ancestor(void) {
        restore_gone_original(false);
        restore_gone_original(true);
}

/* A process whose main thread exited while another thread lives: the
 * kernel leaves the exited main thread's /proc/PID/cgroup where it was
 * and moves the live thread only. The restore goes by the live thread:
 * 200 exited after its move in (its main thread reads the group; before,
 * the read-back failed at every try), 700 before (it reads the original,
 * where its live thread is not; before, the restore found it "already"
 * there and left the thread in topod's group). */
static void restore_exited_main_thread(const PidRefOps *ops) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_(cgroup_report_freep) CgroupReport *r2 = NULL;
        _cleanup_(journal_freep) Journal *j = NULL;
        CgroupEnv env = env_for(root);
        const CgroupResult *it;
        unsigned n_back = 0;

        if (ops)
                env.pidref = ops;
        j = apply_standard(&env, p);
        add_task(700, 700, 7000, "/user.slice");
        add_task(701, 700, 7001, "/user.slice");
        ASSERT_STREQ(task_cgroup(201), "/topod.slice/node0/llc1");

        find_task(200)->exited = true;
        write_task_files(find_task(200));
        find_task(700)->exited = true;
        write_task_files(find_task(700));
        ASSERT_EQ(journal_record_task(j, 700, 7000, "/user.slice"), 1);
        move_process(700, "/topod.slice/node0/llc0");
        /* Not journaled (forked in llc0): its main thread exited there, the
         * live one was moved to llc1 since, whose cgroup.procs does not
         * list the process. It goes with the rest, or llc1 stays. */
        add_task(800, 800, 8000, "/topod.slice/node0/llc0");
        add_task(801, 800, 8001, "/topod.slice/node0/llc0");
        find_task(800)->exited = true;
        write_task_files(find_task(800));
        move_process(800, "/topod.slice/node0/llc1");
        ASSERT_STREQ(task_cgroup(700), "/user.slice");
        ASSERT_STREQ(task_cgroup(701), "/topod.slice/node0/llc0");

        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_restore(&env, j, r2), 0);
        dump(r2);
        ASSERT_EQ(cgroup_report_count(r2, CGROUP_FAILED), 0);
        ASSERT_STREQ(task_cgroup(201), "/user.slice");
        ASSERT_STREQ(task_cgroup(200), "/topod.slice/node0/llc1"); /* the exited one stays, as in the kernel */
        ASSERT_STREQ(task_cgroup(701), "/user.slice");
        /* Written and checked through the live thread: done, not "vanished"
         * (what a pidfd on the exited one would say). */
        for (size_t i = 0; i < r2->n; i++) {
                it = &r2->items[i];
                if (it->kind == CGROUP_ITEM_MOVE && it->back && (it->tgid == 200 || it->tgid == 700)) {
                        ASSERT_EQ(it->outcome, CGROUP_DONE);
                        ASSERT_EQ(it->pid, it->tgid + 1);
                        ASSERT_STREQ(it->path, "/user.slice");
                        n_back++;
                }
        }
        ASSERT_EQ(n_back, 2u);
        ASSERT_FALSE(startswith(task_cgroup(801), "/topod.slice"));
        ASSERT_EQ(root_exists(root, "sys/fs/cgroup/topod.slice"), 0);
        ASSERT_TRUE(journal_is_empty(j));
        teardown(TAKE_PTR(root));
}

static void test_restore_exited_main_thread(void) {
        restore_exited_main_thread(NULL);
        restore_exited_main_thread(&fake_pidfds);
}

static void test_bad_inputs(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        CgroupEnv env = env_for(root);

        ASSERT_OK(cgroup_report_new(&r));
        env.mount = NULL;
        ASSERT_ERROR(cgroup_apply(&env, p, NULL, r), ENOENT);
        env.mount = MOUNT;
        free(p->cgroup_root);
        p->cgroup_root = strdup("/../etc");
        ASSERT_ERROR(cgroup_apply(&env, p, NULL, r), EINVAL);
        free(p->cgroup_root);
        p->cgroup_root = strdup("/topod.slice");
        free(p->groups[2].path);
        p->groups[2].path = strdup("node0/../../x");
        ASSERT_EQ(cgroup_apply_tree(&env, p, NULL, r), 1);
        /* The rest was applied. */
        ASSERT_STREQ(fake_read("sys/fs/cgroup/topod.slice/node0/llc0/cpuset.cpus"), "0-3");
        teardown(TAKE_PTR(root));
}

/* The fast path's moves: into groups that exist, the originals recorded
 * for one commit between the two steps. */
static void test_fast_moves(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL, *r2 = NULL;
        CgroupEnv env = env_for(root);
        CgroupMove m[6];
        unsigned writes;
        int k;

        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_apply_tree(&env, p, j, r), 0);
        ASSERT_OK(journal_commit(j));
        add_task(300, 300, 3000, "/user.slice");
        add_task(301, 301, 3010, "/user.slice");
        add_task(400, 400, 4000, "/topod.slice/node0/llc0");
        add_task(600, 600, 6000, "/system.slice/a.service");
        m[0] = (CgroupMove) { .tgid = 300, .group = "node0/llc0" };                      /* learns its start */
        m[1] = (CgroupMove) { .tgid = 301, .start_time = 9, .group = "node0/llc0" };     /* another process now */
        m[2] = (CgroupMove) { .tgid = 400, .group = "node0/llc0" };                      /* already there */
        m[3] = (CgroupMove) { .tgid = 500, .group = "node0/llc0" };                      /* gone */
        m[4] = (CgroupMove) { .tgid = 300, .group = "../x" };                            /* not below the root */
        m[5] = (CgroupMove) { .tgid = 600, .start_time = 6000, .group = "node0/llc1" };

        ASSERT_OK(cgroup_report_new(&r2));
        k = cgroup_move_prepare(&env, p->cgroup_root, m, 6, j, r2);
        ASSERT_EQ(k, 1); /* the bad path; pending moves are not counted */
        ASSERT_EQ(m[0].start_time, 3000);
        ASSERT_TRUE(m[0].pending);
        ASSERT_TRUE(m[0].recorded);
        ASSERT_FALSE(m[1].pending);
        ASSERT_EQ(r2->items[m[1].item].outcome, CGROUP_VANISHED);
        ASSERT_EQ(r2->items[m[2].item].outcome, CGROUP_ALREADY);
        ASSERT_EQ(r2->items[m[3].item].outcome, CGROUP_VANISHED);
        ASSERT_EQ(r2->items[m[4].item].outcome, CGROUP_FAILED);
        ASSERT_TRUE(m[5].pending);
        /* Recorded, not committed: the caller commits once. Nothing moved yet. */
        ASSERT_TRUE(j->dirty);
        ASSERT_STREQ(journal_get_task(j, 300, 3000)->cgroup, "/user.slice");
        ASSERT_STREQ(task_cgroup(300), "/user.slice");
        ASSERT_OK(journal_commit_append(j));

        fake.kill_on_move = 600; /* exits as its write lands */
        writes = fake.n_writes;
        ASSERT_EQ(cgroup_move_finish(&env, m, 6, j, 0, r2), 1);
        ASSERT_EQ(fake.n_writes, writes + 2);
        ASSERT_STREQ(task_cgroup(300), "/topod.slice/node0/llc0");
        ASSERT_EQ(r2->items[m[0].item].outcome, CGROUP_DONE);
        ASSERT_TRUE(r2->items[m[0].item].journaled);
        ASSERT_STREQ(r2->items[m[0].item].from, "/user.slice");
        ASSERT_EQ(r2->items[m[5].item].outcome, CGROUP_VANISHED);
        /* Its original is moot now, and forgotten (committed later). */
        ASSERT_NULL(journal_get_task(j, 600, 6000));
        ASSERT_TRUE(j->dirty);
        for (size_t i = 0; i < 6; i++) {
                ASSERT_LT(m[i].ref.pidfd, 0);
                ASSERT_LT(m[i].ref.procfd, 0);
        }

        /* The journal could not be committed: nothing moves, nothing stays recorded. */
        add_task(700, 700, 7000, "/user.slice");
        m[0] = (CgroupMove) { .tgid = 700, .group = "node0/llc1" };
        cgroup_report_free(TAKE_PTR(r2));
        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_move_prepare(&env, p->cgroup_root, m, 1, j, r2), 0);
        ASSERT_TRUE(m[0].pending);
        ASSERT_EQ(cgroup_move_finish(&env, m, 1, j, -EROFS, r2), 1);
        ASSERT_EQ(r2->items[0].outcome, CGROUP_FAILED);
        ASSERT_EQ(r2->items[0].error, -EROFS);
        ASSERT_STREQ(task_cgroup(700), "/user.slice");
        ASSERT_NULL(journal_get_task(j, 700, 7000));
        teardown(TAKE_PTR(root));
}

/* Where a process is, by the kernel's id of its cgroup (6.13): the path of
 * an id read once from proc/PID/cgroup, then found by the id; not
 * remembered when the process moved during the read; read every time
 * where the kernel has no ids; forgotten by a clear. */
static void move_one_fast(CgroupEnv *env, const Plan *p, Journal *j, pid_t tgid, CgroupOutcome want) {
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        CgroupMove m = { .tgid = tgid, .group = "node0/llc0" };

        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_move_prepare(env, p->cgroup_root, &m, 1, j, r), 0);
        ASSERT_EQ(cgroup_move_finish(env, &m, 1, j, 0, r), want == CGROUP_FAILED);
        if (r->items[0].outcome != want)
                fprintf(stderr, "move %d: %s\n", (int) tgid, r->items[0].reason ?: "");
        ASSERT_EQ(r->items[0].outcome, want);
}

static void test_origins_by_id(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        _cleanup_(cgroup_held_freep) CgroupHeld *held = NULL;
        CgroupEnv env = env_for(root);
        CgroupHeldStats st;
        char rel[64], full[PATH_MAX];

        ASSERT_OK(cgroup_held_new(&held));
        env.pidref = &fake_pidfds;
        env.held = held;
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_apply_tree(&env, p, j, r), 0);
        ASSERT_OK(fk_mkdir(NULL, NULL, MOUNT "/moved.slice"));
        for (pid_t t = 300; t < 306; t++)
                add_task(t, t, 3000 + (uint64_t) t, "/user.slice");

        /* The first from /user.slice reads; the second finds it by id. Its
         * proc/PID/cgroup is gone, so a read would have found it gone. */
        move_one_fast(&env, p, j, 300, CGROUP_DONE);
        st = cgroup_held_stats(held);
        ASSERT_EQ(st.reads, 1);
        ASSERT_EQ(st.hits, 0);
        ASSERT_EQ(st.origins, 1);
        snprintf(rel, sizeof(rel), "proc/301/cgroup");
        full_path(rel, full, sizeof(full));
        ASSERT_OK(unlink(full) < 0 ? -errno : 0);
        move_one_fast(&env, p, j, 301, CGROUP_DONE);
        st = cgroup_held_stats(held);
        ASSERT_EQ(st.reads, 1);
        ASSERT_EQ(st.hits, 1);
        ASSERT_STREQ(journal_get_task(j, 301, 3301)->cgroup, "/user.slice");
        ASSERT_STREQ(task_cgroup(301), "/topod.slice/node0/llc0");
        /* Already in the group, a cgroup no process was found in yet: read. */
        move_one_fast(&env, p, j, 300, CGROUP_ALREADY);
        st = cgroup_held_stats(held);
        ASSERT_EQ(st.reads, 2);
        ASSERT_EQ(st.hits, 1);
        ASSERT_EQ(st.origins, 2);

        /* Files closed after a pass, the cgroups remembered; forgotten
         * before the next. */
        cgroup_held_close_files(held);
        ASSERT_EQ(cgroup_held_stats(held).origins, 2);
        cgroup_held_forget_origins(held);
        ASSERT_EQ(cgroup_held_stats(held).origins, 0);

        /* Reaped while its cgroup was read: what was read may be another's.
         * Gone, nothing journaled, nothing remembered. */
        fake.id_gone_at = fake.id_calls + 2;
        move_one_fast(&env, p, j, 302, CGROUP_VANISHED);
        ASSERT_NULL(journal_get_task(j, 302, 3302));
        ASSERT_EQ(cgroup_held_stats(held).origins, 0);
        fake.id_gone_at = 0;

        /* Moved by someone else while its cgroup was read: the path read is
         * journaled, but remembered for neither id. */
        fake.id_moved_at = fake.id_calls + 2; /* the check after the read */
        move_one_fast(&env, p, j, 302, CGROUP_DONE);
        ASSERT_STREQ(journal_get_task(j, 302, 3302)->cgroup, "/user.slice");
        ASSERT_EQ(cgroup_held_stats(held).origins, 0);
        move_one_fast(&env, p, j, 303, CGROUP_DONE);
        st = cgroup_held_stats(held);
        ASSERT_EQ(st.reads, 5);
        ASSERT_EQ(st.hits, 1);
        ASSERT_EQ(st.origins, 1);

        /* A kernel without ids: asked once, then read every time. */
        cgroup_held_clear(held);
        fake.no_cgroup_ids = true;
        fake.id_calls = 0;
        move_one_fast(&env, p, j, 304, CGROUP_DONE);
        move_one_fast(&env, p, j, 305, CGROUP_DONE);
        st = cgroup_held_stats(held);
        ASSERT_EQ(st.reads, 7);
        ASSERT_EQ(st.origins, 0);
        ASSERT_EQ(fake.id_calls, 1);
        ASSERT_STREQ(journal_get_task(j, 305, 3305)->cgroup, "/user.slice");
        teardown(TAKE_PTR(root));
}

/* Where pidfds are pidfs inodes, a process the fast path pins is named by
 * its pidfd's inode, without a read of its stat; a move that a cookie
 * follows learns the start time all the same. The journal keeps the inode;
 * the restore finds the process by it, and leaves alone another that took
 * its number; the prune drops the entry of one that is gone. */
static void test_pidfs_identities(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_free_ char *jdir = journal_dir();
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL, *r2 = NULL;
        CgroupEnv env = env_for(root);
        CgroupMove m[2];
        char rel[64], full[PATH_MAX];
        const uint64_t ino300 = PIDREF_IDENT_PIDFS | (0x10000u + 300u * 1000u + 3000u);
        const uint64_t ino301 = PIDREF_IDENT_PIDFS | (0x10000u + 301u * 1000u + 3010u);

        env.pidref = &fake_pidfs;
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_OK(cgroup_report_new(&r));
        ASSERT_EQ(cgroup_apply_tree(&env, p, j, r), 0);
        add_task(300, 300, 3000, "/user.slice");
        add_task(301, 301, 3010, "/user.slice");
        add_task(302, 302, 3020, "/system.slice/a.service");
        /* No stat to read: a read would find 300 gone. */
        snprintf(rel, sizeof(rel), "proc/300/stat");
        full_path(rel, full, sizeof(full));
        ASSERT_OK(unlink(full) < 0 ? -errno : 0);
        m[0] = (CgroupMove) { .tgid = 300, .group = "node0/llc0" };
        m[1] = (CgroupMove) { .tgid = 302, .group = "node0/llc0", .by_start_time = true };
        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_move_prepare(&env, p->cgroup_root, m, 2, j, r2), 0);
        ASSERT_EQ(m[0].start_time, ino300);
        ASSERT_EQ(m[1].start_time, 3020);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_EQ(cgroup_move_finish(&env, m, 2, j, 0, r2), 0);
        ASSERT_STREQ(task_cgroup(300), "/topod.slice/node0/llc0");
        ASSERT_STREQ(journal_get_task(j, 300, ino300)->cgroup, "/user.slice");
        ASSERT_STREQ(journal_get_task(j, 302, 3020)->cgroup, "/system.slice/a.service");
        write_task_files(find_task(300)); /* its stat back, for the rest */

        /* The same for 301, whose number then goes to another process. */
        m[0] = (CgroupMove) { .tgid = 301, .group = "node0/llc1" };
        cgroup_report_free(TAKE_PTR(r2));
        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_move_prepare(&env, p->cgroup_root, m, 1, j, r2), 0);
        ASSERT_EQ(m[0].start_time, ino301);
        ASSERT_EQ(cgroup_move_finish(&env, m, 1, j, 0, r2), 0);
        ASSERT_OK(journal_commit(j));
        kill_task(301);
        add_task(301, 301, 9999, "/topod.slice/node0/llc1");

        /* The prune drops 301 (its number names another process now) and
         * keeps 300 (alive, same inode), named by its start time from now
         * on, without a plan to go by. */
        ASSERT_EQ(cgroup_journal_prune(&env, NULL, j), 1);
        ASSERT_NULL(journal_get_task(j, 301, ino301));
        ASSERT_NULL(journal_get_task(j, 300, ino300));
        ASSERT_STREQ(journal_get_task(j, 300, 3000)->cgroup, "/user.slice");
        ASSERT_TRUE(j->dirty);
        /* Named by both: the earlier entry stays. */
        ASSERT_EQ(journal_record_task(j, 300, ino300, "/elsewhere"), 1);
        ASSERT_EQ(cgroup_journal_prune(&env, NULL, j), 0);
        ASSERT_EQ(j->n_tasks, 2);
        ASSERT_STREQ(journal_get_task(j, 300, 3000)->cgroup, "/user.slice");
        /* Recorded again for the restore: the other 301 must stay, and the
         * restore goes by the inode. */
        ASSERT_EQ(journal_record_task(j, 301, ino301, "/user.slice"), 1);
        ASSERT_OK(journal_commit(j));

        cgroup_report_free(TAKE_PTR(r2));
        ASSERT_OK(cgroup_report_new(&r2));
        ASSERT_EQ(cgroup_restore(&env, j, r2), 0);
        ASSERT_STREQ(task_cgroup(300), "/user.slice");
        ASSERT_STREQ(task_cgroup(302), "/system.slice/a.service");
        /* The other 301 was not journaled: evicted to the nearest cgroup
         * topod did not create, not to 301's original. */
        ASSERT_STREQ(task_cgroup(301), "/");
        ASSERT_EQ(j->n_tasks, 0);
        teardown(TAKE_PTR(root));
}

/* Originals of processes that exited are forgotten; the living stay. */
static void test_journal_prune(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(plan_freep) Plan *p = standard_plan();
        _cleanup_(journal_freep) Journal *j = NULL;
        CgroupEnv env = env_for(root);

        standard_tasks();
        add_task(300, 300, 3000, "/topod.slice/node0/llc0");
        ASSERT_OK(journal_new(NULL, &j));
        ASSERT_EQ(journal_record_task(j, 100, 1000, "/system.slice/a.service"), 1); /* planned */
        ASSERT_EQ(journal_record_task(j, 300, 3000, "/user.slice"), 1);             /* alive, not planned */
        ASSERT_EQ(journal_record_task(j, 999, 9990, "/user.slice"), 1);             /* gone */
        ASSERT_EQ(journal_record_task(j, 201, 5, "/user.slice"), 1);                /* its tid is another's now */
        ASSERT_EQ(journal_record_cgroup(j, "/topod.slice"), 1);
        ASSERT_EQ(cgroup_journal_prune(&env, p, j), 2);
        ASSERT_EQ(j->n_tasks, 2);
        ASSERT_NOT_NULL(journal_get_task(j, 100, 1000));
        ASSERT_NOT_NULL(journal_get_task(j, 300, 3000));
        ASSERT_EQ(j->n_cgroups, 1);
        ASSERT_EQ(cgroup_journal_prune(&env, p, j), 0);
        teardown(TAKE_PTR(root));
}

/* Many entries, most of them gone (an exec storm's): one listing of /proc
 * drops those without a handle on each; the living are checked as ever. */
static void test_journal_prune_lists(void) {
        _cleanup_(root_freep) Root *root = setup();
        _cleanup_(journal_freep) Journal *j = NULL;
        CgroupEnv env = env_for(root);

        env.pidref = &fake_pidfs;
        ASSERT_OK(journal_new(NULL, &j));
        /* 100 entries, the living 5 last: the first 31 to check are
         * checked one by one, then /proc is listed. */
        for (pid_t t = 400; t < 500; t++) {
                uint64_t ino = PIDREF_IDENT_PIDFS | (0x10000u + (uint64_t) t * 1000u + 7u);

                if (t >= 495)
                        add_task(t, t, 7, "/topod.slice/node0/llc0");
                ASSERT_EQ(journal_record_task(j, t, ino, "/user.slice"), 1);
        }
        /* By start time: a process that exited and waits for its parent
         * (Z, one thread), and one whose leader exited before its other
         * thread (Z, two): the first has nothing left to restore. */
        for (pid_t t = 600; t < 602; t++) {
                char rel[64], text[256];

                add_task(t, t, 8, "/topod.slice/node0/llc0");
                snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) t, (int) t);
                snprintf(text, sizeof(text),
                         "%d (t) Z 1 %d %d 0 -1 0 0 0 0 0 10 5 0 0 20 0 %d 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2 0 0\n",
                         (int) t, (int) t, (int) t, t == 600 ? 1 : 2);
                fake_write(fake.root_dir, rel, text);
                ASSERT_EQ(journal_record_task(j, t, 8, "/user.slice"), 1);
        }
        fake.pidfd_opens = 0;
        ASSERT_EQ(cgroup_journal_prune(&env, NULL, j), 96);
        ASSERT_EQ(fake.pidfd_opens, 31 + 5); /* 100 without the listing */
        ASSERT_EQ(j->n_tasks, 6);
        for (pid_t t = 495; t < 500; t++)
                ASSERT_STREQ(journal_get_task(j, t, 7)->cgroup, "/user.slice"); /* alive: named by start time now */
        ASSERT_NULL(journal_get_task(j, 600, 8));
        ASSERT_NOT_NULL(journal_get_task(j, 601, 8));
        teardown(TAKE_PTR(root));
}

int main(void) {
        RUN(test_parse_proc_cgroup);
        RUN(test_plan_processes);
        RUN(test_apply_restore);
        RUN(test_retire_root);
        RUN(test_yield_changed);
        RUN(test_pass_pins_once);
        RUN(test_pass_pin_reused);
        RUN(test_crash_recovery);
        RUN(test_vanished);
        RUN(test_restore_many);
        RUN(test_restore_foreign);
        RUN(test_partition_invalid_and_idle);
        RUN(test_exclusive_remote);
        RUN(test_exclusive_changes);
        RUN(test_exclusive_not_ours);
        RUN(test_effective_differs);
        RUN(test_internal_process);
        RUN(test_restore_nearest_ancestor);
        RUN(test_restore_forked_child);
        RUN(test_restore_exited_main_thread);
        RUN(test_bad_inputs);
        RUN(test_fast_moves);
        RUN(test_origins_by_id);
        RUN(test_pidfs_identities);
        RUN(test_journal_prune);
        RUN(test_journal_prune_lists);
        return 0;
}
