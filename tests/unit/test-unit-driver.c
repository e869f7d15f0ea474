/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The systemd driver's decisions against fake ops that record every call:
 * the ay bitmasks of AllowedCPUs, the majority rule of a unit whose
 * processes go to different groups, the journal's unit entries, and
 * restore putting a property back only while the unit holds what topod
 * wrote, stopping only empty slices; the unit a planned process is placed
 * through (explain), and the pass letting go of units and scopes the plan
 * no longer places. */

#include "apply/journal.h"
#include "apply/unit.h"
#include "base/bitmap.h"
#include "base/root.h"
#include "base/util.h"
#include "decide/plan.h"
#include "fake-root.h"
#include "tests.h"

#define CALLS_MAX 32

typedef struct FakeUnit {
        const char *unit;
        UnitProperty p;
        const char *value;
} FakeUnit;

static struct {
        char calls[CALLS_MAX][160];
        size_t n;
        FakeUnit props[8];
        size_t n_props;
} fk;

_printf_(1, 2) static void record(const char *fmt, ...) {
        va_list ap;

        if (fk.n == CALLS_MAX)
                return;
        va_start(ap, fmt);
        vsnprintf(fk.calls[fk.n++], sizeof(fk.calls[0]), fmt, ap);
        va_end(ap);
}

static void values_text(const UnitValues *v, char *buf, size_t size) {
        buf[0] = '\0';
        for (UnitProperty p = 0; p < _UNIT_PROP_MAX; p++)
                if (v->v[p])
                        snprintf(buf + strlen(buf), size - strlen(buf), " %s=%s", unit_property_name(p), v->v[p]);
}

static int f_start_slice(void *ud, const char *name, const UnitValues *v) {
        char t[120];

        values_text(v, t, sizeof(t));
        record("start_slice %s%s", name, t);
        return 0;
}

static int f_start_scope(void *ud, const char *name, const char *slice, const pid_t *pids, size_t n) {
        record("start_scope %s %s %d", name, slice, n ? (int) pids[0] : 0);
        return 0;
}

static int f_set(void *ud, const char *unit, const UnitValues *v) {
        char t[120];

        values_text(v, t, sizeof(t));
        record("set %s%s", unit, t);
        return 0;
}

static int f_get(void *ud, const char *unit, UnitProperty p, char **ret) {
        for (size_t i = 0; i < fk.n_props; i++)
                if (streq(fk.props[i].unit, unit) && fk.props[i].p == p)
                        return (*ret = strdup(fk.props[i].value)) ? 0 : -ENOMEM;
        return -ENOENT;
}

static int f_attach(void *ud, const char *unit, const pid_t *pids, size_t n) {
        record("attach %s", unit);
        return -EINVAL; /* not delegated */
}

static int f_stop(void *ud, const char *unit) {
        record("stop %s", unit);
        return 0;
}

static const UnitOps fake_ops = { .start_slice = f_start_slice, .start_scope = f_start_scope, .set_properties = f_set,
                                  .get_property = f_get, .attach = f_attach, .stop = f_stop };

static void test_bitmask(void) {
        _cleanup_free_ uint8_t *b = NULL;
        _cleanup_free_ char *l = NULL, *l2 = NULL;
        size_t n = 0;

        ASSERT_OK(unit_list_to_bytes("0-3", &b, &n));
        ASSERT_EQ(n, (size_t) 1);
        ASSERT_EQ(b[0], 0x0f);
        b = mfree(b);
        ASSERT_OK(unit_list_to_bytes("0,9,17", &b, &n));
        ASSERT_EQ(n, (size_t) 3);
        ASSERT_EQ(b[0], 0x01);
        ASSERT_EQ(b[1], 0x02);
        ASSERT_EQ(b[2], 0x02);
        ASSERT_OK(unit_bytes_to_list(b, n, &l));
        ASSERT_STREQ(l, "0,9,17");
        b = mfree(b);
        ASSERT_OK(unit_list_to_bytes("", &b, &n));
        ASSERT_EQ(n, (size_t) 0);
        ASSERT_OK(unit_bytes_to_list(NULL, 0, &l2));
        ASSERT_STREQ(l2, "");
        ASSERT_EQ(unit_list_to_bytes("3-x", &b, &n), -EINVAL);
}

/* Plan naming under the systemd driver: a slice per level, parts escaped. */
static void test_slice_names(void) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        ASSERT_OK(plan_slice_path("topod.slice", "node0/llc1/avx", &a));
        ASSERT_STREQ(a, "topod-node0.slice/topod-node0-llc1.slice/topod-node0-llc1-avx.slice");
        ASSERT_OK(plan_slice_path("topod.slice", "latency-services-llc0", &b));
        ASSERT_STREQ(b, "topod-latency\\x2dservices\\x2dllc0.slice");
        ASSERT_OK(plan_slice_path("lab-topod.slice", "batch", &c));
        ASSERT_STREQ(c, "lab-topod-batch.slice");
        ASSERT_EQ(plan_slice_path("-.slice", "batch", &c), -EINVAL);
        ASSERT_EQ(plan_slice_path("topod.service", "batch", &c), -EINVAL);
}

static void test_majority(void) {
        unsigned w1[3] = { 2, 5, 1 };
        pid_t t1[3] = { 10, 20, 5 };
        unsigned w2[3] = { 3, 0, 3 };
        pid_t t2[3] = { 40, 0, 30 };
        unsigned w3[2] = { 0, 0 };
        pid_t t3[2] = { 0, 0 };

        ASSERT_EQ(unit_majority_group(w1, t1, 3), 1); /* most threads */
        ASSERT_EQ(unit_majority_group(w2, t2, 3), 2); /* tie: the lowest tgid's */
        ASSERT_EQ(unit_majority_group(w3, t3, 2), -1);
}

static void test_journal_units(void) {
        _cleanup_(journal_freep) Journal *j = NULL, *back = NULL;
        _cleanup_free_ char *text = NULL;
        JournalError e;
        size_t len;

        ASSERT_OK(journal_new(NULL, &j));
        ASSERT_EQ(journal_record_unit(j, "topod.slice"), 1);
        ASSERT_EQ(journal_record_unit(j, "topod-latency\\x2dservices.slice"), 1);
        ASSERT_EQ(journal_record_unit(j, "topod.slice"), 0);
        ASSERT_EQ(journal_record_unit(j, "not a unit"), -EINVAL);
        ASSERT_EQ(journal_record_unit_prop(j, "crunch.service", "AllowedCPUs", "", "0-1"), 1);
        ASSERT_EQ(journal_record_unit_prop(j, "crunch.service", "AllowedCPUs", "2", "3"), 0); /* first wins */
        ASSERT_EQ(journal_record_unit_prop(j, "crunch.service", "CPUWeight", "", "300"), 1);
        ASSERT_EQ(journal_record_unit_prop(j, "crunch.service", "Nice", "", "3"), -EINVAL);
        ASSERT_EQ(journal_update_unit_prop(j, "crunch.service", "CPUWeight", "200"), 1);
        ASSERT_EQ(journal_record_unit_prop(j, "other.service", "CPUWeight", "", "300"), 1);
        ASSERT_EQ(journal_release_unit_prop(j, "other.service", "CPUWeight", "77"), 1);
        ASSERT_OK(journal_format(j, &text, &len));
        ASSERT_TRUE(strstr(text, "unitprop other.service CPUWeight released 77\n") != NULL);
        ASSERT_TRUE(startswith(text, "topod-journal 4\n"));
        ASSERT_TRUE(strstr(text, "unitprop crunch.service AllowedCPUs - 0-1\n") != NULL);
        ASSERT_TRUE(strstr(text, "unit topod-latency\\x5cx2dservices.slice\n") != NULL);
        ASSERT_OK(journal_parse(text, len, &back, &e));
        ASSERT_EQ(back->n_units, (size_t) 2);
        ASSERT_STREQ(back->units[1], "topod-latency\\x2dservices.slice");
        ASSERT_EQ(back->n_unit_props, (size_t) 3);
        ASSERT_STREQ(journal_get_unit_prop(back, "crunch.service", "AllowedCPUs")->original, "");
        ASSERT_STREQ(journal_get_unit_prop(back, "crunch.service", "CPUWeight")->written, "200");
        ASSERT_EQ(journal_n_entries(back), (size_t) 5);
}

/* A fake root, the ops, an empty journal and report. */
typedef struct Rig {
        char *dir;
        Root *root;
        CgroupEnv ce;
        UnitEnv env;
        Journal *j;
        CgroupReport *r;
} Rig;

static void rig_new(Rig *g) {
        *g = (Rig) { .dir = fake_root_new() };
        fk.n = 0;
        fk.n_props = 0;
        ASSERT_OK(journal_new(NULL, &g->j));
        ASSERT_OK(cgroup_report_new(&g->r));
}

/* After the files are written: the Root over them. */
static void rig_open(Rig *g) {
        ASSERT_OK(root_open(g->dir, &g->root));
        g->ce = (CgroupEnv) { .root = g->root, .mount = "/sys/fs/cgroup", .cgroup_root = "/topod.slice" };
        g->env = (UnitEnv) { .cgroup = &g->ce, .ops = &fake_ops };
}

static void rig_done(Rig *g) {
        journal_free(g->j);
        cgroup_report_free(g->r);
        root_free(g->root);
        fake_root_remove(g->dir);
}

/* Restore: crunch.service still holds what topod wrote (put back), other.service
 * was changed since (released, not written), gone.service is gone (moot);
 * an empty slice is stopped, a populated one is not. */
static void test_restore(void) {
        Rig g;

        rig_new(&g);
        fk.props[fk.n_props++] = (FakeUnit) { "crunch.service", UNIT_PROP_CPUS, "0-1" };
        fk.props[fk.n_props++] = (FakeUnit) { "other.service", UNIT_PROP_CPUS, "3" };
        fake_write(g.dir, "sys/fs/cgroup/topod.slice/cgroup.events", "populated 0\nfrozen 0\n");
        fake_write(g.dir, "sys/fs/cgroup/topod.slice/topod-busy.slice/cgroup.events", "populated 1\nfrozen 0\n");
        rig_open(&g);
        ASSERT_OK(journal_record_unit(g.j, "topod.slice"));
        ASSERT_OK(journal_record_unit(g.j, "topod-busy.slice"));
        ASSERT_OK(journal_record_unit_prop(g.j, "crunch.service", "AllowedCPUs", "", "0-1"));
        ASSERT_OK(journal_record_unit_prop(g.j, "other.service", "AllowedCPUs", "", "0-1"));
        ASSERT_OK(journal_record_unit_prop(g.j, "gone.service", "AllowedCPUs", "", "0-1"));
        fk.props[fk.n_props++] = (FakeUnit) { "third.service", UNIT_PROP_WEIGHT, "77" };
        ASSERT_OK(journal_record_unit_prop(g.j, "third.service", "CPUWeight", "", "300"));
        ASSERT_OK(journal_release_unit_prop(g.j, "third.service", "CPUWeight", "77"));
        /* Outside cgroup_root (an edited journal): never stopped, the
         * process in its scope never moved. */
        fake_write(g.dir, "sys/fs/cgroup/machine.slice/cgroup.events", "populated 0\nfrozen 0\n");
        fake_write(g.dir, "sys/fs/cgroup/machine.slice/machine-9.scope/cgroup.procs", "9\n");
        ASSERT_OK(journal_record_unit(g.j, "machine.slice"));
        ASSERT_OK(journal_record_unit(g.j, "machine-9.scope"));
        ASSERT_EQ(unit_restore(&g.env, g.j, g.r), 1); /* the busy slice */
        for (size_t i = 0; i < fk.n; i++)
                ASSERT_STR_NOT_CONTAINS(fk.calls[i], "machine");
        ASSERT_EQ(fk.n, (size_t) 2);
        ASSERT_STREQ(fk.calls[0], "set crunch.service AllowedCPUs=");
        ASSERT_STREQ(fk.calls[1], "stop topod.slice");
        ASSERT_EQ(g.j->n_unit_props, (size_t) 0);
        ASSERT_EQ(g.j->n_units, (size_t) 1);
        ASSERT_STREQ(g.j->units[0], "topod-busy.slice");
        rig_done(&g);
}

/* A process in one of topod's scopes (and a child forked there): back to
 * its original unit, which systemd refuses (not delegated), so into a new
 * scope in the original's slice; the entries forgotten. */
static void test_restore_scope(void) {
        Rig g;

        rig_new(&g);
        fake_write(g.dir, "sys/fs/cgroup/topod.slice/topod-a.slice/topod-a-171.scope/cgroup.procs", "171\n190\n");
        fake_write(g.dir, "sys/fs/cgroup/topod.slice/topod-a.slice/topod-a-171.scope/cgroup.type", "domain\n");
        rig_open(&g);
        ASSERT_OK(journal_record_unit(g.j, "topod.slice"));
        ASSERT_OK(journal_record_unit(g.j, "topod-a.slice"));
        ASSERT_OK(journal_record_unit(g.j, "topod-a-171.scope"));
        ASSERT_OK(journal_record_task(g.j, 171, 9473, "/system.slice/byhand.scope"));
        ASSERT_OK(journal_record_task(g.j, 500, 9999, "/user.slice"));
        ASSERT_EQ(unit_restore(&g.env, g.j, g.r), 0);
        ASSERT_EQ(fk.n, (size_t) 4);
        ASSERT_STREQ(fk.calls[0], "attach byhand.scope");
        ASSERT_STREQ(fk.calls[1], "start_scope topod-back-171.scope system.slice 171");
        ASSERT_STREQ(fk.calls[2], "stop topod-a.slice");
        ASSERT_STREQ(fk.calls[3], "stop topod.slice");
        ASSERT_TRUE(journal_is_empty(g.j));
        rig_done(&g);
}

/* AllowedCPUs back to "not set": systemd 252 leaves the unit's cpuset.cpus
 * as it last wrote them, so every CPU online is set first, then "not set";
 * a value that was set goes back in one call. */
static void test_restore_widens(void) {
        Rig g;

        rig_new(&g);
        fk.props[fk.n_props++] = (FakeUnit) { "crunch.service", UNIT_PROP_CPUS, "0-1" };
        fk.props[fk.n_props++] = (FakeUnit) { "set.service", UNIT_PROP_CPUS, "0-1" };
        fake_write(g.dir, "sys/devices/system/cpu/online", "0-3\n");
        rig_open(&g);
        ASSERT_OK(journal_record_unit_prop(g.j, "crunch.service", "AllowedCPUs", "", "0-1"));
        ASSERT_OK(journal_record_unit_prop(g.j, "set.service", "AllowedCPUs", "2-3", "0-1"));
        ASSERT_EQ(unit_restore(&g.env, g.j, g.r), 0);
        ASSERT_EQ(fk.n, (size_t) 3);
        ASSERT_STREQ(fk.calls[0], "set crunch.service AllowedCPUs=0-3");
        ASSERT_STREQ(fk.calls[1], "set crunch.service AllowedCPUs=");
        ASSERT_STREQ(fk.calls[2], "set set.service AllowedCPUs=2-3");
        rig_done(&g);
}

/* The original scope still there (another process keeps it): the process
 * goes back into its cgroup, no new scope. */
static void test_restore_into_scope(void) {
        char path[PATH_MAX], procs[64] = "";
        FILE *f;
        Rig g;

        rig_new(&g);
        fake_write(g.dir, "sys/fs/cgroup/topod.slice/topod-a.slice/topod-a-171.scope/cgroup.procs", "171\n");
        fake_write(g.dir, "sys/fs/cgroup/topod.slice/topod-a.slice/topod-a-171.scope/cgroup.type", "domain\n");
        fake_write(g.dir, "sys/fs/cgroup/system.slice/byhand.scope/cgroup.procs", "199\n");
        rig_open(&g);
        ASSERT_OK(journal_record_unit(g.j, "topod-a-171.scope"));
        ASSERT_OK(journal_record_task(g.j, 171, 9473, "/system.slice/byhand.scope"));
        ASSERT_EQ(unit_restore(&g.env, g.j, g.r), 0);
        ASSERT_EQ(fk.n, (size_t) 1);
        ASSERT_STREQ(fk.calls[0], "attach byhand.scope");
        snprintf(path, sizeof(path), "%s/sys/fs/cgroup/system.slice/byhand.scope/cgroup.procs", g.dir);
        ASSERT_NOT_NULL(f = fopen(path, "re"));
        ASSERT_NOT_NULL(fgets(procs, sizeof(procs), f));
        fclose(f);
        ASSERT_STR_PREFIX(procs, "171"); /* written over the file's start, as the kernel would take it */
        ASSERT_TRUE(journal_is_empty(g.j));
        rig_done(&g);
}

/* A one-thread process in cg: its proc files (stat's start time 10 x pid). */
static void fake_process(const char *dir, pid_t pid, const char *cg) {
        char rel[64], text[256];

        snprintf(text, sizeof(text),
                 "%d (t) S 1 %d %d 0 -1 0 0 0 0 0 10 5 0 0 20 0 1 0 %d 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2 0 0\n",
                 (int) pid, (int) pid, (int) pid, 10 * (int) pid);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) pid, (int) pid);
        fake_write(dir, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/stat", (int) pid);
        fake_write(dir, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/cgroup", (int) pid);
        snprintf(text, sizeof(text), "0::%s\n", cg);
        fake_write(dir, rel, text);
}

static void plan_group(Plan *p, const char *path, const char *cpus) {
        PlanGroup *g;

        p->groups = realloc(p->groups, (p->n_groups + 1) * sizeof(PlanGroup));
        ASSERT_NOT_NULL(p->groups);
        g = &p->groups[p->n_groups++];
        *g = (PlanGroup) { .path = strdup(path), .domain = -1, .weight = 100 };
        ASSERT_OK(bitmap_parse_list(cpus, &g->cpus));
        ASSERT_OK(bitmap_parse_list("0", &g->mems));
}

static void plan_task(Plan *p, pid_t tid, pid_t tgid, int group) {
        p->tasks = realloc(p->tasks, (p->n_tasks + 1) * sizeof(PlanTask));
        ASSERT_NOT_NULL(p->tasks);
        p->tasks[p->n_tasks++] = (PlanTask) { .tid = tid, .tgid = tgid, .start_time = 10 * (uint64_t) tgid,
                                              .group = group, .cookie_group = -1 };
}

/* Two slices; crunch.service's 300 (one thread) planned into a, its 301
 * (two threads) into b; 400 by hand in a session scope, into a. */
static Plan *two_group_plan(void) {
        Plan *p = calloc(1, sizeof(Plan));

        ASSERT_NOT_NULL(p);
        p->hierarchy = CONFIG_HIERARCHY_FLAT;
        p->cgroup_root = strdup("/topod.slice");
        plan_group(p, "topod-a.slice", "0-1");
        plan_group(p, "topod-b.slice", "2-3");
        plan_task(p, 300, 300, 0);
        plan_task(p, 301, 301, 1);
        plan_task(p, 302, 301, 1);
        plan_task(p, 400, 400, 0);
        return p;
}

/* explain's "placed through unit X": the unit, the group it followed (most
 * of its planned threads), and none for a process outside service units. */
static void test_through(void) {
        _cleanup_(plan_freep) Plan *p = two_group_plan();
        UnitThrough t = {};
        Rig g;

        rig_new(&g);
        fake_process(g.dir, 300, "/system.slice/crunch.service");
        fake_process(g.dir, 301, "/system.slice/crunch.service");
        fake_process(g.dir, 400, "/user.slice/user-1000.slice/session-1.scope");
        rig_open(&g);
        ASSERT_OK(unit_plan_through(g.root, p, 300, &t));
        ASSERT_STREQ(t.unit, "crunch.service");
        ASSERT_EQ(t.group, 1); /* b: two of its three planned threads */
        ASSERT_EQ(t.threads, 2u);
        ASSERT_EQ(t.total, 3u);
        ASSERT_EQ(t.groups, 2u);
        free(t.unit);
        ASSERT_EQ(unit_plan_through(g.root, p, 400, &t), -ENOENT);
        ASSERT_EQ(unit_plan_through(g.root, p, 999, &t), -ENOENT);
        rig_done(&g);
}

/* The pass lets go of what the plan no longer places: other.service's
 * property still what topod wrote (set back), changed.service's changed
 * since (released: left, forgotten), crunch.service planned (kept); the
 * scope of by-hand 171, no longer planned, emptied back (its original unit
 * refuses, so a new scope in its slice); 400's scope planned (kept). */
static void test_release(void) {
        _cleanup_(plan_freep) Plan *p = two_group_plan();
        Rig g;

        rig_new(&g);
        fake_process(g.dir, 300, "/system.slice/crunch.service");
        fake_process(g.dir, 301, "/system.slice/crunch.service");
        fake_process(g.dir, 400, "/topod.slice/topod-a.slice/topod-a-400.scope");
        fake_process(g.dir, 171, "/topod.slice/topod-a.slice/topod-a-171.scope");
        fake_write(g.dir, "sys/fs/cgroup/topod.slice/topod-a.slice/topod-a-171.scope/cgroup.procs", "171\n");
        fake_write(g.dir, "sys/fs/cgroup/topod.slice/topod-a.slice/topod-a-171.scope/cgroup.type", "domain\n");
        fake_write(g.dir, "sys/fs/cgroup/topod.slice/topod-a.slice/topod-a-400.scope/cgroup.procs", "400\n");
        fake_write(g.dir, "sys/fs/cgroup/topod.slice/topod-a.slice/topod-a-400.scope/cgroup.type", "domain\n");
        fk.props[fk.n_props++] = (FakeUnit) { "other.service", UNIT_PROP_CPUS, "0-1" };
        fk.props[fk.n_props++] = (FakeUnit) { "changed.service", UNIT_PROP_WEIGHT, "50" };
        fk.props[fk.n_props++] = (FakeUnit) { "crunch.service", UNIT_PROP_CPUS, "2-3" };
        rig_open(&g);
        ASSERT_OK(journal_record_unit(g.j, "topod.slice"));
        ASSERT_OK(journal_record_unit(g.j, "topod-a.slice"));
        ASSERT_OK(journal_record_unit(g.j, "topod-a-171.scope"));
        ASSERT_OK(journal_record_unit(g.j, "topod-a-400.scope"));
        ASSERT_OK(journal_record_task(g.j, 171, 1710, "/system.slice/byhand.scope"));
        ASSERT_OK(journal_record_task(g.j, 400, 4000, "/user.slice/user-1000.slice/session-1.scope"));
        ASSERT_OK(journal_record_unit_prop(g.j, "crunch.service", "AllowedCPUs", "", "2-3"));
        ASSERT_OK(journal_record_unit_prop(g.j, "other.service", "AllowedCPUs", "7", "0-1"));
        ASSERT_OK(journal_record_unit_prop(g.j, "changed.service", "CPUWeight", "", "300"));
        ASSERT_EQ(unit_release_unplanned(&g.env, p, g.j, g.r), 0);
        ASSERT_EQ(fk.n, (size_t) 3);
        ASSERT_STREQ(fk.calls[0], "set other.service AllowedCPUs=7");
        ASSERT_STREQ(fk.calls[1], "attach byhand.scope");
        ASSERT_STREQ(fk.calls[2], "start_scope topod-back-171.scope system.slice 171");
        ASSERT_EQ(g.j->n_unit_props, (size_t) 1);
        ASSERT_STREQ(g.j->unit_props[0].unit, "crunch.service");
        ASSERT_EQ(g.j->n_units, (size_t) 3);
        ASSERT_FALSE(journal_has_unit(g.j, "topod-a-171.scope"));
        ASSERT_TRUE(journal_has_unit(g.j, "topod-a-400.scope"));
        ASSERT_EQ(g.j->n_tasks, (size_t) 1);
        ASSERT_EQ(g.j->tasks[0].tid, 400);
        rig_done(&g);
}

int main(void) {
        RUN(test_bitmask);
        RUN(test_slice_names);
        RUN(test_majority);
        RUN(test_journal_units);
        RUN(test_restore);
        RUN(test_restore_scope);
        RUN(test_restore_widens);
        RUN(test_restore_into_scope);
        RUN(test_through);
        RUN(test_release);
        return 0;
}
