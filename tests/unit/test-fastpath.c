/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fast path end to end against a fake root: the recorded guest machine
 * (2 packages, 4 LLCs, SMT), a fake /proc, a fake cgroupfs (CgroupOps) and
 * fake core-scheduling prctls (CookieOps). A normal pass applies the plan;
 * then new processes are handed to pipeline_place_fresh() as the events
 * would: each is read through the Root, placed from the last plan,
 * journaled (one commit per batch, before the moves), moved and given its
 * cookie; the next normal pass finds them in place ("already"). Then the
 * cost per event: 1,000 events that match nothing, and 1,000 placements one
 * per call and in one batch (printed, not asserted). */

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "apply/cookie.h"
#include "apply/journal.h"
#include "apply/pidref.h"
#include "apply/reconcile.h"
#include "base/util.h"
#include "fake-root.h"
#include "decide/policy-check.h"
#include "pipeline/pipeline.h"

#define MOUNT "sys/fs/cgroup"
#define GUEST "tests/data/sysfs/guest-2s-4llc"

static char *root_dir;

/* ---- the fake tree --------------------------------------------------------- */

/* A one-thread process: the files the scan, the fast reader and the
 * handles read. */
static void fake_process_started(pid_t pid, const char *comm, const char *cgroup, unsigned start_time) {
        char rel[128], text[512];

        snprintf(text, sizeof(text),
                 "%d (%s) S 1 %d %d 0 -1 0 0 0 0 0 10 5 0 0 20 0 1 0 %u 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2 0 0\n",
                 (int) pid, comm, (int) pid, (int) pid, start_time);
        snprintf(rel, sizeof(rel), "proc/%d/stat", (int) pid);
        fake_write(root_dir, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) pid, (int) pid);
        fake_write(root_dir, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/schedstat", (int) pid, (int) pid);
        fake_write(root_dir, rel, "1000 0 1\n");
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/status", (int) pid, (int) pid);
        snprintf(text, sizeof(text), "Name:\t%s\nTgid:\t%d\nUid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t100\n",
                 comm, (int) pid);
        fake_write(root_dir, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/comm", (int) pid);
        snprintf(text, sizeof(text), "%s\n", comm);
        fake_write(root_dir, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/cmdline", (int) pid);
        fake_write_n(root_dir, rel, comm, strlen(comm) + 1);
        snprintf(rel, sizeof(rel), "proc/%d/cgroup", (int) pid);
        snprintf(text, sizeof(text), "0::%s\n", cgroup);
        fake_write(root_dir, rel, text);
}

/* Started 5000 + pid ticks after boot. */
static void fake_process(pid_t pid, const char *comm, const char *cgroup) {
        fake_process_started(pid, comm, cgroup, 5000u + (unsigned) pid);
}

static const char *process_cgroup(pid_t pid) {
        static char buf[512];
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "%s/proc/%d/cgroup", root_dir, (int) pid);
        f = fopen(path, "re");
        if (!f || !fgets(buf, sizeof(buf), f))
                TEST_FAIL("cannot read %s", path);
        fclose(f);
        buf[strcspn(buf, "\n")] = '\0';
        return startswith(buf, "0::") ? buf + 3 : buf;
}

/* ---- fake cgroupfs: directories and files; cgroup.procs moves ------------ */

static unsigned n_moves;

static int fk_mkdir(void *userdata, const Root *root, const char *path) {
        char full[PATH_MAX], rel[PATH_MAX];

        (void) userdata;
        (void) root;
        snprintf(full, sizeof(full), "%s/%s", root_dir, path);
        if (mkdir(full, 0755) < 0)
                return -errno;
#define PUT(file, text)                                                 \
        do {                                                            \
                snprintf(rel, sizeof(rel), "%s/%s", path, file);        \
                fake_write(root_dir, rel, text);                        \
        } while (0)
        PUT("cgroup.procs", "");
        PUT("cgroup.type", "domain\n");
        PUT("cgroup.controllers", "cpuset cpu\n");
        PUT("cgroup.subtree_control", "\n");
        PUT("cpu.weight", "100\n");
        PUT("cpu.idle", "0\n");
        PUT("cpuset.cpus", "\n");
        PUT("cpuset.mems", "\n");
        PUT("cpuset.cpus.effective", "\n");
        PUT("cpuset.cpus.partition", "member\n");
#undef PUT
        return 0;
}

static int fk_rmdir(void *userdata, const Root *root, const char *path) {
        (void) userdata;
        (void) root;
        (void) path;
        return -EBUSY;
}

static int fk_write(void *userdata, const Root *root, const char *path, const char *value) {
        const char *file = strrchr(path, '/') + 1;
        char rel[PATH_MAX];

        (void) userdata;
        (void) root;
        while (*path == '/')
                path++;
        if (streq(file, "cgroup.procs")) {
                pid_t pid = (pid_t) strtol(value, NULL, 10);
                char cg[PATH_MAX], text[PATH_MAX + 8];

                snprintf(rel, sizeof(rel), "%s/proc/%d/cgroup", root_dir, (int) pid);
                if (access(rel, F_OK) < 0)
                        return -ESRCH;
                snprintf(cg, sizeof(cg), "%.*s", (int) (file - 1 - path - strlen(MOUNT)), path + strlen(MOUNT));
                snprintf(rel, sizeof(rel), "proc/%d/cgroup", (int) pid);
                snprintf(text, sizeof(text), "0::%s\n", cg);
                fake_write(root_dir, rel, text);
                n_moves++;
                return 0;
        }
        if (streq(file, "cgroup.subtree_control")) {
                char *cur;

                snprintf(rel, sizeof(rel), "%s/%s", root_dir, path);
                cur = test_read_all(rel);
                /* "+cpu": listed afterwards (enough for the read-back). */
                snprintf(rel, sizeof(rel), "%s %s\n", cur ? strstrip(cur) : "", value + 1);
                free(cur);
                fake_write(root_dir, path, rel);
                return 0;
        }
        fake_write(root_dir, path, value);
        if (streq(file, "cpuset.cpus")) {
                snprintf(rel, sizeof(rel), "%.*s/cpuset.cpus.effective", (int) (file - 1 - path), path);
                fake_write(root_dir, rel, value);
        }
        return 0;
}

static const CgroupOps fake_cgroup_ops = { .mkdir = fk_mkdir, .rmdir = fk_rmdir, .write = fk_write };

/* ---- fake core scheduling: one cookie per tid ----------------------------- */

/* Fake tids are small (below 65536); the applier's own threads (real tids)
 * take a few slots of their own. */
#define COOKIES_DIRECT 65536
#define COOKIES_OTHER 256

typedef struct FakeCookies {
        pthread_mutex_t lock;
        uint64_t direct[COOKIES_DIRECT];
        pid_t other_tid[COOKIES_OTHER];
        uint64_t other[COOKIES_OTHER];
        size_t n_other;
        uint64_t next;
        unsigned self_gets; /* PR_SCHED_CORE_GET of the calling thread: one per clearing job */
        unsigned gets;      /* and of other threads */
        uint64_t given[COOKIES_DIRECT]; /* when a fake thread last got a cookie (fc.n_given then) */
        uint64_t n_given;
} FakeCookies;

static FakeCookies fc = { .lock = PTHREAD_MUTEX_INITIALIZER, .next = 1 };

static bool is_fake(pid_t tid) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/proc/%d", root_dir, (int) tid);
        return access(path, F_OK) == 0;
}

/* The calling thread's (tid 0) is its own, even where its real tid is
 * also a fake process's number. */
static uint64_t *cookie_slot(pid_t tid) {
        if (tid == 0 || !is_fake(tid)) {
                if (tid == 0)
                        tid = -(pid_t) syscall(SYS_gettid);
                for (size_t i = 0; i < fc.n_other; i++)
                        if (fc.other_tid[i] == tid)
                                return &fc.other[i];
                ASSERT_LT(fc.n_other, COOKIES_OTHER);
                fc.other_tid[fc.n_other] = tid;
                fc.other[fc.n_other] = 0;
                return &fc.other[fc.n_other++];
        }
        ASSERT_GT(tid, 0);
        ASSERT_LT(tid, COOKIES_DIRECT);
        return &fc.direct[tid];
}

/* A fake process that exists, or one of this program's threads. */
static bool alive(pid_t tid) {
        char path[64];

        if (tid == 0 || is_fake(tid))
                return true;
        snprintf(path, sizeof(path), "/proc/self/task/%d", (int) tid);
        return access(path, F_OK) == 0;
}

/* A process that exits as its cookie is given (fk_create(): before, or
 * right after), or one whose cookie the kernel refuses (EPERM):
 * test_cookie_checks_move(). */
static pid_t exit_at_create, exit_after_create, refuse_create;

static void fake_process_exit(pid_t pid) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/proc/%d", root_dir, (int) pid);
        fake_root_remove(strdup(path));
}

static int fk_create(pid_t tid, void *userdata) {
        (void) userdata;
        if (tid > 0 && tid == exit_at_create)
                fake_process_exit(tid);
        if (tid > 0 && tid == refuse_create)
                return -EPERM;
        if (!alive(tid))
                return -ESRCH;
        pthread_mutex_lock(&fc.lock);
        *cookie_slot(tid) = fc.next++;
        if (tid > 0 && is_fake(tid))
                fc.given[tid] = ++fc.n_given;
        pthread_mutex_unlock(&fc.lock);
        if (tid > 0 && tid == exit_after_create)
                fake_process_exit(tid);
        return 0;
}

static int fk_share_from(pid_t tid, void *userdata) {
        (void) userdata;
        if (!alive(tid))
                return -ESRCH;
        pthread_mutex_lock(&fc.lock);
        *cookie_slot(0) = *cookie_slot(tid);
        pthread_mutex_unlock(&fc.lock);
        return 0;
}

static int fk_share_to(pid_t tid, void *userdata) {
        (void) userdata;
        if (!alive(tid))
                return -ESRCH;
        pthread_mutex_lock(&fc.lock);
        *cookie_slot(tid) = *cookie_slot(0);
        if (is_fake(tid))
                fc.given[tid] = ++fc.n_given;
        pthread_mutex_unlock(&fc.lock);
        return 0;
}

static int fk_get(pid_t tid, uint64_t *ret, void *userdata) {
        (void) userdata;
        if (!alive(tid))
                return -ESRCH;
        pthread_mutex_lock(&fc.lock);
        fc.self_gets += tid == 0;
        fc.gets += tid != 0;
        *ret = *cookie_slot(tid);
        pthread_mutex_unlock(&fc.lock);
        return 0;
}

static const PidRefOps no_pidfds = {}; /* the proc directories of the fake root */

/* pidfds where they are pidfs inodes: an fd of /dev/null standing for a
 * fake process, whose inode is a number of its own (its start time + 1e6). */
static pid_t pidfd_pid[256];
static unsigned n_pidfd_opens;
static int last_pidfd = -1;

static int fp_open(pid_t tid, void *userdata) {
        char rel[64], path[PATH_MAX];
        int fd;

        (void) userdata;
        n_pidfd_opens++;
        snprintf(rel, sizeof(rel), "proc/%d/stat", (int) tid);
        snprintf(path, sizeof(path), "%s/%s", root_dir, rel);
        if (access(path, F_OK) < 0)
                return -ESRCH;
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        ASSERT_LT((size_t) fd, ELEMENTSOF(pidfd_pid));
        pidfd_pid[fd] = tid;
        last_pidfd = fd;
        return fd;
}

static unsigned n_alive_checks;

static int fp_alive(int pidfd, pid_t tid, void *userdata) {
        char path[PATH_MAX];

        (void) userdata;
        n_alive_checks++;
        ASSERT_EQ(pidfd_pid[pidfd], tid);
        snprintf(path, sizeof(path), "%s/proc/%d/stat", root_dir, (int) tid);
        return access(path, F_OK) == 0;
}

/* Its start time + 1e6: a process that takes a gone one's pid has
 * another (fake_process_started()). */
static int fp_ino(int pidfd, void *userdata, uint64_t *ret) {
        _cleanup_(root_freep) Root *r = NULL;
        uint64_t st;

        (void) userdata;
        ASSERT_OK(root_open(root_dir, &r));
        if (pidref_read_start_time(r, -1, pidfd_pid[pidfd], &st) < 0)
                st = 0;
        *ret = 1000000u + st;
        return 0;
}

static const PidRefOps pidfs_ops = { .pidfd_open = fp_open, .pidfd_alive = fp_alive, .pidfd_ino = fp_ino,
                                     .pidfs_idents = true };
static const CookieOps fake_cookie_ops = {
        .create = fk_create, .share_from = fk_share_from, .share_to = fk_share_to, .get = fk_get, .pidref = &no_pidfds,
};

static uint64_t cookie_of(pid_t tid) {
        uint64_t c;

        pthread_mutex_lock(&fc.lock);
        c = *cookie_slot(tid);
        pthread_mutex_unlock(&fc.lock);
        return c;
}

/* ---- the world -------------------------------------------------------------- */

static const char BATCH[] = "[policy]\nname = batch\npriority = 200\n[match]\ncomm = batch*\n"
                            "[place]\ncpus = llc\nspread = pack\ncookie = process\n";
static const char SVC[] = "[policy]\nname = svc\npriority = 100\n[match]\ncomm = svc*\n"
                          "[place]\ncpus = node\nspread = spread\ncookie = group\n";
static const char PLAIN[] = "[policy]\nname = plain\npriority = 50\n[match]\ncomm = plain*\n"
                            "[place]\ncpus = all\n";

#define SELF_PID 99 /* topod's own pid in the fake world: no fake process has it but test_self_left_alone()'s */

typedef struct World {
        Pipeline *p;
        Journal *journal;
        CookieApplier *cookies;
        Reconciler rc;
        char *journal_dir;
        char *policies; /* the pipeline borrows it (PipelineOptions), for reloads */
        CookieOps cookie_ops; /* world_use_pidfs()'s, which the applier borrows */
} World;

/* The fake tree on tmpfs when there is one (as /proc and /run are). */
static char *new_root(void) {
        char tmpl[] = "/dev/shm/topod-fastpath-XXXXXX";
        char *d = access("/dev/shm", W_OK) == 0 ? mkdtemp(tmpl) : NULL;

        return d ? strdup(d) : fake_root_new();
}

static void world_new_events(World *w, bool events) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_free_ char *reason = NULL;
        PipelineOptions o = {};
        char path[PATH_MAX];

        *w = (World) {};
        root_dir = new_root();
        /* The recorded machine: its sysfs, cpuinfo and mountinfo. */
        snprintf(path, sizeof(path), "cp -R " GUEST "/. '%s'/", root_dir);
        ASSERT_EQ(system(path), 0);
        fake_write(root_dir, "etc/passwd", "root:x:0:0::/root:/bin/sh\nalice:x:1000:100::/home/alice:/bin/sh\n");
        fake_write(root_dir, "proc/sys/kernel/osrelease", "6.12.0\n");
        fake_write(root_dir, MOUNT "/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_write(root_dir, MOUNT "/cgroup.subtree_control", "\n");
        fake_write(root_dir, MOUNT "/cgroup.procs", "");
        fake_write(root_dir, MOUNT "/cpuset.cpus.effective", "0-15\n");
        fake_mkdir(root_dir, MOUNT "/user.slice");
        fake_mkdir(root_dir, "run");
        fake_write(root_dir, "etc/topod/policies.d/10-batch.ini", BATCH);
        fake_write(root_dir, "etc/topod/policies.d/20-svc.ini", SVC);
        fake_write(root_dir, "etc/topod/policies.d/30-plain.ini", PLAIN);
        ASSERT_GT(asprintf(&w->policies, "%s/etc/topod/policies.d", root_dir), 0);
        ASSERT_GT(asprintf(&w->journal_dir, "%s/run/topod", root_dir), 0);

        /* Processes already there: a batch job, two services, a shell. */
        fake_process(100, "batch-a", "/user.slice");
        fake_process(200, "svc-a", "/user.slice");
        fake_process(201, "svc-b", "/user.slice");
        fake_process(300, "bash", "/user.slice");
        fake_process(400, "plain-a", "/user.slice");

        o = (PipelineOptions) { .root = root_dir, .policies = w->policies, .events = events };
        if (pipeline_new(&o, d, &w->p, &reason) < 0)
                TEST_FAIL("pipeline_new: %s", reason ?: "?");
        ASSERT_EQ(w->p->decide.policies->n, 3);
        /* topod itself, in this world: this program's pid may be any of
         * the fake ones. */
        w->p->decide.config->scope.self = SELF_PID;
        ASSERT_TRUE(w->p->observe.caps->cgroup2.available);
        /* Core scheduling as on an SMT host with it (the probe asked the
         * real kernel, which may not have it). */
        w->p->observe.caps->core_sched.available = true;
        w->p->observe.caps->smt_active = true;
        w->p->observe.caps->sched_ext_active = false;

        ASSERT_OK(journal_new(w->journal_dir, &w->journal));
        ASSERT_OK(cookie_applier_new(w->p->observe.root, &fake_cookie_ops, &w->cookies));
        w->rc = (Reconciler) { .root = w->p->observe.root, .caps = w->p->observe.caps, .journal = w->journal, .cookies = w->cookies,
                               .cgroup_ops = &fake_cgroup_ops, .pidref = &no_pidfds };
}

static void world_new(World *w) {
        world_new_events(w, false);
}

/* pidfds as pidfs inodes, for the moves and the cookies. */
static void world_use_pidfs(World *w) {
        w->cookie_ops = fake_cookie_ops;
        w->cookie_ops.pidref = &pidfs_ops;
        cookie_applier_free(w->cookies);
        ASSERT_OK(cookie_applier_new(w->p->observe.root, &w->cookie_ops, &w->cookies));
        w->rc.cookies = w->cookies;
        w->rc.pidref = &pidfs_ops;
}

static void world_free(World *w) {
        cookie_applier_free(w->cookies);
        journal_free(w->journal);
        pipeline_free(w->p);
        free(w->journal_dir);
        free(w->policies);
        fake_root_remove(root_dir);
        root_dir = NULL;
}

static void dump(const ReconcileReport *r) {
        if (getenv("TOPOD_TEST_VERBOSE"))
                (void) reconcile_report_print_text(stdout, r);
}

/* A normal pass: scan, plan, apply; the plan is handed to the fast path. */
static Plan *pass(World *w, ReconcileReport **ret) {
        Plan *plan = NULL;

        ASSERT_OK(pipeline_sample(w->p, false));
        ASSERT_OK(pipeline_plan(w->p, NULL, &plan));
        ASSERT_OK(reconcile_apply(&w->rc, plan, ret));
        dump(*ret);
        ASSERT_OK(pipeline_use_plan(w->p, plan));
        return plan;
}

/* A world with pidfds as pidfs inodes, after a first pass that failed
 * nothing: its plan is the fast path's. */
static Plan *world_pidfs_passed(World *w, ReconcileReport **ret) {
        Plan *plan;

        world_new(w);
        world_use_pidfs(w);
        plan = pass(w, ret);
        ASSERT_EQ((*ret)->counts[RECONCILE_FAILED], 0);
        return plan;
}

static const ReconcileItem *find_item(const ReconcileReport *r, const char *prefix, pid_t pid) {
        char tail[32];

        snprintf(tail, sizeof(tail), "%d", (int) pid);
        for (size_t i = 0; i < r->n; i++)
                if (startswith(r->items[i].what, prefix) && strstr(r->items[i].what, tail))
                        return &r->items[i];
        return NULL;
}

/* As pipeline_drain_events() does for EXEC and for FORK of a process. */
static void event(World *w, pid_t pid);

/* Where pidfds are pidfs inodes the fast path journals a process it moves
 * by its pidfd's inode; one it also gives a cookie, by its start time where
 * the cookie applier cannot check such names (test_pidfs_cookie_names() has
 * one that can): the next pass keeps that cookie, and names the other entry
 * by its start time too. */
static bool journal_has_cookie(const Journal *j, pid_t tid, uint64_t start_time) {
        for (size_t i = 0; i < j->n_cookies; i++)
                if (j->cookies[i].tid == tid && j->cookies[i].start_time == start_time)
                        return true;
        return false;
}

/* A process starts in /user.slice and its exec is told to the fast path. */
static void exec_process(World *w, pid_t pid, const char *comm) {
        fake_process(pid, comm, "/user.slice");
        event(w, pid);
}

static void test_pidfs_identities(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL;
        const JournalTask *jt;
        FastPathStats st;
        Plan *plan1, *plan2;
        uint64_t c;
        World w;

        world_new(&w);
        w.rc.pidref = &pidfs_ops;
        plan1 = pass(&w, &r1);
        ASSERT_EQ(r1->counts[RECONCILE_FAILED], 0);
        fake_process(1000, "batch-b", "/user.slice");
        fake_process(1002, "plain-b", "/user.slice");
        event(&w, 1000);
        event(&w, 1002);
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 1);
        dump(r2);
        ASSERT_EQ(st.placed, 2);
        ASSERT_EQ(r2->counts[RECONCILE_FAILED], 0);
        c = cookie_of(1000);
        ASSERT_NE(c, 0);
        /* The cookie's process by its start time, its cookie too. */
        ASSERT_STREQ(journal_get_task(w.journal, 1000, 6000)->cgroup, "/user.slice");
        {
                bool found = false;

                for (size_t i = 0; i < w.journal->n_cookies; i++)
                        if (w.journal->cookies[i].tid == 1000) {
                                ASSERT_EQ(w.journal->cookies[i].start_time, 6000);
                                found = true;
                        }
                ASSERT_TRUE(found);
        }
        /* The other by its pidfd's inode. */
        jt = journal_get_task(w.journal, 1002, PIDREF_IDENT_PIDFS | 1006002u);
        ASSERT_NOT_NULL(jt);
        ASSERT_STREQ(jt->cgroup, "/user.slice");
        ASSERT_STREQ(process_cgroup(1002), "/topod.slice/plain");

        /* The next pass: the cookie stays, the entry is named by its start time. */
        plan2 = pass(&w, &r3);
        ASSERT_EQ(r3->counts[RECONCILE_FAILED], 0);
        ASSERT_EQ(cookie_of(1000), c);
        ASSERT_NULL(journal_get_task(w.journal, 1002, PIDREF_IDENT_PIDFS | 1006002u));
        ASSERT_STREQ(journal_get_task(w.journal, 1002, 6002)->cgroup, "/user.slice");
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan2);
        plan_free(plan1);
        world_free(&w);
}

static void event(World *w, pid_t pid) {
        ASSERT_LT(w->p->fast->n_fresh, FASTPATH_FRESH_MAX);
        w->p->fast->fresh[w->p->fast->n_fresh++] = pid;
}

static void test_place_then_pass(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL;
        _cleanup_(journal_freep) Journal *disk = NULL;
        Plan *plan1, *plan2;
        FastPathStats st;
        const ReconcileItem *it;
        JournalError e;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        ASSERT_EQ(r1->counts[RECONCILE_FAILED], 0);
        ASSERT_STREQ(process_cgroup(100), "/topod.slice/batch-llc0");
        ASSERT_STREQ(process_cgroup(200), "/topod.slice/svc-node0");
        ASSERT_STREQ(process_cgroup(201), "/topod.slice/svc-node1");
        ASSERT_STREQ(process_cgroup(300), "/user.slice");
        ASSERT_NE(cookie_of(200), 0);
        ASSERT_EQ(cookie_of(200), cookie_of(201));

        /* Nothing new: nothing done, nothing allocated. */
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 0);
        ASSERT_NULL(r2);

        /* A batch job, a service, a shell, one that is gone, a duplicate. */
        fake_process(1000, "batch-b", "/user.slice");
        fake_process(1001, "svc-c", "/user.slice");
        fake_process(1002, "sh", "/user.slice");
        event(&w, 1000);
        event(&w, 1001);
        event(&w, 1002);
        event(&w, 1003);
        event(&w, 1001);
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 1);
        dump(r2);
        ASSERT_EQ(st.seen, 4);
        ASSERT_EQ(st.placed, 2);
        ASSERT_EQ(st.unmatched, 2);
        ASSERT_EQ(st.left, 0);
        ASSERT_EQ(r2->counts[RECONCILE_FAILED], 0);
        /* pack: llc0 has room for one more process by whole cores (2). */
        ASSERT_STREQ(process_cgroup(1000), "/topod.slice/batch-llc0");
        /* spread: node0 and node1 hold one each: the first. */
        ASSERT_STREQ(process_cgroup(1001), "/topod.slice/svc-node0");
        ASSERT_STREQ(process_cgroup(1002), "/user.slice");
        /* Cookies: its own for the batch job, the services' for the service. */
        ASSERT_NE(cookie_of(1000), 0);
        ASSERT_NE(cookie_of(1000), cookie_of(100));
        ASSERT_EQ(cookie_of(1001), cookie_of(200));
        /* The fast path's report lists what failed; it counts all. */
        ASSERT_NULL(find_item(r2, "cgroup: move process", 1000));
        ASSERT_EQ(r2->counts[RECONCILE_DONE], 4); /* two moves, two cookies */
        /* The originals reached the disk before the moves. */
        ASSERT_EQ(journal_load(w.journal_dir, &disk, &e), 1);
        ASSERT_NOT_NULL(journal_get_task(disk, 1000, 6000));
        ASSERT_STREQ(journal_get_task(disk, 1000, 6000)->cgroup, "/user.slice");
        ASSERT_NOT_NULL(journal_get_task(disk, 1001, 6001));
        {
                bool c1000 = false, c1001 = false;

                for (size_t i = 0; i < disk->n_cookies; i++) {
                        c1000 |= disk->cookies[i].tid == 1000;
                        c1001 |= disk->cookies[i].tid == 1001;
                }
                ASSERT_TRUE(c1000);
                ASSERT_TRUE(c1001);
        }

        /* The next pass finds them where it wants them. */
        plan2 = pass(&w, &r3);
        ASSERT_EQ(r3->counts[RECONCILE_FAILED], 0);
        it = find_item(r3, "cgroup: move process", 1000);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_ALREADY);
        it = find_item(r3, "cgroup: move process", 1001);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_ALREADY);
        for (size_t i = 0; i < r3->n; i++)
                if (startswith(r3->items[i].what, "cookie"))
                        ASSERT_EQ(r3->items[i].status, RECONCILE_ALREADY);
        ASSERT_EQ(r3->counts[RECONCILE_DONE], 0);

        /* A process that exits: the pass forgets its journal entry. */
        {
                char rel[64], path[PATH_MAX];
                _cleanup_(reconcile_report_freep) ReconcileReport *r4 = NULL;
                Plan *plan3;
                unsigned gets;

                snprintf(rel, sizeof(rel), "proc/%d", 1000);
                snprintf(path, sizeof(path), "%s/%s", root_dir, rel);
                fake_root_remove(strdup(path));
                ASSERT_NOT_NULL(journal_get_task(w.journal, 1000, 6000));
                /* 1001 is a shell now: no policy gives it a cookie. */
                fake_process(1001, "sh", "/topod.slice/svc-node0");
                task_scanner_invalidate(w.p->observe.scanner, 1001); /* as its COMM event */
                gets = fc.self_gets;
                plan3 = pass(&w, &r4);
                ASSERT_NULL(journal_get_task(w.journal, 1000, 6000));
                ASSERT_NOT_NULL(journal_get_task(w.journal, 1001, 6001));
                ASSERT_FALSE(w.journal->dirty);
                /* Their cookies: 1000's entry forgotten with its task's
                 * (gone: nothing to clear, no job for it), 1001's cookie
                 * cleared and forgotten. */
                ASSERT_NULL(find_item(r4, "cookie cleared", 1000));
                it = find_item(r4, "cookie cleared", 1001);
                ASSERT_NOT_NULL(it);
                ASSERT_EQ(it->status, RECONCILE_DONE);
                /* whom it is about, for the daemon's log of changes */
                ASSERT_EQ(it->kind, RECONCILE_KIND_COOKIE);
                ASSERT_TRUE(it->undo);
                ASSERT_EQ(it->pid, 1001);
                ASSERT_FALSE(r4->restoring);
                ASSERT_EQ(fc.self_gets - gets, 1); /* one job */
                ASSERT_EQ(cookie_of(1001), 0);
                for (size_t i = 0; i < w.journal->n_cookies; i++) {
                        ASSERT_NE(w.journal->cookies[i].tid, 1000);
                        ASSERT_NE(w.journal->cookies[i].tid, 1001);
                }
                ASSERT_OK(pipeline_use_plan(w.p, NULL));
                plan_free(plan3);
        }
        plan_free(plan2);
        plan_free(plan1);
        world_free(&w);
}

/* A pass that lets the fast path in (pipeline_set_yield(), as the daemon
 * does where its placer runs): three processes exec while the pass applies
 * a plan made before, and the fast path places them between the pass's
 * moves: a shell and a plain process turn into services (the services'
 * cookie), a service into a batch job (a cookie of its own). The pass,
 * whose plan has the old facts, leaves them where the fast path put them
 * with their cookies: it neither moves them back nor clears the cookie of
 * one its plan does not know, and makes the services' cookie group of its
 * plan without the one that left. The next pass agrees. */
typedef struct Interleave {
        World *w;
        const TaskSnapshot *before;
        unsigned calls, acted;
        FastPathStats st;
} Interleave;

static void note_changed(World *w, pid_t pid) {
        Pipeline *p = w->p;

        /* as pipeline_drain_events() does for an EXEC (test_changed_by_events
         * checks that it does) */
        if (p->fast->n_changed == p->fast->changed_cap) {
                p->fast->changed_cap = p->fast->changed_cap ? 2 * p->fast->changed_cap : 16;
                p->fast->changed = realloc(p->fast->changed, p->fast->changed_cap * sizeof(pid_t));
                ASSERT_NOT_NULL(p->fast->changed);
        }
        p->fast->changed[p->fast->n_changed++] = pid;
        task_scanner_invalidate(p->observe.scanner, pid);
        event(w, pid);
}

static void interleave_yield(void *userdata) {
        Interleave *il = userdata;
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        Reconciler rc = il->w->rc;

        il->calls++;
        /* The first yield after the scan: the plan has the old facts. */
        if (il->acted || il->w->p->observe.snap == il->before)
                return;
        il->acted = il->calls;
        fake_process(300, "svc-x", "/user.slice");
        fake_process(400, "svc-z", "/topod.slice/plain");
        fake_process(201, "batch-q", "/topod.slice/svc-node1");
        note_changed(il->w, 300);
        note_changed(il->w, 400);
        note_changed(il->w, 201);
        rc.yield = NULL; /* the placer does not yield */
        ASSERT_EQ(pipeline_place_fresh(il->w->p, &rc, &il->st, &r), 1);
        dump(r);
}

static void test_pass_lets_fast_path_in(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL;
        Plan *plan1, *plan2, *plan3;
        const ReconcileItem *it;
        Interleave il = {};
        uint64_t svc;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        ASSERT_EQ(r1->counts[RECONCILE_FAILED], 0);
        ASSERT_STREQ(process_cgroup(300), "/user.slice");
        ASSERT_STREQ(process_cgroup(400), "/topod.slice/plain");
        ASSERT_EQ(cookie_of(400), 0);
        svc = cookie_of(200);
        ASSERT_NE(svc, 0);
        ASSERT_EQ(cookie_of(201), svc);

        il.w = &w;
        il.before = w.p->observe.snap;
        pipeline_set_yield(w.p, interleave_yield, &il);
        w.rc.yield = pipeline_yield_hooks(w.p);
        ASSERT_NOT_NULL(w.rc.yield);
        plan2 = pass(&w, &r2);
        /* It yielded in the scan (once per process) and in the apply. */
        ASSERT_GT(il.acted, 5);
        ASSERT_GT(il.calls, il.acted);
        ASSERT_EQ(il.st.placed, 3);
        ASSERT_EQ(r2->counts[RECONCILE_FAILED], 0);
        /* Placed by the fast path, left alone by the pass. */
        ASSERT_STR_PREFIX(process_cgroup(300), "/topod.slice/svc-node");
        ASSERT_STR_PREFIX(process_cgroup(400), "/topod.slice/svc-node");
        ASSERT_STREQ(process_cgroup(201), "/topod.slice/batch-llc0");
        ASSERT_EQ(cookie_of(200), svc);
        ASSERT_EQ(cookie_of(300), svc);
        ASSERT_EQ(cookie_of(400), svc);
        ASSERT_NE(cookie_of(201), 0);
        ASSERT_NE(cookie_of(201), svc);
        ASSERT_NE(cookie_of(201), cookie_of(100));
        it = find_item(r2, "cookie group", 201);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_SKIPPED);
        it = find_item(r2, "cgroup: move process", 201);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_SKIPPED);
        it = find_item(r2, "cgroup: move process", 400);
        ASSERT_NOT_NULL(it);
        ASSERT_TRUE(it->status == RECONCILE_SKIPPED || it->status == RECONCILE_ALREADY);
        ASSERT_NULL(find_item(r2, "cookie cleared", 300));
        ASSERT_NULL(find_item(r2, "cookie cleared", 400));

        /* The next pass reads them afresh and agrees. */
        pipeline_set_yield(w.p, NULL, NULL);
        w.rc.yield = NULL;
        plan3 = pass(&w, &r3);
        ASSERT_EQ(r3->counts[RECONCILE_FAILED], 0);
        ASSERT_EQ(r3->counts[RECONCILE_SKIPPED], 0);
        it = find_item(r3, "cgroup: move process", 300);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_ALREADY);
        it = find_item(r3, "cgroup: move process", 400);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_ALREADY);
        it = find_item(r3, "cgroup: move process", 201);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_ALREADY);
        ASSERT_EQ(cookie_of(300), svc);
        ASSERT_EQ(cookie_of(400), svc);
        ASSERT_NE(cookie_of(201), 0);
        ASSERT_NE(cookie_of(201), svc);

        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan3);
        plan_free(plan2);
        plan_free(plan1);
        world_free(&w);
}

/* At a pass's first yield (the first call): a process execs and the fast
 * path, which does not yield, looks at it. Its return, or -1 on later calls. */
static int exec_at_first_yield(Interleave *il, pid_t pid, const char *comm, bool mark) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        Reconciler rc = il->w->rc;

        if (il->calls++ > 0)
                return -1;
        fake_process(pid, comm, "/user.slice");
        note_changed(il->w, pid);
        if (mark)
                ASSERT_OK(task_scanner_mark(il->w->p->observe.scanner, pid)); /* as the drain does */
        rc.yield = NULL;
        return pipeline_place_fresh(il->w->p, &rc, &il->st, &r);
}

/* At the storm pass's first yield, in its scan: a process is born and the
 * fast path places it. */
static void storm_yield(void *userdata) {
        Interleave *il = userdata;
        int k = exec_at_first_yield(il, 1002, "svc-d", true);

        if (k < 0)
                return;
        ASSERT_EQ(k, 1);
        ASSERT_EQ(il->st.placed, 1);
}

/* An exec storm's pass (pipeline_sample_deferring()): what the fast path
 * placed since the last scan is not read, and the pass leaves it as the
 * fast path left it (group, cookie, journal entry); the next pass reads it
 * and agrees. What the fast path places during the scan is the next's to
 * leave. */
static void test_storm_pass_defers(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL;
        const uint64_t plain_b = PIDREF_IDENT_PIDFS | (1000000u + 5000u + 1003u); /* fp_ino() */
        const uint64_t batch_b_ino = PIDREF_IDENT_PIDFS | (1000000u + 5000u + 1000u);
        Plan *plan1, *plan2 = NULL, *plan3 = NULL;
        FastPathStats st;
        const ReconcileItem *it;
        TaskScanStats ss;
        Interleave il = {};
        uint64_t batch_b;
        World w;

        world_new(&w);
        /* pidfds as pidfs inodes: a process moved is journaled by its
         * pidfd's inode (its cookie too), which a pass that looks at it
         * (the journal's upkeep) renames to its start time. */
        world_use_pidfs(&w);
        plan1 = pass(&w, &r1);
        ASSERT_EQ(r1->counts[RECONCILE_FAILED], 0);
        il.w = &w;
        exec_process(&w, 1000, "batch-b");
        exec_process(&w, 1001, "svc-c");
        exec_process(&w, 1003, "plain-b");
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 1);
        ASSERT_EQ(st.placed, 3);
        ASSERT_NOT_NULL(journal_get_task(w.journal, 1003, plain_b));
        batch_b = cookie_of(1000);
        ASSERT_NE(batch_b, 0);
        ASSERT_EQ(cookie_of(1001), cookie_of(200));
        r2 = reconcile_report_free(r2);

        /* By events, as the daemon scans: the known processes first (the
         * first yield before the new ones are looked at). */
        task_scanner_trust_events(w.p->observe.scanner, true);
        ASSERT_OK(task_scanner_mark(w.p->observe.scanner, 1000));
        ASSERT_OK(task_scanner_mark(w.p->observe.scanner, 1001));
        ASSERT_OK(task_scanner_mark(w.p->observe.scanner, 1003));
        pipeline_set_yield(w.p, storm_yield, &il);
        ASSERT_OK(pipeline_sample_deferring(w.p, false));
        pipeline_set_yield(w.p, NULL, NULL);
        ASSERT_GT(il.calls, 0);
        task_scanner_stats(w.p->observe.scanner, &ss);
        ASSERT_TRUE(ss.by_events);
        ASSERT_EQ(ss.deferred, 3);
        ASSERT_NULL(task_snapshot_find(w.p->observe.snap, 1000));
        ASSERT_NULL(task_snapshot_find(w.p->observe.snap, 1001));
        ASSERT_TRUE(pipeline_changed(w.p, 1002));
        ASSERT_EQ(w.p->fast->n_defer_next, 1);
        ASSERT_NOT_NULL(task_snapshot_find(w.p->observe.snap, 200));
        ASSERT_TRUE(pipeline_changed(w.p, 1000));
        ASSERT_TRUE(pipeline_changed(w.p, 1001));
        ASSERT_FALSE(pipeline_changed(w.p, 200));
        ASSERT_OK(pipeline_plan(w.p, NULL, &plan2));
        ASSERT_NULL(plan_find_task(plan2, 1000));
        w.rc.yield = pipeline_yield_hooks(w.p);
        ASSERT_OK(reconcile_apply(&w.rc, plan2, &r2));
        dump(r2);
        ASSERT_EQ(r2->counts[RECONCILE_FAILED], 0);
        ASSERT_STREQ(process_cgroup(1000), "/topod.slice/batch-llc0");
        ASSERT_STREQ(process_cgroup(1001), "/topod.slice/svc-node0");
        ASSERT_EQ(cookie_of(1000), batch_b);
        ASSERT_EQ(cookie_of(1001), cookie_of(200));
        ASSERT_NULL(find_item(r2, "cookie cleared", 1000));
        ASSERT_NULL(find_item(r2, "cookie cleared", 1001));
        /* The journal's upkeep left their entries alone too (no pin, no read). */
        ASSERT_NOT_NULL(journal_get_task(w.journal, 1000, batch_b_ino));
        ASSERT_TRUE(journal_has_cookie(w.journal, 1000, batch_b_ino));
        ASSERT_NOT_NULL(journal_get_task(w.journal, 1003, plain_b));
        ASSERT_OK(pipeline_use_plan(w.p, plan2));

        /* The placed list started again: the next storm pass reads them,
         * and agrees. */
        ASSERT_OK(pipeline_sample_deferring(w.p, false));
        task_scanner_stats(w.p->observe.scanner, &ss);
        ASSERT_EQ(ss.deferred, 1); /* 1002, placed during the last scan */
        ASSERT_NULL(task_snapshot_find(w.p->observe.snap, 1002));
        ASSERT_NOT_NULL(task_snapshot_find(w.p->observe.snap, 1000));
        ASSERT_FALSE(pipeline_changed(w.p, 1000));
        ASSERT_OK(pipeline_plan(w.p, NULL, &plan3));
        ASSERT_OK(reconcile_apply(&w.rc, plan3, &r3));
        dump(r3);
        ASSERT_EQ(r3->counts[RECONCILE_FAILED], 0);
        ASSERT_EQ(r3->counts[RECONCILE_DONE], 0);
        it = find_item(r3, "cgroup: move process", 1000);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_ALREADY);
        it = find_item(r3, "cgroup: move process", 1001);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_ALREADY);
        ASSERT_EQ(cookie_of(1000), batch_b);
        ASSERT_EQ(cookie_of(1001), cookie_of(200));
        /* Read now: named by their start times, the cookie with its task. */
        ASSERT_NOT_NULL(journal_get_task(w.journal, 1000, 6000));
        ASSERT_NULL(journal_get_task(w.journal, 1000, batch_b_ino));
        ASSERT_TRUE(journal_has_cookie(w.journal, 1000, 6000));
        ASSERT_FALSE(journal_has_cookie(w.journal, 1000, batch_b_ino));

        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan3);
        plan_free(plan2);
        plan_free(plan1);
        world_free(&w);
}

/* A process whose main thread exited since the last scan began (an EXIT
 * event), new since it, is left to the next scan as the placed ones are:
 * an exec storm's short-lived processes that the fast path did not place
 * (gone before it, or not matched). The next scan reads it if still
 * there (a leader that exited before its threads); one the last snapshot
 * had is read at once. */
static void test_storm_pass_defers_exited(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL;
        TaskEvent ev[2] = {
                { .type = TASK_EVENT_EXIT, .pid = 1005, .tgid = 1005 },
                { .type = TASK_EVENT_EXIT, .pid = 200, .tgid = 200 },
        };
        TaskScanStats ss;
        Plan *plan1;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        ASSERT_NOT_NULL(task_snapshot_find(w.p->observe.snap, 200));
        fake_process(1005, "unmatched", "/user.slice");
        task_scanner_trust_events(w.p->observe.scanner, true);
        pipeline_take_urgent_events(w.p, ev, ELEMENTSOF(ev), 0);
        ASSERT_OK(pipeline_sample_deferring(w.p, false));
        task_scanner_stats(w.p->observe.scanner, &ss);
        ASSERT_TRUE(ss.by_events);
        ASSERT_EQ(ss.deferred, 1);
        ASSERT_NULL(task_snapshot_find(w.p->observe.snap, 1005));
        ASSERT_TRUE(pipeline_changed(w.p, 1005));
        ASSERT_NOT_NULL(task_snapshot_find(w.p->observe.snap, 200));
        /* The next reads it. */
        ASSERT_OK(pipeline_sample_deferring(w.p, false));
        task_scanner_stats(w.p->observe.scanner, &ss);
        ASSERT_EQ(ss.deferred, 0);
        ASSERT_NOT_NULL(task_snapshot_find(w.p->observe.snap, 1005));
        ASSERT_FALSE(pipeline_changed(w.p, 1005));

        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        world_free(&w);
}

/* At the pass's first yield: a process of a policy without a group yet
 * execs, and the fast path finds no group for it. */
static void waiting_yield(void *userdata) {
        Interleave *il = userdata;
        int k = exec_at_first_yield(il, 1011, "plain-c", false);

        if (k < 0)
                return;
        ASSERT_EQ(k, 0);
        ASSERT_EQ(il->st.left, 1);
        ASSERT_EQ(il->st.waiting, 1);
}

/* A process whose policy has no group yet waits for the pass that makes
 * it. One that came before the pass began is its scan's: the pass places
 * it. One that came during the pass, which leaves it alone, is placed from
 * that pass's plan once it is in use: not left for another pass. */
static void test_waiting_for_group(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL, *r4 = NULL;
        Plan *plan1, *plan2;
        FastPathStats st;
        Interleave il = {};
        World w;

        world_new(&w);
        fake_process(400, "other-a", "/user.slice"); /* no plain process: no plain group */
        plan1 = pass(&w, &r1);
        ASSERT_EQ(r1->counts[RECONCILE_FAILED], 0);
        ASSERT_STREQ(process_cgroup(400), "/user.slice");

        fake_process(1010, "plain-b", "/user.slice");
        event(&w, 1010);
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 0);
        ASSERT_EQ(st.seen, 1);
        ASSERT_EQ(st.left, 1);
        ASSERT_EQ(st.waiting, 1);
        ASSERT_STREQ(process_cgroup(1010), "/user.slice");

        il.w = &w;
        pipeline_set_yield(w.p, waiting_yield, &il);
        w.rc.yield = pipeline_yield_hooks(w.p);
        plan2 = pass(&w, &r3);
        ASSERT_GT(il.calls, 0);
        ASSERT_EQ(r3->counts[RECONCILE_FAILED], 0);
        ASSERT_STREQ(process_cgroup(1010), "/topod.slice/plain");
        ASSERT_STREQ(process_cgroup(1011), "/user.slice");

        /* The caller places at once what waited: 1011 alone (1010 was the
         * scan's), into the group the pass made. */
        pipeline_set_yield(w.p, NULL, NULL);
        w.rc.yield = NULL;
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r4), 1);
        ASSERT_EQ(st.seen, 1);
        ASSERT_EQ(st.placed, 1);
        ASSERT_EQ(st.left, 0);
        ASSERT_EQ(r4->counts[RECONCILE_FAILED], 0);
        ASSERT_STREQ(process_cgroup(1011), "/topod.slice/plain");

        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan2);
        plan_free(plan1);
        world_free(&w);
}

/* Where the cookie applier checks pidfs identities, the fast path names a
 * process it gives a cookie by its pidfd's inode, as its move: no read of
 * /proc/PID/stat. The next pass names the cookie entry by the start time:
 * with the task entry where there is one (the prune's), alone where the
 * process was in its group already (no move, no task entry). An entry whose
 * process has gone (its pid taken by another since) is forgotten, and the
 * cookie of the one the plan has is kept. */
static void test_pidfs_cookie_names(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL;
        const uint64_t ino_1000 = PIDREF_IDENT_PIDFS | (1000000u + 6000u);
        const uint64_t ino_1010 = PIDREF_IDENT_PIDFS | (1000000u + 6010u);
        const uint64_t ino_1011 = PIDREF_IDENT_PIDFS | (1000000u + 6011u);
        const ReconcileItem *it;
        FastPathStats st;
        unsigned opens;
        uint64_t c1000, c1010;
        Plan *plan1, *plan2;
        World w;

        world_new(&w);
        world_use_pidfs(&w);
        ASSERT_TRUE(cookie_applier_checks_pidfs(w.cookies));
        plan1 = pass(&w, &r1);
        ASSERT_EQ(r1->counts[RECONCILE_FAILED], 0);

        exec_process(&w, 1000, "batch-b");
        /* The services' groups by spread: node0, then node1. */
        fake_process(1010, "svc-c", "/topod.slice/svc-node0");
        fake_process(1011, "svc-d", "/topod.slice/svc-node1");
        event(&w, 1010);
        event(&w, 1011);
        opens = n_pidfd_opens;
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 1);
        dump(r2);
        ASSERT_EQ(st.placed, 3);
        ASSERT_EQ(r2->counts[RECONCILE_FAILED], 0);
        ASSERT_EQ(n_pidfd_opens - opens, 4); /* one pin each, for move and cookie; the source joined */
        c1000 = cookie_of(1000);
        c1010 = cookie_of(1010);
        ASSERT_NE(c1000, 0);
        ASSERT_NE(c1000, cookie_of(100));
        ASSERT_EQ(c1010, cookie_of(200));
        ASSERT_EQ(cookie_of(1011), c1010);
        ASSERT_STREQ(process_cgroup(1010), "/topod.slice/svc-node0");
        ASSERT_STREQ(process_cgroup(1011), "/topod.slice/svc-node1");
        ASSERT_NULL(journal_get_task(w.journal, 1011, ino_1011));
        /* Moved: task and cookie entries by the inode; there already: the cookie's alone. */
        ASSERT_NOT_NULL(journal_get_task(w.journal, 1000, ino_1000));
        ASSERT_TRUE(journal_has_cookie(w.journal, 1000, ino_1000));
        ASSERT_NULL(journal_get_task(w.journal, 1010, ino_1010));
        ASSERT_TRUE(journal_has_cookie(w.journal, 1010, ino_1010));
        ASSERT_TRUE(journal_has_cookie(w.journal, 1011, ino_1011));
        ASSERT_EQ(w.journal->n_cookies, 6); /* and the first pass's three */

        /* 1011 exits; another process takes its pid. */
        fake_process_started(1011, "svc-d", "/topod.slice/svc-node1", 7777u);

        plan2 = pass(&w, &r3);
        ASSERT_EQ(r3->counts[RECONCILE_FAILED], 0);
        ASSERT_EQ(cookie_of(1000), c1000);
        ASSERT_EQ(cookie_of(1010), c1010);
        ASSERT_NULL(find_item(r3, "cookie cleared", 1000));
        ASSERT_NULL(find_item(r3, "cookie cleared", 1010));
        ASSERT_NULL(find_item(r3, "cookie cleared", 1011));
        it = find_item(r3, "cookie group", 1010);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_ALREADY);
        ASSERT_NOT_NULL(journal_get_task(w.journal, 1000, 6000));
        ASSERT_TRUE(journal_has_cookie(w.journal, 1000, 6000));
        ASSERT_FALSE(journal_has_cookie(w.journal, 1000, ino_1000));
        ASSERT_TRUE(journal_has_cookie(w.journal, 1010, 6010));
        ASSERT_FALSE(journal_has_cookie(w.journal, 1010, ino_1010));
        ASSERT_FALSE(journal_has_cookie(w.journal, 1011, ino_1011));
        ASSERT_TRUE(journal_has_cookie(w.journal, 1011, 7777)); /* the plan's */

        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan2);
        plan_free(plan1);
        world_free(&w);
}

/* As test_waiting_for_group, but the pass's scan reads the process too
 * (it was there when its listing was read): the plan has it, and the
 * pass, which leaves it alone (changed since its scan began), did not
 * place it. Handed back to the fast path, it is not taken as placed by
 * that plan: the fast path places it, and the next pass agrees. */
static void test_waiting_read_by_scan(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL, *r4 = NULL;
        Plan *plan1, *plan2, *plan3;
        FastPathStats st;
        Interleave il = {};
        World w;

        world_new(&w);
        fake_process(400, "other-a", "/user.slice");
        plan1 = pass(&w, &r1);
        fake_process(1011, "plain-c", "/user.slice");

        il.w = &w;
        pipeline_set_yield(w.p, waiting_yield, &il);
        w.rc.yield = pipeline_yield_hooks(w.p);
        plan2 = pass(&w, &r2);
        pipeline_set_yield(w.p, NULL, NULL);
        w.rc.yield = NULL;
        ASSERT_NOT_NULL(plan_find_task(plan2, 1011));
        ASSERT_STREQ(process_cgroup(1011), "/user.slice");

        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r3), 1);
        ASSERT_EQ(st.seen, 1);
        ASSERT_EQ(st.planned, 0);
        ASSERT_EQ(st.placed, 1);
        ASSERT_EQ(st.left, 0);
        ASSERT_STREQ(process_cgroup(1011), "/topod.slice/plain");

        plan3 = pass(&w, &r4);
        ASSERT_EQ(r4->counts[RECONCILE_FAILED], 0);
        ASSERT_EQ(r4->counts[RECONCILE_DONE], 0);
        ASSERT_STREQ(process_cgroup(1011), "/topod.slice/plain");

        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan3);
        plan_free(plan2);
        plan_free(plan1);
        world_free(&w);
}

/* After an exec storm: the fast path's cookie entries of processes that
 * were in their group already (no task entry), named by their pidfd's
 * inode, most of them gone. The journal's upkeep lists /proc and forgets
 * those not listed, without the cookie applier (no job, no pin each);
 * those listed stay for the usual path. */
static void test_prune_gone_cookies(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL;
        const uint64_t ino_1010 = PIDREF_IDENT_PIDFS | (1000000u + 6010u);
        unsigned opens;
        Plan *plan1, *plan2;
        World w;

        world_new(&w);
        world_use_pidfs(&w);
        plan1 = pass(&w, &r1);
        fake_process(1010, "svc-c", "/topod.slice/svc-node0");
        ASSERT_EQ(journal_record_cookie(w.journal, 1010, ino_1010), 1);
        for (pid_t i = 0; i < 40; i++)
                ASSERT_EQ(journal_record_cookie(w.journal, 3000 + i, PIDREF_IDENT_PIDFS | (7000u + (unsigned) i)), 1);
        opens = n_pidfd_opens;
        plan2 = pass(&w, &r2);
        ASSERT_EQ(r2->counts[RECONCILE_FAILED], 0);
        for (pid_t i = 0; i < 40; i++)
                ASSERT_NULL(find_item(r2, "cookie cleared", 3000 + i));
        ASSERT_EQ(w.journal->n_cookies, 4); /* the first pass's three, and 1010 */
        ASSERT_TRUE(journal_has_cookie(w.journal, 1010, 6010)); /* named by name_fast_cookies() */
        /* The pass's own pins (its moves, 1010's naming): fewer than the
         * 40 a pin each for the gone ones would be. */
        ASSERT_LT(n_pidfd_opens - opens, 40);

        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan2);
        plan_free(plan1);
        world_free(&w);
}

/* A FORK or EXIT event, as the loop's read takes it. */
static void task_event(World *w, TaskEventType type, pid_t pid, pid_t tgid) {
        TaskEvent ev = { .type = type, .pid = pid, .tgid = tgid, .parent_pid = 300, .parent_tgid = 300 };

        pipeline_take_urgent_events(w->p, &ev, 1, 0);
}

/* Journal entries of processes the events tell died whole are dropped by
 * the upkeep without a pin or a read, though /proc lists them (zombies);
 * a process whose main thread alone exited, or whose number was taken
 * again, is looked at as before. */
static void test_prune_dead_unpinned(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL;
        unsigned opens, quiet;
        Plan *plan1, *plan2;
        World w;

        world_new(&w);
        world_use_pidfs(&w);
        ASSERT_OK(lives_new(&w.p->observe.lives));
        task_scanner_set_lives(w.p->observe.scanner, w.p->observe.lives);
        w.rc.yield = pipeline_yield_hooks(w.p);
        plan1 = pass(&w, &r1);
        /* What a pass pins when nothing has changed: its own. */
        opens = n_pidfd_opens;
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        reconcile_report_free(r1);
        plan1 = pass(&w, &r1);
        quiet = n_pidfd_opens - opens;
        /* Forty dead, recorded by the fast path (named by their pidfds). */
        for (pid_t pid = 5000; pid < 5040; pid++) {
                fake_process(pid, "other", "/user.slice");
                ASSERT_EQ(journal_record_task(w.journal, pid, PIDREF_IDENT_PIDFS | (1000000u + 5000u + (unsigned) pid),
                                              "/user.slice"), 1);
                ASSERT_EQ(journal_record_cookie(w.journal, pid, PIDREF_IDENT_PIDFS | (1000000u + 5000u + (unsigned) pid)), 1);
                task_event(&w, TASK_EVENT_FORK, pid, pid);
                task_event(&w, TASK_EVENT_EXIT, pid, pid);
        }
        /* Its main thread exited, another lives on. */
        fake_process(5100, "other", "/user.slice");
        ASSERT_EQ(journal_record_task(w.journal, 5100, PIDREF_IDENT_PIDFS | 1010100u, "/user.slice"), 1);
        task_event(&w, TASK_EVENT_FORK, 5100, 5100);
        task_event(&w, TASK_EVENT_FORK, 5101, 5100);
        task_event(&w, TASK_EVENT_EXIT, 5100, 5100);
        /* Dead, and its number a new process's since. */
        fake_process(5200, "other", "/user.slice");
        ASSERT_EQ(journal_record_task(w.journal, 5200, PIDREF_IDENT_PIDFS | 1010200u, "/user.slice"), 1);
        task_event(&w, TASK_EVENT_FORK, 5200, 5200);
        task_event(&w, TASK_EVENT_EXIT, 5200, 5200);
        task_event(&w, TASK_EVENT_FORK, 5200, 5200);
        ASSERT_TRUE(lives_dead(w.p->observe.lives, 5000));
        ASSERT_FALSE(lives_dead(w.p->observe.lives, 5100));
        ASSERT_FALSE(lives_dead(w.p->observe.lives, 5200));

        opens = n_pidfd_opens;
        plan2 = pass(&w, &r2);
        ASSERT_EQ(r2->counts[RECONCILE_FAILED], 0);
        for (pid_t pid = 5000; pid < 5040; pid++) {
                ASSERT_NULL(task_snapshot_find(w.p->observe.snap, pid)); /* the scan did not read it */
                ASSERT_NULL(journal_get_task(w.journal, pid, PIDREF_IDENT_PIDFS | (1000000u + 5000u + (unsigned) pid)));
                ASSERT_NULL(journal_get_task(w.journal, pid, 5000u + (unsigned) pid));
                ASSERT_FALSE(journal_has_cookie(w.journal, pid, PIDREF_IDENT_PIDFS | (1000000u + 5000u + (unsigned) pid)));
                ASSERT_NULL(find_item(r2, "cookie cleared", pid));
        }
        /* Looked at: alive, named by their start time from now on. */
        ASSERT_NOT_NULL(journal_get_task(w.journal, 5100, 10100));
        ASSERT_NOT_NULL(journal_get_task(w.journal, 5200, 10200));
        ASSERT_NOT_NULL(task_snapshot_find(w.p->observe.snap, 5100));
        ASSERT_NOT_NULL(task_snapshot_find(w.p->observe.snap, 5200));
        /* Pins: the pass's own and the two looked at, none for the dead. */
        ASSERT_EQ(n_pidfd_opens - opens, quiet + 2);

        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan2);
        plan_free(plan1);
        world_free(&w);
}

/* The answer the pass gets: dead only while nothing since the scan says
 * the number is in use again (an exec the placer saw before the FORK is
 * read), and not after lost events. */
static void test_dead_hook(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL;
        const YieldHooks *h;
        TaskEvent ev;
        Plan *plan1;
        World w;

        world_new(&w);
        ASSERT_OK(lives_new(&w.p->observe.lives));
        task_scanner_set_lives(w.p->observe.scanner, w.p->observe.lives);
        plan1 = pass(&w, &r1);
        h = pipeline_yield_hooks(w.p);
        task_event(&w, TASK_EVENT_FORK, 5300, 5300);
        task_event(&w, TASK_EVENT_EXIT, 5300, 5300);
        task_event(&w, TASK_EVENT_FORK, 5301, 5301);
        task_event(&w, TASK_EVENT_EXIT, 5301, 5301);
        ASSERT_OK(pipeline_sample(w.p, false));
        ASSERT_TRUE(yield_known_dead(h, 5300));
        ASSERT_TRUE(yield_known_dead(h, 5301));
        /* 5300's number taken again: its exec comes first. */
        ev = (TaskEvent) { .type = TASK_EVENT_EXEC, .pid = 5300, .tgid = 5300 };
        if (pipeline_take_urgent_events(w.p, &ev, 1, 0))
                pipeline_take_urgent_rest(w.p, &ev, 1);
        ASSERT_FALSE(yield_known_dead(h, 5300));
        ASSERT_TRUE(yield_known_dead(h, 5301));
        /* Lost events: none known. */
        ev = (TaskEvent) { .type = TASK_EVENT_OVERRUN };
        pipeline_take_urgent_events(w.p, &ev, 1, 0);
        ASSERT_FALSE(yield_known_dead(h, 5301));
        task_event(&w, TASK_EVENT_FORK, 5302, 5302);
        task_event(&w, TASK_EVENT_EXIT, 5302, 5302);
        ASSERT_FALSE(lives_dead(w.p->observe.lives, 5302)); /* not counted until the socket is read empty */
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        world_free(&w);
}

/* Two cookie groups holding one cookie (a member forked by another
 * group's before its own policy had a group: cookies are inherited) are
 * not "already so": the next pass gives one of them a cookie of its own. */
static void test_cookie_groups_apart(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL;
        Plan *plan1, *plan2;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        ASSERT_NE(cookie_of(100), 0);
        ASSERT_NE(cookie_of(200), 0);
        ASSERT_NE(cookie_of(100), cookie_of(200));
        pthread_mutex_lock(&fc.lock);
        *cookie_slot(100) = *cookie_slot(200);
        pthread_mutex_unlock(&fc.lock);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan2 = pass(&w, &r2);
        dump(r2);
        ASSERT_NE(cookie_of(100), 0);
        ASSERT_NE(cookie_of(100), cookie_of(200));
        ASSERT_EQ(cookie_of(200), cookie_of(201));
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        plan_free(plan2);
        world_free(&w);
}

/* A stop clears every cookie topod gave and forgets every entry, one named
 * 0 (which the parser takes) too; and the cookie a child in topod's group
 * inherited from one (not journaled), but not one a process in that group
 * made itself. */
static void test_restore_cookies(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL;
        char rel[PATH_MAX], text[64];
        const char *cg;
        Plan *plan1;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        ASSERT_NE(cookie_of(200), 0);
        /* 250 forked by 200 after the pass (its cookie), 251 made its own. */
        cg = process_cgroup(200);
        ASSERT_STR_PREFIX(cg, "/topod.slice/");
        fake_process(250, "sh", cg);
        fake_process(251, "own", cg);
        pthread_mutex_lock(&fc.lock);
        *cookie_slot(250) = *cookie_slot(200);
        *cookie_slot(251) = 0xabcdefu;
        pthread_mutex_unlock(&fc.lock);
        snprintf(rel, sizeof(rel), MOUNT "%s/cgroup.threads", cg);
        snprintf(text, sizeof(text), "200\n250\n251\n");
        fake_write(root_dir, rel, text);
        for (pid_t i = 0; i < 40; i++)
                ASSERT_EQ(journal_record_cookie(w.journal, 6000 + i, 7000u + (unsigned) i), 1);
        ASSERT_EQ(journal_record_cookie(w.journal, 6100, 0), 1);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        ASSERT_OK(reconcile_restore(&w.rc, &r2));
        dump(r2);
        ASSERT_EQ(w.journal->n_cookies, 0);
        ASSERT_EQ(cookie_of(200), 0);
        ASSERT_EQ(cookie_of(201), 0);
        ASSERT_NOT_NULL(find_item(r2, "cookie cleared", 6039));
        ASSERT_NOT_NULL(find_item(r2, "cookie cleared", 6100));
        ASSERT_TRUE(r2->restoring);
        ASSERT_EQ(find_item(r2, "cookie cleared", 6100)->kind, RECONCILE_KIND_COOKIE);
        ASSERT_EQ(find_item(r2, "cookie cleared", 6100)->pid, 6100);
        ASSERT_EQ(cookie_of(250), 0);
        ASSERT_NOT_NULL(find_item(r2, "cookie cleared (inherited", 250));
        ASSERT_EQ(cookie_of(251), 0xabcdefu);
        ASSERT_NULL(find_item(r2, "cookie cleared (inherited", 251));
        plan_free(plan1);
        world_free(&w);
}

/* Stopped while SMT is off: the kernel takes no cookie call, and the
 * cookies come back into force with SMT. Their entries stay in the
 * journal (before, they were forgotten, the cookies left on their tasks);
 * a pass once SMT is on clears those the plan no longer groups. */
static void test_restore_cookies_smt_off(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL;
        CookieInterlocks il = { .smt_off = true };
        const ReconcileItem *it;
        size_t n;
        Plan *plan1, *plan2;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        ASSERT_NE(cookie_of(100), 0);
        ASSERT_NE(cookie_of(200), 0);
        n = w.journal->n_cookies;
        ASSERT_GE(n, 3);
        cookie_applier_set_interlocks(w.cookies, &il);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        ASSERT_OK(reconcile_restore(&w.rc, &r2));
        dump(r2);
        ASSERT_EQ(w.journal->n_cookies, n);
        ASSERT_NE(cookie_of(100), 0);
        ASSERT_NE(cookie_of(200), 0);
        it = find_item(r2, "cookie cleared", 200);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_SKIPPED);
        ASSERT_NOT_NULL(it->reason);
        ASSERT_STR_CONTAINS(it->reason, "SMT is off");

        /* SMT on again; 100 and 200 no longer match anything. */
        il.smt_off = false;
        cookie_applier_set_interlocks(w.cookies, &il);
        fake_process(100, "gone-a", "/user.slice");
        fake_process(200, "gone-b", "/user.slice");
        fake_write(root_dir, "proc/100/task/100/schedstat", "2000 0 2\n"); /* it ran: read again */
        fake_write(root_dir, "proc/200/task/200/schedstat", "2000 0 2\n");
        plan2 = pass(&w, &r3);
        ASSERT_EQ(cookie_of(100), 0);
        ASSERT_EQ(cookie_of(200), 0);
        for (size_t i = 0; i < w.journal->n_cookies; i++) {
                ASSERT_NE(w.journal->cookies[i].tid, 100);
                ASSERT_NE(w.journal->cookies[i].tid, 200);
        }
        plan_free(plan1);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan2);
        world_free(&w);
}

static uint64_t mono_ns(void) {
        struct timespec ts;

        ASSERT_OK(clock_gettime(CLOCK_MONOTONIC, &ts));
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Where forks come on a socket of their own, read lazily by the loop: a
 * new process from its fork is looked at by the read after the one that
 * brought it, not at once, and not at all when the fast path read it since
 * its fork (its exec, the placer's) or it exited. */
static void test_forks_wait_a_read(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL;
        TaskEvent ev[3] = {};
        FastPathStats st;
        Plan *plan1;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        w.p->fast->forks_lazy = true;
        fake_process(1000, "batch-b", "/user.slice");
        fake_process(1001, "svc-c", "/user.slice");
        fake_process(1002, "plain-b", "/user.slice");
        for (size_t i = 0; i < ELEMENTSOF(ev); i++)
                ev[i] = (TaskEvent) { .type = TASK_EVENT_FORK, .pid = 1000 + (pid_t) i, .tgid = 1000 + (pid_t) i,
                                      .parent_pid = 300, .parent_tgid = 300, .timestamp_ns = mono_ns() };
        pipeline_take_urgent_events(w.p, ev, ELEMENTSOF(ev), 0);
        ASSERT_EQ(w.p->fast->n_fresh, 0);
        ASSERT_TRUE(pipeline_forks_waiting(w.p));

        /* 1001 execs: the placer places it; 1002 exits. */
        event(&w, 1001);
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 1);
        ASSERT_EQ(st.placed, 1);
        ev[0] = (TaskEvent) { .type = TASK_EVENT_EXIT, .pid = 1002, .tgid = 1002, .timestamp_ns = mono_ns() };
        pipeline_take_urgent_events(w.p, ev, 1, 0);

        /* The next read: 1000 alone, then nothing waits. */
        (void) pipeline_drain_lazy_events(w.p);
        ASSERT_FALSE(pipeline_forks_waiting(w.p));
        ASSERT_EQ(w.p->fast->n_fresh, 1);
        ASSERT_EQ(w.p->fast->fresh[0], 1000);
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r3), 1);
        ASSERT_EQ(st.seen, 1);
        ASSERT_EQ(st.placed, 1);
        ASSERT_STREQ(process_cgroup(1000), "/topod.slice/batch-llc0");
        ASSERT_STREQ(process_cgroup(1002), "/user.slice");

        /* Without the split, a fork is the fast path's at once. */
        w.p->fast->forks_lazy = false;
        fake_process(1003, "plain-c", "/user.slice");
        ev[0] = (TaskEvent) { .type = TASK_EVENT_FORK, .pid = 1003, .tgid = 1003, .parent_pid = 300,
                              .parent_tgid = 300, .timestamp_ns = mono_ns() };
        pipeline_take_urgent_events(w.p, ev, 1, 0);
        ASSERT_EQ(w.p->fast->n_fresh, 1);
        ASSERT_FALSE(pipeline_forks_waiting(w.p));

        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        world_free(&w);
}

/* A storm pass's plan without a member of a group's cookie (all gone, or
 * left to the next scan): the next process the fast path places there
 * joins the one it placed last, not a cookie of its own. */
static void test_storm_keeps_cookie_source(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL, *r4 = NULL;
        Plan *plan1, *plan2 = NULL;
        FastPathStats st;
        uint64_t svc;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        svc = cookie_of(200);
        ASSERT_NE(svc, 0);
        exec_process(&w, 1101, "svc-c");
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 1);
        ASSERT_EQ(st.placed, 1);
        ASSERT_EQ(cookie_of(1101), svc);
        for (pid_t pid = 200; pid <= 201; pid++) {
                char path[PATH_MAX];

                snprintf(path, sizeof(path), "%s/proc/%d", root_dir, (int) pid);
                fake_root_remove(strdup(path));
        }
        ASSERT_OK(pipeline_sample_deferring(w.p, false));
        ASSERT_OK(pipeline_plan(w.p, NULL, &plan2));
        ASSERT_NULL(plan_find_task(plan2, 1101));
        w.rc.yield = pipeline_yield_hooks(w.p);
        ASSERT_OK(reconcile_apply(&w.rc, plan2, &r3));
        dump(r3);
        ASSERT_EQ(cookie_of(1101), svc);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        ASSERT_OK(pipeline_use_plan(w.p, plan2));

        exec_process(&w, 1104, "svc-d");
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r4), 1);
        dump(r4);
        ASSERT_EQ(st.placed, 1);
        ASSERT_EQ(cookie_of(1104), svc);

        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan2);
        plan_free(plan1);
        world_free(&w);
}

/* A process the fast path moves and gives a cookie is pinned once: the
 * cookie uses the move's handle (one pidfd, one stat read). */
static void test_cookie_uses_move_pin(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL;
        FastPathStats st;
        unsigned opens;
        Plan *plan1;
        World w;

        plan1 = world_pidfs_passed(&w, &r1);
        fake_process(1000, "batch-b", "/user.slice");
        event(&w, 1000);
        opens = n_pidfd_opens;
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 1);
        dump(r2);
        ASSERT_EQ(st.placed, 1);
        ASSERT_EQ(r2->counts[RECONCILE_FAILED], 0);
        ASSERT_STREQ(process_cgroup(1000), "/topod.slice/batch-llc0");
        ASSERT_NE(cookie_of(1000), 0);
        ASSERT_NE(cookie_of(1000), cookie_of(100));
        ASSERT_EQ(n_pidfd_opens - opens, 1);
        /* and let go of after the cookie: to be closed with others */
        ASSERT_GE(last_pidfd, 0);
        {
                bool binned = false;

                for (size_t i = 0; i < w.p->fast->fds.n; i++)
                        binned = binned || w.p->fast->fds.fd[i] == last_pidfd;
                ASSERT_TRUE(binned);
        }
        ASSERT_OK(pipeline_sample(w.p, false));
        ASSERT_LT(fcntl(last_pidfd, F_GETFD), 0);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        world_free(&w);
}

/* Descriptors open in this process now. */
static unsigned open_fds(void) {
        unsigned n = 0;

        for (int fd = 0; fd < 1024; fd++)
                n += fcntl(fd, F_GETFD) >= 0;
        return n;
}

/* The fast path's used descriptors are held until FASTPATH_FDS_CLOSE_AT,
 * then closed together; a sample closes what is left. None is lost. */
static void test_fds_closed_together(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL;
        unsigned base, emptied = 0;
        size_t most = 0;
        Plan *plan1;
        World w;

        plan1 = world_pidfs_passed(&w, &r1);
        ASSERT_OK(pipeline_sample(w.p, false));
        ASSERT_EQ(w.p->fast->fds.n, 0);
        base = open_fds();
        for (pid_t pid = 1600; pid < 1650; pid++) {
                _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
                FastPathStats st;
                size_t before = w.p->fast->fds.n;

                fake_process(pid, "batch-b", "/user.slice");
                event(&w, pid);
                ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r), 1);
                ASSERT_EQ(st.placed, 1);
                ASSERT_STREQ(process_cgroup(pid), "/topod.slice/batch-llc0");
                /* What is open is what the bin holds: nothing leaks. */
                ASSERT_EQ(open_fds(), base + (unsigned) w.p->fast->fds.n);
                ASSERT_LT(w.p->fast->fds.n, FASTPATH_FDS_CLOSE_AT);
                if (w.p->fast->fds.n < before)
                        emptied++;
                most = MAX(most, before);
                fake_process_exit(pid);
                place_note_exit(w.p->fast->place, pid, pid);
        }
        /* Held over several placements, closed in a few sweeps. */
        ASSERT_GE(most, FASTPATH_FDS_CLOSE_AT / 2);
        ASSERT_GE(emptied, 2);
        ASSERT_LE(emptied, 50 / 8);
        ASSERT_GT(w.p->fast->fds.n, 0);
        ASSERT_OK(pipeline_sample(w.p, false));
        ASSERT_EQ(w.p->fast->fds.n, 0);
        ASSERT_EQ(open_fds(), base);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        world_free(&w);
}

/* A process given a cookie is checked alive once, after the cookie (which
 * tells for its move too), and not asked for the cookie's value: on an
 * emulated guest each system call costs what a whole placement of the
 * reference does. One that exits as its cookie is given has vanished, move
 * and all; one whose cookie the kernel refuses is checked for its move. */
static void test_cookie_checks_move(void) {
        static const struct {
                pid_t pid;
                bool exits, exits_after, refused;
        } cases[] = { { 1500, false, false, false },
                      { 1501, true, false, false },
                      { 1502, false, false, true },
                      { 1503, false, false, false },
                      { 1504, false, true, false },
                      { 1505, false, false, false } };
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL;
        Plan *plan1;
        World w;

        size_t held;

        plan1 = world_pidfs_passed(&w, &r1);
        held = w.p->fast->fds.n;
        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
                FastPathStats st;
                unsigned checks, gets, fds;
                pid_t pid = cases[c].pid;

                if (c > 0 && !cases[c - 1].exits && !cases[c - 1].exits_after) {
                        /* The last one exits (its EXIT event): room in its group. */
                        fake_process_exit(cases[c - 1].pid);
                        place_note_exit(w.p->fast->place, cases[c - 1].pid, cases[c - 1].pid);
                }
                fake_process(pid, "batch-b", "/user.slice");
                event(&w, pid);
                exit_at_create = cases[c].exits ? pid : 0;
                exit_after_create = cases[c].exits_after ? pid : 0;
                refuse_create = cases[c].refused ? pid : 0;
                checks = n_alive_checks;
                gets = fc.gets;
                fds = open_fds();
                ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r), 1);
                /* comm's, the pin's: held to be closed together later */
                ASSERT_EQ(open_fds(), fds + (w.p->fast->fds.n - held));
                held = w.p->fast->fds.n;
                dump(r);
                exit_at_create = exit_after_create = refuse_create = 0;
                ASSERT_EQ(n_alive_checks - checks, cases[c].exits ? 0u : 1u);
                ASSERT_EQ(fc.gets - gets, 0);
                if (cases[c].exits || cases[c].exits_after) {
                        /* Moved, then gone (before its cookie, or found gone
                         * right after it): it lived for a moment. */
                        ASSERT_EQ(st.vanished, 1);
                        ASSERT_EQ(st.placed, 0);
                        ASSERT_EQ(r->counts[RECONCILE_VANISHED], 2);
                        ASSERT_EQ(r->counts[RECONCILE_DONE], 0);
                        ASSERT_EQ(r->counts[RECONCILE_FAILED], 0);
                        continue;
                }
                ASSERT_STREQ(process_cgroup(pid), "/topod.slice/batch-llc0");
                if (cases[c].refused) {
                        ASSERT_EQ(cookie_of(pid), 0);
                        ASSERT_EQ(r->counts[RECONCILE_DONE], 1); /* the move */
                        ASSERT_EQ(r->counts[RECONCILE_FAILED], 1);
                        ASSERT_NOT_NULL(find_item(r, "cookie (process)", pid));
                        continue;
                }
                ASSERT_EQ(st.placed, 1);
                ASSERT_EQ(r->counts[RECONCILE_DONE], 2);
                ASSERT_EQ(r->counts[RECONCILE_FAILED], 0);
                ASSERT_NE(cookie_of(pid), 0);
                ASSERT_NE(cookie_of(pid), cookie_of(100));
        }
        {
                /* A group's cookie: the move is checked on its own, as the
                 * cookie is (a pid taken meanwhile would get the group's
                 * cookie: checked before it is passed on). */
                _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
                FastPathStats st;
                unsigned checks = n_alive_checks;

                fake_process(1510, "svc-x", "/user.slice");
                event(&w, 1510);
                ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r), 1);
                dump(r);
                ASSERT_EQ(st.placed, 1);
                ASSERT_EQ(n_alive_checks - checks, 2);
                ASSERT_NE(cookie_of(1510), 0);
        }
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        world_free(&w);
}

/* The emulated concur mode's figure: Δ usage_usec / Δ wall between two
 * readings of a group's cpu.stat at least PIPELINE_MEASURE_MIN_USEC apart;
 * a reading sooner (a pass right after another) keeps the base and the
 * figure. */
static unsigned concurrency_of(const Pipeline *p) {
        ASSERT_EQ(p->measure.n_usage, 1);
        return p->measure.usage[0].concurrency_permille;
}

/* Start-up judges what it reads exactly as a reload does: a policy file
 * with an error refuses the whole set, at start-up (nothing starts) as at
 * a reload (what runs stays). */
static void test_startup_judged_as_reload(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new(), *d2 = diag_new();
        _cleanup_free_ char *reason = NULL;
        _cleanup_(pipeline_freep) Pipeline *p = NULL;
        PipelineOptions o;
        World w;

        world_new(&w);
        fake_write(root_dir, "etc/topod/policies.d/60-bad.ini", "[policy]\nname = bad\n[match]\ncomm = x\nunit = nounit\n"
                                                                "[place]\ncpus = all\n");
        ASSERT_EQ(pipeline_reload(w.p, d), -EINVAL);
        ASSERT_EQ(w.p->decide.policies->n, 3); /* what runs stays */
        o = (PipelineOptions) { .root = root_dir, .policies = w.policies };
        ASSERT_EQ(pipeline_new(&o, d2, &p, &reason), -EINVAL);
        ASSERT_NULL(p);
        ASSERT_NOT_NULL(strstr(reason, "refused, as a reload would"));
        ASSERT_EQ(d2->n_errors, d->n_errors);
        world_free(&w);
}

/* [when] load = bands: the load from the fake /proc/loadavg over the
 * recorded machine's 16 CPUs, held with the configured hysteresis and
 * dwell; a policy entering force is placed by the next pass; an unknown
 * load holds no band. */
static void test_load_bands(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        Plan *plan;
        World w;
        size_t light = SIZE_MAX, heavy = SIZE_MAX, batch = SIZE_MAX;

        world_new(&w);
        fake_write(root_dir, "etc/topod/policies.d/40-light.ini",
                   "[policy]\nname = light\npriority = 300\n[when]\nload = 0-40%\n[match]\ncomm = light*\n"
                   "[place]\ngroup = light\ncookie = none\n");
        fake_write(root_dir, "etc/topod/policies.d/50-heavy.ini",
                   "[policy]\nname = heavy\npriority = 300\n[when]\nload = 50-100%\n[match]\ncomm = heavy*\n"
                   "[place]\ngroup = heavy\ncookie = none\n");
        fake_write(root_dir, "proc/loadavg", "4.00 3.00 2.00 5/300 999\n"); /* 25% of 16 CPUs */
        ASSERT_OK(pipeline_reload(w.p, d));
        ASSERT_EQ(d->n_errors, 0);
        ASSERT_EQ(w.p->decide.policies->n, 5);
        for (size_t i = 0; i < w.p->decide.policies->n; i++) {
                const char *name = w.p->decide.policies->policies[i]->name;

                if (streq(name, "light"))
                        light = i;
                else if (streq(name, "heavy"))
                        heavy = i;
                else if (streq(name, "batch"))
                        batch = i;
        }
        ASSERT_LT(light, 5);
        ASSERT_LT(heavy, 5);
        ASSERT_LT(batch, 5);
        ASSERT_TRUE(w.p->decide.have_load);
        ASSERT_EQ(w.p->decide.load_percent, 25u);
        ASSERT_TRUE(w.p->decide.in_force[light]);
        ASSERT_FALSE(w.p->decide.in_force[heavy]);
        fake_process(500, "heavy-a", "/user.slice");
        fake_process(501, "light-a", "/user.slice");
        plan = pass(&w, &r1);
        ASSERT_STREQ(process_cgroup(500), "/user.slice");
        ASSERT_STREQ(process_cgroup(501), "/topod.slice/light");

        /* No dwell; hysteresis 5 points. 43%: light is held, heavy not yet. */
        w.p->decide.config->load_dwell_usec = 0;
        fake_write(root_dir, "proc/loadavg", "6.88 3.00 2.00 5/300 999\n");
        ASSERT_EQ(pipeline_refresh_in_force(w.p, true), 0u);
        ASSERT_EQ(w.p->decide.load_percent, 43u);
        ASSERT_TRUE(w.p->decide.in_force[light]);
        /* 52%: light left (beyond 45), heavy entered. */
        fake_write(root_dir, "proc/loadavg", "8.32 3.00 2.00 5/300 999\n");
        ASSERT_EQ(pipeline_refresh_in_force(w.p, true), 2u);
        ASSERT_FALSE(w.p->decide.in_force[light]);
        ASSERT_TRUE(w.p->decide.in_force[heavy]);
        (void) pipeline_use_plan(w.p, NULL);
        plan_free(plan);
        plan = pass(&w, &r2);
        ASSERT_STREQ(process_cgroup(500), "/topod.slice/heavy");
        /* light left force, and its group the plan: topod lets go of
         * light-a, back where it came from, its journal entry forgotten. */
        ASSERT_STREQ(process_cgroup(501), "/user.slice");
        for (size_t i = 0; i < w.journal->n_tasks; i++)
                ASSERT_NE(w.journal->tasks[i].tid, 501);
        {
                const ReconcileItem *let_go = find_item(r2, "cgroup: move process", 501);

                ASSERT_NOT_NULL(let_go);
                ASSERT_EQ(let_go->status, RECONCILE_DONE);
                ASSERT_EQ(let_go->kind, RECONCILE_KIND_MOVE);
                ASSERT_TRUE(let_go->undo);
                ASSERT_EQ(let_go->pid, 501);
                ASSERT_STREQ(let_go->cgroup, "/user.slice");
                ASSERT_STR_PREFIX(let_go->from, "/topod.slice/");
        }

        /* With the dwell, a change waits for it. */
        w.p->decide.config->load_dwell_usec = 3600 * USEC_PER_SEC;
        fake_write(root_dir, "proc/loadavg", "1.00 3.00 2.00 5/300 999\n");
        ASSERT_EQ(pipeline_refresh_in_force(w.p, true), 0u);
        ASSERT_TRUE(w.p->decide.in_force[heavy]);

        /* The load unreadable: the bands stay as they were. */
        {
                char path[PATH_MAX];

                snprintf(path, sizeof(path), "%s/proc/loadavg", root_dir);
                ASSERT_EQ(unlink(path), 0);
        }
        ASSERT_EQ(pipeline_refresh_in_force(w.p, true), 0u);
        ASSERT_FALSE(w.p->decide.have_load);
        ASSERT_FALSE(w.p->decide.in_force[light]);
        ASSERT_TRUE(w.p->decide.in_force[heavy]);
        ASSERT_TRUE(w.p->decide.in_force[batch]); /* no [when] */

        /* A reload keeps the bands of the policies it keeps (heavy, held
         * without a reading); a new band holds nothing before its first
         * reading (medium); light, its band changed, starts afresh. */
        fake_write(root_dir, "etc/topod/policies.d/60-medium.ini",
                   "[policy]\nname = medium\npriority = 300\n[when]\nload = 0-1000%\n[match]\ncomm = medium*\n"
                   "[place]\ngroup = medium\ncookie = none\n");
        fake_write(root_dir, "etc/topod/policies.d/40-light.ini",
                   "[policy]\nname = light\npriority = 300\n[when]\nload = 0-1000%\n[match]\ncomm = light*\n"
                   "[place]\ngroup = light\ncookie = none\n");
        (void) pipeline_use_plan(w.p, NULL);
        ASSERT_OK(pipeline_reload(w.p, d));
        ASSERT_EQ(w.p->decide.policies->n, 6);
        for (size_t i = 0; i < w.p->decide.policies->n; i++) {
                const char *name = w.p->decide.policies->policies[i]->name;

                if (streq(name, "heavy"))
                        ASSERT_TRUE(w.p->decide.in_force[i]);
                else if (streq(name, "medium") || streq(name, "light"))
                        ASSERT_FALSE(w.p->decide.in_force[i]);
        }
        fake_write(root_dir, "proc/loadavg", "1.00 3.00 2.00 5/300 999\n");
        ASSERT_EQ(pipeline_refresh_in_force(w.p, true), 2u); /* medium and light at their first reading */
        plan_free(plan);
        world_free(&w);
}

/* The CPUs online changed (SMT switched off, then on): the topology is
 * read again, once per change; the fast path goes on from the same plan. */
static void test_topology_refresh(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL;
        Plan *plan;
        World w;

        world_new(&w);
        plan = pass(&w, &r1);
        ASSERT_EQ(w.p->observe.topology->n_pus, 16u);
        ASSERT_EQ(pipeline_refresh_topology(w.p), 0);
        fake_write(root_dir, "sys/devices/system/cpu/online", "0,2,4,6,8,10,12,14\n");
        ASSERT_EQ(pipeline_refresh_topology(w.p), 1);
        ASSERT_EQ(w.p->observe.topology->n_pus, 8u);
        ASSERT_NOT_NULL(w.p->fast->place);
        ASSERT_PTR_EQ(w.p->fast->plan, plan);
        ASSERT_EQ(pipeline_refresh_topology(w.p), 0);
        fake_write(root_dir, "sys/devices/system/cpu/online", "0-15\n");
        ASSERT_EQ(pipeline_refresh_topology(w.p), 1);
        ASSERT_EQ(w.p->observe.topology->n_pus, 16u);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan);
        world_free(&w);
}

static void test_measure(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        const char *stat = MOUNT "/topod.slice/conc/cpu.stat";
        struct timespec pause = { 0, 600 * 1000000L };
        uint64_t a0, a1, b0, b1;
        unsigned c;
        Plan *plan;
        World w;

        world_new(&w);
        fake_write(root_dir, "etc/topod/policies.d/40-conc.ini",
                   "[policy]\nname = conc\n[match]\ncomm = conc*\n[place]\ngroup = conc\ncookie = none\n"
                   "[kernel]\ncgroup_mode = concur\n");
        if (pipeline_reload(w.p, d) < 0)
                for (size_t i = 0; i < d->n; i++)
                        printf("%s:%u: %s\n", d->items[i].file, d->items[i].line, d->items[i].message);
        ASSERT_EQ(d->n_errors, 0);
        fake_process(500, "conc-a", "/user.slice");
        plan = pass(&w, &r1);
        ASSERT_TRUE(plan->mode_emulated);
        ASSERT_NOT_NULL(plan->mode);
        ASSERT_STREQ(plan->mode, "concur");
        ASSERT_STREQ(process_cgroup(500), "/topod.slice/conc");

        fake_write(root_dir, stat, "usage_usec 1000000\nuser_usec 0\n");
        a0 = pipeline_now_usec();
        ASSERT_OK(pipeline_measure(w.p, plan));
        a1 = pipeline_now_usec();
        ASSERT_EQ(w.p->measure.n_usage, 0); /* one reading: no figure yet */
        nanosleep(&pause, NULL);
        fake_write(root_dir, stat, "usage_usec 1600000\n"); /* 0.6 s of one CPU */
        b0 = pipeline_now_usec();
        ASSERT_OK(pipeline_measure(w.p, plan));
        b1 = pipeline_now_usec();
        c = concurrency_of(w.p);
        /* Over the time between the reads, whatever a busy machine made
         * of the 0.6 s asked for: about one CPU. */
        ASSERT_GE(c, 600000ull * 1000u / (b1 - a0));
        ASSERT_LE(c, 600000ull * 1000u / (b0 - a1) + 1);
        ASSERT_LE(c, 1050);
        a0 = b0; /* the base of the next figure */
        a1 = b1;
        /* Too soon: the same figure, the same base. */
        fake_write(root_dir, stat, "usage_usec 9000000\n");
        ASSERT_OK(pipeline_measure(w.p, plan));
        ASSERT_EQ(concurrency_of(w.p), c);
        ASSERT_EQ(w.p->measure.readings[0], 1600000);
        nanosleep(&pause, NULL);
        fake_write(root_dir, stat, "usage_usec 2800000\n"); /* 1.2 s more over 0.6 s: two CPUs */
        b0 = pipeline_now_usec();
        ASSERT_OK(pipeline_measure(w.p, plan));
        b1 = pipeline_now_usec();
        c = concurrency_of(w.p);
        ASSERT_GE(c, 1200000ull * 1000u / (b1 - a0));
        ASSERT_LE(c, 1200000ull * 1000u / (b0 - a1) + 1);
        ASSERT_LE(c, 2100);

        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan);
        world_free(&w);
}

/* The placer's execs in two steps: the processes for the fast path, then,
 * after their placement, what else the events tell (the changed list, the
 * scan's marks); a read that brought anything else is taken whole. */
static void test_urgent_rest_after(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL;
        TaskEvent ev[2];
        FastPathStats st;
        Plan *plan1;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        fake_process(1600, "batch-b", "/user.slice");
        fake_process(1601, "unmatched", "/user.slice");
        ev[0] = (TaskEvent) { .type = TASK_EVENT_EXEC, .pid = 1600, .tgid = 1600, .timestamp_ns = mono_ns() };
        ev[1] = (TaskEvent) { .type = TASK_EVENT_EXEC, .pid = 1601, .tgid = 1601, .timestamp_ns = mono_ns() };
        ASSERT_TRUE(pipeline_take_urgent_events(w.p, ev, 2, 0));
        ASSERT_EQ(w.p->fast->n_fresh, 2);
        ASSERT_FALSE(pipeline_changed(w.p, 1600));
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 1);
        ASSERT_EQ(st.placed, 1);
        pipeline_take_urgent_rest(w.p, ev, 2);
        ASSERT_TRUE(pipeline_changed(w.p, 1600));
        ASSERT_TRUE(pipeline_changed(w.p, 1601));
        ASSERT_EQ(w.p->fast->n_fresh, 0); /* not again */

        /* A rename with them: all at once, nothing left. */
        fake_process(1602, "plain-r", "/user.slice");
        ev[0] = (TaskEvent) { .type = TASK_EVENT_EXEC, .pid = 1602, .tgid = 1602, .timestamp_ns = mono_ns() };
        ev[1] = (TaskEvent) { .type = TASK_EVENT_COMM, .pid = 1602, .tgid = 1602, .timestamp_ns = mono_ns() };
        ASSERT_FALSE(pipeline_take_urgent_events(w.p, ev, 2, 0));
        ASSERT_TRUE(pipeline_changed(w.p, 1602));
        ASSERT_EQ(w.p->fast->n_fresh, 1);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        world_free(&w);
}

/* Each placement's time from its event (exec → placed, for topod's
 * metrics): counted for the placed alone, from the event's timestamp, or
 * from when the event was taken where it has none. */
static void test_placed_latency(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL;
        TaskEvent ev[2];
        FastPathStats st;
        Histogram before;
        Plan *plan1;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        before = w.p->fast->placed_latency;
        fake_process(1610, "batch-b", "/user.slice");
        fake_process(1611, "unmatched", "/user.slice");
        /* exec'd 30 ms ago */
        ev[0] = (TaskEvent) { .type = TASK_EVENT_EXEC, .pid = 1610, .tgid = 1610, .timestamp_ns = mono_ns() - 30000000u };
        ev[1] = (TaskEvent) { .type = TASK_EVENT_EXEC, .pid = 1611, .tgid = 1611, .timestamp_ns = mono_ns() };
        ASSERT_TRUE(pipeline_take_urgent_events(w.p, ev, 2, 0));
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 1);
        ASSERT_EQ(st.placed, 1);
        ASSERT_EQ(w.p->fast->placed_latency.count, before.count + 1); /* not the unmatched one */
        ASSERT_GE(w.p->fast->placed_latency.sum_ns - before.sum_ns, 30000000u);
        /* from 25 ms up: the buckets of 25 ms and less have it not */
        for (size_t i = 0; i < HISTOGRAM_BOUNDS && histogram_bounds_ns[i] <= 25000000u; i++)
                ASSERT_EQ(w.p->fast->placed_latency.buckets[i], before.buckets[i]);
        pipeline_take_urgent_rest(w.p, ev, 2);

        /* No timestamp: from when the event was taken (well under 10 s). */
        before = w.p->fast->placed_latency;
        fake_process(1612, "plain-b", "/user.slice");
        ev[0] = (TaskEvent) { .type = TASK_EVENT_EXEC, .pid = 1612, .tgid = 1612 };
        ASSERT_TRUE(pipeline_take_urgent_events(w.p, ev, 1, 0));
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r3), 1);
        ASSERT_EQ(st.placed, 1);
        ASSERT_EQ(w.p->fast->placed_latency.count, before.count + 1);
        ASSERT_LT(w.p->fast->placed_latency.sum_ns - before.sum_ns, 10000000000u);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        world_free(&w);
}

/* What the pass leaves alone is what the events say changed since its
 * scan began: a real child's exec on this kernel's proc connector (root
 * only: else it says so and skips). */
static void test_changed_by_events(void) {
        uint64_t deadline;
        pid_t child;
        World w;
        int status, go[2];

        world_new_events(&w, true);
        if (!w.p->observe.events) {
                printf("SKIP: no proc connector here (%s): pipeline_changed() by real events not checked\n",
                       strerror(-w.p->observe.events_error));
                world_free(&w);
                return;
        }
        /* Born before the scan, exec'd after it began. */
        ASSERT_OK(pipe2(go, O_CLOEXEC) == 0 ? 0 : -errno);
        child = fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
                char c;

                if (read(go[0], &c, 1) == 1)
                        execl("/bin/true", "true", (char *) NULL);
                _exit(127);
        }
        ASSERT_OK(pipeline_sample(w.p, false));
        ASSERT_FALSE(pipeline_changed(w.p, child));
        ASSERT_EQ(write(go[1], "x", 1), 1);
        ASSERT_EQ(waitpid(child, &status, 0), child);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);
        close(go[0]);
        close(go[1]);
        deadline = pipeline_now_usec() + 2000000u;
        while (!pipeline_changed(w.p, child) && pipeline_now_usec() < deadline)
                pipeline_wait_until(w.p, pipeline_now_usec() + 10000u);
        ASSERT_TRUE(pipeline_changed(w.p, child));
        ASSERT_FALSE(pipeline_changed(w.p, child + 1000000));
        /* A scan begins: changed since then, not before. */
        ASSERT_OK(pipeline_sample(w.p, false));
        ASSERT_FALSE(pipeline_changed(w.p, child));
        world_free(&w);
}

/* A process whose main thread exited while another thread lives (Z, two
 * threads): /proc lists the exited one, nothing runs it. It is not
 * planned (before, it was: a move pinned through it, its cookie refused);
 * the live thread is, and the process is moved through that. */
static void fake_thread_stat(pid_t tgid, pid_t tid, const char *comm, char state, unsigned threads) {
        char rel[128], text[512];

        snprintf(text, sizeof(text),
                 "%d (%s) %c 1 %d %d 0 -1 0 0 0 0 0 10 5 0 0 20 0 %u 0 %u 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2 0 0\n",
                 (int) tid, comm, state, (int) tgid, (int) tgid, threads, 5000u + (unsigned) tid);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) tgid, (int) tid);
        fake_write(root_dir, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) tid, (int) tid);
        fake_write(root_dir, rel, text);
        if (tid == tgid) {
                snprintf(rel, sizeof(rel), "proc/%d/stat", (int) tid);
                fake_write(root_dir, rel, text);
        }
}

static void test_exited_main_thread(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        const PlanTask *t;
        char rel[128], text[256];
        Plan *plan;
        World w;

        world_new(&w);
        fake_process(500, "plain-z", "/user.slice");
        fake_thread_stat(500, 500, "plain-z", 'Z', 2);
        fake_thread_stat(500, 501, "plain-z", 'S', 2);
        snprintf(rel, sizeof(rel), "proc/500/task/501/schedstat");
        fake_write(root_dir, rel, "1000 0 1\n");
        snprintf(rel, sizeof(rel), "proc/500/task/501/status");
        snprintf(text, sizeof(text), "Name:\tplain-z\nTgid:\t500\nUid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t100\n");
        fake_write(root_dir, rel, text);
        fake_write(root_dir, "proc/501/cgroup", "0::/user.slice\n");

        plan = pass(&w, &r);
        ASSERT_EQ(r->counts[RECONCILE_FAILED], 0);
        ASSERT_NULL(plan_find_task(plan, 500));
        t = plan_find_task(plan, 501);
        ASSERT_NOT_NULL(t);
        ASSERT_EQ(t->tgid, 500);
        ASSERT_STREQ(process_cgroup(501), "/topod.slice/plain");
        ASSERT_NOT_NULL(journal_get_task(w.journal, 500, 5500)); /* journaled by its process */
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan);
        world_free(&w);
}

/* No plan in use (paused, reloaded): nothing is remembered or placed. */
static void test_no_plan(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        FastPathStats st;
        World w;

        world_new(&w);
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r), 0);
        ASSERT_NULL(r);
        ASSERT_EQ(st.seen, 0);
        world_free(&w);
}

/* The journal's log: what journal_commit_append() adds is read back with
 * the file; a block cut short by a crash, or a log left from an older file,
 * is ignored; a complete block that does not parse is refused. */
static char *slurp(const char *dir, const char *name) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return test_read_all(path);
}

/* The log's text is what comes before its first NUL (its allocated,
 * unwritten rest): write there, the rest of its space left as it was, or
 * (whole) replace the text, the rest NULs. Its size stays: a log under a
 * journal's mapping must not shrink. */
static void put_log(const char *dir, const char *text, bool whole) {
        _cleanup_free_ char *old = slurp(dir, JOURNAL_LOG_NAME);
        char path[PATH_MAX];
        struct stat st;
        size_t at = whole || !old ? 0 : strlen(old), n = strlen(text);
        int fd;

        snprintf(path, sizeof(path), "%s/%s", dir, JOURNAL_LOG_NAME);
        fd = open(path, O_RDWR | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(fstat(fd, &st), 0);
        ASSERT_GE((size_t) st.st_size, at + n);
        ASSERT_EQ(pwrite(fd, text, n, (off_t) at), (ssize_t) n);
        if (whole && (size_t) st.st_size > n) {
                _cleanup_free_ char *zeros = calloc(1, (size_t) st.st_size - n);

                ASSERT_NOT_NULL(zeros);
                ASSERT_EQ(pwrite(fd, zeros, (size_t) st.st_size - n, (off_t) n), (ssize_t) (st.st_size - (off_t) n));
        }
        close(fd);
}

static void test_journal_log(void) {
        char *dir = fake_root_new();
        _cleanup_free_ char *jdir = NULL, *text = NULL, *log = NULL;
        Journal *j = NULL, *l = NULL;
        JournalError e = {};
        struct stat st1, st2;
        char path[PATH_MAX];

        ASSERT_GT(asprintf(&jdir, "%s/run-topod", dir), 0);
        snprintf(path, sizeof(path), "%s/%s", jdir, JOURNAL_FILE_NAME);

        /* No file of ours yet: the first append writes the file whole. */
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_EQ(journal_record_cgroup(j, "/topod.slice"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_NULL(slurp(jdir, JOURNAL_LOG_NAME));
        ASSERT_EQ(stat(path, &st1), 0);

        /* Then appends: the file stays, the log grows. */
        ASSERT_EQ(journal_record_task(j, 42, 4242, "/user.slice"), 1);
        ASSERT_EQ(journal_record_cookie(j, 42, 4242), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_FALSE(j->dirty);
        ASSERT_EQ(journal_record_task(j, 43, 4343, "/user.slice/a b"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_EQ(stat(path, &st2), 0);
        ASSERT_EQ(st1.st_ino, st2.st_ino);
        log = slurp(jdir, JOURNAL_LOG_NAME);
        ASSERT_NOT_NULL(log);
        ASSERT_STR_PREFIX(log, "topod-journal-log 1 "); /* no pidfs names */
        ASSERT_STR_CONTAINS(log, "\ntask 42 4242 /user.slice\ncookie 42 4242\nend 2\n"
                                 "task 43 4343 /user.slice/a\\x20b\nend 1\n");

        /* The log's space is allocated ahead, past the size at which it is
         * folded in; its text ends at the first NUL. */
        {
                char lpath[PATH_MAX];
                struct stat ls;

                snprintf(lpath, sizeof(lpath), "%s/%s", jdir, JOURNAL_LOG_NAME);
                ASSERT_EQ(stat(lpath, &ls), 0);
                ASSERT_GE(ls.st_size, 128 * 1024);
                ASSERT_EQ(strlen(log), j->log_size);
        }

        /* A block whose copy was cut short before its first byte (the last
         * one copied): not there. */
        {
                static const char torn[] = "\0ask 44 1 /x\nend 1\n";
                int fd;

                snprintf(path, sizeof(path), "%s/%s", jdir, JOURNAL_LOG_NAME);
                fd = open(path, O_RDWR | O_CLOEXEC);
                ASSERT_GE(fd, 0);
                ASSERT_EQ(pwrite(fd, torn, sizeof(torn) - 1, (off_t) strlen(log)), (ssize_t) sizeof(torn) - 1);
                close(fd);
                snprintf(path, sizeof(path), "%s/%s", jdir, JOURNAL_FILE_NAME);
                ASSERT_EQ(journal_load(jdir, &l, &e), 1);
                ASSERT_EQ(journal_n_entries(l), 4);
                ASSERT_NULL(journal_get_task(l, 44, 1));
                l = journal_free(l);
                put_log(jdir, log, true);
        }

        /* A block whose first byte is there was copied whole: one without
         * its "end" (that line damaged) and with a torn last line is read,
         * the damage reported as the log's, the file's own clean. */
        put_log(jdir, "task 44 1 /x\ncookie 44", false);
        e = (JournalError) {};
        ASSERT_EQ(journal_load(jdir, &l, &e), 1);
        ASSERT_EQ(journal_n_entries(l), 5);
        ASSERT_STREQ(journal_get_task(l, 43, 4343)->cgroup, "/user.slice/a b");
        ASSERT_STREQ(journal_get_task(l, 44, 1)->cgroup, "/x");
        ASSERT_EQ(l->n_damaged, 0u);
        ASSERT_EQ(l->n_log_damaged, 2u); /* the torn line, the missing "end" */
        ASSERT_EQ(l->log_damage->line, 8u);
        ASSERT_STR_CONTAINS(l->log_damage->message, "incomplete last line");
        ASSERT_EQ(e.line, 0u); /* ret_error: the file's, which has none */
        ASSERT_FALSE(l->dirty);
        l = journal_free(l);
        put_log(jdir, log, true);

        /* A complete block with a line that does not parse, or one that
         * miscounts: the line skipped and reported, every other entry
         * read. */
        free(log);
        log = slurp(jdir, JOURNAL_LOG_NAME);
        put_log(jdir, "task 45 1 /x\nend 2\n", false);
        ASSERT_EQ(journal_load(jdir, &l, &e), 1);
        ASSERT_NOT_NULL(journal_get_task(l, 45, 1));
        ASSERT_EQ(l->n_log_damaged, 1u);
        ASSERT_STR_CONTAINS(l->log_damage->message, "counts 2 entries");
        l = journal_free(l);
        put_log(jdir, log, true);
        put_log(jdir, "task 42 4242 /again\nend 1\n", false);
        ASSERT_EQ(journal_load(jdir, &l, &e), 1); /* a duplicate: the first original kept */
        ASSERT_STREQ(journal_get_task(l, 42, 4242)->cgroup, "/user.slice");
        ASSERT_EQ(l->n_log_damaged, 2u);
        ASSERT_STR_CONTAINS(l->log_damage->message, "duplicate");
        l = journal_free(l);
        put_log(jdir, log, true);

        /* A forget cannot be appended: the file is written whole, the log
         * folded in and removed. */
        ASSERT_EQ(journal_forget_task(j, 42, 4242), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_NULL(slurp(jdir, JOURNAL_LOG_NAME));
        ASSERT_EQ(stat(path, &st2), 0);
        ASSERT_NE(st1.st_ino, st2.st_ino);
        text = slurp(jdir, JOURNAL_FILE_NAME);
        ASSERT_STREQ(text, "topod-journal 1\ntask 43 4343 /user.slice/a\\x20b\ncookie 42 4242\n"
                           "cgroup /topod.slice\nend 3\n");

        /* A log left from an older file (a crash between the rename and its
         * removal): ignored. */
        test_write_file(jdir, JOURNAL_LOG_NAME, log, false);
        ASSERT_EQ(journal_load(jdir, &l, &e), 1);
        ASSERT_EQ(journal_n_entries(l), 3);
        ASSERT_NULL(journal_get_task(l, 42, 4242));
        l = journal_free(l);

        /* Appending again after the rewrite starts a new log; the stale one
         * (not the size we wrote) makes it a whole write instead, which
         * finds it is none of this journal's: moved aside, said. */
        ASSERT_EQ(journal_record_task(j, 46, 1, "/"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_NULL(slurp(jdir, JOURNAL_LOG_NAME));
        ASSERT_NOT_NULL(j->foreign_log);
        ASSERT_STR_CONTAINS(j->foreign_log, "created by another writer");
        j->foreign_log = mfree(j->foreign_log);
        ASSERT_EQ(journal_record_task(j, 47, 1, "/"), 1);
        ASSERT_OK(journal_commit_append(j));
        free(log);
        log = slurp(jdir, JOURNAL_LOG_NAME);
        ASSERT_NOT_NULL(log);
        ASSERT_STR_CONTAINS(log, "\ntask 47 1 /\nend 1\n");
        ASSERT_EQ(journal_load(jdir, &l, &e), 1);
        ASSERT_EQ(journal_n_entries(l), 5);
        l = journal_free(l);

        /* A pidfs name does not go into a log that says version 1: the
         * file is written whole (version 2) and the log removed; the next
         * log says version 2 from its start. */
        ASSERT_EQ(journal_record_task(j, 50, PIDREF_IDENT_PIDFS | 5, "/"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_NULL(slurp(jdir, JOURNAL_LOG_NAME));
        free(text);
        text = slurp(jdir, JOURNAL_FILE_NAME);
        ASSERT_NOT_NULL(text);
        ASSERT_STR_PREFIX(text, "topod-journal 2\n");
        ASSERT_STR_CONTAINS(text, "\ntask 50 pidfs:5 /\n");
        ASSERT_EQ(journal_record_task(j, 51, PIDREF_IDENT_PIDFS | 6, "/"), 1);
        ASSERT_OK(journal_commit_append(j));
        free(log);
        log = slurp(jdir, JOURNAL_LOG_NAME);
        ASSERT_NOT_NULL(log);
        ASSERT_STR_PREFIX(log, "topod-journal-log 2 ");
        ASSERT_STR_CONTAINS(log, "\ntask 51 pidfs:6 /\nend 1\n");
        ASSERT_EQ(journal_load(jdir, &l, &e), 1);
        ASSERT_NOT_NULL(journal_get_task(l, 51, PIDREF_IDENT_PIDFS | 6));
        l = journal_free(l);

        /* A block larger than the log's space left: the file is written
         * whole, the log removed. */
        for (pid_t t = 1000; t < 3000; t++)
                ASSERT_EQ(journal_record_task(j, t, 1, "/a-cgroup-path-long-enough-that-two-thousand-fill-the-slack"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_NULL(slurp(jdir, JOURNAL_LOG_NAME));
        ASSERT_FALSE(j->dirty);
        ASSERT_EQ(journal_load(jdir, &l, &e), 1);
        ASSERT_NOT_NULL(journal_get_task(l, 2999, 1));
        l = journal_free(l);

        /* A log that cannot be made (its space refused: a file size limit
         * stands in for a full /run): whole commits, and no new try for
         * JOURNAL_LOG_BACKOFF of them. */
        {
                struct rlimit old_fsize, small;
                void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
                unsigned tries;

                ASSERT_OK(journal_commit(j));
                /* Room for the file and a line more, not for the log. */
                ASSERT_EQ(stat(path, &st2), 0);
                ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_fsize), 0);
                small = old_fsize;
                small.rlim_cur = (rlim_t) st2.st_size + 4096; /* the soft limit: raised again after */
                ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
                ASSERT_EQ(journal_record_task(j, 3000, 1, "/"), 1);
                ASSERT_OK(journal_commit_append(j));
                ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old_fsize), 0);
                signal(SIGXFSZ, old_xfsz);
                ASSERT_NULL(slurp(jdir, JOURNAL_LOG_NAME));
                ASSERT_NULL(j->log_map);
                ASSERT_NULL(j->foreign_log); /* its own failed log is no other writer's */
                for (tries = 0; tries < 200 && !j->log_map; tries++) {
                        ASSERT_EQ(journal_record_task(j, 3001 + (pid_t) tries, 1, "/"), 1);
                        ASSERT_OK(journal_commit_append(j));
                }
                ASSERT_NOT_NULL(j->log_map);
                ASSERT_EQ(tries, 65); /* 64 whole commits, then the log */
                ASSERT_EQ(journal_load(jdir, &l, &e), 1);
                ASSERT_NOT_NULL(journal_get_task(l, 3000, 1));
                ASSERT_NOT_NULL(journal_get_task(l, 3000 + (pid_t) tries, 1));
                l = journal_free(l);
        }

        /* journal_commit() folds the log in; journal_remove() takes both. */
        ASSERT_EQ(journal_record_task(j, 48, 1, "/"), 1);
        ASSERT_OK(journal_commit(j));
        ASSERT_NULL(slurp(jdir, JOURNAL_LOG_NAME));
        ASSERT_EQ(journal_record_task(j, 49, 1, "/"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_NOT_NULL((text = (free(text), slurp(jdir, JOURNAL_LOG_NAME))));
        ASSERT_OK(journal_remove(jdir));
        ASSERT_NULL(slurp(jdir, JOURNAL_LOG_NAME));
        ASSERT_NULL(slurp(jdir, JOURNAL_FILE_NAME));
        journal_free(j);
        fake_root_remove(dir);
}

static uint64_t cpu_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* The cost per event, on this fake tree (tmpfs files stand in for /proc
 * and cgroupfs; the real ones cost more per read, but the count of reads
 * and writes is the same). Printed, not asserted. */
/* topod's own process is never placed, whatever matches it: not by the
 * fast path, not by a pass, across a reload. */
static void test_self_left_alone(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL;
        FastPathStats st;
        Plan *plan1, *plan2;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        exec_process(&w, SELF_PID, "svc-topod");
        ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r2), 0);
        ASSERT_EQ(st.seen, 1);
        ASSERT_EQ(st.placed, 0);
        ASSERT_STREQ(process_cgroup(SELF_PID), "/user.slice");
        plan2 = pass(&w, &r3);
        ASSERT_STREQ(process_cgroup(SELF_PID), "/user.slice");
        ASSERT_EQ(cookie_of(SELF_PID), 0);
        ASSERT_NULL(find_item(r3, "move", SELF_PID));
        ASSERT_NULL(plan_find_task(plan2, SELF_PID));
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan2);
        plan_free(plan1);
        world_free(&w);
}

static void test_timing(void) {
        enum { N = 1000 };
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL;
        Plan *plan;
        FastPathStats st;
        uint64_t t0, none_us, one_us, batch_us, plain_us;
        World w;

        world_new(&w);
        plan = pass(&w, &r1);
        for (int i = 0; i < N; i++) {
                fake_process(10000 + i, "bash", "/user.slice");
                fake_process(20000 + i, "svc-x", "/user.slice");
                fake_process(30000 + i, "svc-y", "/user.slice");
                fake_process(40000 + i, "plain-x", "/user.slice");
        }

        /* 1,000 execs that match nothing, one burst each. */
        t0 = cpu_usec();
        for (int i = 0; i < N; i++) {
                _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;

                event(&w, 10000 + i);
                ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r), 0);
                ASSERT_EQ(st.unmatched, 1);
        }
        none_us = cpu_usec() - t0;

        /* 1,000 placements, one burst each (one journal commit each). */
        n_moves = 0;
        t0 = cpu_usec();
        for (int i = 0; i < N; i++) {
                _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;

                event(&w, 20000 + i);
                ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r), 1);
                ASSERT_EQ(st.placed, 1);
        }
        one_us = cpu_usec() - t0;
        ASSERT_EQ(n_moves, N);

        /* 1,000 placements without a cookie, one burst each. */
        t0 = cpu_usec();
        for (int i = 0; i < N; i++) {
                _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;

                event(&w, 40000 + i);
                ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r), 1);
                ASSERT_EQ(st.placed, 1);
        }
        plain_us = cpu_usec() - t0;

        /* 1,000 placements in one burst (one commit). */
        t0 = cpu_usec();
        {
                _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;

                for (int i = 0; i < N; i++)
                        event(&w, 30000 + i);
                ASSERT_EQ(pipeline_place_fresh(w.p, &w.rc, &st, &r), 1);
                ASSERT_EQ(st.placed, N);
        }
        batch_us = cpu_usec() - t0;

        printf("   CPU per event, fake root on %s, journal of %zu entries at the end:\n",
               startswith(root_dir, "/dev/shm") ? "tmpfs" : "/tmp", journal_n_entries(w.journal));
        printf("     no match:              %6.1f us\n", (double) none_us / N);
        printf("     placed, one per burst: %6.1f us (move + cookie + journal commit)\n", (double) one_us / N);
        printf("     placed, no cookie:     %6.1f us (move + journal commit)\n", (double) plain_us / N);
        printf("     placed, 1000 per burst:%6.1f us\n", (double) batch_us / N);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan);
        world_free(&w);
}

/* A thread of process tgid, as the scanner reads it. */
static void fake_thread(pid_t tgid, pid_t tid, const char *comm) {
        char rel[128], text[512];

        snprintf(text, sizeof(text),
                 "%d (%s) S 1 %d %d 0 -1 0 0 0 0 0 10 5 0 0 20 0 2 0 %u 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2 0 0\n",
                 (int) tid, comm, (int) tgid, (int) tgid, 5000u + (unsigned) tid);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) tgid, (int) tid);
        fake_write(root_dir, rel, text);
        /* /proc/<tid> names a thread too (the identity checks read it) */
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) tid, (int) tid);
        fake_write(root_dir, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/schedstat", (int) tgid, (int) tid);
        fake_write(root_dir, rel, "1000 0 1\n");
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/status", (int) tgid, (int) tid);
        snprintf(text, sizeof(text), "Name:\t%s\nTgid:\t%d\nUid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t100\n",
                 comm, (int) tgid);
        fake_write(root_dir, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/comm", (int) tgid, (int) tid);
        snprintf(text, sizeof(text), "%s\n", comm);
        fake_write(root_dir, rel, text);
}

/* A cookie group that only grows keeps its cookie: a thread a member
 * started without it (here: one the fake kernel gave none) joins the
 * cookie the members hold, which stays what it was; the group gets a new
 * one only when no member holds it any longer. */
static void test_group_grows_keeps_cookie(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL;
        const ReconcileItem *it;
        Plan *plan1, *plan2, *plan3;
        uint64_t svc;
        World w;

        world_new(&w);
        plan1 = pass(&w, &r1);
        svc = cookie_of(200);
        ASSERT_NE(svc, 0);
        ASSERT_EQ(cookie_of(201), svc);

        /* A process of the group without the cookie (its main thread
         * cleared from outside) and with a new thread: both join it, the
         * thread before the main thread, so that a main thread in the
         * cookie means its process is. */
        fake_thread(200, 2000, "svc-a");
        pthread_mutex_lock(&fc.lock);
        *cookie_slot(200) = 0;
        pthread_mutex_unlock(&fc.lock);
        ASSERT_OK(pipeline_sample(w.p, true)); /* a thread is found by a full scan, or its event */
        plan2 = pass(&w, &r2);
        ASSERT_EQ(r2->counts[RECONCILE_FAILED], 0);
        ASSERT_EQ(cookie_of(2000), svc);
        ASSERT_EQ(cookie_of(200), svc);
        ASSERT_EQ(cookie_of(201), svc);
        ASSERT_LT(fc.given[2000], fc.given[200]);
        it = find_item(r2, "cookie group", 2000);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_DONE);
        it = find_item(r2, "cookie group", 201);
        ASSERT_NOT_NULL(it);
        ASSERT_EQ(it->status, RECONCILE_ALREADY);

        /* Every member lost it (cleared from outside): a new one. */
        pthread_mutex_lock(&fc.lock);
        *cookie_slot(200) = *cookie_slot(201) = *cookie_slot(2000) = 0;
        pthread_mutex_unlock(&fc.lock);
        plan3 = pass(&w, &r3);
        ASSERT_NE(cookie_of(200), 0);
        ASSERT_EQ(cookie_of(201), cookie_of(200));
        ASSERT_EQ(cookie_of(2000), cookie_of(200));
        ASSERT_LT(fc.given[2000], fc.given[200]);
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        plan_free(plan2);
        plan_free(plan3);
        world_free(&w);
}

static void write_cpu_stat(const char *group, uint64_t usage, uint64_t idle) {
        char rel[256], text[256];

        snprintf(rel, sizeof(rel), MOUNT "/topod.slice/%s/cpu.stat", group);
        snprintf(text, sizeof(text), "usage_usec %" PRIu64 "\nuser_usec 0\nsystem_usec 0\n"
                 "core_sched.force_idle_usec %" PRIu64 "\nnr_periods 0\n", usage, idle);
        fake_write(root_dir, rel, text);
}

/* [when] forced_idle: the policy's groups' cpu.stat summed against the
 * last reading after each pass; past the band the policy leaves force, its
 * groups go, nothing is kept idle, and once that has held the dwell (none
 * here) it comes back. Without schedstats the band reads what the kernel
 * counts (nothing) and check says so. */
static void test_forced_idle_band(void) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r1 = NULL, *r2 = NULL, *r3 = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        size_t svc = SIZE_MAX;
        Plan *plan1, *plan2, *plan3;
        World w;

        world_new(&w);
        fake_write(root_dir, "proc/sys/kernel/sched_schedstats", "1\n");
        fake_write(root_dir, "etc/topod/policies.d/20-svc.ini",
                   "[policy]\nname = svc\npriority = 100\n[when]\nforced_idle = 0-10%\n[match]\ncomm = svc*\n"
                   "[place]\ncpus = node\nspread = spread\ncookie = group\n");
        ASSERT_OK(pipeline_reload(w.p, d));
        w.p->decide.config->load_dwell_usec = 0;
        w.p->decide.config->load_hysteresis = 0;
        for (size_t i = 0; i < w.p->decide.policies->n; i++)
                if (streq(w.p->decide.policies->policies[i]->name, "svc"))
                        svc = i;
        ASSERT_LT(svc, w.p->decide.policies->n);
        ASSERT_TRUE(w.p->decide.in_force[svc]); /* no figure yet: holds */

        plan1 = pass(&w, &r1);
        ASSERT_STREQ(process_cgroup(200), "/topod.slice/svc-node0");
        write_cpu_stat("svc-node0", 1000000, 0);
        write_cpu_stat("svc-node1", 1000000, 0);
        ASSERT_EQ(pipeline_measure_forced_idle(w.p, NULL), 0); /* no plan: no groups, 0% */
        ASSERT_TRUE(w.p->decide.in_force[svc]);
        ASSERT_EQ(w.p->decide.idle[svc].share_permille, 0u);
        /* the base, then 2 s used and 0.5 s kept idle: 25% */
        ASSERT_EQ(pipeline_measure_forced_idle(w.p, plan1), 0);
        ASSERT_EQ(w.p->decide.idle[svc].groups, 2u);
        write_cpu_stat("svc-node0", 2000000, 200000);
        write_cpu_stat("svc-node1", 2000000, 300000);
        ASSERT_EQ(pipeline_measure_forced_idle(w.p, plan1), 1);
        ASSERT_EQ(w.p->decide.idle[svc].share_permille, 250u);
        /* each group's reading kept, for the metrics */
        ASSERT_EQ(w.p->measure.n_idle_groups, 2u);
        for (size_t i = 0; i < 2; i++) {
                const ForcedIdleGroup *g = &w.p->measure.idle_groups[i];

                ASSERT_STREQ(g->policy, "svc");
                ASSERT_EQ(g->stat.usage_usec, 2000000u);
                ASSERT_EQ(g->stat.force_idle_usec, streq(g->path, "svc-node0") ? 200000u : 300000u);
                ASSERT_TRUE(streq(g->path, "svc-node0") || streq(g->path, "svc-node1"));
        }
        ASSERT_FALSE(w.p->decide.in_force[svc]);
        ASSERT_FALSE(pipeline_forced_idle_holds(w.p, svc));

        /* Out of force: the next pass lets its processes go. */
        plan2 = pass(&w, &r2);
        ASSERT_STREQ(process_cgroup(200), "/user.slice");
        ASSERT_EQ(pipeline_measure_forced_idle(w.p, plan2), 1); /* no groups: 0%, and back */
        ASSERT_EQ(w.p->decide.idle[svc].groups, 0u);
        ASSERT_EQ(w.p->measure.n_idle_groups, 0u);
        ASSERT_TRUE(w.p->decide.in_force[svc]);
        plan3 = pass(&w, &r3);
        ASSERT_STREQ(process_cgroup(200), "/topod.slice/svc-node0");

        /* check: without schedstats the band cannot be measured */
        diag_free(TAKE_PTR(d));
        d = diag_new();
        w.p->observe.caps->schedstats.available = false;
        ASSERT_OK(check_policy_set(w.p->decide.policies, NULL, w.p->observe.caps, 0, d));
        ASSERT_TRUE(diag_has_line(d, w.p->decide.policies->policies[svc]->file, 5)); /* the forced_idle line */
        ASSERT_OK(pipeline_use_plan(w.p, NULL));
        plan_free(plan1);
        plan_free(plan2);
        plan_free(plan3);
        world_free(&w);
}

int main(void) {
        if (access(GUEST, F_OK) < 0)
                test_skip("%s not found: run in the source tree", GUEST);
        RUN(test_journal_log);
        RUN(test_no_plan);
        RUN(test_exited_main_thread);
        RUN(test_load_bands);
        RUN(test_startup_judged_as_reload);
        RUN(test_topology_refresh);
        RUN(test_place_then_pass);
        RUN(test_pass_lets_fast_path_in);
        RUN(test_group_grows_keeps_cookie);
        RUN(test_forced_idle_band);
        RUN(test_storm_pass_defers);
        RUN(test_storm_pass_defers_exited);
        RUN(test_storm_keeps_cookie_source);
        RUN(test_waiting_for_group);
        RUN(test_waiting_read_by_scan);
        RUN(test_prune_gone_cookies);
        RUN(test_prune_dead_unpinned);
        RUN(test_dead_hook);
        RUN(test_restore_cookies);
        RUN(test_restore_cookies_smt_off);
        RUN(test_cookie_groups_apart);
        RUN(test_pidfs_cookie_names);
        RUN(test_forks_wait_a_read);
        RUN(test_urgent_rest_after);
        RUN(test_placed_latency);
        RUN(test_changed_by_events);
        RUN(test_cookie_uses_move_pin);
        RUN(test_cookie_checks_move);
        RUN(test_fds_closed_together);
        RUN(test_measure);
        RUN(test_pidfs_identities);
        RUN(test_self_left_alone);
        RUN(test_timing);
        return 0;
}
