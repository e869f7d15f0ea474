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
#include "common/report.h"
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
#include "pipeline/pipeline.h"

typedef struct Context {
        const ClassifyVerbArgs *args;
        Pipeline *p;
} Context;

static bool wanted(const Context *c, const TaskFacts *t) {
        if (c->args->pid > 0 && t->tid != c->args->pid && t->tgid != c->args->pid)
                return false;
        return c->args->all || !t->kernel_thread;
}

static bool event_wanted(const Context *c, const TaskEvent *e) {
        pid_t pid = c->args->pid;

        return pid <= 0 || e->tgid == pid || e->pid == pid || e->parent_tgid == pid;
}

/* The rows both outputs print: wanted threads with their class, evidence
 * and selected policy (-1: none). */
typedef struct Row {
        const TaskFacts *t;
        const ThreadClass *tc;
        ClassifyEvidence ev;
        int policy;
} Row;

static bool row_at(const Context *c, size_t i, Row *ret) {
        const Pipeline *pl = c->p;
        const TaskFacts *t = &pl->observe.snap->tasks[i];
        const ThreadClass *tc = classifier_find(pl->decide.classifier, t->tid);

        if (!wanted(c, t) || !tc)
                return false;
        ret->t = t;
        ret->tc = tc;
        classifier_evidence(pl->decide.classifier, tc, &ret->ev);
        ret->policy = pipeline_select(pl, t, tc->class);
        return true;
}

static int print_json(const Context *c) {
        _cleanup_(json_freep) Json *j = json_new(stdout, true);
        const Pipeline *pl = c->p;
        const ClassifyParams *p = &pl->decide.classifier->params;

        if (!j)
                return -ENOMEM;
        json_object_begin(j);
        json_kv_uint(j, "window_usec", p->window_usec);
        json_kv_uint(j, "dwell_usec", p->dwell_usec);
        json_key(j, "threads");
        json_array_begin(j);
        for (size_t i = 0; i < pl->observe.snap->n_tasks; i++) {
                Row r;

                if (!row_at(c, i, &r))
                        continue;
                const TaskFacts *t = r.t;
                const ThreadClass *tc = r.tc;
                const ClassifyEvidence ev = r.ev;
                int pol = r.policy;

                json_object_begin(j);
                json_kv_int(j, "tid", t->tid);
                json_kv_int(j, "tgid", t->tgid);
                json_kv_string(j, "comm", t->comm);
                json_kv_string(j, "exe", t->process->exe);
                json_kv_bool(j, "kernel_thread", t->kernel_thread);
                json_key(j, "cookie"); /* PR_SCHED_CORE_GET; null when not asked or refused */
                if (t->cookie_error == 0)
                        json_uint(j, t->cookie);
                else
                        json_null(j);
                json_kv_string(j, "cgroup", t->process->cgroup);
                json_kv_string(j, "class", policy_class_to_string(tc->class));
                json_kv_uint(j, "class_since_usec", pl->decide.classifier->now_usec - tc->class_since_usec);
                json_kv_string(j, "candidate", policy_class_to_string(tc->candidate));
                json_key(j, "evidence");
                classify_evidence_print_json(j, &ev, p);
                json_key(j, "policy");
                if (pol < 0)
                        json_null(j);
                else {
                        const Policy *pp = pl->decide.policies->policies[pol];

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
                for (size_t i = 0; i < pl->observe.n_seen; i++) {
                        const TaskEvent *e = &pl->observe.seen[i];

                        if (!event_wanted(c, e))
                                continue;
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
                json_kv_uint(j, "events_not_kept", pl->observe.events_not_kept);
                json_kv_bool(j, "proc_connector", pl->observe.events != NULL);
        }
        json_object_end(j);
        return 0;
}

static int print_text(const Context *c) {
        const Pipeline *pl = c->p;
        const ClassifyParams *p = &pl->decide.classifier->params;

        printf("%7s %7s %-16s %-10s %-24s %s\n", "TID", "TGID", "COMM", "CLASS", "POLICY", "EVIDENCE");
        for (size_t i = 0; i < pl->observe.snap->n_tasks; i++) {
                _cleanup_free_ char *line = NULL;
                Row r;

                if (!row_at(c, i, &r))
                        continue;
                const TaskFacts *t = r.t;
                const ThreadClass *tc = r.tc;
                int pol = r.policy;

                (void) classify_evidence_format(&r.ev, p, &line);
                printf("%7d %7d %-16.16s %-10s %-24.24s %s%s%s\n", (int) t->tid, (int) t->tgid, t->comm,
                       policy_class_to_string(tc->class), pol >= 0 ? pl->decide.policies->policies[pol]->name : "-",
                       tc->candidate != tc->class ? "pending " : "",
                       tc->candidate != tc->class ? policy_class_to_string(tc->candidate) : "", line ?: "");
        }
        if (c->args->events) {
                printf("\nevents%s:\n", pl->observe.events ? "" : " (proc connector unavailable)");
                for (size_t i = 0; i < pl->observe.n_seen; i++)
                        if (event_wanted(c, &pl->observe.seen[i]))
                                printf("  %-5s pid %d tgid %d%s%s\n", task_event_type_to_string(pl->observe.seen[i].type),
                                       (int) pl->observe.seen[i].pid, (int) pl->observe.seen[i].tgid,
                                       pl->observe.seen[i].type == TASK_EVENT_COMM ? " comm " : "",
                                       pl->observe.seen[i].type == TASK_EVENT_COMM ? pl->observe.seen[i].comm : "");
        }
        return 0;
}

int topoctl_classify(const ClassifyVerbArgs *a) {
        _cleanup_(pipeline_freep) Pipeline *p = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_free_ char *reason = NULL;
        PipelineOptions o = {
                .root = a->root,
                .config = a->config,
                .policies = a->policies,
                .events = a->events,
                .keep_events = a->events,
        };
        Context c = { .args = a };
        const ClassifyParams *params;
        uint64_t interval, next;
        unsigned samples;
        int k;

        if (!d)
                return EXIT_FAILURE;
        k = pipeline_new(&o, d, &p, &reason);
        /* Bad configuration does not stop a watch: say where, go on with
         * what parsed (as the daemon does). */
        report_print_diagnostics(stderr, d);
        if (k < 0) {
                fprintf(stderr, "topoctl: %s\n", reason ?: strerror(-k));
                return EXIT_FAILURE;
        }
        if (a->events && !p->observe.events)
                fprintf(stderr, "topoctl: proc connector unavailable (%s): events not shown\n", errno_name(p->observe.events_error));
        c.p = p;

        params = &p->decide.classifier->params;
        interval = a->interval_usec ? a->interval_usec : p->decide.config->sample_interval_usec;
        if (interval == 0)
                interval = 1000000;
        samples = a->samples;
        if (samples == 0) /* fill the window, then wait out the dwell */
                samples = (unsigned) MIN((params->window_usec + params->dwell_usec) / interval + 1, (uint64_t) 600);

        next = pipeline_now_usec();
        for (unsigned i = 0; i <= samples; i++) {
                k = pipeline_sample(p, false);
                if (k < 0) {
                        fprintf(stderr, "topoctl: scanning /proc failed: %s\n", strerror(-k));
                        return EXIT_FAILURE;
                }
                if (i < samples) {
                        next += interval;
                        pipeline_wait_until(p, next);
                }
        }
        pipeline_drain_events(p);
        k = a->json ? print_json(&c) : print_text(&c);
        if (k < 0 || fflush(stdout) != 0)
                return EXIT_FAILURE;
        return EXIT_SUCCESS;
}
