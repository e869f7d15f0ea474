/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cookie applier against a fake kernel: the order of CREATE / SHARE_FROM
 * / SHARE_TO, the sorting of errors, vanished and reused tids, the
 * interlocks and the keep-alive cookie. The fake keeps one cookie per tid
 * (its own worker and blank threads included, told apart by gettid()), the
 * way kernel/sched/core_sched.c does for PIDTYPE_PID. */

#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "apply/cookie.h"
#include "observe/kernelcaps.h"
#include "base/util.h"
#include "fake-root.h"

#define FAKE_MAX 64

typedef struct FakeTask {
        pid_t tid;
        pid_t tgid;     /* its process; 0: its own (a main thread) */
        uint64_t cookie;
        bool alive;
        bool is_self;   /* one of the applier's threads */
        int error;      /* returned by any op aimed at it (e.g. -EPERM) */
        int create_error;
        int share_from_error;
        bool die_on_op; /* exits right after an op aimed at it succeeds */
} FakeTask;

typedef struct Fake {
        char *root_dir;
        FakeTask tasks[FAKE_MAX];
        size_t n;
        uint64_t next_cookie;
        int machine_error; /* every prctl: -ENODEV / -EINVAL */
        bool no_pidfd;     /* pidfd_open gives EINVAL: the proc directory is used */
        bool self_cookie_poison;
        bool any_cookie;   /* some live thread has a cookie */
        unsigned toggles_off; /* times the last cookie went away */
        pid_t create_caller; /* gettid() of the last create's caller */
        unsigned alive_checks; /* pidfd_alive() calls */
        char log[4096];
} Fake;

static FakeTask *fake_find(Fake *f, pid_t tid) {
        for (size_t i = 0; i < f->n; i++)
                if (f->tasks[i].tid == tid)
                        return &f->tasks[i];
        return NULL;
}

static FakeTask *fake_self(Fake *f) {
        pid_t me = (pid_t) syscall(SYS_gettid);
        FakeTask *t = fake_find(f, me);

        if (!t) {
                ASSERT_LT(f->n, FAKE_MAX);
                t = &f->tasks[f->n++];
                *t = (FakeTask) { .tid = me, .alive = true, .is_self = true };
        }
        return t;
}

static void fake_log(Fake *f, const char *op, pid_t tid) {
        char item[64];

        if (tid == 0)
                snprintf(item, sizeof(item), "%s%s:self", f->log[0] ? " " : "", op);
        else
                snprintf(item, sizeof(item), "%s%s:%d", f->log[0] ? " " : "", op, (int) tid);
        ASSERT_LT(strlen(f->log) + strlen(item), sizeof(f->log));
        strcat(f->log, item);
}

/* The kernel frees a cookie with its last holder; core scheduling goes off
 * with the last cookie. */
static void fake_account(Fake *f) {
        bool any = false;

        for (size_t i = 0; i < f->n; i++)
                if (f->tasks[i].alive && f->tasks[i].cookie != 0)
                        any = true;
        if (f->any_cookie && !any)
                f->toggles_off++;
        f->any_cookie = any;
}

static void fake_kill(Fake *f, pid_t tid) {
        FakeTask *t = fake_find(f, tid);

        ASSERT_NOT_NULL(t);
        t->alive = false;
        fake_account(f);
}

/* Look up the target of an op: the caller's own entry for tid 0. A thread
 * of this test program the fake has not met yet (the applier's blank thread
 * before its first call) has cookie 0. */
static int fake_target(Fake *f, pid_t tid, FakeTask **ret) {
        FakeTask *t = tid == 0 ? fake_self(f) : fake_find(f, tid);
        char path[64];

        snprintf(path, sizeof(path), "/proc/self/task/%d", (int) tid);
        if (!t && tid > 0 && access(path, F_OK) == 0) {
                ASSERT_LT(f->n, FAKE_MAX);
                t = &f->tasks[f->n++];
                *t = (FakeTask) { .tid = tid, .alive = true, .is_self = true };
        }

        if (f->machine_error)
                return f->machine_error;
        if (!t || !t->alive)
                return -ESRCH;
        if (t->error)
                return t->error;
        *ret = t;
        return 0;
}

static void fake_after_op(Fake *f, FakeTask *t) {
        if (t->die_on_op) {
                char path[PATH_MAX];

                /* Gone: its /proc directory empties (an open one stays open). */
                t->alive = false;
                snprintf(path, sizeof(path), "%s/proc/%d/task/%d/stat", f->root_dir, (int) t->tid, (int) t->tid);
                (void) unlink(path);
        }
        fake_account(f);
}

static int fake_create(pid_t tid, void *userdata) {
        Fake *f = userdata;
        FakeTask *t;
        int k;

        fake_log(f, "create", tid);
        f->create_caller = (pid_t) syscall(SYS_gettid);
        if ((k = fake_target(f, tid, &t)) < 0)
                return k;
        if (t->create_error)
                return t->create_error;
        t->cookie = ++f->next_cookie;
        fake_after_op(f, t);
        return 0;
}

static int fake_share_from(pid_t tid, void *userdata) {
        Fake *f = userdata;
        FakeTask *t;
        int k;

        fake_log(f, "share_from", tid);
        if ((k = fake_target(f, tid, &t)) < 0)
                return k;
        if (t->share_from_error)
                return t->share_from_error;
        fake_self(f)->cookie = t->cookie;
        fake_after_op(f, t);
        return 0;
}

static int fake_share_to(pid_t tid, void *userdata) {
        Fake *f = userdata;
        FakeTask *t;
        int k;

        fake_log(f, "share_to", tid);
        if ((k = fake_target(f, tid, &t)) < 0)
                return k;
        t->cookie = fake_self(f)->cookie;
        fake_after_op(f, t);
        return 0;
}

/* PIDTYPE_TGID: every live thread of tid's process takes the cookie. */
static void fake_set_process(Fake *f, FakeTask *t, uint64_t cookie) {
        pid_t g = t->tgid ?: t->tid;

        for (size_t i = 0; i < f->n; i++)
                if (f->tasks[i].alive && (f->tasks[i].tgid ?: f->tasks[i].tid) == g)
                        f->tasks[i].cookie = cookie;
}

static int fake_create_process(pid_t tid, void *userdata) {
        Fake *f = userdata;
        FakeTask *t;
        int k;

        fake_log(f, "create_process", tid);
        if ((k = fake_target(f, tid, &t)) < 0)
                return k;
        fake_set_process(f, t, ++f->next_cookie);
        fake_after_op(f, t);
        return 0;
}

static int fake_share_to_process(pid_t tid, void *userdata) {
        Fake *f = userdata;
        FakeTask *t;
        int k;

        fake_log(f, "share_to_process", tid);
        if ((k = fake_target(f, tid, &t)) < 0)
                return k;
        fake_set_process(f, t, fake_self(f)->cookie);
        fake_after_op(f, t);
        return 0;
}

static int fake_get(pid_t tid, uint64_t *ret, void *userdata) {
        Fake *f = userdata;
        FakeTask *t;
        int k;

        fake_log(f, "get", tid);
        if ((k = fake_target(f, tid, &t)) < 0)
                return k;
        *ret = tid == 0 && f->self_cookie_poison ? 4242 : t->cookie;
        return 0;
}

static int fake_pidfd_open(pid_t tid, void *userdata) {
        Fake *f = userdata;
        FakeTask *t = fake_find(f, tid);
        int fd;

        if (!t || !t->alive)
                return -ESRCH;
        if (f->no_pidfd)
                return -EINVAL;
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static int fake_pidfd_alive(int pidfd, pid_t tid, void *userdata) {
        Fake *f = userdata;
        FakeTask *t = fake_find(f, tid);

        ASSERT_GE(pidfd, 0);
        f->alive_checks++;
        return t && t->alive;
}

static Fake fake;
static PidRefOps fake_pidref_ops;
static CookieOps fake_ops;

static void write_stat(pid_t tid, uint64_t start_time) {
        char rel[64], text[512];

        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) tid, (int) tid);
        snprintf(text, sizeof(text),
                 "%d (t %d) S 1 %d %d 0 -1 0 0 0 0 0 10 5 0 0 20 0 1 0 %" PRIu64
                 " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2 0 0\n",
                 (int) tid, (int) tid, (int) tid, (int) tid, start_time);
        fake_write(fake.root_dir, rel, text);
}

static void remove_stat(pid_t tid) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/proc/%d/task/%d/stat", fake.root_dir, (int) tid, (int) tid);
        ASSERT_EQ(unlink(path), 0);
}

/* A live thread, known to the fake kernel and to the fake /proc. */
static CookieTask add_task(pid_t tid) {
        ASSERT_LT(fake.n, FAKE_MAX);
        fake.tasks[fake.n++] = (FakeTask) { .tid = tid, .alive = true };
        write_stat(tid, 5000 + (uint64_t) tid);
        return (CookieTask) { .tid = tid, .start_time = 5000 + (uint64_t) tid };
}

static FakeTask *task(pid_t tid) {
        FakeTask *t = fake_find(&fake, tid);

        if (!t)
                TEST_FAIL("no fake task %d", (int) tid);
        return t;
}

static uint64_t cookie_of(pid_t tid) {
        return task(tid)->cookie;
}

static void fake_reset(void) {
        fake_root_remove(fake.root_dir);
        fake = (Fake) { .root_dir = fake_root_new() };
        fake_pidref_ops = (PidRefOps) {
                .pidfd_open = fake_pidfd_open, .pidfd_alive = fake_pidfd_alive, .userdata = &fake };
        fake_ops = (CookieOps) {
                .create = fake_create,
                .share_from = fake_share_from,
                .share_to = fake_share_to,
                .create_process = fake_create_process,
                .share_to_process = fake_share_to_process,
                .get = fake_get,
                .pidref = &fake_pidref_ops,
                .userdata = &fake,
        };
}

typedef struct Setup {
        Root *root;
        CookieApplier *a;
} Setup;

static Setup setup(void) {
        Setup s = {};

        fake_reset();
        ASSERT_OK(root_open(fake.root_dir, &s.root));
        ASSERT_OK(cookie_applier_new(s.root, &fake_ops, &s.a));
        return s;
}

static void teardown(Setup *s) {
        s->a = cookie_applier_free(s->a);
        s->root = root_free(s->root);
}

static void expect(const CookieResult *r, pid_t tid, CookieOutcome o, int error) {
        if (r->tid != tid || r->outcome != o || r->error != error)
                TEST_FAIL("result for %d: expected %d %s %d, got %d %s %d (%s)", (int) tid, (int) tid,
                          cookie_outcome_to_string(o), error, (int) r->tid, cookie_outcome_to_string(r->outcome),
                          r->error, r->error ? strerror(-r->error) : "");
}

static void test_assign_order(void) {
        Setup s = setup();
        CookieTask g[3] = { add_task(101), add_task(102), add_task(103) };
        CookieResult r[3];
        pid_t worker;

        ASSERT_EQ(cookie_assign(s.a, g, 3, r), 3);
        /* CREATE on the first member, the worker pulls it and pushes it to
         * the others, then takes a private cookie of its own. */
        ASSERT_STREQ(fake.log, "create:101 share_from:101 get:self share_to:102 share_to:103 create:self");
        for (int i = 0; i < 3; i++) {
                expect(&r[i], g[i].tid, COOKIE_DONE, 0);
                ASSERT_EQ(r[i].cookie, cookie_of(101));
        }
        ASSERT_NE(cookie_of(101), 0);
        ASSERT_EQ(cookie_of(102), cookie_of(101));
        ASSERT_EQ(cookie_of(103), cookie_of(101));

        /* The worker holds the keep-alive, not the group's cookie. */
        worker = cookie_applier_keepalive_tid(s.a);
        ASSERT_GT(worker, 0);
        ASSERT_NE(cookie_of(worker), 0);
        ASSERT_NE(cookie_of(worker), cookie_of(101));

        /* A second group: a different cookie; the first one untouched. */
        CookieTask h[2] = { add_task(201), add_task(202) };
        CookieTask lone = add_task(300);
        fake.log[0] = '\0';
        ASSERT_EQ(cookie_assign(s.a, h, 2, r), 2);
        ASSERT_STREQ(fake.log, "create:201 share_from:201 get:self share_to:202 create:self");
        ASSERT_EQ(cookie_of(202), cookie_of(201));
        ASSERT_NE(cookie_of(201), cookie_of(101));
        ASSERT_EQ(cookie_of(101), cookie_of(103));
        ASSERT_EQ(cookie_of(lone.tid), 0);
        ASSERT_EQ(cookie_get(s.a, lone.tid, &r[0].cookie), 0);
        ASSERT_EQ(r[0].cookie, 0);

        /* Core scheduling never went off: the keep-alive was there all along. */
        fake_kill(&fake, 101);
        fake_kill(&fake, 102);
        fake_kill(&fake, 103);
        fake_kill(&fake, 201);
        fake_kill(&fake, 202);
        ASSERT_EQ(fake.toggles_off, 0);

        /* Released: the worker goes to the blank thread's cookie 0. */
        ASSERT_OK(cookie_applier_release(s.a));
        ASSERT_EQ(cookie_applier_keepalive_tid(s.a), 0);
        ASSERT_EQ(cookie_of(worker), 0);
        ASSERT_EQ(fake.toggles_off, 1);
        teardown(&s);
}

static void test_assign_single(void) {
        Setup s = setup();
        CookieTask t = add_task(101), u = add_task(102);
        CookieResult r;

        /* One thread: CREATE on it is all; the worker takes its keep-alive
         * the first time only. */
        ASSERT_EQ(cookie_assign(s.a, &t, 1, &r), 1);
        ASSERT_STREQ(fake.log, "create:101 get:101 create:self");
        ASSERT_EQ(fake.create_caller, cookie_applier_keepalive_tid(s.a));
        expect(&r, 101, COOKIE_DONE, 0);
        ASSERT_EQ(r.cookie, cookie_of(101));
        fake.log[0] = '\0';
        /* From then on the caller's own thread does it: no handoff. */
        ASSERT_EQ(cookie_assign(s.a, &u, 1, &r), 1);
        ASSERT_STREQ(fake.log, "create:102 get:102");
        ASSERT_EQ(fake.create_caller, (pid_t) syscall(SYS_gettid));
        /* … and its own cookie is not involved. */
        ASSERT_TRUE(!fake_find(&fake, (pid_t) syscall(SYS_gettid)) || cookie_of((pid_t) syscall(SYS_gettid)) == 0);
        ASSERT_NE(cookie_of(101), cookie_of(102));

        /* Nothing to do. */
        ASSERT_EQ(cookie_assign(s.a, NULL, 0, NULL), 0);
        teardown(&s);
}

/* The fast path's pin: checked before the act unless the caller just
 * found it alive after its own (its move), and always after. */
static void test_assign_pinned(void) {
        Setup s = setup();
        CookieTask t = add_task(101), u = add_task(102), v = add_task(103);
        _cleanup_(pidref_done) PidRef rt = PIDREF_NULL, ru = PIDREF_NULL, rv = PIDREF_NULL;
        CookieResult r;

        ASSERT_OK(pidref_acquire(s.root, &fake_pidref_ops, t.tid, t.start_time, &rt));
        ASSERT_OK(pidref_acquire(s.root, &fake_pidref_ops, u.tid, u.start_time, &ru));
        ASSERT_OK(pidref_acquire(s.root, &fake_pidref_ops, v.tid, v.start_time, &rv));
        ASSERT_EQ(cookie_assign(s.a, &t, 1, &r), 1); /* the worker takes its keep-alive */
        t.pinned = &rt;
        fake.alive_checks = 0;
        fake.log[0] = '\0';
        ASSERT_EQ(cookie_assign(s.a, &t, 1, &r), 1);
        ASSERT_EQ(fake.alive_checks, 2); /* before and after */
        u.pinned = &ru;
        u.pinned_checked = true;
        fake.alive_checks = 0;
        ASSERT_EQ(cookie_assign(s.a, &u, 1, &r), 1);
        ASSERT_EQ(fake.alive_checks, 1); /* after only */
        expect(&r, 102, COOKIE_DONE, 0);
        ASSERT_EQ(r.cookie, cookie_of(102));
        /* Gone since the caller's check: the act does not reach it, and
         * the check after says so. */
        v.pinned = &rv;
        v.pinned_checked = true;
        task(103)->alive = false;
        fake.alive_checks = 0;
        ASSERT_EQ(cookie_assign(s.a, &v, 1, &r), 0); /* none done */
        ASSERT_NE(r.outcome, COOKIE_DONE);
        ASSERT_EQ(cookie_of(103), 0);
        teardown(&s);
}

static void test_vanished(void) {
        Setup s = setup();
        CookieTask g[4] = { add_task(101), add_task(102), add_task(103), add_task(104) };
        CookieResult r[4];

        /* 101 exited before (no stat: ESRCH from the identity check),
         * 103's tid now names another thread (start time differs): neither
         * is touched; 102 becomes the seed. */
        fake_kill(&fake, 101);
        remove_stat(101);
        write_stat(103, 1);
        ASSERT_EQ(cookie_assign(s.a, g, 4, r), 2);
        ASSERT_STREQ(fake.log, "create:102 share_from:102 get:self share_to:104 create:self");
        expect(&r[0], 101, COOKIE_VANISHED, 0);
        expect(&r[1], 102, COOKIE_DONE, 0);
        expect(&r[2], 103, COOKIE_VANISHED, 0);
        expect(&r[3], 104, COOKIE_DONE, 0);
        ASSERT_EQ(cookie_of(103), 0);
        ASSERT_EQ(cookie_of(104), cookie_of(102));
        teardown(&s);

        /* Gone between the identity check and the act: the kernel's ESRCH,
         * or alive for the act and gone right after (not counted as done). */
        s = setup();
        CookieTask h[3] = { add_task(101), add_task(102), add_task(103) };
        task(102)->die_on_op = true;
        task(103)->error = -ESRCH;
        ASSERT_EQ(cookie_assign(s.a, h, 3, r), 1);
        expect(&r[0], 101, COOKIE_DONE, 0);
        expect(&r[1], 102, COOKIE_VANISHED, 0);
        expect(&r[2], 103, COOKIE_VANISHED, 0);
        teardown(&s);

        /* The seed dies right after the worker took its cookie: the others
         * still get it. */
        s = setup();
        CookieTask k[2] = { add_task(101), add_task(102) };
        task(101)->die_on_op = true;
        ASSERT_EQ(cookie_assign(s.a, k, 2, r), 1);
        expect(&r[0], 101, COOKIE_VANISHED, 0);
        expect(&r[1], 102, COOKIE_DONE, 0);
        ASSERT_NE(cookie_of(102), 0);
        ASSERT_NE(cookie_of(102), cookie_of(cookie_applier_keepalive_tid(s.a)));
        teardown(&s);

        /* Everyone gone: nothing called at all. */
        s = setup();
        CookieTask z = add_task(101);
        fake_kill(&fake, 101);
        ASSERT_EQ(cookie_assign(s.a, &z, 1, r), 0);
        expect(&r[0], 101, COOKIE_VANISHED, 0);
        ASSERT_STREQ(fake.log, "");
        ASSERT_EQ(cookie_applier_keepalive_tid(s.a), 0);
        teardown(&s);
}

static void test_proc_fallback(void) {
        /* No pidfds for threads (before 6.9): the proc/<tid> directory is the
         * handle; a thread gone after the act is seen through it. */
        Setup s = setup();
        CookieTask g[3] = { add_task(101), add_task(102), add_task(103) };
        CookieResult r[3];

        fake.no_pidfd = true;
        ASSERT_EQ(cookie_assign(s.a, g, 2, r), 2);
        expect(&r[0], 101, COOKIE_DONE, 0);
        expect(&r[1], 102, COOKIE_DONE, 0);
        ASSERT_EQ(cookie_of(102), cookie_of(101));

        /* Exits right after the CREATE: the directory opened before stays,
         * its stat goes, the way an open /proc/<pid> of an exited task does. */
        task(103)->die_on_op = true;
        fake.log[0] = '\0';
        ASSERT_EQ(cookie_assign(s.a, &g[2], 1, r), 0);
        ASSERT_STREQ(fake.log, "create:103 get:103");
        expect(&r[0], 103, COOKIE_VANISHED, 0);

        /* Gone before: not touched. */
        fake.log[0] = '\0';
        remove_stat(102);
        ASSERT_EQ(cookie_assign(s.a, &g[1], 1, r), 0);
        expect(&r[0], 102, COOKIE_VANISHED, 0);
        ASSERT_STREQ(fake.log, "");
        teardown(&s);
}

static void test_errors(void) {
        Setup s = setup();
        CookieTask g[4] = { add_task(101), add_task(102), add_task(103), add_task(104) };
        CookieResult r[4];

        /* No ptrace access to the first: the next one seeds; to the third:
         * only it fails. */
        task(101)->error = -EPERM;
        task(103)->error = -EPERM;
        ASSERT_EQ(cookie_assign(s.a, g, 4, r), 2);
        ASSERT_STREQ(fake.log, "create:101 create:102 share_from:102 get:self share_to:103 share_to:104 create:self");
        expect(&r[0], 101, COOKIE_FAILED, -EPERM);
        expect(&r[1], 102, COOKIE_DONE, 0);
        expect(&r[2], 103, COOKIE_FAILED, -EPERM);
        expect(&r[3], 104, COOKIE_DONE, 0);
        ASSERT_TRUE(cookie_error_is_permanent(-EPERM));
        ASSERT_FALSE(cookie_error_is_machine_wide(-EPERM));
        ASSERT_FALSE(cookie_error_is_permanent(-ENOMEM));
        ASSERT_FALSE(cookie_error_is_permanent(-EMFILE));
        teardown(&s);

        /* The seed takes a cookie but cannot pass it: it keeps a private one
         * (reported failed) and the next seeds the rest. */
        s = setup();
        CookieTask h[3] = { add_task(101), add_task(102), add_task(103) };
        task(101)->share_from_error = -ENOMEM;
        ASSERT_EQ(cookie_assign(s.a, h, 3, r), 2);
        ASSERT_STREQ(fake.log, "create:101 share_from:101 create:102 share_from:102 get:self share_to:103 create:self");
        expect(&r[0], 101, COOKIE_FAILED, -ENOMEM);
        ASSERT_NE(cookie_of(101), 0);
        ASSERT_NE(cookie_of(101), cookie_of(102));
        ASSERT_EQ(cookie_of(103), cookie_of(102));
        teardown(&s);

        /* Machine-wide: one call says ENODEV (no SMT) or EINVAL (not built
         * in), and nothing more is called. */
        int errs[] = { -ENODEV, -EINVAL };
        for (size_t e = 0; e < ELEMENTSOF(errs); e++) {
                s = setup();
                CookieTask m[3] = { add_task(101), add_task(102), add_task(103) };
                fake.machine_error = errs[e];
                ASSERT_EQ(cookie_assign(s.a, m, 3, r), 0);
                ASSERT_STREQ(fake.log, "create:101");
                for (int i = 0; i < 3; i++)
                        expect(&r[i], m[i].tid, COOKIE_FAILED, errs[e]);
                ASSERT_TRUE(cookie_error_is_machine_wide(errs[e]));
                ASSERT_TRUE(cookie_error_is_permanent(errs[e]));

                fake.log[0] = '\0';
                ASSERT_EQ(cookie_clear(s.a, m, 3, r), 0);
                ASSERT_STREQ(fake.log, "get:self");
                for (int i = 0; i < 3; i++)
                        expect(&r[i], m[i].tid, COOKIE_FAILED, errs[e]);

                CookieTask src = m[0];
                ASSERT_EQ(cookie_join(s.a, &src, &m[1], 2, r), errs[e]);
                expect(&r[0], 102, COOKIE_FAILED, errs[e]);
                ASSERT_EQ(cookie_get(s.a, 101, &r[0].cookie), errs[e]);
                teardown(&s);
        }

        /* Bad calls. */
        s = setup();
        CookieTask bad = { .tid = 0 };
        ASSERT_EQ(cookie_assign(s.a, &bad, 1, r), -EINVAL);
        ASSERT_EQ(cookie_assign(s.a, g, COOKIE_TASKS_MAX + 1, r), -E2BIG);
        ASSERT_EQ(cookie_assign(s.a, g, 1, NULL), -EINVAL);
        ASSERT_STREQ(fake.log, "");
        teardown(&s);
}

static void test_interlocks(void) {
        Setup s = setup();
        CookieTask g[2] = { add_task(101), add_task(102) };
        CookieResult r[2];
        CookieInterlocks il = { .smt_off = true };

        cookie_applier_set_interlocks(s.a, &il);
        ASSERT_EQ(cookie_assign(s.a, g, 2, r), 0);
        expect(&r[0], 101, COOKIE_REFUSED, -ENODEV);
        expect(&r[1], 102, COOKIE_REFUSED, -ENODEV);
        ASSERT_EQ(cookie_clear(s.a, g, 2, r), 0);
        expect(&r[0], 101, COOKIE_REFUSED, -ENODEV);
        ASSERT_STREQ(fake.log, "");

        il = (CookieInterlocks) { .sched_ext_active = true };
        cookie_applier_set_interlocks(s.a, &il);
        ASSERT_EQ(cookie_assign(s.a, g, 2, r), 0);
        expect(&r[1], 102, COOKIE_REFUSED, -EBUSY);
        ASSERT_EQ(cookie_join(s.a, &g[0], &g[1], 1, r), 0);
        expect(&r[0], 102, COOKIE_REFUSED, -EBUSY);
        ASSERT_STREQ(fake.log, "");

        /* Clearing is the way out, allowed under sched_ext. */
        cookie_applier_set_interlocks(s.a, NULL);
        ASSERT_EQ(cookie_assign(s.a, g, 2, r), 2);
        cookie_applier_set_interlocks(s.a, &il);
        ASSERT_EQ(cookie_clear(s.a, g, 2, r), 2);
        ASSERT_EQ(cookie_of(101), 0);
        teardown(&s);
}

static void test_clear_and_join(void) {
        Setup s = setup();
        CookieTask g[2] = { add_task(101), add_task(102) };
        CookieTask other = add_task(103), late = add_task(104), gone = add_task(105);
        CookieResult r[4];
        uint64_t c;

        ASSERT_EQ(cookie_assign(s.a, g, 2, r), 2);
        c = cookie_of(101);

        /* A thread that appeared later joins the group's cookie; members
         * already in it are left alone. */
        fake.log[0] = '\0';
        CookieTask join[3] = { late, g[1], gone };
        fake_kill(&fake, 105);
        ASSERT_EQ(cookie_join(s.a, &g[0], join, 3, r), 1);
        ASSERT_STREQ(fake.log, "get:101 share_from:101 get:104 share_to:104 get:102 create:self");
        expect(&r[0], 104, COOKIE_DONE, 0);
        expect(&r[1], 102, COOKIE_ALREADY, 0);
        expect(&r[2], 105, COOKIE_VANISHED, 0);
        ASSERT_EQ(r[0].cookie, c);
        ASSERT_EQ(cookie_of(104), c);
        ASSERT_NE(cookie_of(cookie_applier_keepalive_tid(s.a)), c);

        /* Joining a source without a cookie, or one that has gone. */
        ASSERT_EQ(cookie_join(s.a, &other, &late, 1, r), -ENODATA);
        expect(&r[0], 104, COOKIE_FAILED, -ENODATA);
        ASSERT_EQ(cookie_join(s.a, &gone, &late, 1, r), -ESRCH);

        /* Clear: by the blank thread (cookie 0) with SHARE_TO; untouched
         * threads are already so. The keep-alive stays. */
        fake.log[0] = '\0';
        CookieTask clr[3] = { g[0], g[1], other };
        ASSERT_EQ(cookie_clear(s.a, clr, 3, r), 2);
        ASSERT_STREQ(fake.log, "get:self get:101 share_to:101 get:102 share_to:102 get:103");
        expect(&r[0], 101, COOKIE_DONE, 0);
        expect(&r[1], 102, COOKIE_DONE, 0);
        expect(&r[2], 103, COOKIE_ALREADY, 0);
        ASSERT_EQ(cookie_of(101), 0);
        ASSERT_EQ(cookie_of(102), 0);
        ASSERT_EQ(cookie_of(104), c);
        ASSERT_GT(cookie_applier_keepalive_tid(s.a), 0);

        /* The zero-cookie thread was given a cookie from outside: clears
         * would spread it, so they fail instead. */
        fake.self_cookie_poison = true;
        ASSERT_EQ(cookie_clear(s.a, &late, 1, r), 0);
        expect(&r[0], 104, COOKIE_FAILED, -ENOTRECOVERABLE);
        ASSERT_EQ(cookie_of(104), c);
        teardown(&s);
}

/* A thread of process tgid (not its main thread). */
static void add_thread(pid_t tid, pid_t tgid) {
        ASSERT_LT(fake.n, FAKE_MAX);
        fake.tasks[fake.n++] = (FakeTask) { .tid = tid, .tgid = tgid, .alive = true };
}

/* A whole process (CookieTask.whole_process, the fast path's placements):
 * every one of its threads takes the cookie in the one call, whether the
 * process gets a new cookie or joins a group's; without the process ops
 * (NULL) the main thread alone does. */
static void test_whole_process(void) {
        Setup s = setup();
        CookieTask p = add_task(201), q = add_task(301), g = add_task(401);
        CookieResult r[1];
        uint64_t c;

        add_thread(202, 201);
        add_thread(203, 201);
        add_thread(302, 301);
        p.whole_process = q.whole_process = true;

        ASSERT_EQ(cookie_assign(s.a, &g, 1, r), 1); /* the keep-alive, and a group's cookie */
        fake.log[0] = '\0';
        ASSERT_EQ(cookie_assign(s.a, &p, 1, r), 1);
        ASSERT_STREQ(fake.log, "create_process:201 get:201");
        c = cookie_of(201);
        ASSERT_NE(c, 0u);
        ASSERT_EQ(cookie_of(202), c);
        ASSERT_EQ(cookie_of(203), c);

        fake.log[0] = '\0';
        ASSERT_EQ(cookie_join(s.a, &g, &q, 1, r), 1);
        ASSERT_STR_CONTAINS(fake.log, "share_to_process:301");
        ASSERT_EQ(cookie_of(301), cookie_of(401));
        ASSERT_EQ(cookie_of(302), cookie_of(401));
        ASSERT_NE(cookie_of(301), c);
        teardown(&s);

        /* Ops without the process scope: the main thread alone. */
        s = setup();
        fake_ops.create_process = fake_ops.share_to_process = NULL;
        cookie_applier_free(s.a);
        ASSERT_OK(cookie_applier_new(s.root, &fake_ops, &s.a));
        p = add_task(201);
        add_thread(202, 201);
        p.whole_process = true;
        ASSERT_EQ(cookie_assign(s.a, &p, 1, r), 1);
        ASSERT_NE(cookie_of(201), 0u);
        ASSERT_EQ(cookie_of(202), 0u);
        teardown(&s);
}

static void test_strings(void) {
        ASSERT_STREQ(cookie_outcome_to_string(COOKIE_DONE), "done");
        ASSERT_STREQ(cookie_outcome_to_string(COOKIE_ALREADY), "already");
        ASSERT_STREQ(cookie_outcome_to_string(COOKIE_VANISHED), "vanished");
        ASSERT_STREQ(cookie_outcome_to_string(COOKIE_REFUSED), "refused");
        ASSERT_STREQ(cookie_outcome_to_string(COOKIE_FAILED), "failed");
        ASSERT_NULL(cookie_outcome_to_string(_COOKIE_OUTCOME_MAX));
}

static void test_pidref_host(void) {
        /* The real pidfd and /proc on this machine: ourselves, a reused
         * start time, a tid that does not exist. */
        _cleanup_(root_freep) Root *root = NULL;
        PidRef ref = PIDREF_NULL;
        pid_t me = (pid_t) syscall(SYS_gettid);
        uint64_t st;

        if (access("/proc/self/stat", R_OK) < 0)
                test_skip("no /proc");
        ASSERT_OK(root_open("/", &root));
        ASSERT_OK(pidref_read_start_time(root, -1, me, &st));
        ASSERT_OK(pidref_acquire(root, &pidref_ops_host, me, st, &ref));
        ASSERT_EQ(pidref_alive(&ref, root, &pidref_ops_host), 1);
        pidref_done(&ref);
        ASSERT_EQ(ref.pidfd, -EBADF);
        ASSERT_ERROR(pidref_acquire(root, &pidref_ops_host, me, st + 1, &ref), ESRCH);
        ASSERT_ERROR(pidref_acquire(root, NULL, me, st + 1, &ref), ESRCH);
        ASSERT_OK(pidref_acquire(root, NULL, me, st, &ref)); /* the proc directory only */
        ASSERT_GE(ref.procfd, 0);
        ASSERT_EQ(pidref_alive(&ref, root, NULL), 1);
        pidref_done(&ref);
        ASSERT_ERROR(pidref_acquire(root, &pidref_ops_host, 0x3ffffff0, 1, &ref), ESRCH);
        ASSERT_ERROR(pidref_acquire(root, &pidref_ops_host, 0, 1, &ref), EINVAL);

        /* A child that has exited (and been reaped) is not alive any more. */
        pid_t child = fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
                pause();
                _exit(0);
        }
        ASSERT_OK(pidref_read_start_time(root, -1, child, &st));
        ASSERT_OK(pidref_acquire(root, &pidref_ops_host, child, st, &ref));
        ASSERT_EQ(pidref_alive(&ref, root, &pidref_ops_host), 1);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        ASSERT_EQ(pidref_alive(&ref, root, &pidref_ops_host), 0);
        pidref_done(&ref);
}

/* The kernel's id of our own cgroup through a pidfd (PIDFD_GET_INFO, 6.13)
 * is the inode number of the cgroup2 directory /proc/self/cgroup names. */
static void test_pidfd_cgroup_id_host(void) {
        _cleanup_free_ char *text = NULL;
        char path[PATH_MAX];
        struct stat sb;
        uint64_t id = 0;
        long fd;
        int k;

        fd = syscall(SYS_pidfd_open, getpid(), 0);
        if (fd < 0) {
                fprintf(stderr, "SKIP test_pidfd_cgroup_id_host: no pidfd_open here: %s\n", strerror(errno));
                return;
        }
        k = pidref_ops_host.pidfd_cgroup_id((int) fd, NULL, &id);
        if (k == -EOPNOTSUPP) {
                struct utsname u;

                (void) uname(&u);
                fprintf(stderr, "SKIP test_pidfd_cgroup_id_host: kernel %s has no PIDFD_GET_INFO (6.13): "
                        "proc/PID/cgroup is read for every move\n", u.release);
                close((int) fd);
                return;
        }
        ASSERT_OK(k);
        int cfd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);

        ASSERT_GE(cfd, 0);
        ASSERT_OK(read_full_fd(cfd, 65536, &text, NULL));
        close(cfd);
        const char *line = strstr(text, "0::");
        ASSERT_NOT_NULL(line);
        ASSERT_TRUE(line == text || line[-1] == '\n');
        line += 3;
        snprintf(path, sizeof(path), "%s%.*s", access("/sys/fs/cgroup/unified", F_OK) == 0 ?
                 "/sys/fs/cgroup/unified" : "/sys/fs/cgroup", (int) strcspn(line, "\n"), line);
        if (stat(path, &sb) < 0) {
                fprintf(stderr, "SKIP test_pidfd_cgroup_id_host: our cgroup %s is not under the cgroup2 mount here: %s\n",
                        path, strerror(errno));
                close((int) fd);
                return;
        }
        ASSERT_EQ(id, (uint64_t) sb.st_ino);
        close((int) fd);
}

/* Where pidfds are pidfs inodes (KernelCaps.pidfs, 6.9), a process pinned
 * by pidref_acquire_current() is named by its pidfd's inode, which the
 * checks of every pidref_acquire*() then take; another inode is another
 * process. */
static void test_pidfs_host(void) {
        _cleanup_(kernelcaps_freep) KernelCaps *caps = NULL;
        _cleanup_(root_freep) Root *root = NULL;
        PidRefOps ops = pidref_ops_host;
        PidRef ref = PIDREF_NULL, again = PIDREF_NULL;
        pid_t me = getpid();

        ASSERT_OK(root_open("/", &root));
        ASSERT_OK(kernelcaps_probe(root, NULL, &caps));
        if (!caps->pidfs.available) {
                fprintf(stderr, "SKIP test_pidfs_host: %s\n", caps->pidfs.reason);
                return;
        }
        ops.pidfs_idents = true;
        ASSERT_OK(pidref_acquire_current(root, &ops, me, &ref));
        ASSERT_TRUE(pidref_ident_is_pidfs(ref.start_time));
        ASSERT_OK(pidref_acquire_process(root, &pidref_ops_host, me, ref.start_time, &again));
        pidref_done(&again);
        ASSERT_ERROR(pidref_acquire_process(root, &pidref_ops_host, me, ref.start_time + 1, &again), ESRCH);
        ASSERT_ERROR(pidref_acquire_process(root, &pidref_ops_host, 1, ref.start_time, &again), ESRCH);
        pidref_done(&ref);
        /* Without pidfs_idents: the start time, as ever. */
        ASSERT_OK(pidref_acquire_current(root, &pidref_ops_host, me, &ref));
        ASSERT_FALSE(pidref_ident_is_pidfs(ref.start_time));
        pidref_done(&ref);
}

static void test_host_kernel(void) {
        /* Whatever this kernel says, the host ops sort it: here (no
         * CONFIG_SCHED_CORE) every call gives EINVAL, a machine-wide error. */
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(cookie_applier_freep) CookieApplier *a = NULL;
        CookieTask me = {};
        CookieResult r;
        uint64_t c;
        int k;

        ASSERT_OK(root_open("/", &root));
        ASSERT_OK(cookie_applier_new(root, NULL, &a));
        me.tid = (pid_t) syscall(SYS_gettid);
        ASSERT_OK(pidref_read_start_time(root, -1, me.tid, &me.start_time));
        k = cookie_get(a, me.tid, &c);
        printf("PR_SCHED_CORE_GET on this kernel: %s\n", k < 0 ? errno_name(k) : "works");
        if (k == 0)
                return; /* a kernel with core scheduling: the vm tier tests it */
        ASSERT_TRUE(cookie_error_is_machine_wide(k));
        ASSERT_EQ(cookie_assign(a, &me, 1, &r), 0);
        expect(&r, me.tid, COOKIE_FAILED, k);
        ASSERT_EQ(cookie_applier_keepalive_tid(a), 0);
}

int main(void) {
        RUN(test_strings);
        RUN(test_assign_order);
        RUN(test_assign_single);
        RUN(test_assign_pinned);
        RUN(test_vanished);
        RUN(test_proc_fallback);
        RUN(test_errors);
        RUN(test_interlocks);
        RUN(test_clear_and_join);
        RUN(test_whole_process);
        RUN(test_pidref_host);
        RUN(test_pidfd_cgroup_id_host);
        RUN(test_pidfs_host);
        RUN(test_host_kernel);
        fake_root_remove(fake.root_dir);
        return 0;
}
