/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "explain.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "apply/cgroup.h"
#include "apply/unit.h"
#include "base/bitmap.h"
#include "base/escape.h"
#include "base/json.h"
#include "base/macro.h"
#include "base/root.h"
#include "base/util.h"
#include "decide/classify.h"
#include "decide/policy-check.h"
#include "observe/forced-idle.h"
#include "pipeline/origin.h"
#include "pipeline/plan-diff.h"

/* Why a policy that looked at the thread did not place it. */
typedef enum Verdict {
        VERDICT_PLACED,
        VERDICT_SHADOWED,    /* matched, in force, but an earlier policy placed the thread */
        VERDICT_NOT_IN_FORCE,/* matched, but [when] does not hold */
        VERDICT_DISABLED,    /* matched, but enabled = no */
        VERDICT_NO_PLACE,    /* matched, but has no [place]: kernel settings only */
        VERDICT_CLASS,       /* its patterns match, but it wants another class */
        VERDICT_SCOPE,       /* its patterns match, but the scope keeps it out (decide/scope.h) */
} Verdict;

typedef struct Candidate {
        int policy;
        Verdict verdict;
        char *why;
} Candidate;

/* Everything said about one thread, gathered once for both outputs. */
typedef struct ThreadAnswer {
        const TaskFacts *t;
        const ThreadClass *tc;
        ClassifyEvidence ev;
        bool has_ev;
        PolicyClass class;
        const PlanTask *pt;    /* in the plan in force, or NULL */
        const UnitThrough *through; /* the unit it is placed through (systemd driver), or NULL */
        int placed_by;         /* policy index, or -1 */
        Candidate *cands;
        size_t n_cands;
        char *unmanaged;       /* "not managed because …", or NULL */
        char *cgroup;          /* where the kernel has it now */
        char *planned_cgroup;  /* where the plan puts it */
        char *cpus_effective;
        Bitmap *cpus;
        int cookie_error;
        uint64_t cookie;
        unsigned cookie_shared_by;
        int idle_error;          /* the thread's forced idle: 0, or why not */
        uint64_t idle_usec;      /* core_forceidle_sum */
        int group_idle_error;    /* its cgroup's: 0, or why not */
        ForcedIdleStat group_idle;
} ThreadAnswer;

static void answer_done(ThreadAnswer *a) {
        for (size_t i = 0; i < a->n_cands; i++)
                free(a->cands[i].why);
        free(a->cands);
        free(a->unmanaged);
        free(a->cgroup);
        free(a->planned_cgroup);
        free(a->cpus_effective);
        bitmap_free(a->cpus);
}

/* i: a valid index (a candidate's, or placed_by once set) */
static const Policy *pol(const ExplainContext *x, int i) {
        return x->p->decide.policies->policies[i];
}

/* i: -1 or an index (the kernel plan's) */
static const char *pol_name(const ExplainContext *x, int i) {
        return i >= 0 && (size_t) i < x->p->decide.policies->n ? x->p->decide.policies->policies[i]->name : NULL;
}

/* The policy itself: its [policy] header. */
static unsigned pol_line(const Policy *p) {
        return p->policy_line ?: p->name_line;
}

/* ", layer vendor" where it came from a layer (decide/policy-read.h) */
static const char *pol_layer(const Policy *p, char buf[static 32]) {
        if (!p->layer)
                return "";
        snprintf(buf, 32, ", layer %s", p->layer);
        return buf;
}

static int add_cand(ThreadAnswer *a, int policy, Verdict v, char *why) {
        Candidate *n;

        if (!why)
                return -ENOMEM;
        n = realloc(a->cands, (a->n_cands + 1) * sizeof(Candidate));
        if (!n) {
                free(why);
                return -ENOMEM;
        }
        a->cands = n;
        a->cands[a->n_cands++] = (Candidate) { .policy = policy, .verdict = v, .why = why };
        return 0;
}

static char *strf(const char *fmt, ...) _printf_(1, 2);
static char *strf(const char *fmt, ...);

/* Why policy i (enabled) is not in force: its [when], and where the load
 * band or the forced idle band is what keeps it out, the band's state. */
static char *not_in_force_why(const ExplainContext *x, size_t i) {
        const Policy *p = x->p->decide.policies->policies[i];
        const PolicyLoadBand *b = &x->p->decide.bands[i];
        PolicyMachine m;

        check_machine_from(x->p->observe.topology, x->p->observe.caps, x->p->observe.kernel_version, &m);
        if (!policy_when_holds_but_load(&p->when, &m))
                return strf("[when] does not hold on this machine now (%s:%u)", p->file, p->when_line);
        if (p->when.has_load && !b->started)
                return strf("[when] load = %u-%u%% (%s:%u): the load has not been read", p->when.load_low,
                            p->when.load_high, p->file, p->when_line);
        if (p->when.has_load && !b->holds)
                return strf("[when] load = %u-%u%% (%s:%u): the load is %u%%%s", p->when.load_low, p->when.load_high,
                            p->file, p->when_line, x->p->decide.load_percent,
                            b->pending ? ", inside the band: it enters force once it has stayed there the [load] dwell"
                                       : "");
        if (!pipeline_forced_idle_holds(x->p, i)) {
                const PolicyIdle *pi = &x->p->decide.idle[i];

                return strf("[when] forced_idle = %u-%u%% (%s:%u): its groups' SMT siblings were kept idle %u.%u%% of "
                            "their CPU time%s",
                            p->when.forced_idle_low, p->when.forced_idle_high, p->file, p->when.forced_idle_line,
                            pi->share_permille / 10u, pi->share_permille % 10u,
                            pi->band.pending ? "; inside the band now: it enters force once it has stayed there the "
                                               "[load] dwell"
                                             : "");
        }
        return strf("[when] does not hold on this machine now (%s:%u)", p->file, p->when_line);
}

static char *strf(const char *fmt, ...) {
        va_list ap;
        char *s;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        return k < 0 ? NULL : s;
}

static const char *class_list(unsigned classes, char buf[static 64]) {
        size_t n = 0;

        buf[0] = 0;
        for (unsigned c = 0; c < _POLICY_CLASS_MAX; c++)
                if (classes & (1u << c))
                        n += (size_t) snprintf(buf + n, 64 - n, "%s%s", n ? " or " : "", policy_class_to_string((PolicyClass) c));
        return buf;
}

/* Walk the policies in precedence order, as the planner does, and say of
 * each one that matches (or would, but for the class) what became of it. */
/* For a policy that wants class avx where arch_status cannot tell it
 * (observe/kernelcaps.h): the classifier never says avx here. */
static const char *avx_untellable(const ExplainContext *x, const Policy *p) {
        if (!(p->match.classes & (1u << POLICY_CLASS_AVX)) || kernelcaps_avx512_tellable(x->p->observe.caps))
                return "";
        return x->p->observe.caps->avx512_arch_status == KERNEL_AVX_POLLUTED
                       ? "; class avx cannot hold on this host: no counters, and arch_status is polluted by the C "
                         "library (topoctl status: avx512-counters, avx512-evidence), so AVX work must be named by "
                         "comm, exe or cgroup"
                       : "; class avx cannot hold on this host: no AVX-512 state is reported, so AVX work "
                         "must be named by comm, exe or cgroup";
}

static int judge_policies(const ExplainContext *x, ThreadAnswer *a) {
        const PolicySet *ps = x->p->decide.policies;
        PolicyTask task;

        pipeline_policy_task(x->p, a->t, a->class, &task);
        task.cgroup = origin_cgroup(x->origins, x->p->decide.config->cgroup_root, x->p->observe.snap, a->t->tgid,
                                    a->t->process->start_time, a->t->ppid, a->t->process->cgroup);
        a->placed_by = -1;
        for (size_t i = 0; i < ps->n; i++) {
                const Policy *p = ps->policies[i];
                char classes[64];
                int k = 0;

                if (!policy_match_task(&p->match, &task)) {
                        /* Would the patterns match with a class it allows? */
                        PolicyTask other = task;
                        unsigned c;

                        if (!p->match.classes)
                                continue;
                        for (c = 0; c < _POLICY_CLASS_MAX; c++)
                                if (p->match.classes & (1u << c))
                                        break;
                        other.class = (PolicyClass) c;
                        if (c == _POLICY_CLASS_MAX || !policy_match_task(&p->match, &other))
                                continue;
                        k = add_cand(a, (int) i, VERDICT_CLASS,
                                     strf("wants class %s (%s:%u); the thread is %s%s%s", class_list(p->match.classes, classes),
                                          p->file, p->match.class_line, policy_class_to_string(a->class),
                                          avx_untellable(x, p),
                                          !p->enabled ? "; and it is disabled"
                                          : !x->p->decide.in_force[i] ? "; and its [when] does not hold now" : ""));
                } else if (!policy_takes(p, &x->p->decide.config->scope, &task))
                        k = add_cand(a, (int) i, VERDICT_SCOPE,
                                     strf("matches, but out of scope at %s: %s", task.cgroup ?: "(no cgroup)",
                                          scope_refusal(&x->p->decide.config->scope, task.tgid,
                                                        policy_match_names(&p->match), &p->match.exclude, task.cgroup)));
                else if (!p->enabled)
                        k = add_cand(a, (int) i, VERDICT_DISABLED, strf("disabled (%s:%u)", p->file, p->enabled_line));
                else if (!x->p->decide.in_force[i])
                        k = add_cand(a, (int) i, VERDICT_NOT_IN_FORCE, not_in_force_why(x, i));
                else if (!p->place.present)
                        k = add_cand(a, (int) i, VERDICT_NO_PLACE,
                                     strf("has no [place]: it sets kernel settings only (%s)", p->file));
                else if (a->placed_by < 0) {
                        a->placed_by = (int) i;
                        k = add_cand(a, (int) i, VERDICT_PLACED,
                                     strf("first in precedence order to match (priority %d)", p->priority));
                } else {
                        const Policy *w = ps->policies[a->placed_by];

                        k = add_cand(a, (int) i, VERDICT_SHADOWED,
                                     w->priority != p->priority
                                             ? strf("shadowed by %s: priority %d beats %d", w->name, w->priority, p->priority)
                                             : strf("shadowed by %s: same priority %d, and %s sorts before %s", w->name,
                                                    p->priority, w->file_name, p->file_name));
                }
                if (k < 0)
                        return k;
        }
        return 0;
}

static const char *verdict_to_string(Verdict v) {
        static const char *const names[] = {
                [VERDICT_PLACED] = "placed",         [VERDICT_SHADOWED] = "shadowed",
                [VERDICT_NOT_IN_FORCE] = "not-in-force", [VERDICT_DISABLED] = "disabled",
                [VERDICT_NO_PLACE] = "no-place",     [VERDICT_CLASS] = "class",
                [VERDICT_SCOPE] = "out-of-scope",
        };
        return names[v];
}

/* Where the kernel has the thread, and the cpus that cgroup may use. */
static void read_cgroup(const ExplainContext *x, ThreadAnswer *a) {
        const char *mount = x->p->observe.caps->cgroup2_mount;
        _cleanup_free_ char *text = NULL, *rel = NULL;
        char path[64];

        snprintf(path, sizeof(path), "proc/%d/task/%d/cgroup", (int) a->t->tgid, (int) a->t->tid);
        if (root_read_file(x->p->observe.root, path, 64 * 1024, &text, NULL) < 0 || proc_cgroup_parse(text, &a->cgroup) < 0)
                return;
        if (!mount)
                return;
        if (asprintf(&rel, "%s%s/cpuset.cpus.effective", mount + (mount[0] == '/'), streq(a->cgroup, "/") ? "" : a->cgroup) < 0)
                return;
        if (root_read_line(x->p->observe.root, rel, &a->cpus_effective) >= 0 && bitmap_parse_list(a->cpus_effective, &a->cpus) < 0)
                a->cpus = NULL;
}

/* Threads of one process share everything [match] sees but comm, class and
 * uid:
 * one with the same comm and class as an earlier one has the same verdicts
 * (a process of many same-named threads costs one walk of the policies). */
static int judge_like(ThreadAnswer *a, const ThreadAnswer *done, size_t n_done) {
        for (size_t i = n_done; i-- > 0;) {
                const ThreadAnswer *o = &done[i];

                /* uid is per thread too ([match] user) */
                if (o->t->kernel_thread || o->class != a->class || !streq(o->t->comm, a->t->comm) ||
                    o->t->has_uid != a->t->has_uid || o->t->uid != a->t->uid || o->t->tgid != a->t->tgid)
                        continue;
                a->placed_by = o->placed_by;
                for (size_t j = 0; j < o->n_cands; j++) {
                        int k = add_cand(a, o->cands[j].policy, o->cands[j].verdict, strdup(o->cands[j].why));

                        if (k < 0)
                                return k;
                }
                return 1;
        }
        return 0;
}

/* What core scheduling cost the thread and its cgroup (observe/forced-idle.h):
 * nothing to read without core scheduling; nothing accounted without
 * schedstats. */
static void read_forced_idle(const ExplainContext *x, ThreadAnswer *a) {
        const KernelCaps *caps = x->p->observe.caps;

        a->idle_error = a->group_idle_error = -ENODATA;
        if (a->t->kernel_thread || !caps->core_sched.available)
                return;
        if (!caps->schedstats.available)
                a->idle_error = a->group_idle_error = -ENOTSUP;
        else
                a->idle_error = forced_idle_read_task(x->p->observe.root, a->t->tid, &a->idle_usec);
        if (a->cgroup && caps->schedstats.available)
                a->group_idle_error = forced_idle_read_cgroup(x->p->observe.root, caps->cgroup2_mount, a->cgroup,
                                                              &a->group_idle);
}

static void print_forced_idle_text(const ExplainContext *x, const ThreadAnswer *a, FILE *f) {
        if (a->idle_error == -ENODATA && a->group_idle_error == -ENODATA)
                return;
        if (a->idle_error == -ENOTSUP) {
                fprintf(f, "  idle:     forced idle not accounted: %s\n", x->p->observe.caps->schedstats.reason ?: "");
                return;
        }
        fputs("  idle:     forced idle ", f);
        if (a->idle_error == 0)
                fprintf(f, "%" PRIu64 ".%03" PRIu64 " ms on its siblings", a->idle_usec / 1000, a->idle_usec % 1000);
        else
                fprintf(f, "of the thread unknown (%s)", errno_name(a->idle_error));
        if (a->group_idle_error == 0 && a->group_idle.has_force_idle)
                fprintf(f, "; its cgroup's %" PRIu64 " ms of %" PRIu64 " ms CPU time", a->group_idle.force_idle_usec / 1000,
                        a->group_idle.usage_usec / 1000);
        fputc('\n', f);
}

static void print_forced_idle_json(const ThreadAnswer *a, Json *j) {
        json_key(j, "forced_idle");
        json_object_begin(j);
        json_kv_bool(j, "accounted", a->idle_error != -ENOTSUP && a->idle_error != -ENODATA);
        json_key(j, "thread_usec");
        if (a->idle_error == 0)
                json_uint(j, a->idle_usec);
        else
                json_null(j);
        json_key(j, "cgroup_usec");
        if (a->group_idle_error == 0 && a->group_idle.has_force_idle)
                json_uint(j, a->group_idle.force_idle_usec);
        else
                json_null(j);
        json_key(j, "cgroup_usage_usec");
        if (a->group_idle_error == 0)
                json_uint(j, a->group_idle.usage_usec);
        else
                json_null(j);
        json_object_end(j);
}

static int gather(const ExplainContext *x, const TaskFacts *t, ThreadAnswer *a, const ThreadAnswer *done,
                  size_t n_done) {
        const Plan *plan = x->plan;
        int k;

        a->t = t;
        a->placed_by = -1;
        a->tc = classifier_find(x->p->decide.classifier, t->tid);
        a->class = a->tc ? a->tc->class : POLICY_CLASS_OTHER;
        if (a->tc) {
                classifier_evidence(x->p->decide.classifier, a->tc, &a->ev);
                a->has_ev = true;
        }
        a->pt = plan ? plan_find_task(plan, t->tid) : NULL;
        if (a->pt && a->pt->start_time != t->start_time)
                a->pt = NULL;
        if (!t->kernel_thread) {
                k = judge_like(a, done, n_done);
                if (k == 0)
                        k = judge_policies(x, a);
                if (k < 0)
                        return k;
        }
        read_cgroup(x, a);
        read_forced_idle(x, a);
        a->cookie_error = -ENODATA;
        if (!x->p->observe.caps->core_sched.available)
                a->cookie_error = x->p->observe.caps->core_sched.error ?: -EOPNOTSUPP;
        else if (x->get_cookie)
                a->cookie_error = x->get_cookie(t->tid, &a->cookie, x->userdata);
        if (a->pt && a->pt->group >= 0 &&
            asprintf(&a->planned_cgroup, "%s/%s", plan->cgroup_root, plan->groups[a->pt->group].path) < 0)
                return -ENOMEM;
        if (a->pt && a->pt->cookie_group >= 0)
                a->cookie_shared_by = plan->cookie_groups[a->pt->cookie_group].n_tasks;

        if (t->kernel_thread)
                a->unmanaged = strf("not managed because it is a kernel thread: topod never touches those");
        else if (x->paused)
                a->unmanaged = strf("not managed because topod is paused by 'topoctl reset' ('topoctl reload' resumes)");
        else if (a->placed_by < 0) {
                unsigned in_force = 0;

                for (size_t i = 0; i < x->p->decide.policies->n; i++)
                        in_force += x->p->decide.in_force[i] && x->p->decide.policies->policies[i]->place.present;
                a->unmanaged = a->n_cands > 0
                                       ? strf("not managed because no policy in force places it (see the policies below)")
                                       : strf("not managed because none of the %u policies in force with a [place] "
                                              "matches it (class %s, comm '%s')",
                                              in_force, policy_class_to_string(a->class), t->comm);
        } else if (!a->pt) {
                const char *why = NULL;

                /* The planner may have left the policy's tasks alone on
                 * purpose: its note says why. */
                for (char **n = plan ? plan->notes : NULL; n && *n && !why; n++)
                        if (strncmp(*n, pol(x, a->placed_by)->name, strlen(pol(x, a->placed_by)->name)) == 0 &&
                            (*n)[strlen(pol(x, a->placed_by)->name)] == ':')
                                why = *n;
                a->unmanaged = why ? strf("not managed: %s matches it, but the plan in force says: %s",
                                          pol(x, a->placed_by)->name, why)
                                   : strf("not managed yet: %s matches it, but the plan in force was made before "
                                          "it was seen; the next pass places it",
                                          pol(x, a->placed_by)->name);
        }
        else
                return 0;
        return a->unmanaged ? 0 : -ENOMEM;
}

/* LLCs and nodes the cpus cover, whole or in part. */
static void print_domains_text(FILE *f, const Topology *topo, const Bitmap *cpus) {
        const char *sep = "";

        if (!cpus)
                return;
        fputs(" (", f);
        for (size_t i = 0; i < topo->n_llcs; i++)
                if (bitmap_intersects(cpus, topo->llcs[i].cpus)) {
                        fprintf(f, "%sLLC %u%s", sep, topo->llcs[i].id,
                                bitmap_is_subset(topo->llcs[i].cpus, cpus) ? "" : " in part");
                        sep = ", ";
                }
        for (size_t i = 0; i < topo->n_numa_nodes; i++)
                if (bitmap_intersects(cpus, topo->numa_nodes[i].cpus)) {
                        fprintf(f, "%snode %u%s", sep, topo->numa_nodes[i].os_index,
                                bitmap_is_subset(topo->numa_nodes[i].cpus, cpus) ? "" : " in part");
                        sep = ", ";
                }
        fputc(')', f);
}

static void print_domains_json(Json *j, const char *key, const Topology *topo, const Bitmap *cpus, bool llc) {
        json_key(j, key);
        json_array_begin(j);
        if (cpus) {
                size_t n = llc ? topo->n_llcs : topo->n_numa_nodes;

                for (size_t i = 0; i < n; i++) {
                        const Bitmap *b = llc ? topo->llcs[i].cpus : topo->numa_nodes[i].cpus;

                        if (!bitmap_intersects(cpus, b))
                                continue;
                        json_object_begin(j);
                        json_kv_uint(j, "id", llc ? topo->llcs[i].id : topo->numa_nodes[i].os_index);
                        json_kv_bool(j, "whole", bitmap_is_subset(b, cpus));
                        json_object_end(j);
                }
        }
        json_array_end(j);
}

/* Which decides the LLC the thread runs on, topod or the kernel's own
 * cache-aware load balancing (decide/plan-llc.c); NULL where the kernel has
 * none or the thread is in no group of the plan. */
static char *llc_decider(const ExplainContext *x, const ThreadAnswer *a) {
        char *why = NULL;

        if (x->plan && a->pt && a->pt->group >= 0 &&
            plan_llc_decider(x->plan, &x->plan->groups[a->pt->group], x->p->decide.policies, &why) < 0)
                return NULL;
        return why;
}

/* The unit a planned thread of a service unit is placed through under the
 * systemd driver, and the group the unit followed. */
static void print_through_text(const ExplainContext *x, const ThreadAnswer *a, FILE *f) {
        const UnitThrough *u = a->through;

        if (!u || !a->pt || u->group < 0)
                return;
        fputs("  unit:     placed through unit ", f);
        escape_write(f, u->unit, ESCAPE_CONTROL);
        fprintf(f, " (its AllowedCPUs, AllowedMemoryNodes and CPUWeight: group %s/%s)", x->plan->cgroup_root,
                x->plan->groups[u->group].path);
        if (u->groups > 1)
                fprintf(f, "; its planned threads are in %u groups: the unit followed the one with most of them, "
                           "%u of %u%s",
                        u->groups, u->threads, u->total,
                        a->pt->group != u->group ? ", not this thread's planned group" : "");
        fputc('\n', f);
}

static void print_through_json(const ExplainContext *x, const ThreadAnswer *a, Json *j) {
        const UnitThrough *u = a->through;
        _cleanup_free_ char *g = NULL;

        json_key(j, "through_unit");
        if (!u || !a->pt || u->group < 0 ||
            asprintf(&g, "%s/%s", x->plan->cgroup_root, x->plan->groups[u->group].path) < 0) {
                json_null(j);
                return;
        }
        json_object_begin(j);
        json_kv_string(j, "unit", u->unit);
        json_kv_string(j, "group", g);
        json_kv_uint(j, "threads_in_group", u->threads);
        json_kv_uint(j, "threads_planned", u->total);
        json_kv_uint(j, "groups", u->groups);
        json_kv_bool(j, "majority_decided", u->groups > 1);
        json_object_end(j);
}

/* What of the thread's planned group this host cannot apply: skipped,
 * with the reason (plan_diff_controller_missing()), never drift. */
static const struct {
        const char *what, *controller;
} group_needs[] = {
        { "cpuset", "cpuset" },
        { "weight", "cpu" },
};

static const char *group_skip(const ExplainContext *x, const ThreadAnswer *a, size_t i) {
        if (!a->pt || a->pt->group < 0)
                return NULL;
        if (streq(group_needs[i].what, "weight") && x->plan->groups[a->pt->group].policy < 0)
                return NULL;
        return plan_diff_controller_missing(x->p->observe.caps, group_needs[i].controller);
}

static void print_skips_text(const ExplainContext *x, const ThreadAnswer *a, FILE *f) {
        for (size_t i = 0; i < ELEMENTSOF(group_needs); i++) {
                const char *why = group_skip(x, a, i);

                if (why)
                        fprintf(f, "  %-9s skipped: %s\n", group_needs[i].what, why);
        }
}

static void print_skips_json(const ExplainContext *x, const ThreadAnswer *a, Json *j) {
        json_key(j, "skipped");
        json_array_begin(j);
        for (size_t i = 0; i < ELEMENTSOF(group_needs); i++) {
                const char *why = group_skip(x, a, i);

                if (!why)
                        continue;
                json_object_begin(j);
                json_kv_string(j, "what", group_needs[i].what);
                json_kv_string(j, "reason", why);
                json_object_end(j);
        }
        json_array_end(j);
}

static void print_thread_text(const ExplainContext *x, const ThreadAnswer *a, FILE *f) {
        const ClassifyParams *cp = &x->p->decide.classifier->params;
        _cleanup_free_ char *ev = NULL;

        fprintf(f, "Thread %d (", (int) a->t->tid);
        escape_write(f, a->t->comm, ESCAPE_CONTROL);
        fputs(")\n", f);
        if (a->unmanaged) {
                fputs("  ", f);
                escape_write(f, a->unmanaged, ESCAPE_CONTROL);
                fputc('\n', f);
        }
        if (!a->t->kernel_thread) {
                fprintf(f, "  class:    %s", policy_class_to_string(a->class));
                if (a->has_ev && classify_evidence_format(&a->ev, cp, &ev) >= 0)
                        fprintf(f, " — %s", ev);
                fputc('\n', f);
        }
        for (size_t i = 0; i < a->n_cands; i++) {
                const Policy *p = pol(x, a->cands[i].policy);
                char layer[32];

                fprintf(f, "  %s %s (%s:%u%s): %s\n", a->cands[i].verdict == VERDICT_PLACED ? "policy:  " : "also:    ",
                        p->name, p->file, pol_line(p), pol_layer(p, layer), a->cands[i].why);
        }
        if (a->pt && a->pt->cookie_group >= 0)
                fprintf(f, "  cookie:   group %d, shared by %u thread%s", a->pt->cookie_group, a->cookie_shared_by,
                        a->cookie_shared_by == 1 ? "" : "s");
        else
                fputs("  cookie:   none planned", f);
        if (a->cookie_error == 0)
                fprintf(f, "; kernel: 0x%" PRIx64 "\n", a->cookie);
        else
                fprintf(f, "; kernel: %s\n",
                        a->cookie_error == -ENODATA ? "not asked"
                        : !x->p->observe.caps->core_sched.available ? x->p->observe.caps->core_sched.reason ?: "no core scheduling"
                                                            : strerror(-a->cookie_error));
        print_forced_idle_text(x, a, f);
        print_through_text(x, a, f);
        fputs("  cgroup:   ", f);
        escape_write(f, a->cgroup ?: "(unknown)", ESCAPE_CONTROL);
        if (a->planned_cgroup && (!a->cgroup || !streq(a->cgroup, a->planned_cgroup)))
                fprintf(f, " (planned: %s)", a->planned_cgroup);
        fputc('\n', f);
        if (a->cpus_effective) {
                fprintf(f, "  cpus:     %s", a->cpus_effective);
                print_domains_text(f, x->p->observe.topology, a->cpus);
                fputc('\n', f);
        }
        print_skips_text(x, a, f);
        {
                _cleanup_free_ char *llc = llc_decider(x, a);

                if (llc)
                        fprintf(f, "  llc:      %s\n", llc);
        }
}

static void print_thread_json(const ExplainContext *x, const ThreadAnswer *a, Json *j) {
        const Topology *topo = x->p->observe.topology;

        json_object_begin(j);
        json_kv_int(j, "tid", a->t->tid);
        json_kv_string(j, "comm", a->t->comm);
        json_kv_bool(j, "managed", !a->unmanaged);
        json_kv_string(j, "reason", a->unmanaged);
        json_kv_string(j, "class", a->t->kernel_thread ? NULL : policy_class_to_string(a->class));
        json_key(j, "evidence");
        if (a->has_ev)
                classify_evidence_print_json(j, &a->ev, &x->p->decide.classifier->params);
        else
                json_null(j);
        json_key(j, "policy");
        if (a->placed_by < 0)
                json_null(j);
        else {
                const Policy *p = pol(x, a->placed_by);

                json_object_begin(j);
                json_kv_string(j, "name", p->name);
                json_kv_string(j, "file", p->file);
                json_kv_uint(j, "line", pol_line(p));
                json_kv_string(j, "layer", p->layer);
                json_kv_int(j, "priority", p->priority);
                json_object_end(j);
        }
        json_key(j, "also_matched");
        json_array_begin(j);
        for (size_t i = 0; i < a->n_cands; i++) {
                const Policy *p = pol(x, a->cands[i].policy);

                if (a->cands[i].verdict == VERDICT_PLACED)
                        continue;
                json_object_begin(j);
                json_kv_string(j, "name", p->name);
                json_kv_string(j, "file", p->file);
                json_kv_uint(j, "line", pol_line(p));
                json_kv_string(j, "layer", p->layer);
                json_kv_int(j, "priority", p->priority);
                json_kv_string(j, "verdict", verdict_to_string(a->cands[i].verdict));
                json_kv_string(j, "why", a->cands[i].why);
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "cookie");
        json_object_begin(j);
        json_key(j, "group");
        if (a->pt && a->pt->cookie_group >= 0)
                json_int(j, a->pt->cookie_group);
        else
                json_null(j);
        json_kv_uint(j, "shared_by", a->cookie_shared_by);
        json_key(j, "kernel");
        if (a->cookie_error == 0)
                json_uint(j, a->cookie);
        else
                json_null(j);
        json_kv_string(j, "kernel_error", a->cookie_error == 0 || a->cookie_error == -ENODATA ? NULL : strerror(-a->cookie_error));
        json_object_end(j);
        print_forced_idle_json(a, j);
        print_through_json(x, a, j);
        json_key(j, "cgroup");
        json_object_begin(j);
        json_kv_string(j, "path", a->cgroup);
        json_kv_string(j, "planned", a->planned_cgroup);
        json_kv_string(j, "cpus_effective", a->cpus_effective);
        print_domains_json(j, "llcs", topo, a->cpus, true);
        print_domains_json(j, "nodes", topo, a->cpus, false);
        json_object_end(j);
        print_skips_json(x, a, j);
        {
                _cleanup_free_ char *llc = llc_decider(x, a);

                json_kv_string(j, "llc_decided", llc);
        }
        json_object_end(j);
}

static void print_kernel_text(const ExplainContext *x, FILE *f) {
        const Plan *plan = x->plan;
        const PolicyKernelPlan *k = plan ? plan->kernel : NULL;

        if (!k)
                return;
        if (plan->mode)
                fprintf(f, "cgroup_mode: %s (%s by %s)\n", plan->mode,
                        plan->mode_written ? "written" : plan->mode_emulated ? "emulated with cpu.weight" : "not available",
                        pol_name(x, k->cgroup_mode_policy) ?: "?");
        else
                fputs("cgroup_mode: kept as it is (no policy in force sets it)\n", f);
        for (size_t i = 0; i < k->n_features; i++)
                fprintf(f, "feature:     %s%s (by %s)\n", k->features[i].on ? "" : "NO_", k->features[i].name,
                        pol_name(x, k->feature_policy[i]) ?: "?");
        for (size_t i = 0; i < k->n_settings; i++)
                fprintf(f, "setting:     %s %s (by %s)\n", k->settings[i].info->name, k->settings[i].value,
                        pol_name(x, k->setting_policy[i]) ?: "?");
}

static void print_kernel_json(const ExplainContext *x, Json *j) {
        const Plan *plan = x->plan;
        const PolicyKernelPlan *k = plan ? plan->kernel : NULL;

        json_key(j, "cgroup_mode");
        if (!k || !plan->mode)
                json_null(j);
        else {
                json_object_begin(j);
                json_kv_string(j, "mode", plan->mode);
                json_kv_bool(j, "written", plan->mode_written);
                json_kv_bool(j, "emulated", plan->mode_emulated);
                json_kv_string(j, "policy", pol_name(x, k->cgroup_mode_policy));
                json_object_end(j);
        }
        json_key(j, "features");
        json_array_begin(j);
        for (size_t i = 0; k && i < k->n_features; i++) {
                json_object_begin(j);
                json_kv_string(j, "name", k->features[i].name);
                json_kv_bool(j, "on", k->features[i].on);
                json_kv_string(j, "policy", pol_name(x, k->feature_policy[i]));
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "settings");
        json_array_begin(j);
        for (size_t i = 0; k && i < k->n_settings; i++) {
                json_object_begin(j);
                json_kv_string(j, "name", k->settings[i].info->name);
                json_kv_string(j, "value", k->settings[i].value);
                json_kv_string(j, "policy", pol_name(x, k->setting_policy[i]));
                json_object_end(j);
        }
        json_array_end(j);
}

int explain_write(const ExplainContext *x, pid_t pid, bool json, FILE *f) {
        const TaskSnapshot *snap = x->p->observe.snap;
        _cleanup_free_ ThreadAnswer *answers = NULL;
        const TaskFacts *asked;
        UnitThrough through = {};
        bool has_through = false;
        const char *exe;
        size_t n = 0, total = 0;
        pid_t tgid;
        int k = 0;

        if (!snap)
                return -EAGAIN;
        asked = task_snapshot_find(snap, pid);
        if (!asked)
                return -ESRCH;
        exe = x->caller_uid == 0 || (asked->has_uid && asked->uid == x->caller_uid) ? asked->process->exe : NULL;
        /* A process id: all its threads; a thread id: that thread. */
        tgid = asked->tgid == pid ? pid : 0;
        answers = calloc(EXPLAIN_THREADS_MAX, sizeof(ThreadAnswer));
        if (!answers)
                return -ENOMEM;
        /* Under the systemd driver, the unit of the asked process: read
         * once for all its threads (every planned process's cgroup). */
        if (x->unit_driver && x->plan && unit_plan_through(x->p->observe.root, x->plan, asked->tgid, &through) >= 0)
                has_through = true;
        for (size_t i = 0; i < snap->n_tasks && k >= 0; i++) {
                const TaskFacts *t = &snap->tasks[i];

                if (tgid ? t->tgid != tgid : t->tid != pid)
                        continue;
                total++;
                if (n < EXPLAIN_THREADS_MAX) {
                        k = gather(x, t, &answers[n], answers, n);
                        answers[n].through = has_through ? &through : NULL;
                        n++;
                }
        }

        if (k >= 0 && json) {
                _cleanup_(json_freep) Json *j = json_new(f, true);

                if (!j)
                        k = -ENOMEM;
                else {
                        json_object_begin(j);
                        json_kv_int(j, "pid", pid);
                        json_kv_int(j, "tgid", asked->tgid);
                        json_kv_string(j, "comm", asked->comm);
                        json_kv_string(j, "exe", exe);
                        json_kv_bool(j, "paused", x->paused);
                        print_kernel_json(x, j);
                        json_key(j, "threads");
                        json_array_begin(j);
                        for (size_t i = 0; i < n; i++)
                                print_thread_json(x, &answers[i], j);
                        json_array_end(j);
                        json_kv_uint(j, "threads_omitted", total - n);
                        json_object_end(j);
                }
        } else if (k >= 0) {
                fprintf(f, "Process %d (", (int) asked->tgid);
                escape_write(f, asked->comm, ESCAPE_CONTROL);
                fputs(exe ? ") " : ")", f);
                escape_write(f, exe ?: "", ESCAPE_CONTROL);
                fputc('\n', f);
                for (size_t i = 0; i < n; i++)
                        print_thread_text(x, &answers[i], f);
                if (total > n)
                        fprintf(f, "(%zu more threads not shown)\n", total - n);
                print_kernel_text(x, f);
        }
        for (size_t i = 0; i < n; i++)
                answer_done(&answers[i]);
        free(through.unit);
        return k;
}
