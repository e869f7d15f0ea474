/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cgrouptool: the cgroup writer (cgroup_*) and the journal on a real kernel,
 * for the guest tier (tests/vm/test_cgroup.py). Prints JSON on stdout.
 *
 *   cgrouptool apply [--journal DIR] [--moves N] [--hold FILE] SPEC...
 *   cgrouptool restore --journal DIR
 *
 * The plan is built by hand for the guest's machine (LLCs {0-3} {4-7} {8-11}
 * {12-15}, nodes 0-7 / 8-15), nested under /topod.slice:
 *
 *   node0        0-7   mems 0  weight 100
 *   node0/llc0   0-3   mems 0  weight 200
 *   node0/llc1   4-7   mems 0  weight 300
 *   node1        8-15  mems 1  weight 100
 *   node1/llc2   8-11  mems 1  weight 400
 *   node1/llc3   12-15 mems 1  weight 500  exclusive
 *
 * SPEC places tasks: PID=GROUP every thread of a process, TGID:TID=GROUP
 * one thread. Start times are read from /proc now; a task that is not there
 * is planned with start time 0 (the writer must report it vanished).
 *
 * --moves N: move only the first N processes (a partial apply).
 * --hold FILE: after applying, create FILE and wait to be killed (the test
 * kills -9 there to leave the journal behind, as a crash would).
 * Exit: 0 nothing failed, 1 something failed, 2 usage. */

#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apply/cgroup.h"
#include "apply/journal.h"
#include "apply/pidref.h"
#include "base/bitmap.h"
#include "base/json.h"
#include "base/root.h"
#include "base/util.h"
#include "observe/kernelcaps.h"
#include "guest-tool.h"

static const struct {
        const char *path, *cpus, *mems;
        unsigned weight;
        bool exclusive;
} groups[] = {
        { "node0", "0-7", "0", 100, false },       { "node0/llc0", "0-3", "0", 200, false },
        { "node0/llc1", "4-7", "0", 300, false },  { "node1", "8-15", "1", 100, false },
        { "node1/llc2", "8-11", "1", 400, false }, { "node1/llc3", "12-15", "1", 500, true },
};

static int group_index(const char *path) {
        for (size_t i = 0; i < ELEMENTSOF(groups); i++)
                if (streq(groups[i].path, path))
                        return (int) i;
        return -1;
}

static int add_task(const Root *root, Plan *p, pid_t tgid, pid_t tid, int group) {
        PlanTask *t;
        uint64_t st = 0;

        if (pidref_read_start_time(root, -1, tid, &st) < 0)
                st = 0; /* not there: planned anyway, reported vanished */
        t = realloc(p->tasks, (p->n_tasks + 1) * sizeof(PlanTask));
        if (!t)
                return -ENOMEM;
        p->tasks = t;
        p->tasks[p->n_tasks++] = (PlanTask) {
                .tid = tid, .tgid = tgid, .start_time = st, .policy = 0, .group = group, .cookie_group = -1
        };
        return 0;
}

static int task_cmp(const void *a, const void *b) {
        const PlanTask *x = a, *y = b;

        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int add_spec(const Root *root, Plan *p, const char *spec) {
        _cleanup_free_ char *s = strdup(spec);
        char *eq, *colon, path[64];
        int g, k;

        if (!s)
                return -ENOMEM;
        eq = strchr(s, '=');
        if (!eq)
                return -EINVAL;
        *eq = '\0';
        g = group_index(eq + 1);
        if (g < 0)
                return -EINVAL;
        colon = strchr(s, ':');
        if (colon) {
                *colon = '\0';
                return add_task(root, p, (pid_t) atoi(s), (pid_t) atoi(colon + 1), g);
        }

        pid_t pid = (pid_t) atoi(s);
        DIR *d;
        struct dirent *de;
        bool any = false;

        if (pid <= 0)
                return -EINVAL;
        snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (d) {
                while ((de = readdir(d)))
                        if (de->d_name[0] != '.') {
                                k = add_task(root, p, pid, (pid_t) atoi(de->d_name), g);
                                if (k < 0) {
                                        closedir(d);
                                        return k;
                                }
                                any = true;
                        }
                closedir(d);
        }
        return any ? 0 : add_task(root, p, pid, pid, g);
}

static int build_plan(const Root *root, char **specs, int n, Plan **ret) {
        _cleanup_(plan_freep) Plan *p = calloc(1, sizeof(Plan));
        int k;

        if (!p)
                return -ENOMEM;
        p->hierarchy = CONFIG_HIERARCHY_NESTED;
        p->cgroup_root = strdup("/topod.slice");
        p->groups = calloc(ELEMENTSOF(groups), sizeof(PlanGroup));
        if (!p->cgroup_root || !p->groups)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(groups); i++) {
                PlanGroup *g = &p->groups[p->n_groups++];

                *g = (PlanGroup) { .policy = 0, .domain = -1, .weight = groups[i].weight,
                                   .exclusive = groups[i].exclusive };
                g->path = strdup(groups[i].path);
                if (!g->path)
                        return -ENOMEM;
                k = bitmap_parse_list(groups[i].cpus, &g->cpus);
                if (k >= 0)
                        k = bitmap_parse_list(groups[i].mems, &g->mems);
                if (k < 0)
                        return k;
        }
        for (int i = 0; i < n; i++) {
                k = add_spec(root, p, specs[i]);
                if (k < 0)
                        return k;
        }
        if (p->n_tasks > 0)
                qsort(p->tasks, p->n_tasks, sizeof(PlanTask), task_cmp);
        *ret = TAKE_PTR(p);
        return 0;
}

static void report_json(Json *j, const CgroupReport *r) {
        json_key(j, "counts");
        json_object_begin(j);
        for (CgroupOutcome o = 0; o < _CGROUP_OUTCOME_MAX; o++)
                json_kv_uint(j, cgroup_outcome_to_string(o), cgroup_report_count(r, o));
        json_object_end(j);
        json_key(j, "items");
        json_array_begin(j);
        for (size_t i = 0; i < r->n; i++) {
                const CgroupResult *it = &r->items[i];

                json_object_begin(j);
                json_kv_string(j, "kind", cgroup_item_kind_to_string(it->kind));
                json_kv_string(j, "path", it->path);
                json_kv_string(j, "value", it->value);
                json_kv_string(j, "found", it->found);
                if (it->kind == CGROUP_ITEM_MOVE) {
                        json_kv_int(j, "pid", it->pid);
                        json_kv_int(j, "tgid", it->tgid);
                        json_kv_string(j, "from", it->from);
                }
                json_kv_bool(j, "journaled", it->journaled);
                json_kv_string(j, "outcome", cgroup_outcome_to_string(it->outcome));
                json_key(j, "error");
                if (it->error)
                        json_string(j, errno_name(it->error));
                else
                        json_null(j);
                json_kv_string(j, "reason", it->reason);
                json_object_end(j);
        }
        json_array_end(j);
}

static int verb_apply(const Root *root, const CgroupEnv *env, const char *jdir, long moves, const char *hold_file,
                      char **specs, int n) {
        _cleanup_(journal_freep) Journal *jn = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        _cleanup_(plan_freep) Plan *p = NULL;
        int failed, k;

        k = build_plan(root, specs, n, &p);
        if (k < 0) {
                error_json("build_plan", k, "bad SPEC (PID=GROUP or TGID:TID=GROUP)");
                return 2;
        }
        if (open_journal(jdir, &jn) < 0)
                return 1;
        if (cgroup_report_new(&r) < 0)
                return 1;
        failed = cgroup_apply_tree(env, p, jn, r);
        if (failed >= 0) {
                int f2;

                if (moves >= 0) {
                        /* Keep only the threads of the first N processes (tgid order). */
                        size_t keep = 0;
                        long seen = 0;
                        pid_t last = 0;
                        CgroupProcess *procs = NULL;
                        size_t n_procs = 0;

                        k = cgroup_plan_processes(p, &procs, &n_procs);
                        if (k < 0)
                                return 1;
                        for (size_t i = 0; i < n_procs; i++)
                                if (seen < moves) {
                                        last = procs[i].tgid;
                                        seen++;
                                }
                        cgroup_processes_free(procs, n_procs);
                        for (size_t i = 0; i < p->n_tasks; i++)
                                if (seen > 0 && p->tasks[i].tgid <= last)
                                        p->tasks[keep++] = p->tasks[i];
                        p->n_tasks = keep;
                }
                f2 = cgroup_apply_tasks(env, p, jn, r);
                failed = f2 < 0 ? f2 : failed + f2;
        }
        {
                _cleanup_(json_freep) Json *j = json_new(stdout, true);

                json_object_begin(j);
                json_key(j, "error");
                if (failed < 0)
                        json_string(j, errno_name(failed));
                else
                        json_null(j);
                json_kv_int(j, "failed", failed < 0 ? -1 : failed);
                report_json(j, r);
                json_object_end(j);
        }
        hold(hold_file);
        return failed == 0 ? 0 : 1;
}

static int verb_restore(const CgroupEnv *env, const char *jdir) {
        _cleanup_(journal_freep) Journal *jn = NULL;
        _cleanup_(cgroup_report_freep) CgroupReport *r = NULL;
        int found, failed, k = 0;
        bool removed = false;
        size_t entries;

        if (!jdir) {
                fprintf(stderr, "cgrouptool restore: --journal DIR is required\n");
                return 2;
        }
        found = open_journal(jdir, &jn);
        if (found < 0)
                return 1;
        if (cgroup_report_new(&r) < 0)
                return 1;
        entries = journal_n_entries(jn);
        failed = cgroup_restore(env, jn, r);
        if (failed >= 0 && journal_is_empty(jn)) {
                k = journal_remove(jdir);
                removed = k >= 0;
        }
        {
                _cleanup_(json_freep) Json *j = json_new(stdout, true);

                json_object_begin(j);
                json_kv_bool(j, "journal_found", found > 0);
                json_kv_uint(j, "entries", entries);
                json_key(j, "error");
                if (failed < 0)
                        json_string(j, errno_name(failed));
                else
                        json_null(j);
                json_kv_int(j, "failed", failed < 0 ? -1 : failed);
                json_kv_uint(j, "entries_left", journal_n_entries(jn));
                json_kv_bool(j, "journal_removed", removed);
                report_json(j, r);
                json_object_end(j);
        }
        return failed == 0 && k >= 0 ? 0 : 1;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "journal", required_argument, NULL, 'j' },
                { "hold", required_argument, NULL, 'H' },
                { "moves", required_argument, NULL, 'm' },
                {},
        };
        _cleanup_(kernelcaps_freep) KernelCaps *caps = NULL;
        _cleanup_(root_freep) Root *root = NULL;
        const char *jdir = NULL, *hold_file = NULL, *verb;
        long moves = -1;
        CgroupEnv env;
        int c, k;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'j':
                        jdir = optarg;
                        break;
                case 'H':
                        hold_file = optarg;
                        break;
                case 'm':
                        moves = strtol(optarg, NULL, 10);
                        break;
                default:
                        return 2;
                }
        if (optind >= argc) {
                fprintf(stderr, "usage: cgrouptool [--journal DIR] [--moves N] [--hold FILE] apply SPEC...|restore\n");
                return 2;
        }
        verb = argv[optind++];

        k = root_open("/", &root);
        if (k < 0) {
                error_json("root_open", k, NULL);
                return 1;
        }
        k = kernelcaps_probe(root, NULL, &caps);
        if (k < 0) {
                error_json("kernelcaps_probe", k, NULL);
                return 1;
        }
        env = (CgroupEnv) { .root = root, .mount = caps->cgroup2_mount };

        if (streq(verb, "apply"))
                return verb_apply(root, &env, jdir, moves, hold_file, argv + optind, argc - optind);
        if (streq(verb, "restore"))
                return verb_restore(&env, jdir);
        fprintf(stderr, "cgrouptool: unknown verb %s\n", verb);
        return 2;
}
