/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The layers of policies.d on fake trees: a file of the same name in a
 * higher layer replaces the lower one, a link to /dev/null or an empty file
 * masks it, the names are read in file-name order across the layers, a
 * name used twice under different file names is still refused with
 * file:line; topoctl check names what it overrode and masked, checks the
 * policies of a topod.conf, and the pipeline's reload reads a file put in
 * the /run layer. With the programs as arguments (meson.build): topod
 * --check --config, and a missing policies directory named to topod
 * --oneshot and topoctl classify. */

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/paths.h"
#include "base/root.h"
#include "check.h"
#include "decide/policy-read.h"
#include "explain.h"
#include "fake-root.h"
#include "pipeline/pipeline.h"
#include "tests.h"

#define GUEST "tests/data/sysfs/guest-2s-4llc"
#define MOUNT "sys/fs/cgroup"

#define RUNTIME TOPOD_POLICIES_RUNTIME_DIR
#define LOCAL TOPOD_POLICIES_LOCAL_DIR
#define VENDOR TOPOD_POLICIES_VENDOR_DIR

static const char *topod_exe, *topoctl_exe;

static char *policy_text(const char *name, const char *comm) {
        char *s;

        ASSERT_GT(asprintf(&s, "[policy]\nname = %s\n\n[match]\ncomm = %s\n\n[place]\ncpus = 0\n", name, comm), 0);
        return s;
}

static void put_policy(const char *root, const char *path, const char *name, const char *comm) {
        _cleanup_free_ char *t = policy_text(name, comm);

        fake_write(root, path, t);
}

static void put_link(const char *root, const char *path, const char *target) {
        char p[PATH_MAX];

        snprintf(p, sizeof p, "%s/%s", root, path);
        mkdir_parents(p);
        ASSERT_EQ(symlink(target, p), 0);
}

static int read_layers(const char *root, Diagnostics *d, PolicySet **ret, PolicyFiles *files) {
        _cleanup_(policy_search_done) PolicySearch s = {};
        _cleanup_(root_freep) Root *r = NULL;

        ASSERT_OK(root_open(root, &r));
        ASSERT_OK(policy_search_init(&s, r, NULL, NULL));
        return policy_search_read(&s, d, ret, files);
}

static const Policy *by_name(const PolicySet *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->policies[i]->name, name))
                        return s->policies[i];
        return NULL;
}

static const PolicyFile *file_ending(const PolicyFiles *f, const char *suffix) {
        for (size_t i = 0; i < f->n; i++) {
                size_t a = strlen(f->items[i].path), b = strlen(suffix);

                if (a >= b && streq(f->items[i].path + a - b, suffix))
                        return &f->items[i];
        }
        return NULL;
}

static void test_override(void) {
        _cleanup_free_ char *root = fake_root_new();
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = NULL;
        _cleanup_(policy_files_done) PolicyFiles f = {};
        const PolicyFile *x;

        put_policy(root, VENDOR "/20-svc.ini", "svc", "shipped");
        put_policy(root, LOCAL "/20-svc.ini", "svc", "local");
        put_policy(root, VENDOR "/30-batch.ini", "batch", "batch");
        put_policy(root, RUNTIME "/30-batch.ini", "batch", "transient");
        put_policy(root, LOCAL "/30-batch.ini", "batch", "local");
        ASSERT_OK(read_layers(root, d, &s, &f));
        DUMP_DIAG(d);
        ASSERT_EQ(d->n, 0);
        ASSERT_EQ(s->n, 2);
        ASSERT_STREQ(by_name(s, "svc")->match.fields[POLICY_MATCH_COMM].items[0].glob, "local");
        ASSERT_STREQ(by_name(s, "svc")->layer, "local");
        ASSERT_STREQ(by_name(s, "batch")->match.fields[POLICY_MATCH_COMM].items[0].glob, "transient");
        ASSERT_STREQ(by_name(s, "batch")->layer, "runtime");
        ASSERT_EQ(by_name(s, "batch")->policy_line, 1);
        /* every file, and what became of it: name order, then layer order */
        ASSERT_EQ(f.n, 5);
        ASSERT_STR_CONTAINS(f.items[0].path, LOCAL "/20-svc.ini");
        ASSERT_EQ(f.items[0].state, POLICY_FILE_USED);
        ASSERT_EQ(f.items[1].state, POLICY_FILE_OVERRIDDEN);
        ASSERT_STREQ(f.items[1].layer, "vendor");
        ASSERT_STR_CONTAINS(f.items[1].by, LOCAL "/20-svc.ini");
        ASSERT_STR_CONTAINS(f.items[2].path, RUNTIME "/30-batch.ini");
        x = &f.items[3];
        ASSERT_STREQ(x->layer, "local");
        ASSERT_EQ(x->state, POLICY_FILE_OVERRIDDEN);
        ASSERT_STR_CONTAINS(x->by, RUNTIME "/30-batch.ini");
        fake_root_remove(TAKE_PTR(root));
}

static void test_mask(void) {
        _cleanup_free_ char *root = fake_root_new();
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = NULL;
        _cleanup_(policy_files_done) PolicyFiles f = {};
        const PolicyFile *x;

        put_policy(root, VENDOR "/10-avx.ini", "avx", "avx");
        put_link(root, LOCAL "/10-avx.ini", "/dev/null");
        put_policy(root, VENDOR "/20-svc.ini", "svc", "svc");
        put_policy(root, LOCAL "/20-svc.ini", "svc", "local");
        fake_write(root, RUNTIME "/20-svc.ini", ""); /* empty: a mask too */
        put_link(root, LOCAL "/30-none.ini", "/dev/null"); /* masks nothing */
        put_policy(root, VENDOR "/40-kept.ini", "kept", "kept");
        ASSERT_OK(read_layers(root, d, &s, &f));
        DUMP_DIAG(d);
        ASSERT_EQ(d->n, 0);
        ASSERT_EQ(s->n, 1);
        ASSERT_STREQ(s->policies[0]->name, "kept");
        ASSERT_STREQ(s->policies[0]->layer, "vendor");
        ASSERT_NOT_NULL(x = file_ending(&f, VENDOR "/10-avx.ini"));
        ASSERT_EQ(x->state, POLICY_FILE_MASKED);
        ASSERT_STR_CONTAINS(x->by, LOCAL "/10-avx.ini");
        ASSERT_EQ(file_ending(&f, LOCAL "/10-avx.ini")->state, POLICY_FILE_MASK);
        ASSERT_EQ(file_ending(&f, RUNTIME "/20-svc.ini")->state, POLICY_FILE_MASK);
        ASSERT_EQ(file_ending(&f, LOCAL "/20-svc.ini")->state, POLICY_FILE_MASKED);
        ASSERT_EQ(file_ending(&f, VENDOR "/20-svc.ini")->state, POLICY_FILE_MASKED);
        ASSERT_EQ(file_ending(&f, LOCAL "/30-none.ini")->state, POLICY_FILE_MASK);
        fake_root_remove(TAKE_PTR(root));
}

/* Names sort across the layers (systemd's conf_files_list): the set's
 * order among equal priorities is the file name's, whatever the layer. */
static void test_order_and_refusals(void) {
        _cleanup_free_ char *root = fake_root_new();
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = NULL;
        _cleanup_(policy_files_done) PolicyFiles f = {};
        char want[PATH_MAX];
        const Diagnostic *dup = NULL;

        put_policy(root, VENDOR "/10-x.ini", "x", "x");
        put_policy(root, LOCAL "/20-y.ini", "y", "y");
        put_policy(root, RUNTIME "/05-z.ini", "z", "z");
        put_policy(root, VENDOR "/15-w.ini", "w", "w");
        ASSERT_OK(read_layers(root, d, &s, &f));
        ASSERT_EQ(s->n, 4);
        ASSERT_STREQ(s->policies[0]->name, "z");
        ASSERT_STREQ(s->policies[1]->name, "x");
        ASSERT_STREQ(s->policies[2]->name, "w");
        ASSERT_STREQ(s->policies[3]->name, "y");
        policy_set_free(TAKE_PTR(s));
        policy_files_done(&f);

        /* the same name under another file name: still refused, at the
         * later file's name line, naming the first */
        put_policy(root, LOCAL "/50-again.ini", "x", "again");
        /* a link elsewhere is not a mask, and is refused as a link */
        put_link(root, LOCAL "/60-link.ini", "/etc/hostname");
        ASSERT_EQ(read_layers(root, d, &s, &f), -EINVAL);
        DUMP_DIAG(d);
        ASSERT_EQ(s->n, 4);
        for (size_t i = 0; i < d->n; i++)
                if (streq(d->items[i].id, "duplicate-name"))
                        dup = &d->items[i];
        ASSERT_NOT_NULL(dup);
        snprintf(want, sizeof want, "%s%s", root, LOCAL "/50-again.ini");
        ASSERT_STREQ(dup->file, want);
        ASSERT_EQ(dup->line, 2);
        ASSERT_STR_CONTAINS(dup->message, VENDOR "/10-x.ini:2");
        snprintf(want, sizeof want, "%s%s", root, LOCAL "/60-link.ini");
        ASSERT_TRUE(diag_has(d, DIAG_ERROR, "io"));
        for (size_t i = 0; i < d->n; i++)
                if (streq(d->items[i].id, "io"))
                        ASSERT_STREQ(d->items[i].file, want);
        fake_root_remove(TAKE_PTR(root));
}

static void test_no_layer_at_all(void) {
        _cleanup_free_ char *root = fake_root_new();
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = NULL;
        _cleanup_(policy_search_done) PolicySearch search = {};
        _cleanup_(root_freep) Root *r = NULL;

        ASSERT_OK(read_layers(root, d, &s, NULL));
        ASSERT_EQ(s->n, 0);
        ASSERT_EQ(d->n, 0);
        ASSERT_OK(root_open(root, &r));
        ASSERT_OK(policy_search_init(&search, r, NULL, NULL));
        ASSERT_FALSE(policy_search_any_dir(&search));
        fake_root_remove(TAKE_PTR(root));
}

/* topoctl_check_config() with stdout captured; returns the exit code. */
static int run_check(char **out, const char *config, char *const *paths, size_t n, bool json, const char *root) {
        FILE *tmp = tmpfile();
        int saved, rc;
        long len;

        ASSERT_NOT_NULL(tmp);
        fflush(stdout);
        saved = dup(STDOUT_FILENO);
        ASSERT_GE(dup2(fileno(tmp), STDOUT_FILENO), 0);
        rc = topoctl_check_config(config, paths, n, false, true, json, root);
        fflush(stdout);
        ASSERT_GE(dup2(saved, STDOUT_FILENO), 0);
        close(saved);
        len = ftell(tmp);
        *out = calloc(1, (size_t) len + 1);
        ASSERT_NOT_NULL(*out);
        rewind(tmp);
        ASSERT_EQ(fread(*out, 1, (size_t) len, tmp), len);
        fclose(tmp);
        fprintf(stderr, "%s", *out);
        return rc;
}

static void test_check_names_layers(void) {
        _cleanup_free_ char *root = fake_root_new(), *out = NULL, *json = NULL;
        char line[PATH_MAX * 2];

        put_policy(root, VENDOR "/20-svc.ini", "svc", "svc");
        put_policy(root, LOCAL "/20-svc.ini", "svc", "local");
        put_policy(root, VENDOR "/30-avx.ini", "avx", "avx");
        put_link(root, LOCAL "/30-avx.ini", "/dev/null");
        ASSERT_EQ(run_check(&out, NULL, NULL, 0, false, root), 0);
        snprintf(line, sizeof line, "%s%s: note: overridden by %s%s\n", root, VENDOR "/20-svc.ini", root, LOCAL "/20-svc.ini");
        ASSERT_STR_CONTAINS(out, line);
        snprintf(line, sizeof line, "%s%s: note: masked by %s%s\n", root, VENDOR "/30-avx.ini", root, LOCAL "/30-avx.ini");
        ASSERT_STR_CONTAINS(out, line);
        ASSERT_STR_CONTAINS(out, "\n1 policy, 0 errors, 0 warnings\n");
        ASSERT_EQ(run_check(&json, NULL, NULL, 0, true, root), 0);
        ASSERT_STR_CONTAINS(json, "\"layer\": \"local\"");
        ASSERT_STR_CONTAINS(json, "\"state\": \"masked\"");
        ASSERT_STR_CONTAINS(json, "\"state\": \"overridden\"");
        ASSERT_STR_CONTAINS(json, "\"policy_count\": 1");
        fake_root_remove(TAKE_PTR(root));
}

/* A topod.conf checked brings the policies of its policies_dir: a broken
 * one there, or the directory missing, fails the check. */
static void test_check_conf_policies(void) {
        _cleanup_free_ char *root = fake_root_new(), *conf = NULL, *out = NULL, *out2 = NULL, *out3 = NULL,
                            *dir = NULL, *text = NULL;
        char *paths[1];

        ASSERT_GT(asprintf(&dir, "%s/srv/policies", root), 0);
        ASSERT_GT(asprintf(&text, "[daemon]\npolicies_dir = %s\n", dir), 0);
        fake_write(root, "cfg/topod.conf", text);
        ASSERT_GT(asprintf(&conf, "%s/cfg/topod.conf", root), 0);
        paths[0] = conf;

        /* missing directory */
        ASSERT_EQ(run_check(&out, NULL, paths, 1, false, NULL), 1);
        ASSERT_STR_CONTAINS(out, "/srv/policies: error: cannot read: No such file or directory");
        ASSERT_STR_CONTAINS(out, "0 policies, 1 error, 0 warnings\n");

        /* a broken policy there */
        fake_write(root, "srv/policies/10-bad.ini", "[policy]\nname = bad\n[match]\nclas = avx\n");
        ASSERT_EQ(run_check(&out2, NULL, paths, 1, false, NULL), 1);
        ASSERT_STR_CONTAINS(out2, "/srv/policies/10-bad.ini:4: error: ");

        /* the same through --config, whatever the file's name */
        unlink(conf);
        fake_write(root, "cfg/settings", text);
        free(conf);
        ASSERT_GT(asprintf(&conf, "%s/cfg/settings", root), 0);
        ASSERT_EQ(run_check(&out3, conf, NULL, 0, false, NULL), 1);
        ASSERT_STR_CONTAINS(out3, "/srv/policies/10-bad.ini:4: error: ");
        fake_root_remove(TAKE_PTR(root));
}

static char *world_root(void) {
        char *root = fake_root_new();
        char cmd[PATH_MAX];

        snprintf(cmd, sizeof cmd, "cp -R " GUEST "/. '%s'/", root);
        ASSERT_EQ(system(cmd), 0);
        fake_write(root, "etc/passwd", "root:x:0:0::/root:/bin/sh\n");
        fake_write(root, "proc/sys/kernel/osrelease", "6.12.0\n");
        fake_write(root, MOUNT "/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_write(root, MOUNT "/cgroup.subtree_control", "\n");
        fake_write(root, MOUNT "/cgroup.procs", "");
        fake_write(root, MOUNT "/cpuset.cpus.effective", "0-15\n");
        return root;
}

/* The pipeline reads the layers, and its reload picks up a file put in the
 * /run layer: a new name, and one that overrides the shipped file. */
static void test_reload_reads_runtime_layer(void) {
        _cleanup_free_ char *root = world_root(), *reason = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(pipeline_freep) Pipeline *p = NULL;
        PipelineOptions o = { .root = root };

        put_policy(root, VENDOR "/20-svc.ini", "svc", "shipped");
        if (pipeline_new(&o, d, &p, &reason) < 0)
                TEST_FAIL("pipeline_new: %s", reason ?: "?");
        ASSERT_EQ(p->decide.policies->n, 1);
        ASSERT_STREQ(p->decide.policies->policies[0]->layer, "vendor");

        put_policy(root, RUNTIME "/20-svc.ini", "svc", "transient");
        put_policy(root, RUNTIME "/30-extra.ini", "extra", "extra");
        ASSERT_OK(pipeline_reload(p, d));
        DUMP_DIAG(d);
        ASSERT_EQ(p->decide.policies->n, 2);
        ASSERT_STREQ(by_name(p->decide.policies, "svc")->layer, "runtime");
        ASSERT_STREQ(by_name(p->decide.policies, "svc")->match.fields[POLICY_MATCH_COMM].items[0].glob, "transient");
        ASSERT_STREQ(by_name(p->decide.policies, "extra")->layer, "runtime");

        /* a broken one in /run: refused, what runs is kept */
        fake_write(root, RUNTIME "/40-bad.ini", "[policy]\nname = bad\n[match]\nclas = avx\n");
        ASSERT_EQ(pipeline_reload(p, d), -EINVAL);
        ASSERT_EQ(p->decide.policies->n, 2);
        fake_root_remove(TAKE_PTR(root));
}

static void fake_process(const char *root, pid_t pid, const char *comm, const char *cgroup) {
        char rel[128], text[512];

        snprintf(text, sizeof(text),
                 "%d (%s) S 1 %d %d 0 -1 0 0 0 0 0 10 5 0 0 20 0 1 0 %u 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2 0 0\n",
                 (int) pid, comm, (int) pid, (int) pid, 5000u + (unsigned) pid);
        snprintf(rel, sizeof(rel), "proc/%d/stat", (int) pid);
        fake_write(root, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) pid, (int) pid);
        fake_write(root, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/schedstat", (int) pid, (int) pid);
        fake_write(root, rel, "1000 0 1\n");
        snprintf(rel, sizeof(rel), "proc/%d/task/%d/status", (int) pid, (int) pid);
        snprintf(text, sizeof(text), "Name:\t%s\nTgid:\t%d\nUid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t100\n",
                 comm, (int) pid);
        fake_write(root, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/comm", (int) pid);
        snprintf(text, sizeof(text), "%s\n", comm);
        fake_write(root, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/cmdline", (int) pid);
        fake_write_n(root, rel, comm, strlen(comm) + 1);
        snprintf(rel, sizeof(rel), "proc/%d/cgroup", (int) pid);
        snprintf(text, sizeof(text), "0::%s\n", cgroup);
        fake_write(root, rel, text);
}

/* explain names the policy's file, the line of its [policy] header (not
 * of its [place]) and its layer, in text and JSON. */
static void test_explain_names_file_line_layer(void) {
        _cleanup_free_ char *root = world_root(), *reason = NULL, *text = NULL, *json = NULL, *want = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(pipeline_freep) Pipeline *p = NULL;
        _cleanup_(plan_freep) Plan *plan = NULL;
        PipelineOptions o = { .root = root };
        ExplainContext x = {};
        size_t len = 0;
        FILE *f;

        fake_mkdir(root, MOUNT "/user.slice");
        fake_process(root, 200, "svc-a", "/user.slice");
        /* comments above the section: [policy] on line 3, [place] on 8 */
        fake_write(root, LOCAL "/20-svc.ini",
                   "# a service\n\n[policy]\nname = svc\n\n[match]\ncomm = svc-a\n[place]\ncpus = 0\n");
        if (pipeline_new(&o, d, &p, &reason) < 0)
                TEST_FAIL("pipeline_new: %s", reason ?: "?");
        p->decide.config->scope.self = 1;
        ASSERT_OK(pipeline_sample(p, false));
        ASSERT_OK(pipeline_plan(p, NULL, &plan));
        x = (ExplainContext) { .p = p, .plan = plan };

        f = open_memstream(&text, &len);
        ASSERT_NOT_NULL(f);
        ASSERT_OK(explain_write(&x, 200, false, f));
        fclose(f);
        fprintf(stderr, "%s", text);
        ASSERT_GT(asprintf(&want, "policy:   svc (%s%s:3, layer local)", root, LOCAL "/20-svc.ini"), 0);
        ASSERT_STR_CONTAINS(text, want);

        f = open_memstream(&json, &len);
        ASSERT_NOT_NULL(f);
        ASSERT_OK(explain_write(&x, 200, true, f));
        fclose(f);
        ASSERT_STR_CONTAINS(json, "\"line\": 3,");
        ASSERT_STR_CONTAINS(json, "\"layer\": \"local\"");
        fake_root_remove(TAKE_PTR(root));
}

/* Run a shell command; its exit code, and its output (both streams). */
static int sh(char **out, const char *fmt, ...) _printf_(2, 3);
static int sh(char **out, const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL, *full = NULL;
        char buf[4096];
        size_t n;
        va_list ap;
        FILE *f;
        int st;

        va_start(ap, fmt);
        ASSERT_GT(vasprintf(&cmd, fmt, ap), 0);
        va_end(ap);
        ASSERT_GT(asprintf(&full, "%s 2>&1", cmd), 0);
        fprintf(stderr, "$ %s\n", cmd);
        f = popen(full, "r");
        ASSERT_NOT_NULL(f);
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        st = pclose(f);
        fprintf(stderr, "%s", buf);
        *out = strdup(buf);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The programs: topod --check --config FILE; a policies directory named
 * that is missing stops topod --oneshot --dry-run and topoctl classify
 * with a message naming it. */
static void test_programs(void) {
        _cleanup_free_ char *root = NULL, *a = NULL, *b = NULL, *c = NULL, *e = NULL, *g = NULL;

        if (!topod_exe || !topoctl_exe) {
                fprintf(stderr, "SKIP part: no programs given\n");
                return;
        }
        root = world_root();
        fake_write(root, "cfg/settings", "[daemon]\nsample_interval = 2s\n");
        put_policy(root, "cfg/p/10-a.ini", "a", "a");
        ASSERT_EQ(sh(&a, "%s --check --offline --config %s/cfg/settings --policies %s/cfg/p", topod_exe, root, root), 0);
        ASSERT_STR_CONTAINS(a, "1 policy, 0 errors, 0 warnings");
        fake_write(root, "cfg/bad", "[daemon]\nsample_intervall = 2s\n");
        ASSERT_EQ(sh(&b, "%s --check --offline --config %s/cfg/bad --policies %s/cfg/p", topod_exe, root, root), 1);
        ASSERT_STR_CONTAINS(b, "cfg/bad:2: error: unknown key");

        ASSERT_EQ(sh(&c, "%s --oneshot --dry-run --root %s --policies %s/nowhere", topod_exe, root, root), 1);
        ASSERT_STR_CONTAINS(c, "topod: cannot read the policies in ");
        ASSERT_STR_CONTAINS(c, "/nowhere: No such file or directory");
        ASSERT_STR_NOT_CONTAINS(c, ":0:");
        fake_write(root, TOPOD_CONFIG_PATH, "[daemon]\npolicies_dir = /nowhere\n");
        ASSERT_EQ(sh(&e, "%s --oneshot --dry-run --root %s", topod_exe, root), 1);
        ASSERT_STR_CONTAINS(e, "/nowhere: No such file or directory");
        ASSERT_EQ(sh(&g, "%s classify --root %s --samples 1", topoctl_exe, root), 1);
        ASSERT_STR_CONTAINS(g, "topoctl: cannot read the policies in ");
        fake_root_remove(TAKE_PTR(root));
}

int main(int argc, char *argv[]) {
        if (argc > 2) {
                topod_exe = argv[1];
                topoctl_exe = argv[2];
        }
        RUN(test_override);
        RUN(test_mask);
        RUN(test_order_and_refusals);
        RUN(test_no_layer_at_all);
        RUN(test_check_names_layers);
        RUN(test_check_conf_policies);
        RUN(test_reload_reads_runtime_layer);
        RUN(test_explain_names_file_line_layer);
        RUN(test_programs);
        return 0;
}
