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
#include <unistd.h>

#include "base/util.h"
#include "decide/policy-check.h"
#include "decide/policy-read.h"
#include "observe/sysload.h"
#include "pipeline/origin.h"

uint64_t pipeline_now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static void pipeline_observe_done(PipelineObserve *o) {
        task_snapshot_free(o->snap);
        proc_events_free(o->events);
        task_scanner_free(o->scanner);
        lives_free(o->lives);
        users_free(o->users);
        bitmap_free(o->online);
        free(o->seen);
        counter_set_free(o->counters);
        kernelcaps_free(o->caps);
        topology_free(o->topology);
        root_free(o->root);
}

static void pipeline_decide_done(PipelineDecide *d) {
        classifier_free(d->classifier);
        free(d->in_force);
        free(d->bands);
        free(d->idle);
        policy_set_free(d->policies);
        config_free(d->config);
}

static void pipeline_measure_done(PipelineMeasure *m) {
        strv_free(m->reading_paths);
        free(m->readings);
        free(m->readings_at);
        free(m->usage);
        forced_idle_groups_free(m->idle_groups, m->n_idle_groups);
}

Pipeline *pipeline_free(Pipeline *p) {
        if (!p)
                return NULL;
        fastpath_free(p->fast);
        pipeline_measure_done(&p->measure);
        pipeline_decide_done(&p->decide);
        pipeline_observe_done(&p->observe);
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

        check_machine_from(p->observe.topology, p->observe.caps, p->observe.kernel_version, &m);
        for (size_t i = 0; i < p->decide.policies->n; i++) {
                const Policy *pol = p->decide.policies->policies[i];
                bool f = pol->enabled && (!pol->has_when || (policy_when_holds_but_load(&pol->when, &m) &&
                                                             (!pol->when.has_load || p->decide.bands[i].holds) &&
                                                             pipeline_forced_idle_holds(p, i)));

                changed += f != p->decide.in_force[i];
                p->decide.in_force[i] = f;
        }
        return changed;
}

/* Read the load (sysload.h) and take it into every load band. A band
 * holds only once a reading has been taken (a band not started holds
 * nothing); a failed read later leaves the bands as they are. */
static void read_load(Pipeline *p, uint64_t now_usec) {
        p->decide.have_load = p->observe.topology && sysload_read_percent(p->observe.root, p->observe.topology->n_pus, &p->decide.load_percent) >= 0;
        if (!p->decide.have_load)
                return;
        for (size_t i = 0; i < p->decide.policies->n; i++) {
                const Policy *pol = p->decide.policies->policies[i];

                if (pol->has_when && pol->when.has_load)
                        (void) policy_load_band_update(&p->decide.bands[i], &pol->when, p->decide.load_percent,
                                                       p->decide.config->load_hysteresis, p->decide.config->load_dwell_usec, now_usec);
        }
}

/* The per-policy arrays for a policy set: a band is carried over from
 * the set in use where a policy of the same name has the same band (a
 * reload does not reset the hysteresis and dwell of what did not change);
 * the others start from the next reading. Made before anything is
 * swapped: a failure leaves the running set whole. */
static int in_force_arrays(const PolicySet *ps, const PolicySet *old, const PolicyLoadBand *old_bands,
                           bool **ret_in_force, PolicyLoadBand **ret_bands, PolicyIdle **ret_idle) {
        _cleanup_free_ bool *in_force = calloc(MAX(ps->n, (size_t) 1), sizeof(bool));
        _cleanup_free_ PolicyLoadBand *bands = calloc(MAX(ps->n, (size_t) 1), sizeof(PolicyLoadBand));
        _cleanup_free_ PolicyIdle *idle = calloc(MAX(ps->n, (size_t) 1), sizeof(PolicyIdle));

        if (!in_force || !bands || !idle)
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
        *ret_idle = TAKE_PTR(idle);
        return 0;
}

/* For the policy set now in p->decide.policies, with its arrays: the load taken
 * in, the policies in force worked out. */
static void use_in_force_arrays(Pipeline *p, bool *in_force, PolicyLoadBand *bands, PolicyIdle *idle) {
        free(p->decide.in_force);
        free(p->decide.bands);
        free(p->decide.idle);
        p->decide.in_force = in_force;
        p->decide.bands = bands;
        p->decide.idle = idle;
        read_load(p, pipeline_now_usec());
        (void) compute_in_force(p);
}

/* The CPUs online as the kernel lists them, or NULL when it cannot be told. */
static Bitmap *read_online(const Pipeline *p) {
        _cleanup_free_ char *text = NULL;
        Bitmap *b = NULL;

        if (root_read_line(p->observe.root, "sys/devices/system/cpu/online", &text) < 0 ||
            bitmap_parse_list(strstrip(text), &b) < 0)
                return NULL;
        return b;
}

/* The topology's source: the options' other host, or the root. */
static TopologySource topology_source(const Pipeline *p) {
        if (p->options.xml)
                return (TopologySource) { .kind = TOPOLOGY_SOURCE_XML, .arg = p->options.xml };
        if (p->options.synthetic)
                return (TopologySource) { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = p->options.synthetic };
        return (TopologySource) { .kind = TOPOLOGY_SOURCE_ROOT, .arg = p->options.root };
}

int pipeline_refresh_topology(Pipeline *p) {
        _cleanup_(bitmap_freep) Bitmap *online = NULL;
        TopologySource src = topology_source(p);
        const Plan *plan = p->fast->plan;
        Topology *t = NULL;
        int k;

        /* Another host's topology does not follow this one's CPUs. */
        if (src.kind != TOPOLOGY_SOURCE_ROOT)
                return 0;
        online = read_online(p);

        /* Read again only when the list changed since it was last acted
         * on, and the topology does not have it already: a tree whose list
         * hwloc reads otherwise is not read at every tick. */
        if (!online || (p->observe.online && bitmap_equal(online, p->observe.online)))
                return 0;
        bitmap_free(p->observe.online);
        p->observe.online = TAKE_PTR(online);
        if (bitmap_equal(p->observe.online, p->observe.topology->cpus))
                return 0;
        if ((k = topology_load(&src, &t)) < 0) {
                p->observe.online = bitmap_free(p->observe.online); /* tried again next time */
                return k;
        }
        /* The fast path's state points into the old one: made again on
         * the new one, from the same plan (the next pass's keeps its
         * groups). */
        (void) pipeline_use_plan(p, NULL);
        topology_free(p->observe.topology);
        p->observe.topology = t;
        if (plan)
                (void) pipeline_use_plan(p, plan);
        return 1;
}

unsigned pipeline_refresh_in_force(Pipeline *p, bool read_load_now) {
        if (read_load_now)
                read_load(p, pipeline_now_usec());
        return compute_in_force(p);
}

/* topod.conf: the one asked for, or the default below the root. */
static char *config_path(const Pipeline *p) {
        char *conf = NULL;

        if (p->options.config)
                conf = strdup(p->options.config);
        else
                (void) root_host_path(p->observe.root, CONFIG_DEFAULT_PATH, &conf);
        return conf;
}

/* What to read for the policies: the path asked for, or topod.conf's
 * policies_dir below the root, or the layers below the root. */
static int policy_search(const Pipeline *p, const Config *config, PolicySearch *ret) {
        return policy_search_init(ret, p->observe.root, p->options.policies, config->policies_dir);
}

/* The configuration: a file with errors (in d) still gives one, of its good lines. */
static int read_config(Pipeline *p, Diagnostics *d, char **ret_reason) {
        _cleanup_free_ char *conf = config_path(p);
        int k;

        if (!conf)
                return -ENOMEM;
        k = config_read(conf, p->options.config != NULL, d, &p->decide.config);
        if (k < 0 && !p->decide.config)
                return fail(k, ret_reason, "cannot read %s", conf);
        return 0;
}

/* Whether a configuration and policy set just read may be used: the one
 * rule of start-up and reload alike (topod(8)). Only whole: topod.conf and
 * every policy file without an error (warnings do not count). A refused
 * reload keeps what runs; a refused start-up starts nothing. */
static int settings_judge(const Config *config, const PolicySet *policies, const Diagnostics *d, size_t errors_before) {
        return config && policies && d->n_errors == errors_before ? 0 : -EINVAL;
}

/* The machine: its topology, the CPUs online, what the kernel offers, its version. */
static int observe_machine(Pipeline *p, char **ret_reason) {
        TopologySource src = topology_source(p);
        _cleanup_free_ char *release = NULL;
        int k;

        if ((k = topology_load(&src, &p->observe.topology)) < 0)
                return fail(k, ret_reason, "cannot load the topology%s%s", src.kind == TOPOLOGY_SOURCE_ROOT ? "" : " from ",
                            src.kind == TOPOLOGY_SOURCE_ROOT ? "" : src.arg);
        p->observe.online = src.kind == TOPOLOGY_SOURCE_ROOT ? read_online(p) : bitmap_copy(p->observe.topology->cpus);
        if (p->options.caps) {
                _cleanup_free_ char *why = NULL;

                if ((k = kernelcaps_load_json_file(p->options.caps, &p->observe.caps, &why)) < 0)
                        return fail(k, ret_reason, "cannot read the kernel probe %s", why ?: p->options.caps);
        } else if ((k = kernelcaps_probe(p->observe.root, NULL, &p->observe.caps)) < 0)
                return fail(k, ret_reason, "kernel capability probe failed");
        if (root_read_line(p->observe.root, "proc/sys/kernel/osrelease", &release) >= 0)
                (void) policy_parse_kernel_version(release, &p->observe.kernel_version);
        return 0;
}

/* The policies, and which are in force now (the load read first). */
static int read_policies(Pipeline *p, Diagnostics *d, char **ret_reason) {
        _cleanup_(policy_search_done) PolicySearch search = {};
        bool *in_force;
        PolicyLoadBand *bands;
        PolicyIdle *idle;
        int k;

        if ((k = policy_search(p, p->decide.config, &search)) < 0)
                return k;
        /* A path named (--policies, policies_dir) that is not there: said
         * as such, not as a policy with errors. */
        if (search.path && access(search.path, F_OK) < 0)
                return fail(-errno, ret_reason, "cannot read the policies in %s", search.path);
        k = policy_search_read(&search, d, &p->decide.policies, NULL);
        if (k < 0 && !p->decide.policies) {
                _cleanup_free_ char *where = policy_search_describe(&search);

                return fail(k, ret_reason, "cannot read the policies in %s", where ?: "?");
        }
        if ((k = in_force_arrays(p->decide.policies, NULL, NULL, &in_force, &bands, &idle)) < 0)
                return k;
        use_in_force_arrays(p, in_force, bands, idle);
        return 0;
}

/* The tasks' readers (the users, the scanner) and the classifier they feed. */
static int observe_tasks(Pipeline *p, char **ret_reason) {
        TaskScanOps ops = { .get_cookie = tasks_get_cookie_host };
        ClassifyParams params;
        int k;

        if ((k = users_load(p->observe.root, &p->observe.users)) < 0)
                return fail(k, ret_reason, "cannot read etc/passwd");

        classify_params_from_config(p->decide.config, &params);
        params.avx_arch_status_tells = kernelcaps_avx512_arch_status_tells(p->observe.caps);
        params.avx_counters = kernelcaps_avx512_counters(p->observe.caps);
        if ((k = task_scanner_new(p->observe.root, kernelcaps_core_sched_built(p->observe.caps) ? &ops : NULL,
                                  &p->observe.scanner)) < 0 ||
            (k = classifier_new(&params, &p->decide.classifier)) < 0)
                return k;
        return 0;
}

/* The proc connector, when asked: which processes change, who died whole. */
static int subscribe_events(Pipeline *p) {
        int k;

        if (!p->options.events)
                return 0;
        p->observe.events_error = proc_events_open_split(&p->observe.events);
        p->fast->forks_lazy = p->observe.events && proc_events_lazy_fd(p->observe.events) >= 0;
        /* Subscribed before the first (full) scan: from then on the
         * events tell which processes changed. */
        task_scanner_trust_events(p->observe.scanner, p->observe.events != NULL);
        /* Who died whole, counted from the events on: the scans
         * and the journal's upkeep pass over such a one for the
         * next LIVES_ERAS samples (observe/lives.h). */
        if (p->observe.events) {
                if ((k = lives_new(&p->observe.lives)) < 0)
                        return k;
                task_scanner_set_lives(p->observe.scanner, p->observe.lives);
        }
        if (p->options.keep_events) {
                p->observe.keep_events = true;
                p->observe.seen = calloc(PIPELINE_EVENTS_KEPT_MAX, sizeof(TaskEvent));
                if (!p->observe.seen)
                        return -ENOMEM;
        }
        return 0;
}

int pipeline_new(const PipelineOptions *o, Diagnostics *d, Pipeline **ret, char **ret_reason) {
        _cleanup_(pipeline_freep) Pipeline *p = calloc(1, sizeof(Pipeline));
        size_t errors;
        int k;

        if (!p)
                return -ENOMEM;
        p->options = *o;
        /* The fast path, and its hooks: a pass's apply asks them what
         * changed (or was left by its scan) whether or not anything
         * yields. */
        if ((k = fastpath_new(&p->observe, &p->fast)) < 0)
                return k;
        raise_fd_limit();
        if ((k = root_open(o->root, &p->observe.root)) < 0)
                return fail(k, ret_reason, "cannot open root %s", o->root ?: "/");
        errors = d->n_errors;
        if ((k = read_config(p, d, ret_reason)) < 0 || (k = observe_machine(p, ret_reason)) < 0 ||
            (k = read_policies(p, d, ret_reason)) < 0)
                return k;
        if ((k = settings_judge(p->decide.config, p->decide.policies, d, errors)) < 0)
                return fail(k, ret_reason, "topod.conf or a policy has errors (above): refused, as a reload would "
                                           "refuse them; nothing is applied");
        p->decide.config->scope.self = getpid();
        if ((k = observe_tasks(p, ret_reason)) < 0 || (k = subscribe_events(p)) < 0)
                return k;
        *ret = TAKE_PTR(p);
        return 0;
}

int pipeline_reload(Pipeline *p, Diagnostics *d) {
        _cleanup_(config_freep) Config *config = NULL;
        bool *in_force;
        PolicyLoadBand *bands;
        PolicyIdle *idle;
        _cleanup_(policy_set_freep) PolicySet *policies = NULL;
        _cleanup_free_ char *conf = config_path(p);
        _cleanup_(policy_search_done) PolicySearch search = {};
        size_t errors = d->n_errors;
        ClassifyParams params;
        int k;

        if (!conf)
                return -ENOMEM;
        k = config_read(conf, p->options.config != NULL, d, &config);
        if (k < 0 && k != -EINVAL)
                return k;
        if (!config)
                return -EINVAL;
        if ((k = policy_search(p, config, &search)) < 0)
                return k;
        k = policy_search_read(&search, d, &policies, NULL);
        if (k < 0 && k != -EINVAL)
                return k;
        if ((k = settings_judge(config, policies, d, errors)) < 0)
                return k; /* keep what runs */
        if ((k = in_force_arrays(policies, p->decide.policies, p->decide.bands, &in_force, &bands, &idle)) < 0)
                return k;

        /* Swap. The plan in use names policies of the old set: no fast
         * path until the next pass brings a plan of the new one. */
        (void) pipeline_use_plan(p, NULL);
        config->scope.self = p->decide.config->scope.self;
        config_free(p->decide.config);
        p->decide.config = TAKE_PTR(config);
        policy_set_free(p->decide.policies);
        p->decide.policies = TAKE_PTR(policies);
        fastpath_policies_changed(p->fast);
        use_in_force_arrays(p, in_force, bands, idle);
        classify_params_from_config(p->decide.config, &params);
        params.avx_arch_status_tells = kernelcaps_avx512_arch_status_tells(p->observe.caps);
        params.avx_counters = kernelcaps_avx512_counters(p->observe.caps);
        p->decide.classifier->params = params;
        return 0;
}

bool pipeline_forks_waiting(const Pipeline *p) {
        return fastpath_forks_waiting(p->fast);
}

bool pipeline_waiting_for_plan(const Pipeline *p) {
        return fastpath_waiting_for_plan(p->fast);
}

bool pipeline_changed(Pipeline *p, pid_t tgid) {
        return fastpath_changed(p->fast, tgid);
}

void pipeline_set_yield(Pipeline *p, void (*yield)(void *userdata), void *userdata) {
        fastpath_set_yield(p->fast, yield, userdata);
        task_scanner_set_yield(p->observe.scanner, yield ? fastpath_hooks(p->fast) : NULL);
}

const YieldHooks *pipeline_yield_hooks(Pipeline *p) {
        return fastpath_hooks(p->fast);
}

static size_t drain(Pipeline *p, int (*reader)(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n));

void pipeline_drain_events(Pipeline *p) {
        (void) drain(p, proc_events_read);
}

size_t pipeline_drain_lazy_events(Pipeline *p) {
        fastpath_take_forks(p->fast);
        return drain(p, proc_events_read_lazy);
}

/* What one event tells the scan, and who died whole (the fast path's part
 * is fastpath_take()'s). */
static void take_observed(Pipeline *p, const TaskEvent *ev, FastPathTake step) {
        switch (ev->type) {
        case TASK_EVENT_FORK:
                lives_fork(p->observe.lives, ev->pid, ev->tgid);
                /* A new process, or a new thread of one. */
                if (task_scanner_mark(p->observe.scanner, ev->tgid) < 0 || task_scanner_mark(p->observe.scanner, ev->parent_tgid) < 0)
                        p->observe.rescan = true;
                break;
        case TASK_EVENT_EXIT:
                lives_exit(p->observe.lives, ev->pid, ev->tgid);
                if (task_scanner_mark(p->observe.scanner, ev->tgid) < 0)
                        p->observe.rescan = true;
                break;
        case TASK_EVENT_EXEC:
                if (step != FASTPATH_TAKE_FRESH) {
                        task_scanner_invalidate(p->observe.scanner, ev->tgid);
                        task_scanner_invalidate(p->observe.scanner, ev->pid);
                        if (task_scanner_mark(p->observe.scanner, ev->tgid) < 0)
                                p->observe.rescan = true;
                }
                break;
        case TASK_EVENT_COMM:
                task_scanner_invalidate(p->observe.scanner, ev->pid);
                break;
        case TASK_EVENT_OVERRUN:
                p->observe.rescan = true;
                /* A FORK may be among the lost, and the kernel drops
                 * more, silently, until the socket is empty. */
                lives_suspend(p->observe.lives);
                break;
        default:
                break;
        }
}

/* What the events tell, for the scan, the fast path and the groups' loads. */
static void take(Pipeline *p, const TaskEvent *ev, size_t n, FastPathTake step) {
        for (size_t i = 0; i < n; i++) {
                take_observed(p, &ev[i], step);
                fastpath_take(p->fast, &ev[i], step);
                if (ev[i].type == TASK_EVENT_ACK || !p->observe.keep_events || step == FASTPATH_TAKE_FRESH)
                        continue;
                if (p->observe.n_seen < PIPELINE_EVENTS_KEPT_MAX)
                        p->observe.seen[p->observe.n_seen++] = ev[i];
                else
                        p->observe.events_not_kept++;
        }
}

static size_t drain(Pipeline *p, int (*reader)(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n)) {
        TaskEvent ev[PIPELINE_EVENT_BATCH];
        size_t n = ELEMENTSOF(ev), total = 0;

        if (!p->observe.events)
                return 0;
        /* Fewer than asked: the socket is empty (the read saw EAGAIN), and
         * another read would only see it again. */
        while (n == ELEMENTSOF(ev)) {
                if (reader(p->observe.events, ev, ELEMENTSOF(ev), &n) < 0) {
                        /* What it had read is lost with the error: read
                         * everything at the next scan. */
                        p->observe.rescan = true;
                        break;
                }
                total += n;
                take(p, ev, n, FASTPATH_TAKE_ALL);
        }
        /* Read empty (fewer than asked), the forks and exits too (the
         * urgent socket is the execs' alone where they are split): after
         * lost events, whole again from here. */
        if (n < ELEMENTSOF(ev) && (reader != proc_events_read_urgent || proc_events_lazy_fd(p->observe.events) < 0))
                lives_resume(p->observe.lives);
        return total;
}

bool pipeline_take_urgent_events(Pipeline *p, const TaskEvent *events, size_t n, int read_error) {
        bool execs = n < PIPELINE_EVENT_BATCH; /* a full batch: the rest of the socket's follows */

        if (read_error < 0) {
                p->observe.rescan = true;
                return false;
        }
        for (size_t i = 0; execs && i < n; i++)
                execs = events[i].type == TASK_EVENT_EXEC;
        if (execs) {
                take(p, events, n, FASTPATH_TAKE_FRESH);
                return true;
        }
        take(p, events, n, FASTPATH_TAKE_ALL);
        if (n == PIPELINE_EVENT_BATCH)
                (void) drain(p, proc_events_read_urgent);
        return false;
}

void pipeline_take_urgent_rest(Pipeline *p, const TaskEvent *events, size_t n) {
        take(p, events, n, FASTPATH_TAKE_REST);
}

void pipeline_wait_until(Pipeline *p, uint64_t deadline) {
        for (;;) {
                uint64_t now = pipeline_now_usec();
                struct pollfd pfd[2];

                if (now >= deadline)
                        return;
                if (!p->observe.events) {
                        struct timespec ts = { (time_t) ((deadline - now) / 1000000u),
                                               (long) ((deadline - now) % 1000000u) * 1000 };
                        nanosleep(&ts, NULL);
                        continue;
                }
                pfd[0] = (struct pollfd) { .fd = proc_events_fd(p->observe.events), .events = POLLIN };
                pfd[1] = (struct pollfd) { .fd = proc_events_lazy_fd(p->observe.events), .events = POLLIN };
                if (poll(pfd, pfd[1].fd >= 0 ? 2 : 1, (int) ((deadline - now + 999) / 1000)) > 0)
                        pipeline_drain_events(p);
        }
}

static int sample(Pipeline *p, bool full, bool defer) {
        TaskSnapshot *snap = NULL;
        uint64_t now;
        int k;

        /* The exits queued until now count for this scan. */
        pipeline_drain_events(p);
        lives_next_era(p->observe.lives);
        fastpath_scan_begin(p->fast, defer);
        now = pipeline_now_usec();
        /* Everything is read at the start, after lost events, and every
         * rescan_interval (what changes without the thread running, such
         * as a rename through /proc/PID/comm, which sends no event). */
        full = full || p->observe.samples == 0 || p->observe.rescan || now - p->observe.last_full_usec >= p->decide.config->rescan_interval_usec;
        if (full)
                p->observe.rescan = false; /* events lost during the scan set it again */
        /* The last snapshot stays until this one is whole: a scan that
         * yields lets the fast path look at it meanwhile. */
        k = task_scanner_scan_deferring(p->observe.scanner, full, p->fast->deferred, p->fast->n_deferred, &snap);
        if (k < 0) {
                p->observe.snap = task_snapshot_free(p->observe.snap);
                return k;
        }
        task_snapshot_free(p->observe.snap);
        p->observe.snap = snap;
        if (full) {
                p->observe.last_full_usec = now;
                /* After an event storm the scanner stopped trusting events;
                 * a full scan is a fresh start, unless events were lost
                 * while it ran. */
                if (!p->observe.rescan)
                        task_scanner_trust_events(p->observe.scanner, p->observe.events != NULL);
        }
        p->observe.samples++;
        if ((k = pipeline_counters_read(p)) < 0 || (k = classifier_update(p->decide.classifier, p->observe.snap)) < 0)
                return k;
        return pipeline_counters_sync(p);
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
                .user = t->has_uid ? users_name(p->observe.users, t->uid) : NULL,
                .parent = t->parent_comm,
                .uid = t->uid,
                .tgid = t->tgid,
        };
}

int pipeline_select(const Pipeline *p, const TaskFacts *t, PolicyClass class) {
        PolicyTask pt;

        if (t->kernel_thread)
                return -1;
        pipeline_policy_task(p, t, class, &pt);
        return policy_set_select(p->decide.policies, p->decide.in_force, &p->decide.config->scope, &pt);
}

int pipeline_plan(const Pipeline *p, const Journal *origins, Plan **ret) {
        _cleanup_free_ PlanTaskInput *tasks = NULL;
        size_t n = 0;
        PlanInputs in;

        if (!p->observe.snap)
                return -EAGAIN;
        tasks = calloc(MAX(p->observe.snap->n_tasks, (size_t) 1), sizeof(PlanTaskInput));
        if (!tasks)
                return -ENOMEM;
        for (size_t i = 0; i < p->observe.snap->n_tasks; i++) {
                const TaskFacts *t = &p->observe.snap->tasks[i];
                const ThreadClass *tc = classifier_find(p->decide.classifier, t->tid);

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
                /* judged where it came from, when topod moved it */
                tasks[n].match.cgroup = origin_cgroup(origins, p->decide.config->cgroup_root, p->observe.snap, t->tgid,
                                                      t->process->start_time, t->ppid, t->process->cgroup);
                n++;
        }
        in = (PlanInputs) {
                .topology = p->observe.topology,
                .caps = p->observe.caps,
                .config = p->decide.config,
                .policies = p->decide.policies,
                .in_force = p->decide.in_force,
                .tasks = tasks,
                .n_tasks = n,
                /* the plan in force (none after a reload): its groups stay */
                .keep = p->fast->plan,
                .usage = p->measure.usage,
                .n_usage = p->measure.n_usage,
                .slices = p->decide.slices,
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
        const char *mount = p->observe.caps->cgroup2_mount;
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
                if (root_read_file(p->observe.root, rel, 4096, &text, NULL) < 0 || parse_usage_usec(text, &v) < 0)
                        continue;
                t1 = pipeline_now_usec();
                if (!(paths[n] = strdup(pg->path)))
                        return -ENOMEM;
                counters[n] = v;
                at[n] = t0 + (t1 - t0) / 2;
                /* against the last reading of the same group */
                for (size_t o = 0; o < p->measure.n_readings; o++) {
                        if (!streq(p->measure.reading_paths[o], pg->path))
                                continue;
                        if (at[n] - p->measure.readings_at[o] < PIPELINE_MEASURE_MIN_USEC && v >= p->measure.readings[o]) {
                                /* Too soon: the last reading stays the base,
                                 * and the figure from it. */
                                counters[n] = p->measure.readings[o];
                                at[n] = p->measure.readings_at[o];
                                for (size_t u = 0; u < p->measure.n_usage; u++)
                                        if (streq(p->measure.usage[u].path, pg->path)) {
                                                usage[n_usage++] = (PlanUsage) {
                                                        .path = paths[n],
                                                        .concurrency_permille = p->measure.usage[u].concurrency_permille,
                                                };
                                                break;
                                        }
                        } else if (v >= p->measure.readings[o]) {
                                uint64_t permille = (v - p->measure.readings[o]) * 1000u / (at[n] - p->measure.readings_at[o]);

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
        strv_free(p->measure.reading_paths);
        free(p->measure.readings);
        free(p->measure.readings_at);
        free(p->measure.usage);
        p->measure.reading_paths = TAKE_PTR(paths);
        p->measure.readings = TAKE_PTR(counters);
        p->measure.readings_at = TAKE_PTR(at);
        p->measure.n_readings = n;
        p->measure.usage = TAKE_PTR(usage);
        p->measure.n_usage = n_usage;
        return 0;
}

int pipeline_use_plan(Pipeline *p, const Plan *plan) {
        return fastpath_use_plan(p->fast, plan, p->decide.policies, p->decide.in_force, &p->decide.config->scope);
}

int pipeline_place_fresh(Pipeline *p, const Reconciler *rc, FastPathStats *ret_stats, ReconcileReport **ret) {
        return fastpath_place(p->fast, rc, ret_stats, ret);
}
