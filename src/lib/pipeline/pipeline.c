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
#include "observe/sysload.h"

uint64_t pipeline_now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

Pipeline *pipeline_free(Pipeline *p) {
        if (!p)
                return NULL;
        fd_bin_empty(&p->fds);
        strv_free(p->reading_paths);
        free(p->readings);
        free(p->readings_at);
        free(p->usage);
        place_state_free(p->place);
        free(p->fresh);
        free(p->waiting);
        free(p->retried);
        free(p->forked);
        free(p->changed);
        free(p->defer_next);
        free(p->deferred);
        free(p->kept_sources);
        free(p->quick);
        free(p->batch);
        free(p->sources);
        task_snapshot_free(p->snap);
        proc_events_free(p->events);
        classifier_free(p->classifier);
        task_scanner_free(p->scanner);
        lives_free(p->lives);
        users_free(p->users);
        free(p->in_force);
        free(p->bands);
        bitmap_free(p->online);
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

/* Which policies are in force: enabled, and [when] holds now; a load
 * band as its PolicyLoadBand says (one not read yet holds nothing). How
 * many changed. */
static unsigned compute_in_force(Pipeline *p) {
        PolicyMachine m;
        unsigned changed = 0;

        check_machine_from(p->topology, p->caps, p->kernel_version, &m);
        for (size_t i = 0; i < p->policies->n; i++) {
                const Policy *pol = p->policies->policies[i];
                bool f = pol->enabled && (!pol->has_when || (policy_when_holds_but_load(&pol->when, &m) &&
                                                             (!pol->when.has_load || p->bands[i].holds)));

                changed += f != p->in_force[i];
                p->in_force[i] = f;
        }
        return changed;
}

/* Read the load (sysload.h) and take it into every load band. A band
 * holds only once a reading has been taken (a band not started holds
 * nothing); a failed read later leaves the bands as they are. */
static void read_load(Pipeline *p, uint64_t now_usec) {
        p->have_load = p->topology && sysload_read_percent(p->root, p->topology->n_pus, &p->load_percent) >= 0;
        if (!p->have_load)
                return;
        for (size_t i = 0; i < p->policies->n; i++) {
                const Policy *pol = p->policies->policies[i];

                if (pol->has_when && pol->when.has_load)
                        (void) policy_load_band_update(&p->bands[i], &pol->when, p->load_percent,
                                                       p->config->load_hysteresis, p->config->load_dwell_usec, now_usec);
        }
}

/* The per-policy arrays for a policy set: a band is carried over from
 * the set in use where a policy of the same name has the same band (a
 * reload does not reset the hysteresis and dwell of what did not change);
 * the others start from the next reading. Made before anything is
 * swapped: a failure leaves the running set whole. */
static int in_force_arrays(const PolicySet *ps, const PolicySet *old, const PolicyLoadBand *old_bands,
                           bool **ret_in_force, PolicyLoadBand **ret_bands) {
        _cleanup_free_ bool *in_force = calloc(MAX(ps->n, (size_t) 1), sizeof(bool));
        _cleanup_free_ PolicyLoadBand *bands = calloc(MAX(ps->n, (size_t) 1), sizeof(PolicyLoadBand));

        if (!in_force || !bands)
                return -ENOMEM;
        for (size_t i = 0; old && old_bands && i < ps->n; i++) {
                const PolicyWhen *w = &ps->policies[i]->when;

                if (!ps->policies[i]->has_when || !w->has_load)
                        continue;
                for (size_t j = 0; j < old->n; j++) {
                        const Policy *o = old->policies[j];

                        if (streq(o->name, ps->policies[i]->name) && o->has_when && o->when.has_load &&
                            o->when.load_low == w->load_low && o->when.load_high == w->load_high) {
                                bands[i] = old_bands[j];
                                break;
                        }
                }
        }
        *ret_in_force = TAKE_PTR(in_force);
        *ret_bands = TAKE_PTR(bands);
        return 0;
}

/* For the policy set now in p->policies, with its arrays: the load taken
 * in, the policies in force worked out. */
static void use_in_force_arrays(Pipeline *p, bool *in_force, PolicyLoadBand *bands) {
        free(p->in_force);
        free(p->bands);
        p->in_force = in_force;
        p->bands = bands;
        read_load(p, pipeline_now_usec());
        (void) compute_in_force(p);
}

/* The CPUs online as the kernel lists them, or NULL when it cannot be told. */
static Bitmap *read_online(const Pipeline *p) {
        _cleanup_free_ char *text = NULL;
        Bitmap *b = NULL;

        if (root_read_line(p->root, "sys/devices/system/cpu/online", &text) < 0 ||
            bitmap_parse_list(strstrip(text), &b) < 0)
                return NULL;
        return b;
}

int pipeline_refresh_topology(Pipeline *p) {
        _cleanup_(bitmap_freep) Bitmap *online = read_online(p);
        TopologySource src = { .kind = TOPOLOGY_SOURCE_ROOT, .arg = p->options.root };
        const Plan *plan = p->plan;
        Topology *t = NULL;
        int k;

        /* Read again only when the list changed since it was last acted
         * on, and the topology does not have it already: a tree whose list
         * hwloc reads otherwise is not read at every tick. */
        if (!online || (p->online && bitmap_equal(online, p->online)))
                return 0;
        bitmap_free(p->online);
        p->online = TAKE_PTR(online);
        if (bitmap_equal(p->online, p->topology->cpus))
                return 0;
        if ((k = topology_load(&src, &t)) < 0) {
                p->online = bitmap_free(p->online); /* tried again next time */
                return k;
        }
        /* The fast path's state points into the old one: made again on
         * the new one, from the same plan (the next pass's keeps its
         * groups). */
        (void) pipeline_use_plan(p, NULL);
        topology_free(p->topology);
        p->topology = t;
        if (plan)
                (void) pipeline_use_plan(p, plan);
        return 1;
}

unsigned pipeline_refresh_in_force(Pipeline *p, bool read_load_now) {
        if (read_load_now)
                read_load(p, pipeline_now_usec());
        return compute_in_force(p);
}

static bool known_changed(Pipeline *p, pid_t tgid);

static void yield_trampoline(void *userdata) {
        Pipeline *p = userdata;

        if (p->yield)
                p->yield(p->yield_userdata);
}

static bool changed_trampoline(void *userdata, pid_t tgid) {
        return pipeline_changed(userdata, tgid);
}

static bool known_changed_trampoline(void *userdata, pid_t tgid) {
        return known_changed(userdata, tgid);
}

/* Dead, and nothing since the scan says otherwise: a process that took a
 * dead one's number and exec'd since is placed from its exec (a socket
 * read sooner) before its FORK is read, which is what tells the number is
 * in use again. Where the count of what changed was lost, not known. */
static bool dead_trampoline(void *userdata, pid_t tgid) {
        Pipeline *p = userdata;

        return !p->changed_lost && !known_changed(p, tgid) && lives_dead(p->lives, tgid);
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
        /* A pass's apply asks them what changed (or was left by its scan)
         * whether or not anything yields. */
        p->hooks = (YieldHooks) { .yield = yield_trampoline, .changed = changed_trampoline,
                                  .known_changed = known_changed_trampoline, .dead = dead_trampoline,
                                  .userdata = p };
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
        p->online = read_online(p);
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
        {
                bool *in_force;
                PolicyLoadBand *bands;

                if ((k = in_force_arrays(p->policies, NULL, NULL, &in_force, &bands)) < 0)
                        return k;
                use_in_force_arrays(p, in_force, bands);
        }
        if ((k = users_load(p->root, &p->users)) < 0)
                return fail(k, ret_reason, "cannot read etc/passwd");

        classify_params_from_config(p->config, &params);
        if ((k = task_scanner_new(p->root, kernelcaps_core_sched_built(p->caps) ? &ops : NULL, &p->scanner)) < 0 ||
            (k = classifier_new(&params, &p->classifier)) < 0)
                return k;
        if (o->events) {
                p->events_error = proc_events_open_split(&p->events);
                p->forks_lazy = p->events && proc_events_lazy_fd(p->events) >= 0;
                /* Subscribed before the first (full) scan: from then on the
                 * events tell which processes changed. */
                task_scanner_trust_events(p->scanner, p->events != NULL);
                /* Who died whole, counted from the events on: the scans
                 * and the journal's upkeep pass over such a one for the
                 * next LIVES_ERAS samples (observe/lives.h). */
                if (p->events) {
                        if ((k = lives_new(&p->lives)) < 0)
                                return k;
                        task_scanner_set_lives(p->scanner, p->lives);
                }
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
        bool *in_force;
        PolicyLoadBand *bands;
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
        if ((k = in_force_arrays(policies, p->policies, p->bands, &in_force, &bands)) < 0)
                return k;

        /* Swap. The plan in use names policies of the old set: no fast
         * path until the next pass brings a plan of the new one. */
        (void) pipeline_use_plan(p, NULL);
        config_free(p->config);
        p->config = TAKE_PTR(config);
        policy_set_free(p->policies);
        p->policies = TAKE_PTR(policies);
        p->n_kept = 0; /* indexes of the old set */
        use_in_force_arrays(p, in_force, bands);
        classify_params_from_config(p->config, &params);
        p->classifier->params = params;
        return 0;
}

/* kthreadd: what it forks are kernel threads. */
#define KTHREADD_PID 2

/* A process for the fast path. */
static void fresh_add(Pipeline *p, pid_t tgid) {
        if (!p->place || tgid <= 0)
                return;
        if (p->n_fresh < PIPELINE_FRESH_MAX)
                p->fresh[p->n_fresh++] = tgid;
        else
                p->fresh_dropped++; /* marked for the scan: the pass has it */
}

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Did the fast path read this process after the event happened? Then it
 * saw what the event tells (a pid reused since was read before its fork). */
static bool looked_after(const Pipeline *p, pid_t tgid, uint64_t event_ns) {
        size_t i = (size_t) tgid % PIPELINE_LOOKED_SLOTS;

        return event_ns > 0 && p->looked[i].tgid == tgid && p->looked[i].at_ns > event_ns;
}

/* The newest entries are the likely ones: a process that lived for a moment. */
static void fresh_forget(Pipeline *p, pid_t tgid) {
        for (size_t i = p->n_fresh; i > 0; i--)
                if (p->fresh[i - 1] == tgid)
                        p->fresh[i - 1] = 0;
        for (size_t i = p->n_forked; i > 0; i--)
                if (p->forked[i - 1].tgid == tgid)
                        p->forked[i - 1].tgid = 0;
}

/* A new process from its fork on the lazy socket: for the read after this
 * one (Pipeline.forked). Its exec, if it comes first, is the placer's: the
 * loop would take the lock from it for a read of the same process (in the
 * test guest's exec storms, a lazy read placed dozens at once while the
 * placer waited, and the placer's p99 went to 0.5 s). */
static void forked_add(Pipeline *p, pid_t tgid, uint64_t at_ns) {
        if (!p->place || tgid <= 0)
                return;
        if (p->forked && p->n_forked < PIPELINE_FRESH_MAX)
                p->forked[p->n_forked++] = (PipelineFork) { tgid, at_ns };
        else
                p->fresh_dropped++; /* marked for the scan: the pass has it */
}

bool pipeline_forks_waiting(const Pipeline *p) {
        return p->n_forked > 0;
}

bool pipeline_waiting_for_plan(const Pipeline *p) {
        return p->n_waiting > 0;
}

static void changed_add(Pipeline *p, pid_t tgid) {
        if (p->changed_lost || tgid <= 0)
                return;
        if (p->n_changed == p->changed_cap) {
                size_t n = p->changed_cap ? p->changed_cap * 2 : 64;
                pid_t *nc = n <= PIPELINE_CHANGED_MAX ? realloc(p->changed, n * sizeof(pid_t)) : NULL;

                if (!nc) {
                        p->changed_lost = true; /* every process counts as changed */
                        return;
                }
                p->changed = nc;
                p->changed_cap = n;
        }
        p->changed[p->n_changed++] = tgid;
}

static bool known_changed(Pipeline *p, pid_t tgid) {
        if (p->n_deferred > 0 && bsearch(&tgid, p->deferred, p->n_deferred, sizeof(pid_t), compare_pid))
                return true;
        if (p->n_changed_sorted < p->n_changed) {
                size_t u = 0;

                /* Sorted when asked after a change: the events come in
                 * between the asking, seldom. */
                qsort(p->changed, p->n_changed, sizeof(pid_t), compare_pid);
                for (size_t i = 0; i < p->n_changed; i++)
                        if (u == 0 || p->changed[u - 1] != p->changed[i])
                                p->changed[u++] = p->changed[i];
                p->n_changed = p->n_changed_sorted = u;
        }
        return p->n_changed > 0 && bsearch(&tgid, p->changed, p->n_changed, sizeof(pid_t), compare_pid);
}

bool pipeline_changed(Pipeline *p, pid_t tgid) {
        return p->changed_lost || known_changed(p, tgid);
}

void pipeline_set_yield(Pipeline *p, void (*yield)(void *userdata), void *userdata) {
        p->yield = yield;
        p->yield_userdata = userdata;
        task_scanner_set_yield(p->scanner, yield ? &p->hooks : NULL);
}

const YieldHooks *pipeline_yield_hooks(Pipeline *p) {
        return &p->hooks;
}

static size_t drain(Pipeline *p, int (*reader)(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n));

void pipeline_drain_events(Pipeline *p) {
        (void) drain(p, proc_events_read);
}

size_t pipeline_drain_lazy_events(Pipeline *p) {
        /* The forks the last read brought: those not read by the fast
         * path since (no exec, or not yet placed from it) are its now. */
        for (size_t i = 0; i < p->n_forked; i++)
                if (p->forked[i].tgid > 0 && !looked_after(p, p->forked[i].tgid, p->forked[i].at_ns))
                        fresh_add(p, p->forked[i].tgid);
        p->n_forked = 0;
        return drain(p, proc_events_read_lazy);
}

static void defer_next_add(Pipeline *p, pid_t tgid);

typedef enum TakeStep {
        TAKE_ALL,
        TAKE_FRESH, /* of execs alone: only the processes for the fast path */
        TAKE_REST,  /* the same execs after their placement: the rest */
} TakeStep;

/* What the events tell, for the scan, the fast path and the groups' loads. */
static void take(Pipeline *p, const TaskEvent *ev, size_t n, TakeStep step) {
        for (size_t i = 0; i < n; i++) {
                switch (ev[i].type) {
                case TASK_EVENT_FORK:
                        lives_fork(p->lives, ev[i].pid, ev[i].tgid);
                        /* A new process, or a new thread of one. */
                        if (task_scanner_mark(p->scanner, ev[i].tgid) < 0 ||
                            task_scanner_mark(p->scanner, ev[i].parent_tgid) < 0)
                                p->rescan = true;
                        /* A new thread starts in its process's cgroup with
                         * its creator's cookie: nothing to place, but it
                         * counts in its group's load. A new process may
                         * belong elsewhere than its parent (spread, a
                         * cookie per process, another policy). */
                        if (ev[i].pid != ev[i].tgid) {
                                if (p->place)
                                        place_note_thread(p->place, ev[i].tgid);
                        } else {
                                changed_add(p, ev[i].tgid);
                                if (ev[i].parent_tgid == KTHREADD_PID ||
                                    looked_after(p, ev[i].tgid, ev[i].timestamp_ns))
                                        break;
                                if (p->forks_lazy)
                                        forked_add(p, ev[i].tgid, ev[i].timestamp_ns);
                                else
                                        fresh_add(p, ev[i].tgid);
                        }
                        break;
                case TASK_EVENT_EXIT:
                        lives_exit(p->lives, ev[i].pid, ev[i].tgid);
                        if (task_scanner_mark(p->scanner, ev[i].tgid) < 0)
                                p->rescan = true;
                        /* Its main thread ended: an exec storm's scan may
                         * leave it to the next (gone by then, or a zombie;
                         * one that lives on in other threads is read then). */
                        if (ev[i].pid == ev[i].tgid)
                                defer_next_add(p, ev[i].tgid);
                        if (p->place)
                                place_note_exit(p->place, ev[i].tgid, ev[i].pid);
                        /* Its main thread ended: the process is gone (or
                         * lives on in other threads, then the next pass
                         * has it). Nothing for the fast path to place. */
                        if (ev[i].pid == ev[i].tgid)
                                fresh_forget(p, ev[i].tgid);
                        break;
                case TASK_EVENT_EXEC:
                        if (step != TAKE_FRESH) {
                                task_scanner_invalidate(p->scanner, ev[i].tgid);
                                task_scanner_invalidate(p->scanner, ev[i].pid);
                                if (task_scanner_mark(p->scanner, ev[i].tgid) < 0)
                                        p->rescan = true;
                                changed_add(p, ev[i].tgid);
                        }
                        if (step != TAKE_REST && !looked_after(p, ev[i].tgid, ev[i].timestamp_ns))
                                fresh_add(p, ev[i].tgid);
                        break;
                case TASK_EVENT_COMM:
                        task_scanner_invalidate(p->scanner, ev[i].pid);
                        if (ev[i].pid == ev[i].tgid)
                                changed_add(p, ev[i].tgid);
                        /* A process that renamed itself (its main thread)
                         * may match another policy now. Only one the last
                         * scan saw as a user process: kernel threads rename
                         * themselves all the time (kworkers, per work item)
                         * and cannot be moved. One newer than the scan is
                         * the next pass's. */
                        if (ev[i].pid == ev[i].tgid && p->place && p->snap) {
                                const TaskFacts *t = task_snapshot_find(p->snap, ev[i].pid);

                                if (t && !t->kernel_thread && !looked_after(p, ev[i].tgid, ev[i].timestamp_ns))
                                        fresh_add(p, ev[i].tgid);
                        }
                        break;
                case TASK_EVENT_OVERRUN:
                        p->rescan = true;
                        /* A FORK may be among the lost, and the kernel drops
                         * more, silently, until the socket is empty. */
                        lives_suspend(p->lives);
                        break;
                default:
                        break;
                }
                if (ev[i].type == TASK_EVENT_ACK || !p->keep_events || step == TAKE_FRESH)
                        continue;
                if (p->n_seen < PIPELINE_EVENTS_KEPT_MAX)
                        p->seen[p->n_seen++] = ev[i];
                else
                        p->events_not_kept++;
        }
}

static size_t drain(Pipeline *p, int (*reader)(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n)) {
        TaskEvent ev[PIPELINE_EVENT_BATCH];
        size_t n = ELEMENTSOF(ev), total = 0;

        if (!p->events)
                return 0;
        /* Fewer than asked: the socket is empty (the read saw EAGAIN), and
         * another read would only see it again. */
        while (n == ELEMENTSOF(ev)) {
                if (reader(p->events, ev, ELEMENTSOF(ev), &n) < 0) {
                        /* What it had read is lost with the error: read
                         * everything at the next scan. */
                        p->rescan = true;
                        break;
                }
                total += n;
                take(p, ev, n, TAKE_ALL);
        }
        /* Read empty (fewer than asked), the forks and exits too (the
         * urgent socket is the execs' alone where they are split): after
         * lost events, whole again from here. */
        if (n < ELEMENTSOF(ev) && (reader != proc_events_read_urgent || proc_events_lazy_fd(p->events) < 0))
                lives_resume(p->lives);
        return total;
}

bool pipeline_take_urgent_events(Pipeline *p, const TaskEvent *events, size_t n, int read_error) {
        bool execs = n < PIPELINE_EVENT_BATCH; /* a full batch: the rest of the socket's follows */

        if (read_error < 0) {
                p->rescan = true;
                return false;
        }
        for (size_t i = 0; execs && i < n; i++)
                execs = events[i].type == TASK_EVENT_EXEC;
        if (execs) {
                take(p, events, n, TAKE_FRESH);
                return true;
        }
        take(p, events, n, TAKE_ALL);
        if (n == PIPELINE_EVENT_BATCH)
                (void) drain(p, proc_events_read_urgent);
        return false;
}

void pipeline_take_urgent_rest(Pipeline *p, const TaskEvent *events, size_t n) {
        take(p, events, n, TAKE_REST);
}

void pipeline_wait_until(Pipeline *p, uint64_t deadline) {
        for (;;) {
                uint64_t now = pipeline_now_usec();
                struct pollfd pfd[2];

                if (now >= deadline)
                        return;
                if (!p->events) {
                        struct timespec ts = { (time_t) ((deadline - now) / 1000000u),
                                               (long) ((deadline - now) % 1000000u) * 1000 };
                        nanosleep(&ts, NULL);
                        continue;
                }
                pfd[0] = (struct pollfd) { .fd = proc_events_fd(p->events), .events = POLLIN };
                pfd[1] = (struct pollfd) { .fd = proc_events_lazy_fd(p->events), .events = POLLIN };
                if (poll(pfd, pfd[1].fd >= 0 ? 2 : 1, (int) ((deadline - now + 999) / 1000)) > 0)
                        pipeline_drain_events(p);
        }
}

/* One more process the fast path placed, or whose main thread exited, for
 * pipeline_sample_deferring(). Past PIPELINE_CHANGED_MAX, or without
 * memory, the rest are read as usual. */
static void defer_next_add(Pipeline *p, pid_t tgid) {
        if (p->n_defer_next == p->defer_next_cap) {
                size_t n = p->defer_next_cap ? p->defer_next_cap * 2 : 64;
                pid_t *np = n <= PIPELINE_CHANGED_MAX ? realloc(p->defer_next, n * sizeof(pid_t)) : NULL;

                if (!np)
                        return;
                p->defer_next = np;
                p->defer_next_cap = n;
        }
        p->defer_next[p->n_defer_next++] = tgid;
}

static int sample(Pipeline *p, bool full, bool defer) {
        TaskSnapshot *snap = NULL;
        /* The list so far, the scan's: the fast path placing during the
         * scan's yields starts a new one for the next. */
        pid_t *placed;
        size_t n_defer = 0, n_placed;
        uint64_t now;
        int k;

        /* The exits queued until now count for this scan. */
        pipeline_drain_events(p);
        fd_bin_empty(&p->fds); /* the fast path's since the last */
        lives_next_era(p->lives);
        placed = TAKE_PTR(p->defer_next);
        n_placed = p->n_defer_next;
        p->n_defer_next = p->defer_next_cap = 0;
        /* The scan sees the new processes: the pass places them. */
        p->n_fresh = 0;
        p->fresh_dropped = 0;
        p->n_waiting = p->n_retried = 0;
        p->n_forked = 0;
        /* What changes from here on, the scan may have read before. */
        p->n_changed = p->n_changed_sorted = 0;
        p->changed_lost = false;
        if (defer) {
                /* Left to the next scan: the placed and the exited processes
                 * the last one did not see. They count as changed (pipeline_changed())
                 * until the next scan: the pass leaves them alone. */
                if (n_placed > 0)
                        qsort(placed, n_placed, sizeof(pid_t), compare_pid);
                for (size_t i = 0; i < n_placed; i++)
                        if ((n_defer == 0 || placed[n_defer - 1] != placed[i]) &&
                            !(p->snap && task_snapshot_find(p->snap, placed[i])))
                                placed[n_defer++] = placed[i];
        }
        free(p->deferred);
        p->deferred = placed;
        p->n_deferred = n_defer;
        now = pipeline_now_usec();
        /* Everything is read at the start, after lost events, and every
         * rescan_interval (what changes without the thread running, such
         * as a rename through /proc/PID/comm, which sends no event). */
        full = full || p->samples == 0 || p->rescan || now - p->last_full_usec >= p->config->rescan_interval_usec;
        if (full)
                p->rescan = false; /* events lost during the scan set it again */
        /* The last snapshot stays until this one is whole: a scan that
         * yields lets the fast path look at it meanwhile. */
        k = task_scanner_scan_deferring(p->scanner, full, placed, n_defer, &snap);
        if (k < 0) {
                p->snap = task_snapshot_free(p->snap);
                return k;
        }
        task_snapshot_free(p->snap);
        p->snap = snap;
        if (full) {
                p->last_full_usec = now;
                /* After an event storm the scanner stopped trusting events;
                 * a full scan is a fresh start, unless events were lost
                 * while it ran. */
                if (!p->rescan)
                        task_scanner_trust_events(p->scanner, p->events != NULL);
        }
        p->samples++;
        return classifier_update(p->classifier, p->snap);
}

int pipeline_sample(Pipeline *p, bool full) {
        return sample(p, full, false);
}

int pipeline_sample_deferring(Pipeline *p, bool full) {
        return sample(p, full, true);
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

                /* A main thread that exited while other threads live: /proc
                 * lists it, nothing runs it; moves and cookies go to the
                 * threads that live (one written to cgroup.procs moves them
                 * all, the exited one stays where it was). */
                if (procfs_state_exited(t->state))
                        continue;
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
                /* the plan in force (none after a reload): its groups stay */
                .keep = p->plan,
                .usage = p->usage,
                .n_usage = p->n_usage,
        };
        return plan_build(&in, ret);
}

/* "usage_usec N" of a cpu.stat text. */
static int parse_usage_usec(const char *text, uint64_t *ret) {
        for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, "usage_usec ", 11) == 0) {
                        char *end;

                        errno = 0;
                        *ret = strtoull(l + 11, &end, 10);
                        return errno || end == l + 11 ? -EINVAL : 0;
                }
        return -ENODATA;
}

int pipeline_measure(Pipeline *p, const Plan *applied) {
        const char *mount = p->caps->cgroup2_mount;
        _cleanup_(strv_freep) char **paths = NULL;
        _cleanup_free_ uint64_t *counters = NULL, *at = NULL;
        _cleanup_free_ PlanUsage *usage = NULL;
        size_t n = 0, n_usage = 0;

        if (!applied || !mount || !applied->mode_emulated || !applied->mode || !streq(applied->mode, "concur"))
                return 0;
        paths = calloc(applied->n_groups + 1, sizeof(char *));
        counters = calloc(MAX(applied->n_groups, (size_t) 1), sizeof(uint64_t));
        at = calloc(MAX(applied->n_groups, (size_t) 1), sizeof(uint64_t));
        usage = calloc(MAX(applied->n_groups, (size_t) 1), sizeof(PlanUsage));
        if (!paths || !counters || !at || !usage)
                return -ENOMEM;
        for (size_t g = 0; g < applied->n_groups; g++) {
                const PlanGroup *pg = &applied->groups[g];
                _cleanup_free_ char *rel = NULL, *text = NULL;
                uint64_t v, t0, t1;

                if (pg->policy < 0)
                        continue;
                if (asprintf(&rel, "%s%s/%s/cpu.stat", mount + (mount[0] == '/'), applied->cgroup_root, pg->path) < 0)
                        return -ENOMEM;
                /* When: the middle of the read, each group its own (a
                 * read delayed by a busy machine moves the figure less). */
                t0 = pipeline_now_usec();
                if (root_read_file(p->root, rel, 4096, &text, NULL) < 0 || parse_usage_usec(text, &v) < 0)
                        continue;
                t1 = pipeline_now_usec();
                if (!(paths[n] = strdup(pg->path)))
                        return -ENOMEM;
                counters[n] = v;
                at[n] = t0 + (t1 - t0) / 2;
                /* against the last reading of the same group */
                for (size_t o = 0; o < p->n_readings; o++) {
                        if (!streq(p->reading_paths[o], pg->path))
                                continue;
                        if (at[n] - p->readings_at[o] < PIPELINE_MEASURE_MIN_USEC && v >= p->readings[o]) {
                                /* Too soon: the last reading stays the base,
                                 * and the figure from it. */
                                counters[n] = p->readings[o];
                                at[n] = p->readings_at[o];
                                for (size_t u = 0; u < p->n_usage; u++)
                                        if (streq(p->usage[u].path, pg->path)) {
                                                usage[n_usage++] = (PlanUsage) {
                                                        .path = paths[n],
                                                        .concurrency_permille = p->usage[u].concurrency_permille,
                                                };
                                                break;
                                        }
                        } else if (v >= p->readings[o]) {
                                uint64_t permille = (v - p->readings[o]) * 1000u / (at[n] - p->readings_at[o]);

                                usage[n_usage++] = (PlanUsage) {
                                        .path = paths[n],
                                        .concurrency_permille = (unsigned) MIN(permille, (uint64_t) UINT32_MAX),
                                };
                        }
                        /* (A counter that went back: the group was made
                         * anew; this reading is the base, no figure yet.) */
                        break;
                }
                n++;
        }
        strv_free(p->reading_paths);
        free(p->readings);
        free(p->readings_at);
        free(p->usage);
        p->reading_paths = TAKE_PTR(paths);
        p->readings = TAKE_PTR(counters);
        p->readings_at = TAKE_PTR(at);
        p->n_readings = n;
        p->usage = TAKE_PTR(usage);
        p->n_usage = n_usage;
        return 0;
}

/* ---- the fast path ---------------------------------------------------------- */

int pipeline_use_plan(Pipeline *p, const Plan *plan) {
        int k;

        if (p->place) {
                /* The fast path's cookie sources, for the next plan's (a
                 * storm pass's plan may have no member of a group to join:
                 * without them the next process would start a cookie of
                 * its own, the group split until the next pass). */
                PlaceSource *ks = realloc(p->kept_sources, MAX(p->policies->n, (size_t) 1) * sizeof(PlaceSource));

                if (ks) {
                        p->kept_sources = ks;
                        place_fresh_sources(p->place, ks);
                        p->n_kept = p->policies->n;
                } else
                        p->n_kept = 0;
        }
        p->place = place_state_free(p->place);
        p->plan = plan;
        p->n_fresh = 0;
        p->fresh_dropped = 0;
        /* Looks under another plan tell nothing about this one. */
        memset(p->looked, 0, sizeof(p->looked));
        if (!plan)
                return 0; /* the waiting wait for the next plan */
        /* The buffers, once. */
        if (!p->fresh)
                p->fresh = calloc(PIPELINE_FRESH_MAX, sizeof(pid_t));
        if (!p->waiting)
                p->waiting = calloc(PIPELINE_FRESH_MAX, sizeof(pid_t));
        if (!p->retried)
                p->retried = calloc(PIPELINE_FRESH_MAX, sizeof(pid_t));
        if (!p->forked)
                p->forked = calloc(PIPELINE_FRESH_MAX, sizeof(PipelineFork));
        if (!p->quick && (p->quick = calloc(1, sizeof(TaskQuick))))
                p->quick->bin = &p->fds;
        if (!p->batch)
                p->batch = calloc(PIPELINE_FRESH_MAX, sizeof(ReconcilePlacement));
        if (!p->sources)
                p->sources = calloc(PIPELINE_FRESH_MAX * (PLACE_COOKIE_SOURCES_MAX + 1), sizeof(CookieTask));
        if (!p->fresh || !p->waiting || !p->retried || !p->forked || !p->quick || !p->batch || !p->sources)
                return -ENOMEM;
        /* Those that waited for a group: this plan may have it. */
        memcpy(p->fresh, p->waiting, p->n_waiting * sizeof(pid_t));
        memcpy(p->retried, p->waiting, p->n_waiting * sizeof(pid_t));
        p->n_fresh = p->n_retried = p->n_waiting;
        p->n_waiting = 0;
        qsort(p->retried, p->n_retried, sizeof(pid_t), compare_pid);
        k = place_state_new(plan, p->policies, p->in_force, p->topology, &p->place);
        if (k < 0)
                return k;
        place_set_fresh_sources(p->place, p->kept_sources, p->n_kept);
        return 0;
}

/* PLACE_FACT() bits to TASK_QUICK_* bits. */
static unsigned quick_fields(unsigned facts) {
        static const unsigned map[_POLICY_MATCH_FIELD_MAX] = {
                [POLICY_MATCH_COMM] = TASK_QUICK_COMM,     [POLICY_MATCH_EXE] = TASK_QUICK_EXE,
                [POLICY_MATCH_CMDLINE] = TASK_QUICK_CMDLINE, [POLICY_MATCH_CGROUP] = TASK_QUICK_CGROUP,
                [POLICY_MATCH_USER] = TASK_QUICK_UID,      [POLICY_MATCH_PARENT] = TASK_QUICK_PARENT,
        };
        unsigned f = 0;

        for (unsigned i = 0; i < _POLICY_MATCH_FIELD_MAX; i++)
                if (facts & PLACE_FACT(i))
                        f |= map[i];
        return f;
}

/* What [match] sees of it, as pipeline_policy_task() for a scanned task. */
static void quick_policy_task(const Pipeline *p, const TaskQuick *q, PolicyTask *ret) {
        *ret = (PolicyTask) {
                .class = POLICY_CLASS_OTHER, /* never looked at: see place.h */
                .comm = q->comm,
                .exe = q->exe,
                .cmdline = q->cmdline,
                .cgroup = q->cgroup,
                .user = q->has_uid ? users_name(p->users, q->uid) : NULL,
                .parent = q->parent_comm,
                .uid = q->uid,
        };
}

/* Decide for one process, reading what the decision needs: comm, and more
 * only where a policy asks. Who it is (its start time) is learned by the
 * apply step when it takes a handle on it. comm, not stat: the first read
 * of a new process's /proc entry is the dear one, and stat's costs about
 * twice comm's (measured: 14 against 25 µs), for every exec, matched or
 * not. It is one thread right after exec or fork. */
static void pick_one(Pipeline *p, pid_t tgid, PlaceProcess *pp, PlacePick *pick) {
        TaskQuick *q = p->quick;

        *pp = (PlaceProcess) {
                .tgid = tgid,
                .n_threads = 1,
                .have = PLACE_FACT_COMM,
                /* Waited for the pass that made its group, which left it
                 * alone: placed now from its plan, not taken as placed. */
                .unapplied = p->n_retried > 0 && bsearch(&tgid, p->retried, p->n_retried, sizeof(pid_t), compare_pid),
        };
        *pick = (PlacePick) { .verdict = PLACE_NONE, .policy = -1, .group = -1, .cookie_group = -1 };
        task_quick_reset(q, tgid);
        /* Before the read: what happened before this moment, it sees. */
        p->looked[(size_t) tgid % PIPELINE_LOOKED_SLOTS].tgid = tgid;
        p->looked[(size_t) tgid % PIPELINE_LOOKED_SLOTS].at_ns = now_ns();
        if (tasks_read_quick(p->root, TASK_QUICK_COMM, q) < 0)
                return; /* gone already */
        for (;;) {
                quick_policy_task(p, q, &pp->match);
                place_pick(p->place, pp, pick);
                if (pick->verdict != PLACE_NEED_FACTS)
                        return;
                if (tasks_read_quick(p->root, quick_fields(pick->need), q) < 0)
                        break;
                pp->have |= pick->need;
        }
        pick->verdict = PLACE_NONE;
}

int pipeline_place_fresh(Pipeline *p, const Reconciler *rc_in, PipelineFreshStats *ret_stats, ReconcileReport **ret) {
        PipelineFreshStats st = { .left = p->fresh_dropped };
        /* What it opens (comm, the pins, the cgroup files) is closed
         * together after the batch: one system call, not one each. */
        Reconciler rc = *rc_in;
        size_t n = p->n_fresh, nb = 0;
        int k = 0;

        rc.fds = &p->fds;

        *ret = NULL;
        p->n_fresh = 0;
        p->fresh_dropped = 0;
        if (!p->place || n == 0) {
                st.left += (unsigned) n;
                goto finish;
        }
        /* Each process once (FORK and EXEC of one process in one burst). */
        if (n > 1) {
                size_t u = 0;

                qsort(p->fresh, n, sizeof(pid_t), compare_pid);
                for (size_t i = 0; i < n; i++)
                        if (p->fresh[i] > 0 && (u == 0 || p->fresh[u - 1] != p->fresh[i]))
                                p->fresh[u++] = p->fresh[i];
                n = u;
        } else if (p->fresh[0] <= 0)
                n = 0; /* gone already (fresh_forget()) */
        for (size_t i = 0; i < n; i++) {
                ReconcilePlacement *b = &p->batch[nb];
                CookieTask *src = &p->sources[nb * (PLACE_COOKIE_SOURCES_MAX + 1)];
                PlaceSource ps[PLACE_COOKIE_SOURCES_MAX + 1];
                PlaceProcess pp;
                PlacePick pick;
                size_t n_src;

                st.seen++;
                pick_one(p, p->fresh[i], &pp, &pick);
                st.kernel += pick.kernel;
                switch (pick.verdict) {
                case PLACE_GROUP:
                        break;
                case PLACE_PLANNED:
                        st.planned++;
                        continue;
                case PLACE_NEED_PASS:
                        if (p->waiting && p->n_waiting < PIPELINE_FRESH_MAX) {
                                p->waiting[p->n_waiting++] = pp.tgid;
                                st.waiting++;
                        }
                        st.left++;
                        continue;
                case PLACE_WAIT_CLASS:
                        st.left++;
                        continue;
                default:
                        st.unmatched++;
                        continue;
                }
                n_src = place_cookie_sources(p->place, &pick, ps, ELEMENTSOF(ps));
                for (size_t s = 0; s < n_src; s++)
                        src[s] = (CookieTask) { ps[s].tid, ps[s].start_time };
                *b = (ReconcilePlacement) {
                        .tgid = pp.tgid,
                        .start_time = pp.start_time,
                        .policy = pick.policy,
                        .group = pick.group,
                        .cookie = pick.cookie,
                        .cookie_group = pick.cookie_group,
                        .sources = src,
                        .n_sources = n_src,
                };
                /* Counted now, so that the next pick of this burst sees it. */
                place_commit(p->place, &pick, pp.tgid, pp.n_threads);
                nb++;
        }
        if (nb == 0)
                goto finish;

        k = reconcile_place(&rc, p->plan, p->batch, nb, ret);
        for (size_t i = 0; i < nb; i++) {
                const ReconcilePlacement *b = &p->batch[i];
                bool moved = k >= 0 && (b->moved == RECONCILE_DONE || b->moved == RECONCILE_ALREADY);
                bool cookied = k >= 0 && (b->cookied == RECONCILE_DONE || b->cookied == RECONCILE_ALREADY);

                if (moved && cookied)
                        st.placed++;
                else if (k >= 0 && (b->moved == RECONCILE_VANISHED || b->cookied == RECONCILE_VANISHED))
                        st.vanished++; /* lived for a moment: no pass needed for it */
                else
                        st.left++;
                if (!moved) /* not in the group after all */
                        place_note_exit(p->place, b->tgid, b->tgid);
                else
                        defer_next_add(p, b->tgid);
                /* It has the group's cookie: a source for the next. */
                if (b->cookie == PLACE_COOKIE_JOIN && cookied)
                        place_note_cookie(p->place, b->policy, b->tgid, b->start_time);
        }
        if (k < 0)
                goto finish;
        k = 1;
finish:
        if (p->fds.n >= PIPELINE_FDS_CLOSE_AT)
                fd_bin_empty(&p->fds);
        if (ret_stats)
                *ret_stats = st;
        return k;
}
