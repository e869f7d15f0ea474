/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "classify-verb.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/json.h"
#include "base/macro.h"
#include "base/root.h"
#include "base/util.h"
#include "decide/classify.h"
#include "decide/config.h"
#include "decide/policy-check.h"
#include "decide/policy-read.h"
#include "decide/policy.h"
#include "observe/events.h"
#include "observe/kernelcaps.h"
#include "observe/tasks.h"
#include "observe/topology.h"
#include "observe/users.h"

#define EVENTS_KEPT_MAX 4096u

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* Held schedstat descriptors: one per thread. */
static void raise_fd_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
}

typedef struct Context {
        const ClassifyVerbArgs *args;
        Root *root;
        Config *config;
        PolicySet *policies;
        bool *in_force;
        UserTable *users;
        TaskScanner *scanner;
        Classifier *classifier;
        ProcEvents *events;
        TaskEvent *seen;
        size_t n_seen;
        unsigned events_lost;
        bool rescan; /* events were lost: the next scan reads everything */
        TaskSnapshot *snap;
} Context;

static void context_done(Context *c) {
        task_snapshot_free(c->snap);
        proc_events_free(c->events);
        classifier_free(c->classifier);
        task_scanner_free(c->scanner);
        users_free(c->users);
        free(c->in_force);
        free(c->seen);
        policy_set_free(c->policies);
        config_free(c->config);
        root_free(c->root);
}

static int load_config(Context *c) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_free_ char *path = NULL;
        bool must = c->args->config != NULL;
        int k;

        if (!d)
                return -ENOMEM;
        if (c->args->config)
                path = strdup(c->args->config);
        else
                k = root_host_path(c->root, CONFIG_DEFAULT_PATH, &path);
        if (!path)
                return -ENOMEM;
        k = config_read(path, must, d, &c->config);
        if (k < 0 && !c->config) {
                fprintf(stderr, "topoctl: cannot read %s: %s\n", path, strerror(-k));
                return k;
        }
        if (k < 0)
                fprintf(stderr, "topoctl: %s has errors (see 'topoctl check'); using the values that parsed\n", path);
        return 0;
}

static int load_policies(Context *c, const Topology *t, const KernelCaps *caps) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_free_ char *dir = NULL, *release = NULL;
        PolicyMachine m;
        uint64_t kernel = 0;
        char *paths[2] = {};
        int k;

        if (!d)
                return -ENOMEM;
        if (c->args->policies)
                dir = strdup(c->args->policies);
        else
                k = root_host_path(c->root, c->config->policies_dir, &dir);
        if (!dir)
                return -ENOMEM;
        paths[0] = dir;
        k = policy_read_paths(paths, 1, d, &c->policies);
        if (k < 0 && !c->policies)
                return k;
        if (k < 0)
                fprintf(stderr, "topoctl: some policies in %s have errors and are left out (see 'topoctl check')\n", dir);

        /* Which policies are in force: enabled, and [when] holds now (the
         * daemon adds the load band's hysteresis and dwell on top). */
        if (root_read_line(c->root, "proc/sys/kernel/osrelease", &release) >= 0)
                (void) policy_parse_kernel_version(release, &kernel);
        check_machine_from(t, caps, kernel, &m);
        c->in_force = calloc(MAX(c->policies->n, (size_t) 1), sizeof(bool));
        if (!c->in_force)
                return -ENOMEM;
        for (size_t i = 0; i < c->policies->n; i++) {
                const Policy *p = c->policies->policies[i];
                c->in_force[i] = p->enabled && (!p->has_when || policy_when_holds(&p->when, &m));
        }
        return 0;
}

static void drain_events(Context *c) {
        TaskEvent ev[64];
        size_t n;

        if (!c->events)
                return;
        while (proc_events_read(c->events, ev, ELEMENTSOF(ev), &n) >= 0 && n > 0)
                for (size_t i = 0; i < n; i++) {
                        switch (ev[i].type) {
                        case TASK_EVENT_EXEC:
                                task_scanner_invalidate(c->scanner, ev[i].tgid);
                                task_scanner_invalidate(c->scanner, ev[i].pid);
                                break;
                        case TASK_EVENT_COMM:
                                task_scanner_invalidate(c->scanner, ev[i].pid);
                                break;
                        case TASK_EVENT_OVERRUN:
                                c->rescan = true;
                                break;
                        default:
                                break;
                        }
                        if (ev[i].type == TASK_EVENT_ACK)
                                continue;
                        if (c->args->pid > 0 && ev[i].tgid != c->args->pid && ev[i].pid != c->args->pid &&
                            ev[i].parent_tgid != c->args->pid)
                                continue;
                        if (c->n_seen < EVENTS_KEPT_MAX)
                                c->seen[c->n_seen++] = ev[i];
                        else
                                c->events_lost++;
                }
}

/* Sleep until the deadline, handling events meanwhile. */
static void wait_until(Context *c, uint64_t deadline) {
        for (;;) {
                uint64_t now = now_usec();
                struct pollfd p;

                if (now >= deadline)
                        return;
                if (!c->events) {
                        struct timespec ts = { (time_t) ((deadline - now) / 1000000u),
                                               (long) ((deadline - now) % 1000000u) * 1000 };
                        nanosleep(&ts, NULL);
                        continue;
                }
                p = (struct pollfd) { .fd = proc_events_fd(c->events), .events = POLLIN };
                if (poll(&p, 1, (int) ((deadline - now + 999) / 1000)) > 0)
                        drain_events(c);
        }
}

static bool wanted(const Context *c, const TaskFacts *t) {
        if (c->args->pid > 0 && t->tid != c->args->pid && t->tgid != c->args->pid)
                return false;
        return c->args->all || !t->kernel_thread;
}

static int select_policy(const Context *c, const TaskFacts *t, PolicyClass class) {
        PolicyTask pt = {
                .class = class,
                .comm = t->comm,
                .exe = t->process->exe,
                .cmdline = t->process->cmdline,
                .cgroup = t->process->cgroup,
                .user = t->has_uid ? users_name(c->users, t->uid) : NULL,
                .parent = t->parent_comm,
                .uid = t->uid,
        };

        if (t->kernel_thread || !c->policies)
                return -1;
        return policy_set_select(c->policies, c->in_force, &pt);
}

static int print_json(const Context *c) {
        _cleanup_(json_freep) Json *j = json_new(stdout, true);
        const ClassifyParams *p = &c->classifier->params;

        if (!j)
                return -ENOMEM;
        json_object_begin(j);
        json_kv_uint(j, "window_usec", p->window_usec);
        json_kv_uint(j, "dwell_usec", p->dwell_usec);
        json_key(j, "threads");
        json_array_begin(j);
        for (size_t i = 0; i < c->snap->n_tasks; i++) {
                const TaskFacts *t = &c->snap->tasks[i];
                const ThreadClass *tc = classifier_find(c->classifier, t->tid);
                _cleanup_free_ char *line = NULL;
                ClassifyEvidence ev;
                int pol;

                if (!wanted(c, t) || !tc)
                        continue;
                classifier_evidence(c->classifier, tc, &ev);
                pol = select_policy(c, t, tc->class);
                json_object_begin(j);
                json_kv_int(j, "tid", t->tid);
                json_kv_int(j, "tgid", t->tgid);
                json_kv_string(j, "comm", t->comm);
                json_kv_string(j, "exe", t->process->exe);
                json_kv_bool(j, "kernel_thread", t->kernel_thread);
                json_kv_string(j, "class", policy_class_to_string(tc->class));
                json_kv_uint(j, "class_since_usec", c->classifier->now_usec - tc->class_since_usec);
                json_kv_string(j, "candidate", policy_class_to_string(tc->candidate));
                json_key(j, "evidence");
                json_object_begin(j);
                json_kv_string(j, "rule", classify_rule_to_string(ev.rule));
                json_kv_string(j, "verdict", policy_class_to_string(ev.verdict));
                json_kv_uint(j, "samples", ev.samples);
                json_kv_uint(j, "window_usec", ev.window_usec);
                json_kv_uint(j, "cpu_permille", ev.cpu_permille);
                json_key(j, "burst_usec");
                if (ev.burst_usec == UINT64_MAX)
                        json_null(j);
                else
                        json_uint(j, ev.burst_usec);
                json_kv_uint(j, "wakeups_per_sec", ev.wakeups_per_sec);
                json_kv_uint(j, "voluntary_permille", ev.voluntary_permille);
                json_kv_bool(j, "avx_line", ev.avx_line);
                json_kv_uint(j, "avx_permille", ev.avx_permille);
                json_key(j, "votes_permille");
                json_object_begin(j);
                for (unsigned k = 0; k < _POLICY_CLASS_MAX; k++)
                        json_kv_uint(j, policy_class_to_string((PolicyClass) k), ev.votes_permille[k]);
                json_object_end(j);
                if (classify_evidence_format(&ev, p, &line) >= 0)
                        json_kv_string(j, "text", line);
                json_object_end(j);
                json_key(j, "policy");
                if (pol < 0)
                        json_null(j);
                else {
                        const Policy *pp = c->policies->policies[pol];

                        json_object_begin(j);
                        json_kv_string(j, "name", pp->name);
                        json_kv_string(j, "file", pp->file);
                        json_kv_uint(j, "line", pp->match_line ? pp->match_line : pp->name_line);
                        json_object_end(j);
                }
                json_object_end(j);
        }
        json_array_end(j);
        if (c->args->events) {
                json_key(j, "events");
                json_array_begin(j);
                for (size_t i = 0; i < c->n_seen; i++) {
                        const TaskEvent *e = &c->seen[i];

                        json_object_begin(j);
                        json_kv_string(j, "type", task_event_type_to_string(e->type));
                        json_kv_int(j, "pid", e->pid);
                        json_kv_int(j, "tgid", e->tgid);
                        if (e->type == TASK_EVENT_FORK) {
                                json_kv_int(j, "parent_pid", e->parent_pid);
                                json_kv_int(j, "parent_tgid", e->parent_tgid);
                        }
                        if (e->type == TASK_EVENT_COMM)
                                json_kv_string(j, "comm", e->comm);
                        json_object_end(j);
                }
                json_array_end(j);
                json_kv_uint(j, "events_not_kept", c->events_lost);
                json_kv_bool(j, "proc_connector", c->events != NULL);
        }
        json_object_end(j);
        return 0;
}

static int print_text(const Context *c) {
        const ClassifyParams *p = &c->classifier->params;

        printf("%7s %7s %-16s %-10s %-24s %s\n", "TID", "TGID", "COMM", "CLASS", "POLICY", "EVIDENCE");
        for (size_t i = 0; i < c->snap->n_tasks; i++) {
                const TaskFacts *t = &c->snap->tasks[i];
                const ThreadClass *tc = classifier_find(c->classifier, t->tid);
                _cleanup_free_ char *line = NULL;
                ClassifyEvidence ev;
                int pol;

                if (!wanted(c, t) || !tc)
                        continue;
                classifier_evidence(c->classifier, tc, &ev);
                pol = select_policy(c, t, tc->class);
                (void) classify_evidence_format(&ev, p, &line);
                printf("%7d %7d %-16.16s %-10s %-24.24s %s%s%s\n", (int) t->tid, (int) t->tgid, t->comm,
                       policy_class_to_string(tc->class), pol >= 0 ? c->policies->policies[pol]->name : "-",
                       tc->candidate != tc->class ? "pending " : "",
                       tc->candidate != tc->class ? policy_class_to_string(tc->candidate) : "", line ?: "");
        }
        if (c->args->events) {
                printf("\n%zu events%s:\n", c->n_seen, c->events ? "" : " (proc connector unavailable)");
                for (size_t i = 0; i < c->n_seen; i++)
                        printf("  %-5s pid %d tgid %d%s%s\n", task_event_type_to_string(c->seen[i].type),
                               (int) c->seen[i].pid, (int) c->seen[i].tgid,
                               c->seen[i].type == TASK_EVENT_COMM ? " comm " : "",
                               c->seen[i].type == TASK_EVENT_COMM ? c->seen[i].comm : "");
        }
        return 0;
}

int topoctl_classify(const ClassifyVerbArgs *a) {
        _cleanup_(topology_freep) Topology *t = NULL;
        _cleanup_(kernelcaps_freep) KernelCaps *caps = NULL;
        TopologySource src = { .kind = TOPOLOGY_SOURCE_ROOT, .arg = a->root };
        Context c = { .args = a };
        ClassifyParams params;
        TaskScanOps ops = { .get_cookie = tasks_get_cookie_host };
        uint64_t interval, next, last_full = 0;
        unsigned samples;
        int k, r = EXIT_FAILURE;

        raise_fd_limit();
        k = root_open(a->root, &c.root);
        if (k < 0) {
                fprintf(stderr, "topoctl: cannot open root %s: %s\n", a->root ?: "/", strerror(-k));
                goto finish;
        }
        if ((k = load_config(&c)) < 0)
                goto finish;
        if ((k = topology_load(&src, &t)) < 0 || (k = kernelcaps_probe(c.root, NULL, &caps)) < 0) {
                fprintf(stderr, "topoctl: cannot observe the machine: %s\n", strerror(-k));
                goto finish;
        }
        if ((k = load_policies(&c, t, caps)) < 0) {
                fprintf(stderr, "topoctl: cannot read the policies: %s\n", strerror(-k));
                goto finish;
        }
        if ((k = users_load(c.root, &c.users)) < 0) {
                fprintf(stderr, "topoctl: cannot read etc/passwd: %s\n", strerror(-k));
                goto finish;
        }

        classify_params_from_config(c.config, &params);
        interval = a->interval_usec ? a->interval_usec : c.config->sample_interval_usec;
        if (interval == 0)
                interval = 1000000;
        samples = a->samples;
        if (samples == 0) /* fill the window, then wait out the dwell */
                samples = (unsigned) MIN((params.window_usec + params.dwell_usec) / interval + 1, (uint64_t) 600);

        if ((k = task_scanner_new(c.root, caps->core_sched.available ? &ops : NULL, &c.scanner)) < 0 ||
            (k = classifier_new(&params, &c.classifier)) < 0)
                goto finish;
        if (a->events) {
                c.seen = calloc(EVENTS_KEPT_MAX, sizeof(TaskEvent));
                if (!c.seen)
                        goto finish;
                k = proc_events_open(&c.events);
                if (k < 0)
                        fprintf(stderr, "topoctl: proc connector unavailable (%s): events not shown\n", errno_name(k));
        }

        next = now_usec();
        for (unsigned i = 0; i <= samples; i++) {
                bool full;

                drain_events(&c);
                /* Everything is read at the start, after lost events, and
                 * every rescan_interval (what changes without the thread
                 * running, such as a rename through /proc/PID/comm). */
                full = i == 0 || c.rescan || now_usec() - last_full >= c.config->rescan_interval_usec;
                c.snap = task_snapshot_free(c.snap);
                k = task_scanner_scan(c.scanner, full, &c.snap);
                if (full) {
                        last_full = now_usec();
                        c.rescan = false;
                }
                if (k < 0) {
                        fprintf(stderr, "topoctl: scanning /proc failed: %s\n", strerror(-k));
                        goto finish;
                }
                if ((k = classifier_update(c.classifier, c.snap)) < 0)
                        goto finish;
                if (i < samples) {
                        next += interval;
                        wait_until(&c, next);
                }
        }
        drain_events(&c);
        k = a->json ? print_json(&c) : print_text(&c);
        if (k >= 0 && fflush(stdout) == 0)
                r = EXIT_SUCCESS;
finish:
        context_done(&c);
        return r;
}
