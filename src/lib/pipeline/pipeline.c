/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pipeline.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/util.h"
#include "decide/policy-check.h"
#include "decide/policy-read.h"

uint64_t pipeline_now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

Pipeline *pipeline_free(Pipeline *p) {
        if (!p)
                return NULL;
        task_snapshot_free(p->snap);
        proc_events_free(p->events);
        classifier_free(p->classifier);
        task_scanner_free(p->scanner);
        users_free(p->users);
        free(p->in_force);
        free(p->seen);
        policy_set_free(p->policies);
        config_free(p->config);
        kernelcaps_free(p->caps);
        topology_free(p->topology);
        root_free(p->root);
        free(p);
        return NULL;
}

_printf_(3, 4) static int fail(int k, char **ret_reason, const char *fmt, ...) {
        va_list ap;

        if (ret_reason) {
                char *s = NULL, *r = NULL;

                va_start(ap, fmt);
                if (vasprintf(&s, fmt, ap) < 0)
                        s = NULL;
                va_end(ap);
                if (s && asprintf(&r, "%s: %s", s, strerror(-k)) < 0)
                        r = NULL;
                free(s);
                *ret_reason = r;
        }
        return k;
}

/* One held schedstat descriptor per thread. */
static void raise_fd_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
}

static int load_in_force(Pipeline *p) {
        PolicyMachine m;

        /* Which policies are in force: enabled, and [when] holds now. The
         * load band's hysteresis and dwell come with the daemon's loop. */
        check_machine_from(p->topology, p->caps, p->kernel_version, &m);
        free(p->in_force);
        p->in_force = calloc(MAX(p->policies->n, (size_t) 1), sizeof(bool));
        if (!p->in_force)
                return -ENOMEM;
        for (size_t i = 0; i < p->policies->n; i++) {
                const Policy *pol = p->policies->policies[i];
                p->in_force[i] = pol->enabled && (!pol->has_when || policy_when_holds(&pol->when, &m));
        }
        return 0;
}

int pipeline_new(const PipelineOptions *o, Diagnostics *d, Pipeline **ret, char **ret_reason) {
        _cleanup_(pipeline_freep) Pipeline *p = calloc(1, sizeof(Pipeline));
        TopologySource src = { .kind = TOPOLOGY_SOURCE_ROOT, .arg = o->root };
        TaskScanOps ops = { .get_cookie = tasks_get_cookie_host };
        _cleanup_free_ char *conf = NULL, *dir = NULL, *release = NULL;
        ClassifyParams params;
        char *paths[2] = {};
        int k;

        if (!p)
                return -ENOMEM;
        p->options = *o;
        raise_fd_limit();
        if ((k = root_open(o->root, &p->root)) < 0)
                return fail(k, ret_reason, "cannot open root %s", o->root ?: "/");

        if (o->config)
                conf = strdup(o->config);
        else
                (void) root_host_path(p->root, CONFIG_DEFAULT_PATH, &conf);
        if (!conf)
                return -ENOMEM;
        k = config_read(conf, o->config != NULL, d, &p->config);
        if (k < 0 && !p->config)
                return fail(k, ret_reason, "cannot read %s", conf);

        if ((k = topology_load(&src, &p->topology)) < 0)
                return fail(k, ret_reason, "cannot load the topology");
        if ((k = kernelcaps_probe(p->root, NULL, &p->caps)) < 0)
                return fail(k, ret_reason, "kernel capability probe failed");
        if (root_read_line(p->root, "proc/sys/kernel/osrelease", &release) >= 0)
                (void) policy_parse_kernel_version(release, &p->kernel_version);

        if (o->policies)
                dir = strdup(o->policies);
        else
                (void) root_host_path(p->root, p->config->policies_dir, &dir);
        if (!dir)
                return -ENOMEM;
        paths[0] = dir;
        k = policy_read_paths(paths, 1, d, &p->policies);
        if (k < 0 && !p->policies)
                return fail(k, ret_reason, "cannot read the policies in %s", dir);
        if ((k = load_in_force(p)) < 0)
                return k;
        if ((k = users_load(p->root, &p->users)) < 0)
                return fail(k, ret_reason, "cannot read etc/passwd");

        classify_params_from_config(p->config, &params);
        if ((k = task_scanner_new(p->root, p->caps->core_sched.available ? &ops : NULL, &p->scanner)) < 0 ||
            (k = classifier_new(&params, &p->classifier)) < 0)
                return k;
        if (o->events) {
                p->events_error = proc_events_open(&p->events);
                /* Subscribed before the first (full) scan: from then on the
                 * events tell which processes changed. */
                task_scanner_trust_events(p->scanner, p->events != NULL);
                if (o->keep_events) {
                        p->keep_events = true;
                        p->seen = calloc(PIPELINE_EVENTS_KEPT_MAX, sizeof(TaskEvent));
                        if (!p->seen)
                                return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(p);
        return 0;
}

int pipeline_reload(Pipeline *p, Diagnostics *d) {
        _cleanup_(config_freep) Config *config = NULL;
        _cleanup_(policy_set_freep) PolicySet *policies = NULL;
        _cleanup_free_ char *conf = NULL, *dir = NULL;
        char *paths[2] = {};
        size_t errors = d->n_errors;
        ClassifyParams params;
        int k;

        if (p->options.config)
                conf = strdup(p->options.config);
        else
                (void) root_host_path(p->root, CONFIG_DEFAULT_PATH, &conf);
        if (!conf)
                return -ENOMEM;
        k = config_read(conf, p->options.config != NULL, d, &config);
        if (k < 0 && k != -EINVAL)
                return k;
        if (!config)
                return -EINVAL;
        if (p->options.policies)
                dir = strdup(p->options.policies);
        else
                (void) root_host_path(p->root, config->policies_dir, &dir);
        if (!dir)
                return -ENOMEM;
        paths[0] = dir;
        k = policy_read_paths(paths, 1, d, &policies);
        if (k < 0 && k != -EINVAL)
                return k;
        if (!policies || d->n_errors > errors)
                return -EINVAL; /* keep what runs */

        /* Swap. */
        config_free(p->config);
        p->config = TAKE_PTR(config);
        policy_set_free(p->policies);
        p->policies = TAKE_PTR(policies);
        if ((k = load_in_force(p)) < 0)
                return k;
        classify_params_from_config(p->config, &params);
        p->classifier->params = params;
        return 0;
}

void pipeline_drain_events(Pipeline *p) {
        TaskEvent ev[64];
        size_t n;

        if (!p->events)
                return;
        while (proc_events_read(p->events, ev, ELEMENTSOF(ev), &n) >= 0 && n > 0)
                for (size_t i = 0; i < n; i++) {
                        switch (ev[i].type) {
                        case TASK_EVENT_FORK:
                                /* A new process, or a new thread of one. */
                                if (task_scanner_mark(p->scanner, ev[i].tgid) < 0 ||
                                    task_scanner_mark(p->scanner, ev[i].parent_tgid) < 0)
                                        p->rescan = true;
                                break;
                        case TASK_EVENT_EXIT:
                                if (task_scanner_mark(p->scanner, ev[i].tgid) < 0)
                                        p->rescan = true;
                                break;
                        case TASK_EVENT_EXEC:
                                task_scanner_invalidate(p->scanner, ev[i].tgid);
                                task_scanner_invalidate(p->scanner, ev[i].pid);
                                if (task_scanner_mark(p->scanner, ev[i].tgid) < 0)
                                        p->rescan = true;
                                break;
                        case TASK_EVENT_COMM:
                                task_scanner_invalidate(p->scanner, ev[i].pid);
                                break;
                        case TASK_EVENT_OVERRUN:
                                p->rescan = true;
                                break;
                        default:
                                break;
                        }
                        if (ev[i].type == TASK_EVENT_ACK || !p->keep_events)
                                continue;
                        if (p->n_seen < PIPELINE_EVENTS_KEPT_MAX)
                                p->seen[p->n_seen++] = ev[i];
                        else
                                p->events_not_kept++;
                }
}

void pipeline_wait_until(Pipeline *p, uint64_t deadline) {
        for (;;) {
                uint64_t now = pipeline_now_usec();
                struct pollfd pfd;

                if (now >= deadline)
                        return;
                if (!p->events) {
                        struct timespec ts = { (time_t) ((deadline - now) / 1000000u),
                                               (long) ((deadline - now) % 1000000u) * 1000 };
                        nanosleep(&ts, NULL);
                        continue;
                }
                pfd = (struct pollfd) { .fd = proc_events_fd(p->events), .events = POLLIN };
                if (poll(&pfd, 1, (int) ((deadline - now + 999) / 1000)) > 0)
                        pipeline_drain_events(p);
        }
}

int pipeline_sample(Pipeline *p, bool full) {
        uint64_t now;
        int k;

        pipeline_drain_events(p);
        now = pipeline_now_usec();
        /* Everything is read at the start, after lost events, and every
         * rescan_interval (what changes without the thread running, such
         * as a rename through /proc/PID/comm, which sends no event). */
        full = full || p->samples == 0 || p->rescan || now - p->last_full_usec >= p->config->rescan_interval_usec;
        p->snap = task_snapshot_free(p->snap);
        k = task_scanner_scan(p->scanner, full, &p->snap);
        if (k < 0)
                return k;
        if (full) {
                p->last_full_usec = now;
                p->rescan = false;
                /* After an event storm the scanner stopped trusting events;
                 * a full scan is a fresh start. */
                task_scanner_trust_events(p->scanner, p->events != NULL);
        }
        p->samples++;
        return classifier_update(p->classifier, p->snap);
}

void pipeline_policy_task(const Pipeline *p, const TaskFacts *t, PolicyClass class, PolicyTask *ret) {
        *ret = (PolicyTask) {
                .class = class,
                .comm = t->comm,
                .exe = t->process->exe,
                .cmdline = t->process->cmdline,
                .cgroup = t->process->cgroup,
                .user = t->has_uid ? users_name(p->users, t->uid) : NULL,
                .parent = t->parent_comm,
                .uid = t->uid,
        };
}

int pipeline_select(const Pipeline *p, const TaskFacts *t, PolicyClass class) {
        PolicyTask pt;

        if (t->kernel_thread)
                return -1;
        pipeline_policy_task(p, t, class, &pt);
        return policy_set_select(p->policies, p->in_force, &pt);
}

int pipeline_plan(const Pipeline *p, Plan **ret) {
        _cleanup_free_ PlanTaskInput *tasks = NULL;
        size_t n = 0;
        PlanInputs in;

        if (!p->snap)
                return -EAGAIN;
        tasks = calloc(MAX(p->snap->n_tasks, (size_t) 1), sizeof(PlanTaskInput));
        if (!tasks)
                return -ENOMEM;
        for (size_t i = 0; i < p->snap->n_tasks; i++) {
                const TaskFacts *t = &p->snap->tasks[i];
                const ThreadClass *tc = classifier_find(p->classifier, t->tid);

                tasks[n] = (PlanTaskInput) {
                        .tid = t->tid,
                        .tgid = t->tgid,
                        .start_time = t->start_time,
                        .kernel_thread = t->kernel_thread,
                        .runnable = t->state == 'R',
                };
                pipeline_policy_task(p, t, tc ? tc->class : POLICY_CLASS_OTHER, &tasks[n].match);
                n++;
        }
        in = (PlanInputs) {
                .topology = p->topology,
                .caps = p->caps,
                .config = p->config,
                .policies = p->policies,
                .in_force = p->in_force,
                .tasks = tasks,
                .n_tasks = n,
        };
        return plan_build(&in, ret);
}
