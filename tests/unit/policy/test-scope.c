/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* decide/scope: the rule of what topod may touch, table by table; [scope]
 * in topod.conf; unit = and exclude = in a policy's [match]. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decide/config.h"
#include "decide/policy.h"
#include "decide/scope.h"
#include "tests.h"

static void set(ScopePatterns *p, const char *text) {
        char error[200];

        ASSERT_OK(scope_patterns_parse(text, p, error, sizeof error));
}

static void test_patterns(void) {
        ScopePatterns p = {};
        char error[200];

        /* '/' makes a cgroup-path glob: that cgroup and all below it */
        set(&p, "/user.slice /lab/*");
        ASSERT_EQ(p.n, 2u);
        ASSERT_TRUE(p.items[0].path);
        ASSERT_TRUE(scope_patterns_match(&p, "/user.slice"));
        ASSERT_TRUE(scope_patterns_match(&p, "/user.slice/user-1000.slice/session-2.scope"));
        ASSERT_FALSE(scope_patterns_match(&p, "/user.slicex"));
        ASSERT_TRUE(scope_patterns_match(&p, "/lab/a/b"));
        ASSERT_FALSE(scope_patterns_match(&p, "/lab"));
        ASSERT_FALSE(scope_patterns_match(&p, NULL));
        /* without '/': a unit glob against every unit on the path */
        set(&p, "system.slice kubepods*.slice user@*.service");
        ASSERT_FALSE(p.items[0].path);
        ASSERT_TRUE(scope_patterns_match(&p, "/system.slice/foo.service/sub"));
        ASSERT_TRUE(scope_patterns_match(&p, "/kubepods.slice/kubepods-burstable.slice/x.scope"));
        ASSERT_TRUE(scope_patterns_match(&p, "/user.slice/user-1000.slice/user@1000.service/app.slice/a.service"));
        ASSERT_FALSE(scope_patterns_match(&p, "/user.slice/user-1000.slice/session-2.scope"));
        /* a unit glob is not a path: "system.slice" does not match a cgroup
         * merely named like it below another */
        ASSERT_FALSE(scope_patterns_match(&p, "/lab/system.slicex"));
        set(&p, "/");
        ASSERT_TRUE(scope_patterns_match(&p, "/"));
        ASSERT_TRUE(scope_patterns_match(&p, "/anything/below"));
        /* empty is the empty list; a later value replaces */
        set(&p, "");
        ASSERT_EQ(p.n, 0u);
        ASSERT_FALSE(scope_patterns_match(&p, "/"));
        /* errors: untouched list */
        set(&p, "init.scope");
        ASSERT_EQ(scope_patterns_parse("system", &p, error, sizeof error), -EINVAL); /* no unit type */
        ASSERT_NOT_NULL(strstr(error, "matches no unit name"));
        ASSERT_EQ(scope_patterns_parse("lab/x", &p, error, sizeof error), -EINVAL);
        ASSERT_EQ(scope_patterns_parse("a b.service", &p, error, sizeof error), -EINVAL);
        ASSERT_EQ(p.n, 1u);
        {
                char many[SCOPE_PATTERNS_MAX * 4 + 8] = "";

                for (unsigned i = 0; i <= SCOPE_PATTERNS_MAX; i++)
                        strcat(many, "/a ");
                ASSERT_EQ(scope_patterns_parse(many, &p, error, sizeof error), -E2BIG);
        }
        scope_patterns_done(&p);
}

/* The rule: protect, the policy's exclude, names, include, exclude. */
static void test_rule(void) {
        static const struct {
                const char *include, *exclude, *protect, *policy_exclude;
                pid_t tgid;
                bool names;
                const char *cgroup;
                bool admits;
        } table[] = {
                /* defaults: include empty, exclude the system's */
                { "", SCOPE_DEFAULT_EXCLUDE, "", "", 100, false, "/user.slice/user-1000.slice/session-2.scope", false },
                { "", SCOPE_DEFAULT_EXCLUDE, "", "", 100, true, "/user.slice/user-1000.slice/session-2.scope", true },
                { "", SCOPE_DEFAULT_EXCLUDE, "", "", 100, true, "/system.slice/foo.service", true }, /* named: exclude yields */
                /* include: class-only policies act inside it, outside exclude */
                { "/user.slice", SCOPE_DEFAULT_EXCLUDE, "", "", 100, false, "/user.slice/user-1000.slice/session-2.scope", true },
                { "/user.slice", SCOPE_DEFAULT_EXCLUDE, "", "", 100, false,
                  "/user.slice/user-1000.slice/user@1000.service/app.slice/x.service", false },
                { "/", SCOPE_DEFAULT_EXCLUDE, "", "", 100, false, "/system.slice/journald.service", false },
                { "/", SCOPE_DEFAULT_EXCLUDE, "", "", 100, false, "/machine.slice/libpod-abc.scope/c", false },
                { "/", SCOPE_DEFAULT_EXCLUDE, "", "", 100, false, "/lab/job1", true },
                { "/", "", "", "", 100, false, "/system.slice/journald.service", true },
                { "/", SCOPE_DEFAULT_EXCLUDE, "", "", 100, false, NULL, false }, /* no cgroup: not inside */
                /* protect: nothing, even named */
                { "/", "", "/lab/keep", "", 100, true, "/lab/keep/x", false },
                { "/", "", "db-*.service", "", 100, true, "/system.slice/db-main.service", false },
                /* the policy's own exclude */
                { "/", "", "", "/lab/quiet", 100, true, "/lab/quiet", false },
                { "/", "", "", "/lab/quiet", 100, false, "/lab/loud", true },
                { "", "", "", "session-*.scope", 100, true, "/user.slice/user-0.slice/session-1.scope", false },
                /* PID 1 and topod itself, whatever the lists */
                { "/", "", "", "", 1, true, "/init.scope", false },
                { "/", "", "", "", 4242, true, "/lab/x", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                Scope s = { .self = 4242 };
                ScopePatterns ex = {};

                set(&s.include, table[i].include);
                set(&s.exclude, table[i].exclude);
                set(&s.protect, table[i].protect);
                set(&ex, table[i].policy_exclude);
                if (scope_admits(&s, table[i].tgid, table[i].names, &ex, table[i].cgroup) != table[i].admits)
                        TEST_FAIL("row %zu: %s expected for %s (names %d)", i, table[i].admits ? "admits" : "refuses",
                                  table[i].cgroup ?: "(null)", table[i].names);
                ASSERT_EQ(scope_refusal(&s, table[i].tgid, table[i].names, &ex, table[i].cgroup) == NULL, table[i].admits);
                scope_done(&s);
                scope_patterns_done(&ex);
        }
}

static IniSource src(const char *file, const char *text) {
        return (IniSource) { .file = file, .text = text, .len = strlen(text) };
}

static void test_config(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(config_freep) Config *c = NULL;
        IniSource m = src("topod.conf", "[scope]\ninclude = /user.slice /lab\nprotect = db.service\n");
        IniSource drop[] = {
                src("topod.conf.d/50-open.conf", "[scope]\nexclude =\n"),
                src("topod.conf.d/60-bad.conf", "[scope]\ninclude = lab\nexclude = /x system\n"),
        };
        char *text;

        /* defaults */
        ASSERT_OK(config_new(&c));
        ASSERT_EQ(c->scope.include.n, 0u);
        ASSERT_EQ(c->scope.protect.n, 0u);
        text = scope_patterns_format(&c->scope.exclude);
        ASSERT_STREQ(text, SCOPE_DEFAULT_EXCLUDE);
        free(text);
        c = config_free(c);

        ASSERT_EQ(config_parse_all(&m, drop, ELEMENTSOF(drop), d, &c), -EINVAL);
        /* the later file replaced exclude with the empty list; its bad
         * lines are errors at their line and leave the value before */
        ASSERT_EQ(c->scope.exclude.n, 0u);
        ASSERT_EQ(c->scope.include.n, 2u);
        ASSERT_EQ(c->scope.protect.n, 1u);
        ASSERT_EQ(d->n_errors, 2u);
        ASSERT_STREQ(d->items[0].file, "topod.conf.d/60-bad.conf");
        ASSERT_EQ(d->items[0].line, 2u);
        ASSERT_EQ(d->items[1].line, 3u);
}

static void test_cgroup_root(void) {
        ASSERT_NOT_NULL(config_cgroup_root_problem("/"));
        ASSERT_NOT_NULL(config_cgroup_root_problem("//"));
        ASSERT_NULL(config_cgroup_root_problem("/topod.slice"));
        ASSERT_NULL(config_cgroup_root_problem("/topod.slice/topod-lab.slice"));
        ASSERT_NULL(config_cgroup_root_problem("/topod")); /* no unit: a plain cgroupfs tree */
        ASSERT_NOT_NULL(config_cgroup_root_problem("/system.slice/foo.service/topod"));
        ASSERT_NOT_NULL(config_cgroup_root_problem("/user.slice/user-1000.slice/session-1.scope/t"));
        ASSERT_NOT_NULL(config_cgroup_root_problem("/machine.slice/topod"));
        ASSERT_NOT_NULL(config_cgroup_root_problem("/system.slice"));
        /* delegated to topod's own unit: below it, not its own cgroup */
        ASSERT_NULL(config_cgroup_root_problem("/system.slice/topod.service/groups"));
        ASSERT_NOT_NULL(config_cgroup_root_problem("/system.slice/topod.service"));
        {
                _cleanup_(diag_freep) Diagnostics *d = diag_new();
                _cleanup_(config_freep) Config *c = NULL;
                IniSource m = src("topod.conf", "[cgroup]\ncgroup_root = /\n");

                ASSERT_EQ(config_parse_all(&m, NULL, 0, d, &c), -EINVAL);
                ASSERT_EQ(d->items[0].line, 2u);
                ASSERT_STREQ(c->cgroup_root, "/topod.slice");
        }
}

static Policy *parse(const char *text, Diagnostics *d) {
        Policy *p = NULL;

        (void) policy_parse(text, strlen(text), "p.ini", d, &p);
        return p;
}

static void test_policy_keys(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *p =
                parse("[policy]\nname = crunch\n[match]\nunit = crunch.service batch-*.service\nunit = x.scope\n"
                      "exclude = /lab/quiet\nexclude = session-*.scope\n[place]\ncpus = all\n",
                      d);
        _cleanup_(policy_freep) Policy *q = parse("[policy]\nname = avx\n[match]\nclass = avx\nuser = alice\n[place]\ncpus = all\n", d);
        PolicyTask t = { .class = POLICY_CLASS_OTHER, .comm = "crunch", .tgid = 300,
                         .cgroup = "/system.slice/crunch.service" };
        Scope def = {};

        ASSERT_EQ(d->n_errors, 0u);
        ASSERT_NOT_NULL(p);
        ASSERT_EQ(p->match.fields[POLICY_MATCH_UNIT].n, 3u);
        ASSERT_EQ(p->match.exclude.n, 2u);
        ASSERT_TRUE(policy_match_names(&p->match));
        ASSERT_FALSE(policy_match_names(&q->match));
        set(&def.exclude, SCOPE_DEFAULT_EXCLUDE);
        /* named by unit: taken inside system.slice, which the default excludes */
        ASSERT_TRUE(policy_match_task(&p->match, &t));
        ASSERT_TRUE(policy_takes(p, &def, &t));
        t.cgroup = "/system.slice/batch-7.service/worker";
        ASSERT_TRUE(policy_takes(p, &def, &t));
        t.cgroup = "/system.slice/other.service";
        ASSERT_FALSE(policy_match_task(&p->match, &t));
        /* its own exclude */
        t.cgroup = "/user.slice/user-0.slice/session-1.scope/x.scope";
        ASSERT_TRUE(policy_match_task(&p->match, &t));
        ASSERT_FALSE(policy_takes(p, &def, &t));
        /* class and user only: nowhere by default, inside include only */
        t = (PolicyTask) { .class = POLICY_CLASS_AVX, .user = "alice", .tgid = 301, .cgroup = "/user.slice/u.slice/s.scope" };
        ASSERT_TRUE(policy_match_task(&q->match, &t));
        ASSERT_FALSE(policy_takes(q, &def, &t));
        set(&def.include, "/user.slice");
        ASSERT_TRUE(policy_takes(q, &def, &t));
        scope_done(&def);

        /* errors at their lines */
        {
                _cleanup_(diag_freep) Diagnostics *e = diag_new();
                _cleanup_(policy_freep) Policy *r =
                        parse("[policy]\nname = bad\n[match]\ncomm = x\nunit = /system.slice\nunit = crunch\n"
                              "exclude = nounit\nunit =\n[place]\ncpus = all\n",
                              e);

                ASSERT_EQ(e->n_errors, 4u);
                ASSERT_EQ(e->items[0].line, 5u);
                ASSERT_EQ(e->items[1].line, 6u);
                ASSERT_EQ(e->items[2].line, 7u);
                ASSERT_EQ(e->items[3].line, 8u);
        }
}

int main(void) {
        RUN(test_patterns);
        RUN(test_rule);
        RUN(test_config);
        RUN(test_cgroup_root);
        RUN(test_policy_keys);
        return 0;
}
