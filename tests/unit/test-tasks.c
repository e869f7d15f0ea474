/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The task scanner against fake /proc trees. */

#include "fake-root.h"
#include <sys/resource.h>

#include "observe/tasks.h"

static void fake_thread(const char *root, int tgid, int tid, const char *comm, unsigned flags, const char *sched,
                        const char *arch) {
        char rel[256], text[1024];

        snprintf(text, sizeof(text),
                 "%d (%s) S 1 %d %d 0 -1 %u 0 0 0 0 10 5 0 0 20 0 1 0 %d 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2 0 0\n",
                 tid, comm, tgid, tgid, flags, 1000 + tid);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", tgid, tid);
        fake_write(root, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/status", tgid, tid);
        snprintf(text, sizeof(text),
                 "Name:\t%s\nTgid:\t%d\nPid:\t%d\nUid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t100\n"
                 "voluntary_ctxt_switches:\t%d\nnonvoluntary_ctxt_switches:\t2\n",
                 comm, tgid, tid, tid);
        fake_write(root, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/schedstat", tgid, tid);
        fake_write(root, rel, sched);
        if (arch) {
                snprintf(rel, sizeof(rel), "proc/%d/task/%d/arch_status", tgid, tid);
                fake_write(root, rel, arch);
        }
        if (tid == tgid) { /* the leader's stat is also the process's */
                snprintf(rel, sizeof(rel), "proc/%d/stat", tgid);
                snprintf(text, sizeof(text),
                         "%d (%s) S 1 %d %d 0 -1 %u 0 0 0 0 10 5 0 0 20 0 1 0 %d 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2 0 0\n",
                         tid, comm, tgid, tgid, flags, 1000 + tid);
                fake_write(root, rel, text);
        }
}

static char *make_tree(void) {
        char *d = fake_root_new();
        char path[PATH_MAX];

        /* A process with three threads, one with an odd comm. */
        fake_thread(d, 100, 100, "server", 0, "1000 0 1\n", "AVX512_elapsed_ms:\t-1\n");
        fake_thread(d, 100, 101, "io worker", 0, "2000 0 2\n", "AVX512_elapsed_ms:\t5\n");
        fake_thread(d, 100, 102, "a) (b", 0, "3000 0 3\n", NULL); /* no arch_status: not x86 */
        fake_write_n(d, "proc/100/cmdline", "server\0--port\0" "80\0", 17);
        fake_write(d, "proc/100/cgroup", "0::/system.slice/server.service\n");
        snprintf(path, sizeof(path), "%s/proc/100/exe", d);
        ASSERT_EQ(symlink("/usr/bin/server", path), 0);

        /* A kernel thread. */
        fake_thread(d, 2, 2, "kthreadd", PROCFS_PF_KTHREAD, "0 0 0\n", NULL);
        fake_write(d, "proc/2/cmdline", "");

        /* A process whose thread vanished: listed, but its files are gone. */
        fake_thread(d, 300, 300, "dying", 0, "1 0 1\n", NULL);
        fake_mkdir(d, "proc/300/task/301");
        fake_write_n(d, "proc/300/cmdline", "dying\0", 6);

        /* A process that vanished entirely: only an empty directory left. */
        fake_mkdir(d, "proc/400");
        /* Not processes. */
        fake_write(d, "proc/meminfo", "MemTotal: 1 kB\n");
        fake_mkdir(d, "proc/sys");
        return d;
}

/* The thread ran: its schedstat rewritten in place, so that the scanner's
 * held fd (the same inode) sees it. */
static void ran(const char *dir, int tgid, int tid, const char *schedstat) {
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "%s/proc/%d/task/%d/schedstat", dir, tgid, tid);
        f = fopen(path, "r+e");
        ASSERT_NOT_NULL(f);
        fputs(schedstat, f);
        fclose(f);
}

static TaskSnapshot *scan(TaskScanner *s, bool full) {
        TaskSnapshot *snap = NULL;

        ASSERT_OK(task_scanner_scan(s, full, &snap));
        return snap;
}

static void test_scan(void) {
        char *d = make_tree();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(task_snapshot_freep) TaskSnapshot *s = NULL;
        const TaskFacts *t;

        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(tasks_scan(r, NULL, &s));
        ASSERT_EQ(s->n_tasks, 5); /* 100, 101, 102, 2, 300 */
        ASSERT_EQ(s->vanished, 2);  /* 301 and process 400 */
        ASSERT_EQ(s->tasks[0].tid, 2); /* sorted */

        t = task_snapshot_find(s, 100);
        ASSERT_NOT_NULL(t);
        ASSERT_STREQ(t->comm, "server");
        ASSERT_EQ(t->tgid, 100);
        ASSERT_STREQ(t->process->exe, "/usr/bin/server");
        ASSERT_STREQ(t->process->cmdline, "server --port 80");
        ASSERT_STREQ(t->process->cgroup, "/system.slice/server.service");
        ASSERT_EQ(task_snapshot_count_threads(s, 100), 3);
        ASSERT_EQ(t->avx, PROC_AVX_NEVER);
        ASSERT_TRUE(t->has_uid);
        ASSERT_EQ(t->uid, 1000);
        ASSERT_EQ(t->voluntary_ctxt, 100);
        ASSERT_EQ(t->sched.run_ns, 1000);
        ASSERT_EQ(t->start_time, 1100);
        ASSERT_EQ(t->cookie_error, -ENODATA);

        t = task_snapshot_find(s, 101);
        ASSERT_STREQ(t->comm, "io worker");
        ASSERT_EQ(t->avx, PROC_AVX_ELAPSED);
        ASSERT_EQ(t->avx_elapsed_ms, 5);
        ASSERT_PTR_EQ(t->process, task_snapshot_find(s, 100)->process);

        t = task_snapshot_find(s, 102);
        ASSERT_STREQ(t->comm, "a) (b");
        ASSERT_EQ(t->avx, PROC_AVX_NO_LINE);

        t = task_snapshot_find(s, 2);
        ASSERT_TRUE(t->kernel_thread);
        ASSERT_NULL(t->process->exe);
        ASSERT_STREQ(t->process->cmdline, "");
        ASSERT_FALSE(t->has_uid); /* kernel threads: stat only */

        ASSERT_NULL(task_snapshot_find(s, 301));
        ASSERT_NULL(task_snapshot_find(s, 400));
        fake_root_remove(d);
}

/* The scanner rereads only threads whose schedstat moved. */
static void test_incremental(void) {
        char *d = make_tree();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(task_scanner_freep) TaskScanner *sc = NULL;
        TaskScanStats st;
        TaskSnapshot *s;
        const TaskFacts *t;

        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(task_scanner_new(r, NULL, &sc));
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_EQ(st.threads_reread, 5);
        ASSERT_EQ(st.threads_reused, 0);
        ASSERT_EQ(st.held_fds, 5);
        task_snapshot_free(s);

        /* Nothing ran: everything reused, even what changed on disk
         * without schedstat moving (the full scan catches that). */
        fake_write(d, "proc/100/task/101/status", "Uid:\t5\t5\t5\t5\n");
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_EQ(st.threads_reread, 0);
        ASSERT_EQ(st.threads_reused, 5);
        ASSERT_EQ(task_snapshot_find(s, 101)->uid, 1000);
        ASSERT_STREQ(task_snapshot_find(s, 101)->comm, "io worker");
        ASSERT_STREQ(task_snapshot_find(s, 101)->process->cmdline, "server --port 80");
        task_snapshot_free(s);

        /* 101 ran: only it is reread. The held fd sees the new content:
         * rewrite in place so the same inode changes. */
        ran(d, 100, 101, "9000 0 9\n");
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_EQ(st.threads_reread, 1);
        ASSERT_EQ(st.threads_reused, 4);
        t = task_snapshot_find(s, 101);
        ASSERT_EQ(t->sched.run_ns, 9000);
        ASSERT_EQ(t->uid, 5);
        task_snapshot_free(s);

        /* A full scan rereads everyone. */
        s = scan(sc, true);
        task_scanner_stats(sc, &st);
        ASSERT_EQ(st.threads_reread, 5);
        task_snapshot_free(s);

        /* A thread that exits is forgotten; its held fd is closed. */
        {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/proc/100/task/102", d);
                fake_root_remove(strdup(path));
        }
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_EQ(s->n_tasks, 4);
        ASSERT_EQ(st.held_fds, 4);
        ASSERT_EQ(task_snapshot_count_threads(s, 100), 2);
        task_snapshot_free(s);
        fake_root_remove(d);
}

/* Trusting events, the scanner lists only the processes marked. */
static void test_by_events(void) {
        char *d = make_tree();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(task_scanner_freep) TaskScanner *sc = NULL;
        TaskScanStats st;
        TaskSnapshot *s;

        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(task_scanner_new(r, NULL, &sc));
        task_scanner_trust_events(sc, true);
        s = scan(sc, true);
        ASSERT_EQ(s->n_tasks, 5);
        task_snapshot_free(s);

        /* A new process appears without an event: not seen. */
        fake_thread(d, 500, 500, "newcomer", 0, "5 0 1\n", NULL);
        fake_write_n(d, "proc/500/cmdline", "newcomer\0", 9);
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_TRUE(st.by_events);
        ASSERT_EQ(s->n_tasks, 5);
        ASSERT_EQ(st.threads_reused, 5);
        ASSERT_STREQ(task_snapshot_find(s, 100)->process->cmdline, "server --port 80");
        task_snapshot_free(s);

        /* Its FORK marks it: seen. */
        ASSERT_OK(task_scanner_mark(sc, 500));
        ASSERT_OK(task_scanner_mark(sc, 500));
        s = scan(sc, false);
        ASSERT_EQ(s->n_tasks, 6);
        ASSERT_STREQ(task_snapshot_find(s, 500)->comm, "newcomer");
        task_snapshot_free(s);

        /* A new thread in a marked process; the marks were used up. */
        fake_thread(d, 100, 103, "late", 0, "7 0 1\n", NULL);
        s = scan(sc, false);
        ASSERT_EQ(s->n_tasks, 6);
        task_snapshot_free(s);
        ASSERT_OK(task_scanner_mark(sc, 100));
        s = scan(sc, false);
        ASSERT_EQ(s->n_tasks, 7);
        ASSERT_EQ(task_snapshot_count_threads(s, 100), 4);
        task_snapshot_free(s);

        /* Without trust, /proc is listed again. */
        task_scanner_trust_events(sc, false);
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_FALSE(st.by_events);
        ASSERT_EQ(s->n_tasks, 7);
        task_snapshot_free(s);
        fake_root_remove(d);
}

/* A scan that yields: what the events tell meanwhile counts for the next
 * scan (the mark of a process born, the exec of one the scan already
 * read), though this one may have read before it. */
typedef struct YieldState {
        TaskScanner *sc;
        const char *dir;
        unsigned calls, act_at;
} YieldState;

static void on_yield(void *userdata) {
        YieldState *y = userdata;

        if (++y->calls != y->act_at)
                return;
        /* 600 is born, 100 execs (same schedstat: only the invalidation
         * tells it changed). */
        fake_thread(y->dir, 600, 600, "born", 0, "6 0 1\n", NULL);
        fake_write_n(y->dir, "proc/600/cmdline", "born\0", 5);
        ASSERT_OK(task_scanner_mark(y->sc, 600));
        fake_thread(y->dir, 100, 100, "exec'd", 0, "1000 0 1\n", NULL);
        task_scanner_invalidate(y->sc, 100);
        ASSERT_OK(task_scanner_mark(y->sc, 100));
}

static void test_yield(void) {
        char *d = make_tree();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(task_scanner_freep) TaskScanner *sc = NULL;
        YieldState y = { .dir = d };
        YieldHooks hooks = { .yield = on_yield, .userdata = &y };
        TaskScanStats st;
        TaskSnapshot *s;

        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(task_scanner_new(r, NULL, &sc));
        y.sc = sc;
        task_scanner_trust_events(sc, true);
        s = scan(sc, true);
        ASSERT_EQ(s->n_tasks, 5);
        task_snapshot_free(s);

        /* By events: 2 and 100 quiet, 300 marked. The third yield comes
         * before 300, after 100 was taken as it was. */
        task_scanner_set_yield(sc, &hooks);
        ASSERT_OK(task_scanner_mark(sc, 300));
        y.act_at = 3;
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_TRUE(st.by_events);
        ASSERT_EQ(y.calls, 3);
        ASSERT_STREQ(task_snapshot_find(s, 100)->comm, "server");
        ASSERT_NULL(task_snapshot_find(s, 600));
        task_snapshot_free(s);

        /* The next scan has both. */
        task_scanner_set_yield(sc, NULL);
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_TRUE(st.by_events);
        ASSERT_STREQ(task_snapshot_find(s, 100)->comm, "exec'd");
        ASSERT_NOT_NULL(task_snapshot_find(s, 600));
        ASSERT_STREQ(task_snapshot_find(s, 600)->comm, "born");
        task_snapshot_free(s);

        /* Listing /proc (no trust), it yields before each process. */
        task_scanner_trust_events(sc, false);
        task_scanner_set_yield(sc, &hooks);
        y.calls = y.act_at = 0;
        task_snapshot_free(scan(sc, false));
        ASSERT_EQ(y.calls, 5); /* 2, 100, 300, 400, 600 */
        fake_root_remove(d);
}

/* A scan that defers: the new processes named are not read and stay marked
 * (the next scan has them); one the last snapshot had is read however
 * named. By events and listing /proc alike. */
static void test_defer(void) {
        char *d = make_tree();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(task_scanner_freep) TaskScanner *sc = NULL;
        TaskScanStats st;
        TaskSnapshot *s = NULL;

        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(task_scanner_new(r, NULL, &sc));
        for (int by_events = 1; by_events >= 0; by_events--) {
                pid_t defer[] = { 100, 600 + by_events, 700 + by_events };
                pid_t born = 600 + by_events, other = 700 + by_events;

                task_scanner_trust_events(sc, true);
                task_snapshot_free(scan(sc, true));
                fake_thread(d, born, born, "born", 0, "6 0 1\n", NULL);
                fake_write_n(d, by_events ? "proc/601/cmdline" : "proc/600/cmdline", "born\0", 5);
                fake_thread(d, other, other, "other", 0, "7 0 1\n", NULL);
                ASSERT_OK(task_scanner_mark(sc, born));
                ASSERT_OK(task_scanner_mark(sc, other));
                ASSERT_OK(task_scanner_mark(sc, 100));
                task_scanner_trust_events(sc, by_events);
                ASSERT_OK(task_scanner_scan_deferring(sc, false, defer, ELEMENTSOF(defer), &s));
                task_scanner_stats(sc, &st);
                ASSERT_EQ(st.by_events, (bool) by_events);
                ASSERT_EQ(st.deferred, 2);
                ASSERT_NULL(task_snapshot_find(s, born));
                ASSERT_NULL(task_snapshot_find(s, other));
                ASSERT_NOT_NULL(task_snapshot_find(s, 100)); /* known: read */
                ASSERT_NOT_NULL(task_snapshot_find(s, 2));
                task_snapshot_free(s);

                /* Still marked: the next scan, by events, reads them. */
                task_scanner_trust_events(sc, true);
                s = scan(sc, false);
                task_scanner_stats(sc, &st);
                ASSERT_TRUE(st.by_events);
                ASSERT_EQ(st.deferred, 0);
                {
                        const TaskFacts *b = task_snapshot_find(s, born), *o = task_snapshot_find(s, other);

                        ASSERT_NOT_NULL(b);
                        ASSERT_NOT_NULL(o);
                        ASSERT_STREQ(b->comm, "born");
                        ASSERT_STREQ(o->comm, "other");
                }
                task_snapshot_free(s);
        }
        fake_root_remove(d);
}

/* Many touched processes, most of them gone (an exec storm's): /proc is
 * listed once and the gone are neither read nor left to the next scan;
 * those alive are read, or left (deferred). Fewer: no listing. */
static void test_gone_unread(void) {
        char *d = make_tree();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(task_scanner_freep) TaskScanner *sc = NULL;
        pid_t defer[] = { 1002, 1003, 1010 };
        TaskScanStats st;
        TaskSnapshot *s = NULL;

        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(task_scanner_new(r, NULL, &sc));
        task_scanner_trust_events(sc, true);
        task_snapshot_free(scan(sc, true));
        for (pid_t pid = 1000; pid < 1004; pid++)
                fake_thread(d, pid, pid, "alive", 0, "6 0 1\n", NULL);
        for (pid_t pid = 1000; pid < 1040; pid++)
                ASSERT_OK(task_scanner_mark(sc, pid));
        ASSERT_OK(task_scanner_mark(sc, 100));
        ASSERT_OK(task_scanner_scan_deferring(sc, false, defer, ELEMENTSOF(defer), &s));
        task_scanner_stats(sc, &st);
        ASSERT_TRUE(st.by_events);
        ASSERT_EQ(st.gone, 36);   /* 1004-1039 */
        ASSERT_EQ(st.deferred, 2); /* 1002, 1003; 1010 is gone */
        ASSERT_NOT_NULL(task_snapshot_find(s, 1000));
        ASSERT_NOT_NULL(task_snapshot_find(s, 1001));
        ASSERT_NULL(task_snapshot_find(s, 1002));
        ASSERT_NOT_NULL(task_snapshot_find(s, 100));
        task_snapshot_free(s);

        /* The next: only the deferred two were marked again. */
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_EQ(st.gone, 0);
        ASSERT_EQ(st.deferred, 0);
        ASSERT_STREQ(task_snapshot_find(s, 1002)->comm, "alive");
        ASSERT_STREQ(task_snapshot_find(s, 1003)->comm, "alive");
        task_snapshot_free(s);

        /* A few gone: looked at one by one, as ever. */
        ASSERT_OK(task_scanner_mark(sc, 1038));
        ASSERT_OK(task_scanner_mark(sc, 1039));
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_EQ(st.gone, 0);
        ASSERT_NULL(task_snapshot_find(s, 1039));
        task_snapshot_free(s);
        fake_root_remove(d);
}

/* Processes the events tell died whole are neither read nor kept, by a
 * scan by events or a listing alike, though /proc lists them (zombies not
 * reaped); one whose main thread alone exited is read, and a number taken
 * again is read as the new process. */
static void test_dead_unread(void) {
        char *d = make_tree();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(task_scanner_freep) TaskScanner *sc = NULL;
        Lives *l = NULL;
        TaskScanStats st;
        TaskSnapshot *s = NULL;

        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(task_scanner_new(r, NULL, &sc));
        ASSERT_OK(lives_new(&l));
        task_scanner_set_lives(sc, l);
        task_scanner_trust_events(sc, true);
        /* Born since topod watched; 2000 was in the last snapshot. */
        for (pid_t pid = 2000; pid < 2040; pid++) {
                fake_thread(d, pid, pid, "short", 0, "6 0 1\n", NULL);
                lives_fork(l, pid, pid);
        }
        fake_thread(d, 2100, 2100, "leader", 0, "6 0 1\n", NULL);
        fake_thread(d, 2100, 2101, "worker", 0, "6 0 1\n", NULL);
        lives_fork(l, 2100, 2100);
        lives_fork(l, 2101, 2100);
        s = scan(sc, true);
        ASSERT_NOT_NULL(task_snapshot_find(s, 2000));
        task_snapshot_free(s);

        /* All exit but the worker; their files stay (not reaped). */
        for (pid_t pid = 2000; pid < 2040; pid++) {
                lives_exit(l, pid, pid);
                ASSERT_OK(task_scanner_mark(sc, pid));
        }
        lives_exit(l, 2100, 2100);
        ASSERT_OK(task_scanner_mark(sc, 2100));
        /* 2039's number taken again, by a new process. */
        lives_fork(l, 2039, 2039);
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_TRUE(st.by_events);
        ASSERT_EQ(st.dead, 39);
        ASSERT_EQ(st.gone, 0); /* two left: no listing */
        for (pid_t pid = 2000; pid < 2039; pid++)
                ASSERT_NULL(task_snapshot_find(s, pid));
        ASSERT_NOT_NULL(task_snapshot_find(s, 2039));
        ASSERT_EQ(task_snapshot_count_threads(s, 2100), 2);
        ASSERT_NOT_NULL(task_snapshot_find(s, 100));
        task_snapshot_free(s);

        /* Listing /proc: the same. */
        s = scan(sc, true);
        task_scanner_stats(sc, &st);
        ASSERT_FALSE(st.by_events);
        ASSERT_EQ(st.dead, 39);
        ASSERT_NULL(task_snapshot_find(s, 2000));
        ASSERT_NOT_NULL(task_snapshot_find(s, 2039));
        task_snapshot_free(s);

        /* Events lost: nothing is known dead, all are read. */
        lives_forget(l);
        s = scan(sc, true);
        task_scanner_stats(sc, &st);
        ASSERT_EQ(st.dead, 0);
        ASSERT_NOT_NULL(task_snapshot_find(s, 2000));
        task_snapshot_free(s);
        lives_free(l);
        fake_root_remove(d);
}

/* An exited process its parent has not reaped yet is not read; one whose
 * leader exited before its other threads is. */
static void zombie(const char *root, int tgid, unsigned threads) {
        char rel[64], text[256];

        snprintf(text, sizeof(text),
                 "%d (z) Z 1 %d %d 0 -1 0 0 0 0 0 10 5 0 0 20 0 %u 0 %d 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2 0 0\n", tgid,
                 tgid, tgid, threads, 1000 + tgid);
        snprintf(rel, sizeof(rel), "proc/%d/stat", tgid);
        fake_write(root, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", tgid, tgid);
        fake_write(root, rel, text);
}

static void test_zombies(void) {
        char *d = make_tree();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(task_scanner_freep) TaskScanner *sc = NULL;
        const ProcessFacts *p;
        char path[PATH_MAX];
        TaskSnapshot *s;

        fake_thread(d, 500, 500, "gone", 0, "1 0 1\n", NULL);
        fake_write_n(d, "proc/500/cmdline", "", 0);
        zombie(d, 500, 1);
        fake_thread(d, 510, 510, "leader", 0, "1 0 1\n", NULL);
        fake_thread(d, 510, 511, "worker", 0, "2 0 1\n", NULL);
        fake_write_n(d, "proc/510/cmdline", "", 0);
        fake_write(d, "proc/510/cgroup", "0::/where/it/exited\n");
        zombie(d, 510, 2);
        /* Its files as a live thread has them (the exited one has no
         * memory map: no exe, an empty cmdline). */
        fake_write_n(d, "proc/510/task/511/cmdline", "worker\0-v\0", 10);
        fake_write(d, "proc/510/task/511/cgroup", "0::/where/it/is\n");
        snprintf(path, sizeof(path), "%s/proc/510/task/511/exe", d);
        ASSERT_EQ(symlink("/usr/bin/worker", path), 0);
        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(task_scanner_new(r, NULL, &sc));
        s = scan(sc, true);
        ASSERT_NULL(task_snapshot_find(s, 500));
        ASSERT_EQ(task_snapshot_count_threads(s, 510), 2);
        ASSERT_STREQ(task_snapshot_find(s, 511)->comm, "worker");
        p = task_snapshot_find(s, 511)->process;
        ASSERT_STREQ(p->exe, "/usr/bin/worker");
        ASSERT_STREQ(p->cmdline, "worker -v");
        ASSERT_STREQ(p->cgroup, "/where/it/is");
        task_snapshot_free(s);
        fake_root_remove(d);
}

/* With lazy kernel threads (the daemon's), a kernel thread is read by full
 * scans only: it ran (its schedstat moved), yet the next scans, listing or
 * by events, take it as it was. Without (topoctl classify), it is read. */
static void test_kernel_threads(void) {
        char *d = make_tree();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(task_scanner_freep) TaskScanner *sc = NULL;
        TaskScanStats st;
        TaskSnapshot *s;

        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(task_scanner_new(r, NULL, &sc));
        task_scanner_set_lazy_kernel_threads(sc, true);
        s = scan(sc, true);
        ASSERT_TRUE(task_snapshot_find(s, 2)->kernel_thread);
        ASSERT_EQ(task_snapshot_find(s, 2)->sched.run_ns, 0);
        task_snapshot_free(s);
        ran(d, 2, 2, "5000 0 5\n");
        for (int by_events = 0; by_events < 2; by_events++) {
                task_scanner_trust_events(sc, by_events);
                s = scan(sc, false);
                task_scanner_stats(sc, &st);
                ASSERT_EQ(st.by_events, (bool) by_events);
                ASSERT_EQ(st.threads_reread, 0);
                ASSERT_EQ(task_snapshot_find(s, 2)->sched.run_ns, 0);
                task_snapshot_free(s);
        }
        s = scan(sc, true);
        task_scanner_stats(sc, &st);
        ASSERT_EQ(task_snapshot_find(s, 2)->sched.run_ns, 5000);
        task_snapshot_free(s);

        /* Not lazy: read when it ran. */
        task_scanner_set_lazy_kernel_threads(sc, false);
        ran(d, 2, 2, "7000 0 7\n");
        s = scan(sc, false);
        task_scanner_stats(sc, &st);
        ASSERT_EQ(st.threads_reread, 1);
        ASSERT_EQ(task_snapshot_find(s, 2)->sched.run_ns, 7000);
        task_snapshot_free(s);
        fake_root_remove(d);
}

/* Past the descriptor budget, threads are still all seen: their schedstat
 * is read and closed instead of held. */
static void test_fd_budget(void) {
        char *d = fake_root_new();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(task_scanner_freep) TaskScanner *sc = NULL;
        struct rlimit old, low;
        TaskScanStats st;
        TaskSnapshot *s;

        for (int p = 0; p < 60; p++)
                fake_thread(d, 1000 + p, 1000 + p, "many", 0, "1 0 1\n", NULL);
        ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
        low = old;
        low.rlim_cur = 80; /* budget: half, 40 */
        ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(task_scanner_new(r, NULL, &sc));
        for (int round = 0; round < 3; round++) {
                s = scan(sc, round == 0);
                task_scanner_stats(sc, &st);
                ASSERT_EQ(s->n_tasks, 60);
                ASSERT_EQ(s->unreadable, 0);
                ASSERT_EQ(s->vanished, 0);
                ASSERT_EQ(st.held_fds, 40);
                ASSERT_TRUE(st.fd_limit_hit);
                task_snapshot_free(s);
        }
        ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
        fake_root_remove(d);
}

/* A scan of the real /proc finds ourselves, with a parent comm. */
static void test_live(void) {
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(task_snapshot_freep) TaskSnapshot *s = NULL;
        const TaskFacts *t;

        ASSERT_OK(root_open("/", &r));
        ASSERT_OK(tasks_scan(r, NULL, &s));
        t = task_snapshot_find(s, getpid());
        ASSERT_NOT_NULL(t);
        ASSERT_STREQ(t->comm, "test-tasks");
        ASSERT_NOT_NULL(t->process->exe);
        ASSERT_STR_CONTAINS(t->process->exe, "test-tasks");
        ASSERT_TRUE(t->has_schedstat);
        ASSERT_NOT_NULL(t->parent_comm);
}

int main(void) {
        RUN(test_scan);
        RUN(test_incremental);
        RUN(test_by_events);
        RUN(test_gone_unread);
        RUN(test_dead_unread);
        RUN(test_yield);
        RUN(test_defer);
        RUN(test_zombies);
        RUN(test_kernel_threads);
        RUN(test_fd_budget);
        RUN(test_live);
        return 0;
}
