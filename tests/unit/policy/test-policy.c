/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy parser and model: values, precedence, conflicts, fall-through,
 * limits and every error class. Pure: compiled with decide/ sources only. */

#include <fnmatch.h>
#include <time.h>
#include "decide/policy.h"
#include "tests.h"

static Policy *parse_ok(const char *text, const char *file, Diagnostics *d) {
        Policy *p = NULL;
        int k = policy_parse(text, strlen(text), file, d, &p);

        if (k < 0) {
                fprintf(stderr, "parse of %s failed: %d\n", file, k);
                DUMP_DIAG(d);
                exit(EXIT_FAILURE);
        }
        return p;
}

/* Parse expecting failure; returns the diagnostics for inspection. */
static Diagnostics *parse_bad(const char *text) {
        Diagnostics *d = diag_new();
        Policy *p = NULL;
        int k;

        ASSERT_NOT_NULL(d);
        k = policy_parse(text, strlen(text), "bad.ini", d, &p);
        if (k != -EINVAL) {
                fprintf(stderr, "expected -EINVAL, got %d for:\n%s\n", k, text);
                DUMP_DIAG(d);
                exit(EXIT_FAILURE);
        }
        ASSERT_NULL(p);
        return d;
}

#define FULL                                                \
        "[policy]\n"                                        \
        "name = avx-isolation          ; unique\n"          \
        "priority = 50\n"                                   \
        "description = Keep AVX-512 work apart\n"           \
        "\n"                                                \
        "[when]\n"                                          \
        "smt = on\n"                                        \
        "llcs >= 4\n"                                       \
        "vendor = GenuineIntel AuthenticAMD\n"              \
        "kernel >= 6.6\n"                                   \
        "load = 0-85%\n"                                    \
        "\n"                                                \
        "[match]\n"                                         \
        "class = avx\n"                                     \
        "comm = gemm*\n"                                    \
        "comm = dgemm\n"                                    \
        "exe = /opt/hpc/bin/*\n"                            \
        "cmdline = *--solver*\n"                            \
        "cgroup = /system.slice/batch-*.service\n"          \
        "user = hpc\n"                                      \
        "parent = slurmstepd\n"                             \
        "\n"                                                \
        "[place]\n"                                         \
        "group = avx\n"                                     \
        "cookie = group\n"                                  \
        "cpus = llc\n"                                      \
        "spread = pack\n"                                   \
        "exclusive = no\n"                                  \
        "weight = 100\n"                                    \
        "[kernel]\n"                                        \
        "cgroup_mode = concur\n"                            \
        "[features]\n"                                      \
        "TTWU_QUEUE = off\n"                                \
        "HRTICK = on\n"

static void test_full_sketch(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *p = parse_ok(FULL, "/etc/topod/policies.d/10-avx.ini", d);

        ASSERT_EQ(d->n, 0);
        ASSERT_STREQ(p->name, "avx-isolation");
        ASSERT_EQ(p->name_line, 2);
        ASSERT_STREQ(p->file_name, "10-avx.ini");
        ASSERT_EQ(p->priority, 50);
        ASSERT_EQ(p->priority_line, 3);
        ASSERT_TRUE(p->enabled);
        ASSERT_EQ(p->when.smt, POLICY_SMT_ON);
        ASSERT_EQ(p->when.smt_line, 7);
        ASSERT_EQ(p->when.n_conditions, 2);
        ASSERT_EQ(p->when.conditions[0].kind, POLICY_WHEN_LLCS);
        ASSERT_EQ(p->when.conditions[0].cmp, POLICY_CMP_GE);
        ASSERT_EQ(p->when.conditions[0].value, 4);
        ASSERT_EQ(p->when.conditions[0].line, 8);
        ASSERT_EQ(p->when.conditions[1].kind, POLICY_WHEN_KERNEL);
        ASSERT_EQ(p->when.conditions[1].value, POLICY_KERNEL_VERSION(6, 6, 0));
        ASSERT_STREQ(p->when.vendors[1], "AuthenticAMD");
        ASSERT_TRUE(p->when.has_load);
        ASSERT_EQ(p->when.load_low, 0);
        ASSERT_EQ(p->when.load_high, 85);
        ASSERT_EQ(p->match.classes, 1u << POLICY_CLASS_AVX);
        ASSERT_EQ(p->match.fields[POLICY_MATCH_COMM].n, 2);
        ASSERT_STREQ(p->match.fields[POLICY_MATCH_COMM].items[1].glob, "dgemm");
        ASSERT_EQ(p->match.fields[POLICY_MATCH_COMM].items[1].line, 16);
        ASSERT_STREQ(p->match.fields[POLICY_MATCH_CGROUP].items[0].glob, "/system.slice/batch-*.service");
        ASSERT_TRUE(p->place.present);
        ASSERT_STREQ(p->place.group, "avx");
        ASSERT_EQ(p->place.cookie, POLICY_COOKIE_GROUP);
        ASSERT_EQ(p->place.cpus, POLICY_CPUS_LLC);
        ASSERT_EQ(p->place.spread, POLICY_SPREAD_PACK);
        ASSERT_FALSE(p->place.exclusive);
        ASSERT_EQ(p->place.weight, 100);
        ASSERT_STREQ(p->cgroup_mode, "concur");
        ASSERT_EQ(p->cgroup_mode_line, 31);
        ASSERT_EQ(p->n_features, 2);
        ASSERT_STREQ(p->features[0].name, "TTWU_QUEUE");
        ASSERT_FALSE(p->features[0].on);
        ASSERT_EQ(p->features[0].line, 33);
        ASSERT_TRUE(p->features[1].on);
}

static void test_defaults(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *p =
                parse_ok("[policy]\nname = lat\n[match]\nclass = latency\n[place]\n", "lat.ini", d);

        ASSERT_EQ(p->priority, POLICY_PRIORITY_DEFAULT);
        ASSERT_TRUE(p->enabled);
        ASSERT_FALSE(p->has_when);
        ASSERT_STREQ(p->place.group, "lat"); /* the policy name */
        ASSERT_EQ(p->place.cookie, POLICY_COOKIE_NONE);
        ASSERT_EQ(p->place.cpus, POLICY_CPUS_ALL);
        ASSERT_EQ(p->place.weight, POLICY_WEIGHT_DEFAULT);
        ASSERT_NULL(p->cgroup_mode);
}

static void test_syntax_variants(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        /* value-side operators, ':' separator, CRLF, BOM, indented lines,
         * keep, explicit cpus, several classes, kernel == 6.6 */
        _cleanup_(policy_freep) Policy *p = parse_ok("\xEF\xBB\xBF[policy]\r\nname: x\r\n"
                                                     "[when]\n  nodes = > 1\nllcs <= 8\ncpus != 3\nkernel = 6.6\n"
                                                     "[match]\nclass = avx latency\n"
                                                     "[place]\ncpus = 0-3,8\n[kernel]\ncgroup_mode = keep\n",
                                                     "v.ini", d);

        ASSERT_EQ(d->n, 0);
        ASSERT_EQ(p->when.conditions[0].kind, POLICY_WHEN_NODES);
        ASSERT_EQ(p->when.conditions[0].cmp, POLICY_CMP_GT);
        ASSERT_EQ(p->when.conditions[1].cmp, POLICY_CMP_LE);
        ASSERT_EQ(p->when.conditions[2].cmp, POLICY_CMP_NE);
        /* kernel = 6.6 is any 6.6.x: two bounds */
        ASSERT_EQ(p->when.n_conditions, 5);
        ASSERT_EQ(p->match.classes, (1u << POLICY_CLASS_AVX) | (1u << POLICY_CLASS_LATENCY));
        ASSERT_EQ(p->place.cpus, POLICY_CPUS_EXPLICIT);
        ASSERT_EQ(bitmap_count(p->place.cpu_list), 5);
        ASSERT_NULL(p->cgroup_mode);
        ASSERT_EQ(p->cgroup_mode_line, 13);
}

static void test_kernel_versions(void) {
        uint64_t v;

        ASSERT_EQ(policy_parse_kernel_version("6.8.0-31-generic", &v), 3);
        ASSERT_EQ(v, POLICY_KERNEL_VERSION(6, 8, 0));
        ASSERT_EQ(policy_parse_kernel_version("7.3", &v), 2);
        ASSERT_LT(policy_parse_kernel_version("7", &v), 0);
        ASSERT_LT(policy_parse_kernel_version("7.x", &v), 0);
        ASSERT_LT(policy_parse_kernel_version("99999.1", &v), 0);
        ASSERT_LT(policy_parse_kernel_version("", &v), 0);
}

static PolicyMachine machine(void) {
        return (PolicyMachine) {
                .smt = true, .n_llcs = 8, .n_nodes = 2, .n_packages = 2, .n_cpus = 128,
                .vendor = "AuthenticAMD", .kernel = POLICY_KERNEL_VERSION(6, 6, 12), .has_load = true, .load = 40,
        };
}

static void test_when_holds(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *p = parse_ok(FULL, "a.ini", d);
        _cleanup_(policy_freep) Policy *q = parse_ok(
                "[policy]\nname = q\n[when]\nkernel = 6.6\nkernel != 6.7\n[features]\nX = on\n", "q.ini", d);
        _cleanup_(policy_freep) Policy *r = parse_ok("[policy]\nname = r\n[when]\nkernel = > 6.6\n[features]\nX = on\n",
                                                     "r.ini", d);
        PolicyMachine m = machine();

        ASSERT_TRUE(policy_when_holds(&p->when, &m));
        ASSERT_TRUE(policy_when_holds(&q->when, &m));
        ASSERT_FALSE(policy_when_holds(&r->when, &m)); /* 6.6.12 is not above 6.6 */
        m.load = 85;
        ASSERT_TRUE(policy_when_holds(&p->when, &m));
        m.load = 86;
        ASSERT_FALSE(policy_when_holds(&p->when, &m));
        m = machine();
        m.smt = false;
        ASSERT_FALSE(policy_when_holds(&p->when, &m));
        m = machine();
        m.n_llcs = 3;
        ASSERT_FALSE(policy_when_holds(&p->when, &m));
        m = machine();
        m.vendor = "HygonGenuine";
        ASSERT_FALSE(policy_when_holds(&p->when, &m));
        m = machine();
        m.kernel = POLICY_KERNEL_VERSION(6, 1, 0);
        ASSERT_FALSE(policy_when_holds(&p->when, &m));
        ASSERT_FALSE(policy_when_holds(&q->when, &m));
        m.kernel = POLICY_KERNEL_VERSION(6, 7, 3);
        ASSERT_FALSE(policy_when_holds(&q->when, &m)); /* != 6.7 covers 6.7.x */
        ASSERT_TRUE(policy_when_holds(&r->when, &m));
        m = machine();
        m.has_load = false; /* unknown load: a band cannot hold */
        ASSERT_FALSE(policy_when_holds(&p->when, &m));
}

static void test_match_task(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *p = parse_ok(FULL, "a.ini", d);
        PolicyTask t = {
                .class = POLICY_CLASS_AVX, .comm = "gemm-bench", .exe = "/opt/hpc/bin/gemm",
                .cmdline = "gemm --solver=lu", .cgroup = "/system.slice/batch-7.service", .user = "hpc",
                .uid = 1200, .parent = "slurmstepd",
        };

        ASSERT_TRUE(policy_match_task(&p->match, &t));
        t.comm = "dgemm"; /* a repeated key is OR */
        ASSERT_TRUE(policy_match_task(&p->match, &t));
        t.comm = "sgemm";
        ASSERT_FALSE(policy_match_task(&p->match, &t));
        t.comm = "gemm";
        t.class = POLICY_CLASS_LATENCY; /* every key must match */
        ASSERT_FALSE(policy_match_task(&p->match, &t));
        t.class = POLICY_CLASS_AVX;
        t.user = NULL; /* user also matches the numeric uid */
        ASSERT_FALSE(policy_match_task(&p->match, &t));
        t.exe = NULL;
        ASSERT_FALSE(policy_match_task(&p->match, &t));
}

/* Plain names are compared, not fnmatch()ed; the result is the same. */
static void test_match_literal(void) {
        static const char TEXT[] = "[policy]\nname = lit\n[match]\ncomm = postgres\ncomm = pg_*\n"
                                   "comm = a\\*b\ncomm = x[yz]\ncomm = k\\9\n[place]\ncpus = all\n";
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *p = parse_ok(TEXT, "lit.ini", d);
        const PolicyPatterns *comm = &p->match.fields[POLICY_MATCH_COMM];
        static const char *const yes[] = { "postgres", "pg_ctl", "a*b", "xy", "k9" };
        static const char *const no[] = { "postgre", "postgres2", "Postgres", "a\\*b", "ab", "xx", "k\\9", "" };

        ASSERT_EQ(comm->n, 5);
        ASSERT_TRUE(comm->items[0].literal);
        ASSERT_FALSE(comm->items[1].literal);
        ASSERT_FALSE(comm->items[2].literal); /* a backslash escapes in fnmatch() */
        ASSERT_FALSE(comm->items[3].literal);
        ASSERT_FALSE(comm->items[4].literal); /* "k\\9" is "k9" to fnmatch() */
        ASSERT_TRUE(policy_glob_is_literal("nginx: worker"));
        ASSERT_FALSE(policy_glob_is_literal("w?rker"));
        /* What fnmatch() without flags takes as plain text, compared the same. */
        {
                static const char *const plain[] = { "a]b", "!x", ".x", "a/b", "x-y", "^z", "{a,b}", "~" };

                for (size_t i = 0; i < ELEMENTSOF(plain); i++) {
                        char longer[16], other[16];

                        ASSERT_TRUE(policy_glob_is_literal(plain[i]));
                        snprintf(longer, sizeof(longer), "%sx", plain[i]);
                        snprintf(other, sizeof(other), "x%s", plain[i]);
                        ASSERT_EQ(fnmatch(plain[i], plain[i], 0), 0);
                        ASSERT_NE(fnmatch(plain[i], longer, 0), 0);
                        ASSERT_NE(fnmatch(plain[i], other, 0), 0);
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                PolicyTask t = { .class = POLICY_CLASS_OTHER, .comm = yes[i] };

                if (!policy_match_task(&p->match, &t))
                        fprintf(stderr, "'%s' should match\n", yes[i]);
                ASSERT_TRUE(policy_match_task(&p->match, &t));
        }
        for (size_t i = 0; i < ELEMENTSOF(no); i++) {
                PolicyTask t = { .class = POLICY_CLASS_OTHER, .comm = no[i] };

                if (policy_match_task(&p->match, &t))
                        fprintf(stderr, "'%s' should not match\n", no[i]);
                ASSERT_FALSE(policy_match_task(&p->match, &t));
        }
}

/* The index's walk is exactly: the taken policies, in set order, less
 * those whose comm patterns are all names or starts ("x", "x*") and none
 * of which matches the comm. Random sets of such patterns and others,
 * against that rule with fnmatch() as the judge. */
static void test_index_walk(void) {
        static const char *const pats[] = { "ab", "abc", "a", "b", "ab*", "a*", "*", "abcd*", "b*", "a?c", "*c",
                                            "a[bc]", "x\\y", "abc*", "*b*", "a?*" };
        static const char *const comms[] = { "ab", "abc", "abcd", "abcde", "a", "b", "bc", "xy", "x\\y", "c", "" };
        unsigned seed = getenv("TOPOD_TEST_SEED") ? (unsigned) strtoul(getenv("TOPOD_TEST_SEED"), NULL, 10)
                                                  : (unsigned) time(NULL);

        printf("   seed %u (TOPOD_TEST_SEED=%u repeats it)\n", seed, seed);
        srand(seed);
        for (int round = 0; round < 300; round++) {
                _cleanup_(diag_freep) Diagnostics *d = diag_new();
                _cleanup_(policy_set_freep) PolicySet *set = NULL;
                _cleanup_(policy_index_freep) PolicyIndex *x = NULL;
                char texts[16][256], names[16][32];
                IniSource src[16];
                bool take[16];
                size_t n = 1 + (size_t) (rand() % 16);

                for (size_t i = 0; i < n; i++) {
                        int len = snprintf(texts[i], sizeof(texts[i]), "[policy]\nname = p%zu\npriority = %d\n[match]\n",
                                           i, rand() % 5);
                        int k = rand() % 4; /* patterns; 0: none (a class only) */

                        for (int j = 0; j < k; j++)
                                len += snprintf(texts[i] + len, sizeof(texts[i]) - (size_t) len, "comm = %s\n",
                                                pats[rand() % ELEMENTSOF(pats)]);
                        if (k == 0)
                                len += snprintf(texts[i] + len, sizeof(texts[i]) - (size_t) len, "class = other\n");
                        snprintf(texts[i] + len, sizeof(texts[i]) - (size_t) len, "[place]\n");
                        snprintf(names[i], sizeof(names[i]), "%02zu.ini", i);
                        src[i] = (IniSource) { .file = names[i], .text = texts[i], .len = strlen(texts[i]) };
                }
                ASSERT_OK(policy_set_parse(src, n, d, &set)); /* repeated patterns only warn */
                ASSERT_EQ(set->n, n);
                for (size_t i = 0; i < n; i++)
                        take[i] = rand() % 4 != 0;
                ASSERT_OK(policy_index_new(set, take, &x));
                for (size_t c = 0; c < ELEMENTSOF(comms); c++) {
                        PolicyWalk w = policy_index_walk(x, comms[c]);
                        size_t want = 0, got;

                        for (;; want++) {
                                bool more;

                                /* The next policy the rule keeps. */
                                for (; want < n; want++) {
                                        const PolicyPatterns *pp = &set->policies[want]->match.fields[POLICY_MATCH_COMM];
                                        bool keyed = pp->n > 0, hit = false;

                                        if (!take[want])
                                                continue;
                                        for (size_t j = 0; j < pp->n; j++) {
                                                const char *g = pp->items[j].glob;
                                                size_t gl = strlen(g);

                                                hit = hit || fnmatch(g, comms[c], 0) == 0;
                                                keyed = keyed && (pp->items[j].literal ||
                                                                  (g[gl - 1] == '*' && strcspn(g, "*?[\\") == gl - 1));
                                        }
                                        if (!keyed || hit)
                                                break;
                                }
                                more = policy_walk_next(&w, &got);
                                if (want == n) {
                                        if (more)
                                                fprintf(stderr, "round %d, comm '%s': walk gives %zu, rule none\n",
                                                        round, comms[c], got);
                                        ASSERT_FALSE(more);
                                        break;
                                }
                                if (!more || got != want)
                                        fprintf(stderr, "round %d, comm '%s': walk gives %zd, rule %zu\n", round,
                                                comms[c], more ? (ssize_t) got : (ssize_t) -1, want);
                                ASSERT_TRUE(more);
                                ASSERT_EQ(got, want);
                        }
                }
                /* Without a comm: every policy taken. */
                {
                        PolicyWalk w = policy_index_walk(x, NULL);
                        size_t got;

                        for (size_t i = 0; i < n; i++) {
                                if (!take[i])
                                        continue;
                                ASSERT_TRUE(policy_walk_next(&w, &got));
                                ASSERT_EQ(got, i);
                        }
                        ASSERT_FALSE(policy_walk_next(&w, &got));
                }
        }
}

/* A string hitting more starts than a walk follows (a kernel's comm
 * cannot, a test tree's may): every policy taken, still in order, and no
 * other. */
static void test_index_walk_many_starts(void) {
        static const char LONG[] = "abcdefghijklmnopqrstuvwxyz";
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *set = NULL;
        _cleanup_(policy_index_freep) PolicyIndex *x = NULL;
        char texts[16][256], names[16][32];
        IniSource src[16];
        bool take[16];
        PolicyWalk w;
        size_t got, want = 0;

        /* p0..p12: the starts of 2i and 2i+1 characters; p13: another name;
         * p14: not taken; p15: a glob. */
        for (size_t i = 0; i < 16; i++) {
                if (i < 13)
                        snprintf(texts[i], sizeof(texts[i]),
                                 "[policy]\nname = p%zu\npriority = %zu\n[match]\ncomm = %.*s*\ncomm = %.*s*\n[place]\n",
                                 i, 100 - i, (int) (2 * i), LONG, (int) (2 * i + 1), LONG);
                else
                        snprintf(texts[i], sizeof(texts[i]), "[policy]\nname = p%zu\npriority = %zu\n[match]\ncomm = %s\n[place]\n",
                                 i, 100 - i, i == 15 ? "*q*" : "other");
                snprintf(names[i], sizeof(names[i]), "%02zu.ini", i);
                src[i] = (IniSource) { .file = names[i], .text = texts[i], .len = strlen(texts[i]) };
                take[i] = i != 14;
        }
        ASSERT_OK(policy_set_parse(src, 16, d, &set));
        ASSERT_OK(policy_index_new(set, take, &x));
        w = policy_index_walk(x, LONG); /* 26 starts hit */
        while (policy_walk_next(&w, &got)) {
                ASSERT_EQ(got, want);
                want += want == 13 ? 2 : 1; /* every one taken: p13 too, not p14 */
        }
        ASSERT_EQ(want, 16);
        w = policy_index_walk(x, "abcdef"); /* 7 starts: p0..p3, and the glob */
        for (size_t i = 0; i < 5; i++) {
                ASSERT_TRUE(policy_walk_next(&w, &got));
                ASSERT_EQ(got, i < 4 ? i : 15);
        }
        ASSERT_FALSE(policy_walk_next(&w, &got));
}

static PolicySet *set_of(const char *const *files, const char *const *texts, size_t n, Diagnostics *d, int expect) {
        IniSource src[16];
        PolicySet *s = NULL;

        ASSERT_LE(n, 16);
        for (size_t i = 0; i < n; i++)
                src[i] = (IniSource) { .file = files[i], .text = texts[i], .len = strlen(texts[i]) };
        ASSERT_EQ(policy_set_parse(src, n, d, &s), expect);
        ASSERT_NOT_NULL(s);
        return s;
}

static void test_precedence(void) {
        static const char *const files[] = { "d/30-c.ini", "d/10-b.ini", "d/20-a.ini", "other/10-b.ini" };
        static const char *const texts[] = {
                "[policy]\nname = c\npriority = 10\n[match]\ncomm = x*\n[place]\n",
                "[policy]\nname = b\npriority = 50\n[match]\ncomm = x*\n[place]\n",
                "[policy]\nname = a\npriority = 50\n[match]\ncomm = xy*\n[place]\n",
                "[policy]\nname = b2\npriority = 50\n[match]\ncomm = xyz\n[place]\n",
        };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(files, texts, 4, d, 0);
        bool in_force[4] = { true, true, true, true };
        PolicyTask t = { .class = POLICY_CLASS_OTHER, .comm = "xyz" };

        /* priority first, then the file name (not the path), then the path */
        ASSERT_EQ(s->n, 4);
        ASSERT_STREQ(s->policies[0]->name, "b");
        ASSERT_STREQ(s->policies[1]->name, "b2");
        ASSERT_STREQ(s->policies[2]->name, "a");
        ASSERT_STREQ(s->policies[3]->name, "c");

        /* The first in-force policy that matches places the task ... */
        ASSERT_EQ(policy_set_select(s, in_force, NULL, &t), 0);
        /* ... and when it leaves force the task falls to the next. */
        in_force[0] = false;
        ASSERT_EQ(policy_set_select(s, in_force, NULL, &t), 1);
        in_force[1] = false;
        ASSERT_EQ(policy_set_select(s, in_force, NULL, &t), 2);
        t.comm = "xb";
        ASSERT_EQ(policy_set_select(s, in_force, NULL, &t), 3);
        in_force[3] = false;
        ASSERT_EQ(policy_set_select(s, in_force, NULL, &t), -1);
}

static void test_duplicate_names(void) {
        static const char *const files[] = { "b.ini", "a.ini", "c.ini" };
        static const char *const texts[] = {
                "[policy]\nname = same\n[features]\nX = on\n",
                "\n[policy]\nname = same\n[features]\nX = on\n",
                "[policy]\nname = other\n[features]\nX = on\n",
        };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(files, texts, 3, d, -EINVAL);

        /* a.ini comes first by name and keeps it; b.ini is the error */
        ASSERT_DIAG(d, DIAG_ERROR, "duplicate-name", 2);
        ASSERT_STREQ(d->items[0].file, "b.ini");
        ASSERT_EQ(s->n, 2);
        ASSERT_STREQ(s->policies[0]->file, "a.ini");
}

static void test_conflicts(void) {
        static const char *const files[] = { "lo.ini", "hi.ini", "mid.ini", "off.ini" };
        static const char *const texts[] = {
                "[policy]\nname = lo\npriority = 10\n[kernel]\ncgroup_mode = smp\n[features]\nA = on\nB = on\n",
                "[policy]\nname = hi\npriority = 90\n[kernel]\ncgroup_mode = concur\n[features]\nA = off\n",
                "[policy]\nname = mid\npriority = 50\n[kernel]\ncgroup_mode = concur\n[features]\nB = on\nC = off\n",
                "[policy]\nname = off\npriority = 99\nenabled = no\n[kernel]\ncgroup_mode = up\n",
        };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = set_of(files, texts, 4, d, 0);
        _cleanup_(policy_kernel_plan_freep) PolicyKernelPlan *plan = NULL;
        bool all[4] = { true, true, true, true };

        /* order: off(99), hi(90), mid(50), lo(10) */
        ASSERT_STREQ(s->policies[1]->name, "hi");
        ASSERT_OK(policy_set_resolve_kernel(s, all, &plan));
        ASSERT_STREQ(plan->cgroup_mode, "concur"); /* the disabled one does not count */
        ASSERT_EQ(plan->cgroup_mode_policy, 1);
        ASSERT_EQ(plan->n_features, 3);
        ASSERT_STREQ(plan->features[0].name, "A");
        ASSERT_FALSE(plan->features[0].on); /* hi wins over lo */
        ASSERT_EQ(plan->feature_policy[0], 1);
        /* losers: lo's cgroup_mode (mid agrees with hi: no conflict) and lo's A */
        ASSERT_EQ(plan->n_conflicts, 2);
        ASSERT_STREQ(plan->conflicts[0].what, "cgroup_mode");
        ASSERT_EQ(plan->conflicts[0].winner, 1);
        ASSERT_EQ(plan->conflicts[0].loser, 3);
        ASSERT_STREQ(plan->conflicts[1].what, "feature A");
        policy_kernel_plan_free(TAKE_PTR(plan));

        /* hi leaves force: lo's settings win where mid says nothing */
        all[1] = false;
        ASSERT_OK(policy_set_resolve_kernel(s, all, &plan));
        ASSERT_STREQ(plan->cgroup_mode, "concur");
        ASSERT_EQ(plan->cgroup_mode_policy, 2);
        ASSERT_TRUE(plan->features[2].on); /* A = on from lo */
        ASSERT_EQ(plan->feature_policy[2], 3);
        ASSERT_EQ(plan->n_conflicts, 1);
}

static void test_when_overlap_and_satisfiable(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *a = parse_ok("[policy]\nname=a\n[when]\nload = 0-40%\nllcs >= 4\n[features]\nX=on\n", "a.ini", d);
        _cleanup_(policy_freep) Policy *b = parse_ok("[policy]\nname=b\n[when]\nload = 50-100%\n[features]\nX=on\n", "b.ini", d);
        _cleanup_(policy_freep) Policy *c = parse_ok("[policy]\nname=c\n[when]\nllcs = < 4\n[features]\nX=on\n", "c.ini", d);
        _cleanup_(policy_freep) Policy *e = parse_ok("[policy]\nname=e\n[when]\nload = 40-60%\nsmt = on\n[features]\nX=on\n", "e.ini", d);

        ASSERT_FALSE(policy_when_may_overlap(&a->when, &b->when));
        ASSERT_FALSE(policy_when_may_overlap(&a->when, &c->when));
        ASSERT_TRUE(policy_when_may_overlap(&b->when, &c->when));
        ASSERT_TRUE(policy_when_may_overlap(&a->when, &e->when));
        ASSERT_TRUE(policy_when_satisfiable(&a->when));
}

/* ── Every error class, at the right line ── */

static void test_error_syntax(void) {
        _cleanup_(diag_freep) Diagnostics *d = parse_bad("[policy]\nname = x\njust words\n");
        ASSERT_DIAG(d, DIAG_ERROR, "syntax", 3);
        diag_free(TAKE_PTR(d));
        d = parse_bad("[policy\nname = x\n");
        ASSERT_DIAG(d, DIAG_ERROR, "syntax", 1);
        diag_free(TAKE_PTR(d));
        d = parse_bad("name = x\n[policy]\nname = x\n");
        ASSERT_DIAG(d, DIAG_ERROR, "syntax", 1);
        diag_free(TAKE_PTR(d));
        d = parse_bad("[policy]\nname = x\n[when]\nllcs > 4\n");
        ASSERT_DIAG(d, DIAG_ERROR, "syntax", 4);
        ASSERT_STR_CONTAINS(d->items[0].message, "llcs >= 4");
        diag_free(TAKE_PTR(d));
        d = parse_bad("[policy]\nname = x\n= y\n");
        ASSERT_DIAG(d, DIAG_ERROR, "syntax", 3);
        diag_free(TAKE_PTR(d));
        d = parse_bad("[policy]\nname = x\n[when]\nllcs >= >= 4\n");
        ASSERT_DIAG(d, DIAG_ERROR, "syntax", 4);
        diag_free(TAKE_PTR(d));
        d = parse_bad("[policy]\nname = x\n[place]\nweight >= 4\n[match]\ncomm=a\n");
        ASSERT_DIAG(d, DIAG_ERROR, "syntax", 4);
        diag_free(TAKE_PTR(d));
        {
                static const char nul[] = "[policy]\nname = x\nde\0sc = y\n";
                Policy *p = NULL;

                d = diag_new();
                ASSERT_EQ(policy_parse(nul, sizeof nul - 1, "nul.ini", d, &p), -EINVAL);
                ASSERT_DIAG(d, DIAG_ERROR, "syntax", 3);
        }
}

static void test_error_unknown_section_and_key(void) {
        _cleanup_(diag_freep) Diagnostics *d = parse_bad("[policy]\nname = x\n[plcae]\ncookie = group\n");
        ASSERT_DIAG(d, DIAG_ERROR, "unknown-section", 3);
        ASSERT_STR_CONTAINS(d->items[0].message, "did you mean [place]?");
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\npriorty = 3\n");
        ASSERT_DIAG(d, DIAG_ERROR, "unknown-key", 3);
        ASSERT_STR_CONTAINS(d->items[0].message, "did you mean 'priority'?");
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\ncookie = group\n");
        ASSERT_DIAG(d, DIAG_ERROR, "unknown-key", 3);
        ASSERT_STR_CONTAINS(d->items[0].message, "belongs in [place]");
        diag_free(TAKE_PTR(d));

        d = parse_bad("[Policy]\nname = x\n");
        ASSERT_STR_CONTAINS(d->items[0].message, "did you mean [policy]?");
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\n[policy]\nname = y\n");
        ASSERT_DIAG(d, DIAG_ERROR, "duplicate-section", 3);
}

static void test_error_bad_values(void) {
        static const struct {
                const char *text;
                const char *id;
                unsigned line;
                const char *hint; /* in the message, or NULL */
        } cases[] = {
                { "[policy]\nname = bad name\n", "bad-value", 2, NULL },
                { "[policy]\nname = x\npriority = high\n", "bad-value", 3, NULL },
                { "[policy]\nname = x\npriority = 1001\n", "out-of-range", 3, "0 to 1000" },
                { "[policy]\nname = x\npriority = -1\n", "bad-value", 3, NULL },
                { "[policy]\nname = x\nenabled = perhaps\n", "bad-value", 3, NULL },
                { "[policy]\nname = x\n[when]\nsmt = maybe\n", "bad-value", 4, NULL },
                { "[policy]\nname = x\n[when]\nllcs >= four\n", "bad-value", 4, NULL },
                { "[policy]\nname = x\n[when]\nkernel >= 6\n", "bad-value", 4, "MAJOR.MINOR" },
                { "[policy]\nname = x\n[when]\nload = 50\n", "bad-value", 4, "0-85%" },
                { "[policy]\nname = x\n[when]\nload = 90-10%\n", "bad-value", 4, "empty" },
                { "[policy]\nname = x\n[when]\nload = 0-2000%\n", "out-of-range", 4, NULL },
                { "[policy]\nname = x\n[when]\nvendor = Genuine/Intel\n", "bad-value", 4, NULL },
                { "[policy]\nname = x\n[when]\nsmt >= on\n", "bad-value", 4, "no comparison" },
                { "[policy]\nname = x\n[match]\nclass = latncy\n[place]\n", "bad-value", 4, "did you mean 'latency'?" },
                { "[policy]\nname = x\n[match]\ncomm = gemm[0-9\n[place]\n", "bad-value", 4, "invalid comm pattern 'gemm[0-9': '[' without" },
                { "[policy]\nname = x\n[match]\nexe = bin/gemm\n[place]\n", "bad-value", 4, "invalid exe pattern 'bin/gemm': must start with '/'" },
                { "[policy]\nname = x\n[match]\ncgroup =\n[place]\n", "bad-value", 4, NULL },
                { "[policy]\nname = x\n[match]\ncomm = a\n[place]\ncookie = grup\n", "bad-value", 6, "did you mean 'group'?" },
                { "[policy]\nname = x\n[match]\ncomm = a\n[place]\ncpus = socket\n", "bad-value", 6, NULL },
                { "[policy]\nname = x\n[match]\ncomm = a\n[place]\ncpus = 3-1\n", "bad-value", 6, NULL },
                { "[policy]\nname = x\n[match]\ncomm = a\n[place]\ncpus = 0-70000\n", "out-of-range", 6, NULL },
                { "[policy]\nname = x\n[match]\ncomm = a\n[place]\nspread = sprad\n", "bad-value", 6, "did you mean 'spread'?" },
                { "[policy]\nname = x\n[match]\ncomm = a\n[place]\nexclusive = sure\n", "bad-value", 6, NULL },
                { "[policy]\nname = x\n[match]\ncomm = a\n[place]\nweight = 0\n", "out-of-range", 6, NULL },
                { "[policy]\nname = x\n[match]\ncomm = a\n[place]\nweight = 10001\n", "out-of-range", 6, NULL },
                { "[policy]\nname = x\n[match]\ncomm = a\n[place]\ngroup = ../etc\n", "bad-value", 6, NULL },
                { "[policy]\nname = x\n[match]\ncomm = a\n[place]\ngroup = cgroup.procs\n", "bad-value", 6, NULL },
                { "[policy]\nname = x\n[kernel]\ncgroup_mode = two words\n", "bad-value", 4, NULL },
                { "[policy]\nname = x\n[features]\nttwu_queue = off\n", "bad-value", 4, "'TTWU_QUEUE'" },
                { "[policy]\nname = x\n[features]\nNO_HRTICK = on\n", "bad-value", 4, "'HRTICK = off'" },
                { "[policy]\nname = x\n[features]\nHRTICK = maybe\n", "bad-value", 4, NULL },
                { "[policy]\nname = x\n[features]\nHR-TICK = on\n", "bad-value", 4, NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(diag_freep) Diagnostics *d = parse_bad(cases[i].text);

                fprintf(stderr, "   case %zu\n", i);
                ASSERT_DIAG(d, DIAG_ERROR, cases[i].id, cases[i].line);
                if (cases[i].hint && !strstr(d->items[0].message, cases[i].hint)) {
                        fprintf(stderr, "message '%s' lacks '%s'\n", d->items[0].message, cases[i].hint);
                        exit(EXIT_FAILURE);
                }
        }
}

static void test_error_duplicates_and_contradictions(void) {
        _cleanup_(diag_freep) Diagnostics *d = parse_bad("[policy]\nname = x\npriority = 1\npriority = 2\n");
        ASSERT_DIAG(d, DIAG_ERROR, "duplicate-key", 4);
        ASSERT_STR_CONTAINS(d->items[0].message, "first at line 3");
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\n[match]\ncomm = a\n[place]\ncookie = group\ncookie = none\n");
        ASSERT_DIAG(d, DIAG_ERROR, "duplicate-key", 7);
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\n[features]\nA = on\nA = on\n");
        ASSERT_DIAG(d, DIAG_ERROR, "duplicate-key", 5);
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\n[features]\nA = on\nA = off\n");
        ASSERT_DIAG(d, DIAG_ERROR, "contradiction", 5);
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\n[when]\nllcs >= 8\nllcs = < 4\n[features]\nA = on\n");
        ASSERT_DIAG(d, DIAG_ERROR, "contradiction", 5);
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\n[when]\nkernel >= 6.8\nkernel = < 6.6\n[features]\nA = on\n");
        ASSERT_DIAG(d, DIAG_ERROR, "contradiction", 5);
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\n[when]\ncpus = 4\ncpus != 4\n[features]\nA = on\n");
        ASSERT_DIAG(d, DIAG_ERROR, "contradiction", 5);
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\n[match]\ncomm = a\n[place]\ncpus = all\nexclusive = yes\n");
        ASSERT_DIAG(d, DIAG_ERROR, "contradiction", 7);
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\n[when]\nsmt = off\n[match]\ncomm = a\n[place]\ncookie = group\n");
        ASSERT_DIAG(d, DIAG_ERROR, "contradiction", 8);
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\nname = x\n[place]\ncookie = group\n");
        ASSERT_DIAG(d, DIAG_ERROR, "missing-match", 3);
        diag_free(TAKE_PTR(d));

        d = parse_bad("[policy]\npriority = 3\n[features]\nA = on\n");
        ASSERT_DIAG(d, DIAG_ERROR, "missing-name", 1);
        diag_free(TAKE_PTR(d));

        d = parse_bad("");
        ASSERT_DIAG(d, DIAG_ERROR, "missing-name", 0);
}

static void test_parser_warnings(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *p = parse_ok("[policy]\nname = x\n[when]\nvendor = GenuineIntle\n"
                                                     "[match]\ncomm = averyveryverylongname\ncomm = a*\ncomm = a*\n"
                                                     "[place]\n",
                                                     "w.ini", d);

        ASSERT_EQ(d->n_errors, 0);
        ASSERT_DIAG(d, DIAG_WARNING, "unknown-vendor", 4);
        ASSERT_STR_CONTAINS(d->items[0].message, "GenuineIntel");
        ASSERT_DIAG(d, DIAG_WARNING, "comm-too-long", 6);
        ASSERT_DIAG(d, DIAG_WARNING, "duplicate-pattern", 8);
        ASSERT_EQ(p->match.fields[POLICY_MATCH_COMM].n, 2);
        policy_free(TAKE_PTR(p));
        diag_free(TAKE_PTR(d));

        d = diag_new();
        p = parse_ok("[policy]\nname = idle\n[when]\nsmt = on\n", "idle.ini", d);
        ASSERT_DIAG(d, DIAG_WARNING, "noop", 1);
}

/* ── Limits ── */

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static char *repeat_text(const char *head, const char *fmt, unsigned n) {
        size_t cap = strlen(head) + (size_t) n * (strlen(fmt) + 16) + 1;
        char *s = malloc(cap), *p;

        ASSERT_NOT_NULL(s);
        p = stpcpy(s, head);
        for (unsigned i = 0; i < n; i++)
                p += sprintf(p, fmt, i);
        return s;
}
#pragma GCC diagnostic pop

static void test_limits(void) {
        _cleanup_(diag_freep) Diagnostics *d = NULL;
        _cleanup_free_ char *big = NULL, *rules = NULL, *feats = NULL, *longline = NULL, *when = NULL;
        Policy *p = NULL;

        /* file size */
        big = repeat_text("[policy]\nname = big\n", "; padding padding padding padding padding %08u\n", 2000);
        d = diag_new();
        ASSERT_EQ(policy_parse(big, strlen(big), "big.ini", d, &p), -EFBIG);
        ASSERT_DIAG(d, DIAG_ERROR, "limit", 0);
        diag_free(TAKE_PTR(d));

        /* rules */
        rules = repeat_text("[policy]\nname = many\n[place]\n[match]\n", "comm = c%u\n", POLICY_RULES_MAX + 5);
        d = diag_new();
        ASSERT_EQ(policy_parse(rules, strlen(rules), "rules.ini", d, &p), -EINVAL);
        ASSERT_DIAG(d, DIAG_ERROR, "limit", 5 + POLICY_RULES_MAX);
        diag_free(TAKE_PTR(d));

        /* features */
        feats = repeat_text("[policy]\nname = many\n[features]\n", "F%u = on\n", POLICY_FEATURES_MAX + 1);
        d = diag_new();
        ASSERT_EQ(policy_parse(feats, strlen(feats), "f.ini", d, &p), -EINVAL);
        ASSERT_DIAG(d, DIAG_ERROR, "limit", 4 + POLICY_FEATURES_MAX);
        diag_free(TAKE_PTR(d));

        /* [when] lines */
        when = repeat_text("[policy]\nname = many\n[features]\nA = on\n[when]\n", "cpus >= %u\n", POLICY_WHEN_MAX + 1);
        d = diag_new();
        ASSERT_EQ(policy_parse(when, strlen(when), "w.ini", d, &p), -EINVAL);
        ASSERT_DIAG(d, DIAG_ERROR, "limit", 6 + POLICY_WHEN_MAX);
        diag_free(TAKE_PTR(d));

        /* line length, string length */
        longline = repeat_text("[policy]\nname = x\ndescription = ", "0123456789", 30);
        d = diag_new();
        ASSERT_EQ(policy_parse(longline, strlen(longline), "l.ini", d, &p), -EINVAL);
        ASSERT_DIAG(d, DIAG_ERROR, "limit", 3);
        diag_free(TAKE_PTR(d));
        free(longline);
        longline = repeat_text("[policy]\nname = x\n[features]\nA=on\n[match]\ncmdline = ", "0123456789", 17);
        d = diag_new();
        ASSERT_EQ(policy_parse(longline, strlen(longline), "l.ini", d, &p), -EINVAL);
        ASSERT_DIAG(d, DIAG_ERROR, "limit", 6);
        diag_free(TAKE_PTR(d));
        free(longline);
        longline = repeat_text("[policy]\nname = ", "0123456789", 7);
        d = diag_new();
        ASSERT_EQ(policy_parse(longline, strlen(longline), "l.ini", d, &p), -EINVAL);
        ASSERT_DIAG(d, DIAG_ERROR, "limit", 2);
        diag_free(TAKE_PTR(d));

        /* diagnostics themselves are capped */
        free(longline);
        longline = repeat_text("[policy]\nname = x\n", "junk%u\n", DIAG_MAX + 50);
        d = diag_new();
        ASSERT_EQ(policy_parse(longline, strlen(longline), "j.ini", d, &p), -EINVAL);
        ASSERT_EQ(d->n, DIAG_MAX);
        ASSERT_TRUE(d->truncated);
        ASSERT_EQ(d->n_errors, DIAG_MAX + 50);
}

static void test_policy_count_limit(void) {
        IniSource *src = calloc(POLICY_COUNT_MAX + 1, sizeof(IniSource));
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        PolicySet *s = NULL;

        ASSERT_NOT_NULL(src);
        for (size_t i = 0; i <= POLICY_COUNT_MAX; i++)
                src[i] = (IniSource) { .file = "p.ini", .text = "", .len = 0 };
        ASSERT_EQ(policy_set_parse(src, POLICY_COUNT_MAX + 1, d, &s), -E2BIG);
        ASSERT_NULL(s);
        ASSERT_DIAG(d, DIAG_ERROR, "limit", 0);
        free(src);
}

static void test_did_you_mean(void) {
        static const char *const words[] = { "policy", "when", "match", "place", "kernel", "features", NULL };

        ASSERT_STREQ(diag_closest("polcy", words), "policy");
        ASSERT_STREQ(diag_closest("feature", words), "features");
        ASSERT_STREQ(diag_closest("MATCH", words), "match");
        ASSERT_NULL(diag_closest("x", words));
        ASSERT_NULL(diag_closest("zzzzzz", words));
        ASSERT_NULL(diag_closest("", words));
        ASSERT_EQ(diag_edit_distance("kitten", "sitting", 5), 3);
        ASSERT_EQ(diag_edit_distance("abc", "abc", 1), 0);
}

/* A load band over time: entered after the dwell inside it, left after the
 * dwell beyond the hysteresis; the first reading decides at once; a
 * reading back on the side it is on resets the dwell. */
static void test_load_band(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *p = parse_ok("[policy]\nname = b\n[when]\nload = 50-100%\n[features]\nX = on\n",
                                                     "b.ini", d);
        const PolicyWhen *w = &p->when;
        PolicyLoadBand b = {};
        const uint64_t s = 1000000; /* dwell 30 s, hysteresis 5 points */

        ASSERT_FALSE(policy_load_band_update(&b, w, 20, 5, 30 * s, 0)); /* first: outside, at once */
        ASSERT_FALSE(policy_load_band_update(&b, w, 60, 5, 30 * s, 1 * s)); /* inside, dwell begins */
        ASSERT_FALSE(policy_load_band_update(&b, w, 60, 5, 30 * s, 30 * s));
        ASSERT_FALSE(policy_load_band_update(&b, w, 40, 5, 30 * s, 31 * s)); /* outside again: reset */
        ASSERT_FALSE(policy_load_band_update(&b, w, 50, 5, 30 * s, 32 * s));
        ASSERT_FALSE(policy_load_band_update(&b, w, 100, 5, 30 * s, 61 * s));
        ASSERT_TRUE(policy_load_band_update(&b, w, 70, 5, 30 * s, 62 * s)); /* 30 s inside */
        /* Within the hysteresis: held, however long. */
        ASSERT_TRUE(policy_load_band_update(&b, w, 45, 5, 30 * s, 63 * s));
        ASSERT_TRUE(policy_load_band_update(&b, w, 105, 5, 30 * s, 200 * s));
        /* Beyond it: left after the dwell, not before. */
        ASSERT_TRUE(policy_load_band_update(&b, w, 44, 5, 30 * s, 201 * s));
        ASSERT_TRUE(policy_load_band_update(&b, w, 106, 5, 30 * s, 230 * s));
        ASSERT_FALSE(policy_load_band_update(&b, w, 300, 5, 30 * s, 231 * s));
        ASSERT_FALSE(b.pending);

        /* No dwell: at once; the first reading inside holds. */
        b = (PolicyLoadBand) {};
        ASSERT_TRUE(policy_load_band_update(&b, w, 75, 0, 0, 5 * s));
        ASSERT_FALSE(policy_load_band_update(&b, w, 101, 0, 0, 5 * s));
        ASSERT_TRUE(policy_load_band_update(&b, w, 100, 0, 0, 5 * s));
        ASSERT_FALSE(policy_load_band_update(&b, w, 49, 0, 0, 6 * s));
}

/* [when] forced_idle = LOW-HIGH%: a band of 0-100% over the same update
 * as load; bad values are errors at their line. */
static void test_forced_idle_band(void) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_freep) Policy *p = parse_ok("[policy]\nname = f\n[when]\nforced_idle = 0-10%\n"
                                                     "[match]\ncomm = x\n[place]\ncookie = group\n",
                                                     "f.ini", d);
        const PolicyWhen *w = &p->when;
        PolicyLoadBand b = {};
        static const char *const bad[] = { "forced_idle = 0-101%", "forced_idle = 20-10%", "forced_idle = 10%",
                                           "forced_idle = low", "forced_idle >= 10%" };

        ASSERT_TRUE(w->has_forced_idle);
        ASSERT_EQ(w->forced_idle_low, 0u);
        ASSERT_EQ(w->forced_idle_high, 10u);
        ASSERT_EQ(w->forced_idle_line, 4u);
        ASSERT_FALSE(w->has_load);
        ASSERT_TRUE(policy_when_satisfiable(w));
        /* hysteresis 2 points, dwell 5 s */
        ASSERT_TRUE(policy_band_update(&b, 0, 10, 3, 2, 5000000, 0));
        ASSERT_TRUE(policy_band_update(&b, 0, 10, 12, 2, 5000000, 1000000)); /* within the hysteresis */
        ASSERT_TRUE(policy_band_update(&b, 0, 10, 40, 2, 5000000, 2000000)); /* beyond: the dwell begins */
        ASSERT_FALSE(policy_band_update(&b, 0, 10, 40, 2, 5000000, 7000000));
        ASSERT_FALSE(policy_band_update(&b, 0, 10, 0, 2, 5000000, 8000000)); /* back inside: waits the dwell */
        ASSERT_TRUE(policy_band_update(&b, 0, 10, 0, 2, 5000000, 13000000));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *text = NULL;

                ASSERT_GT(asprintf(&text, "[policy]\nname = x\n[when]\n%s\n", bad[i]), 0);
                diag_free(parse_bad(text));
        }
}

int main(void) {
        RUN(test_full_sketch);
        RUN(test_defaults);
        RUN(test_syntax_variants);
        RUN(test_kernel_versions);
        RUN(test_when_holds);
        RUN(test_load_band);
        RUN(test_forced_idle_band);
        RUN(test_match_task);
        RUN(test_match_literal);
        RUN(test_index_walk);
        RUN(test_index_walk_many_starts);
        RUN(test_precedence);
        RUN(test_duplicate_names);
        RUN(test_conflicts);
        RUN(test_when_overlap_and_satisfiable);
        RUN(test_error_syntax);
        RUN(test_error_unknown_section_and_key);
        RUN(test_error_bad_values);
        RUN(test_error_duplicates_and_contradictions);
        RUN(test_parser_warnings);
        RUN(test_limits);
        RUN(test_policy_count_limit);
        RUN(test_did_you_mean);
        return 0;
}
