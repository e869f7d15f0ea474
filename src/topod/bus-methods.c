/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What topoctl asks: one handler per bus method, found in a table by the
 * method (bus.c has checked the caller's rights and the arguments), and
 * what the replies keep between calls. Its own file: the daemon's side of
 * the protocol, apart from the server (bus.c) and from what the handlers
 * call (passes, reloads, restores, the status printers). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "common/bus-protocol.h"
#include "common/report.h"
#include "daemon-internal.h"
#include "explain.h"
#include "observe/procfs.h"
#include "observe/tasks.h"

/* Explain of a task the last scan did not see runs a pass, at most this
 * often, and once per task (pid and start time): any user may ask. */
#define DAEMON_EXPLAIN_PASS_USEC 1000000u
/* A Plan reply (the plan compared with the machine: a read of every
 * managed process's cgroup, with the lock held) is made at most this often
 * and given again meanwhile: any user may ask, as often as they like. */
#define DAEMON_PLAN_REPLY_USEC 1000000u

/* The Plan replies kept (DAEMON_PLAN_REPLY_USEC), dropped when what they
 * say changed without a pass: a reload, a reset. */
static void replies_forget(DaemonServe *s) {
        for (size_t i = 0; i < ELEMENTSOF(s->plan_reply); i++)
                s->plan_reply[i] = mfree(s->plan_reply[i]);
}

void plan_reply_forget(Daemon *d) {
        replies_forget(&d->serve);
}

static int get_cookie(pid_t tid, uint64_t *ret, void *userdata) {
        (void) userdata;
        return tasks_get_cookie_host(tid, ret, NULL);
}

/* Does the last scan know pid as it is now (same start time: not a
 * reused pid)? A pid that does not exist counts as known: the answer is
 * then "no such process". */
static bool explain_current(const Daemon *d, pid_t pid, uint64_t *ret_start) {
        const TaskFacts *t = d->p->observe.snap ? task_snapshot_find(d->p->observe.snap, pid) : NULL;
        _cleanup_free_ char *text = NULL;
        char rel[40];
        size_t len;
        ProcStat st;

        snprintf(rel, sizeof(rel), "proc/%d/stat", (int) pid);
        if (root_read_file(d->p->observe.root, rel, 4096, &text, &len) < 0 || procfs_parse_stat(text, len, &st) < 0)
                return true;
        *ret_start = st.start_time;
        return t && t->start_time == st.start_time;
}

/* Reload: the reply is the reload's messages (file:line of each finding),
 * the error's too when it is refused. */
static int answer_reload(Daemon *d, const BusCall *call, char **ret_text, char **ret_error, const char **ret_name) {
        _cleanup_free_ char *text = NULL;
        int k;

        k = reload(d, call->json, &text);
        if (k < 0) {
                *ret_name = k == -EINVAL ? BUS_ERROR_POLICY_REJECTED : NULL;
                *ret_error = TAKE_PTR(text);
                return k;
        }
        *ret_text = TAKE_PTR(text);
        return 0;
}

static int prepare_explain(Daemon *d, const BusCall *call, char **ret_error, const char **ret_name) {
        uint64_t now, start = 0;

        if (explain_current(d, call->pid, &start))
                return 0;
        if (d->serve.last_explain_pid == call->pid && d->serve.last_explain_start == start)
                return 0; /* a pass already looked: answer from what it saw */
        now = pipeline_now_usec();
        /* Started since the last scan, or its pid reused? Look
         * again before answering, but at most every
         * DAEMON_EXPLAIN_PASS_USEC: any user may ask, and a pass
         * is not free. */
        if (now - d->serve.last_explain_pass_usec < DAEMON_EXPLAIN_PASS_USEC) {
                (void) asprintf(ret_error, "topod has not seen %d as it is now yet; ask again in a moment",
                                (int) call->pid);
                *ret_name = BUS_ERROR_NOT_READY;
                return -EAGAIN;
        }
        d->serve.last_explain_pass_usec = now;
        d->serve.last_explain_pid = call->pid;
        d->serve.last_explain_start = start;
        (void) pass(d, PASS_EXPLAIN);
        return 0;
}

static int write_explain(Daemon *d, const BusCall *call, FILE *f, char **ret_error) {
        ExplainContext x = { .p = d->p, .plan = d->pass.plan, .origins = d->writers.journal, .paused = d->paused,
                             .unit_driver = d->writers.unit_bus != NULL, .get_cookie = get_cookie, .caller_uid = call->uid };
        int k;

        k = explain_write(&x, call->pid, call->json, f);
        if (k == -ESRCH)
                (void) asprintf(ret_error, "no process or thread %d", (int) call->pid);
        return k;
}

static int write_status(Daemon *d, const BusCall *call, FILE *f, char **ret_error) {
        (void) ret_error;
        if (call->json) {
                _cleanup_(json_freep) Json *j = json_new(f, true);

                if (j)
                        status_print_json(d, j);
        } else
                status_print_text(d, f);
        return 0;
}

/* The Plan reply, made again once a pass ran or DAEMON_PLAN_REPLY_USEC
 * passed. */
static int write_plan(Daemon *d, const BusCall *call, FILE *f, char **ret_error) {
        uint64_t now = pipeline_now_usec();
        int v = !!call->json;
        _cleanup_free_ char *reply = NULL;
        size_t n = 0;
        FILE *g;

        (void) ret_error;
        if (d->serve.plan_reply[v] && d->serve.plan_reply_passes[v] == d->pass.count &&
            now - d->serve.plan_reply_usec[v] < DAEMON_PLAN_REPLY_USEC) {
                fputs(d->serve.plan_reply[v], f);
                return 0;
        }
        g = open_memstream(&reply, &n);
        if (!g)
                return -ENOMEM;
        status_print_plan(d, call->json, g);
        if (fclose(g) != 0)
                return -ENOMEM;
        fputs(reply, f);
        free(d->serve.plan_reply[v]);
        d->serve.plan_reply[v] = TAKE_PTR(reply);
        d->serve.plan_reply_usec[v] = now;
        d->serve.plan_reply_passes[v] = d->pass.count;
        return 0;
}

static int write_metrics(Daemon *d, const BusCall *call, FILE *f, char **ret_error) {
        (void) ret_error;
        return metrics_print(d, call->json, f);
}

static int write_reset(Daemon *d, const BusCall *call, FILE *f, char **ret_error) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        int k;

        (void) ret_error;
        log_notice(d, "reset asked by pid %d: restoring and pausing until a reload", (int) call->peer_pid);
        d->paused = true;
        plan_reply_forget(d);
        (void) pipeline_use_plan(d->p, NULL);
        k = restore_all(d, "reset", &r);
        metrics_changed(d);
        if (k >= 0 && !r)
                report_print_nothing(f, call->json, "topod has changed nothing");
        else if (k >= 0)
                (void) report_print(f, r, call->json);
        return k;
}

/* What a method does, in the order on_call() takes the steps. */
typedef struct BusMethodHandler {
        /* The whole answer, before anything else (Reload: it needs no plan,
         * and its messages are its reply). */
        int (*answer)(Daemon *d, const BusCall *call, char **ret_text, char **ret_error, const char **ret_name);
        /* Before the plan is looked at: 0 to go on, or the answer. */
        int (*prepare)(Daemon *d, const BusCall *call, char **ret_error, const char **ret_name);
        /* The reply, written into f; a negative errno fails the call. */
        int (*write)(Daemon *d, const BusCall *call, FILE *f, char **ret_error);
        bool without_plan; /* answered before the first pass has made a plan */
} BusMethodHandler;

static const BusMethodHandler handlers[_BUS_METHOD_MAX] = {
        [BUS_METHOD_EXPLAIN] = { .prepare = prepare_explain, .write = write_explain },
        [BUS_METHOD_STATUS] = { .write = write_status, .without_plan = true },
        [BUS_METHOD_PLAN] = { .write = write_plan },
        [BUS_METHOD_RELOAD] = { .answer = answer_reload },
        [BUS_METHOD_RESET] = { .write = write_reset },
        [BUS_METHOD_METRICS] = { .write = write_metrics, .without_plan = true },
};

static int on_call(void *userdata, const BusCall *call, char **ret_text, char **ret_error, const char **ret_name) {
        Daemon *d = userdata;
        const BusMethodHandler *h;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f;
        int k;

        if (call->method < 0 || call->method >= _BUS_METHOD_MAX)
                return -EOPNOTSUPP;
        h = &handlers[call->method];
        if (h->answer)
                return h->answer(d, call, ret_text, ret_error, ret_name);
        if (h->prepare && (k = h->prepare(d, call, ret_error, ret_name)) < 0)
                return k;
        if (!d->pass.plan && !h->without_plan) {
                *ret_error = strdup("topod has not finished its first pass yet");
                return -EAGAIN;
        }

        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        k = h->write(d, call, f, ret_error);
        if (fclose(f) != 0 && k >= 0)
                k = -ENOMEM;
        if (k >= 0)
                *ret_text = TAKE_PTR(text);
        return k;
}

/* Listen on the state directory's socket. */
int daemon_serve_start(Daemon *d) {
        _cleanup_free_ char *socket_path = NULL;
        int k;

        if (asprintf(&socket_path, "%s/" BUS_SOCKET_NAME, d->writers.state_dir) < 0)
                return -ENOMEM;
        if ((k = bus_server_new(d->sources.event, socket_path, on_call, d, &d->serve.bus)) < 0) {
                log_error(d, "cannot listen on %s: %s", socket_path, strerror(-k));
                return k;
        }
        return 0;
}

void daemon_serve_done(DaemonServe *s) {
        s->bus = bus_server_free(s->bus);
        replies_forget(s);
}
