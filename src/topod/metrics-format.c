/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The metrics' printings (metrics-format.h): pure, compiled into their
 * unit test and the bench as they are into topod. */
#include "metrics-format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const apply_names[_METRICS_APPLY_MAX] = {
        [METRICS_APPLY_DONE] = "done",         [METRICS_APPLY_ALREADY] = "already",
        [METRICS_APPLY_VANISHED] = "vanished", [METRICS_APPLY_SKIPPED] = "skipped",
        [METRICS_APPLY_FAILED] = "failed",
};

static const char *const stage_names[3] = { "scan", "plan", "apply" };

const char *metrics_apply_to_string(MetricsApply a) {
        return a >= 0 && a < _METRICS_APPLY_MAX ? apply_names[a] : NULL;
}

/* ── Counting the plan's tasks ── */

int metrics_count_tasks(const Plan *plan, const PolicySet *policies, MetricsTasks **ret, size_t *ret_n) {
        /* One slot per (group, class), then per (policy without a group,
         * class): the groups are sorted by path, so is the output. */
        size_t n_slots, n = 0, n_policies = policies ? policies->n : 0;
        unsigned *counts;
        MetricsTasks *out;

        *ret = NULL;
        *ret_n = 0;
        if (!plan)
                return 0;
        n_slots = (plan->n_groups + n_policies) * _POLICY_CLASS_MAX;
        counts = calloc(n_slots ?: 1, sizeof(unsigned));
        if (!counts)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_tasks; i++) {
                const PlanTask *t = &plan->tasks[i];
                size_t slot;

                if (t->class < 0 || t->class >= _POLICY_CLASS_MAX)
                        continue;
                if (t->group >= 0 && (size_t) t->group < plan->n_groups)
                        slot = (size_t) t->group;
                else if (t->policy >= 0 && (size_t) t->policy < n_policies)
                        slot = plan->n_groups + (size_t) t->policy;
                else
                        continue;
                counts[slot * _POLICY_CLASS_MAX + t->class]++;
        }
        out = calloc(n_slots ?: 1, sizeof(MetricsTasks));
        if (!out) {
                free(counts);
                return -ENOMEM;
        }
        for (size_t s = 0; s < plan->n_groups + n_policies; s++) {
                bool is_group = s < plan->n_groups;
                int policy = is_group ? plan->groups[s].policy : (int) (s - plan->n_groups);

                if (policy < 0 || (size_t) policy >= n_policies)
                        continue; /* an intermediate directory */
                for (size_t c = 0; c < _POLICY_CLASS_MAX; c++)
                        if (counts[s * _POLICY_CLASS_MAX + c] > 0)
                                out[n++] = (MetricsTasks) {
                                        .policy = policies->policies[policy]->name,
                                        .group = is_group ? plan->groups[s].path : "",
                                        .class_name = policy_class_to_string((PolicyClass) c),
                                        .tasks = counts[s * _POLICY_CLASS_MAX + c],
                                };
        }
        free(counts);
        *ret = out;
        *ret_n = n;
        return 0;
}

/* ── The text exposition ── */

/* A label value, escaped as the format asks. */
static void put_label(FILE *f, const char *v) {
        for (const char *s = v ?: ""; *s; s++)
                switch (*s) {
                case '\\':
                        fputs("\\\\", f);
                        break;
                case '"':
                        fputs("\\\"", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                default:
                        fputc((unsigned char) *s < 0x20 || *s == 0x7f ? '_' : *s, f);
                }
}

static void family(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_uint(FILE *f, const char *name, uint64_t v) {
        fprintf(f, "%s %" PRIu64 "\n", name, v);
}

static void put_labelled(FILE *f, const char *name, const char *label, const char *value, uint64_t v) {
        fprintf(f, "%s{%s=\"", name, label);
        put_label(f, value);
        fprintf(f, "\"} %" PRIu64 "\n", v);
}

static void put_usec_seconds(FILE *f, uint64_t usec) {
        fprintf(f, "%" PRIu64 ".%06" PRIu64, usec / 1000000u, usec % 1000000u);
}

static void put_histogram(FILE *f, const char *name, const Histogram *h) {
        uint64_t sum = 0;

        for (size_t i = 0; i < HISTOGRAM_BOUNDS; i++) {
                sum += h->buckets[i];
                fprintf(f, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", name, histogram_bounds_le[i], sum);
        }
        fprintf(f, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, h->count);
        fprintf(f, "%s_sum %" PRIu64 ".%09" PRIu64 "\n", name, h->sum_ns / 1000000000u, h->sum_ns % 1000000000u);
        fprintf(f, "%s_count %" PRIu64 "\n", name, h->count);
}

int metrics_format_text(FILE *f, const MetricsSnapshot *s) {
        bool any;

        family(f, "topod_info", "gauge", "The running topod's version (always 1).");
        put_labelled(f, "topod_info", "version", s->version, 1);
        family(f, "topod_paused", "gauge", "1 while topoctl reset has paused topod (until a reload), else 0.");
        put_uint(f, "topod_paused", s->paused);

        if (s->n_policies > 0) {
                family(f, "topod_policy_in_force", "gauge", "1 for a policy in force (enabled, its [when] holds), else 0.");
                for (size_t i = 0; i < s->n_policies; i++)
                        put_labelled(f, "topod_policy_in_force", "policy", s->policies[i].name, s->policies[i].in_force);
        }
        family(f, "topod_tasks_managed", "gauge", "Tasks the plan in force places, by policy, group and class.");
        for (size_t i = 0; i < s->n_tasks; i++) {
                const MetricsTasks *t = &s->tasks[i];

                fputs("topod_tasks_managed{policy=\"", f);
                put_label(f, t->policy);
                fputs("\",group=\"", f);
                put_label(f, t->group);
                fputs("\",class=\"", f);
                put_label(f, t->class_name);
                fprintf(f, "\"} %u\n", t->tasks);
        }
        family(f, "topod_groups", "gauge", "Policy groups in the plan in force.");
        put_uint(f, "topod_groups", s->groups);
        if (s->n_policies > 0) {
                family(f, "topod_cookie_groups", "gauge", "Core-scheduling cookie groups in the plan in force, by policy.");
                for (size_t i = 0; i < s->n_policies; i++)
                        put_labelled(f, "topod_cookie_groups", "policy", s->policies[i].name, s->policies[i].cookie_groups);
        }

        /* Forced idle: only the policies whose [when] asks for it. */
        any = false;
        for (size_t i = 0; i < s->n_policies; i++)
                any = any || s->policies[i].have_share;
        if (any) {
                family(f, "topod_forced_idle_ratio", "gauge",
                       "Forced idle over CPU time of a policy's groups between the last two readings.");
                for (size_t i = 0; i < s->n_policies; i++) {
                        const MetricsPolicy *p = &s->policies[i];

                        if (!p->have_share)
                                continue;
                        fputs("topod_forced_idle_ratio{policy=\"", f);
                        put_label(f, p->name);
                        fprintf(f, "\"} %u.%03u\n", p->share_permille / 1000u, p->share_permille % 1000u);
                }
        }
        any = false;
        for (size_t i = 0; i < s->n_policies; i++)
                any = any || s->policies[i].forced_idle;
        if (any) {
                static const struct {
                        const char *name, *help;
                        size_t offset;
                } sums[] = {
                        { "topod_forced_idle_seconds", "Forced idle the kernel counted for a policy's groups at the last reading "
                          "(cpu.stat core_sched.force_idle_usec, summed).", offsetof(MetricsPolicy, force_idle_usec) },
                        { "topod_forced_idle_cpu_seconds", "CPU time of a policy's groups at the last reading "
                          "(cpu.stat usage_usec, summed).", offsetof(MetricsPolicy, usage_usec) },
                };

                family(f, "topod_forced_idle_groups", "gauge", "A policy's groups read at the last forced idle reading.");
                for (size_t i = 0; i < s->n_policies; i++)
                        if (s->policies[i].forced_idle)
                                put_labelled(f, "topod_forced_idle_groups", "policy", s->policies[i].name,
                                             s->policies[i].idle_groups);
                for (size_t m = 0; m < ELEMENTSOF(sums); m++) {
                        family(f, sums[m].name, "gauge", sums[m].help);
                        for (size_t i = 0; i < s->n_policies; i++) {
                                const MetricsPolicy *p = &s->policies[i];

                                if (!p->forced_idle)
                                        continue;
                                fprintf(f, "%s{policy=\"", sums[m].name);
                                put_label(f, p->name);
                                fputs("\"} ", f);
                                put_usec_seconds(f, *(const uint64_t *) ((const char *) p + sums[m].offset));
                                fputc('\n', f);
                        }
                }
        }

        if (s->n_idle_groups > 0) {
                static const struct {
                        const char *name, *help;
                        size_t offset;
                } per_group[] = {
                        { "topod_group_forced_idle_seconds_total", "Forced idle the kernel counted for a group of a "
                          "policy with [when] forced_idle (cpu.stat core_sched.force_idle_usec) at the last reading.",
                          offsetof(MetricsIdleGroup, force_idle_usec) },
                        { "topod_group_cpu_seconds_total", "CPU time of such a group (cpu.stat usage_usec) at the "
                          "last reading.", offsetof(MetricsIdleGroup, usage_usec) },
                };

                for (size_t m = 0; m < ELEMENTSOF(per_group); m++) {
                        family(f, per_group[m].name, "counter", per_group[m].help);
                        for (size_t i = 0; i < s->n_idle_groups; i++) {
                                const MetricsIdleGroup *g = &s->idle_groups[i];

                                fprintf(f, "%s{policy=\"", per_group[m].name);
                                put_label(f, g->policy);
                                fputs("\",group=\"", f);
                                put_label(f, g->group);
                                fputs("\"} ", f);
                                put_usec_seconds(f, *(const uint64_t *) ((const char *) g + per_group[m].offset));
                                fputc('\n', f);
                        }
                }
        }

        family(f, "topod_passes_total", "counter", "Passes (scan, plan, apply) done.");
        put_uint(f, "topod_passes_total", s->passes);
        family(f, "topod_pass_failures_total", "counter", "Passes that failed before their plan was in use.");
        put_uint(f, "topod_pass_failures_total", s->passes_failed);
        family(f, "topod_pass_duration_seconds", "histogram", "Wall time of each pass done.");
        put_histogram(f, "topod_pass_duration_seconds", &s->pass_duration);
        if (s->have_last_pass) {
                family(f, "topod_last_pass_stage_seconds", "gauge", "Wall time of the last pass, by stage.");
                for (size_t i = 0; i < ELEMENTSOF(stage_names); i++) {
                        fprintf(f, "topod_last_pass_stage_seconds{stage=\"%s\"} ", stage_names[i]);
                        put_usec_seconds(f, s->last_pass_usec[i]);
                        fputc('\n', f);
                }
        }
        family(f, "topod_timer_passes_skipped_total", "counter", "Timer passes skipped, by reason.");
        put_labelled(f, "topod_timer_passes_skipped_total", "reason", "idle", s->idle_skips);
        put_labelled(f, "topod_timer_passes_skipped_total", "reason", "exec_storm", s->storm_defers);
        family(f, "topod_reloads_total", "counter", "Reloads asked for (SIGHUP, topoctl reload), done or refused.");
        put_uint(f, "topod_reloads_total", s->reloads);
        family(f, "topod_reloads_refused_total", "counter", "Reloads refused (the running policy stayed in force).");
        put_uint(f, "topod_reloads_refused_total", s->reloads_refused);
        family(f, "topod_apply_results_total", "counter", "Items the passes' apply went through, by result.");
        for (size_t i = 0; i < _METRICS_APPLY_MAX; i++)
                put_labelled(f, "topod_apply_results_total", "result", apply_names[i], s->apply[i]);
        family(f, "topod_fast_path_placements_total", "counter", "Processes the fast path placed at exec or fork.");
        put_uint(f, "topod_fast_path_placements_total", s->fast_placed);
        family(f, "topod_exec_to_placed_seconds", "histogram",
               "From a process's exec (or fork) event to its placement by the fast path.");
        put_histogram(f, "topod_exec_to_placed_seconds", &s->exec_to_placed);
        return ferror(f) ? -EIO : 0;
}

/* ── JSON ── */

static void json_histogram(Json *j, const char *key, const Histogram *h) {
        uint64_t sum = 0;

        json_key(j, key);
        json_object_begin(j);
        json_kv_uint(j, "count", h->count);
        json_kv_uint(j, "sum_ns", h->sum_ns);
        json_key(j, "buckets");
        json_array_begin(j);
        for (size_t i = 0; i <= HISTOGRAM_BOUNDS; i++) {
                sum += h->buckets[i];
                json_object_begin(j);
                json_key(j, "le_ns");
                if (i < HISTOGRAM_BOUNDS)
                        json_uint(j, histogram_bounds_ns[i]);
                else
                        json_null(j);
                json_kv_uint(j, "count", sum); /* cumulative, as the exposition's */
                json_object_end(j);
        }
        json_array_end(j);
        json_object_end(j);
}

void metrics_format_json(Json *j, const MetricsSnapshot *s) {
        json_object_begin(j);
        json_kv_string(j, "version", s->version);
        json_kv_bool(j, "paused", s->paused);
        json_key(j, "policies");
        json_array_begin(j);
        for (size_t i = 0; i < s->n_policies; i++) {
                const MetricsPolicy *p = &s->policies[i];

                json_object_begin(j);
                json_kv_string(j, "name", p->name);
                json_kv_bool(j, "in_force", p->in_force);
                json_kv_uint(j, "cookie_groups", p->cookie_groups);
                if (p->forced_idle) {
                        json_key(j, "forced_idle");
                        json_object_begin(j);
                        json_key(j, "permille");
                        if (p->have_share)
                                json_uint(j, p->share_permille);
                        else
                                json_null(j);
                        json_kv_uint(j, "groups", p->idle_groups);
                        json_kv_uint(j, "force_idle_usec", p->force_idle_usec);
                        json_kv_uint(j, "usage_usec", p->usage_usec);
                        json_object_end(j);
                }
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "forced_idle_groups");
        json_array_begin(j);
        for (size_t i = 0; i < s->n_idle_groups; i++) {
                json_object_begin(j);
                json_kv_string(j, "policy", s->idle_groups[i].policy);
                json_kv_string(j, "group", s->idle_groups[i].group);
                json_kv_uint(j, "force_idle_usec", s->idle_groups[i].force_idle_usec);
                json_kv_uint(j, "usage_usec", s->idle_groups[i].usage_usec);
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "tasks_managed");
        json_array_begin(j);
        for (size_t i = 0; i < s->n_tasks; i++) {
                json_object_begin(j);
                json_kv_string(j, "policy", s->tasks[i].policy);
                json_kv_string(j, "group", s->tasks[i].group);
                json_kv_string(j, "class", s->tasks[i].class_name);
                json_kv_uint(j, "tasks", s->tasks[i].tasks);
                json_object_end(j);
        }
        json_array_end(j);
        json_kv_uint(j, "groups", s->groups);
        json_kv_uint(j, "passes", s->passes);
        json_kv_uint(j, "pass_failures", s->passes_failed);
        json_histogram(j, "pass_duration", &s->pass_duration);
        json_key(j, "last_pass_stage_usec");
        if (s->have_last_pass) {
                json_object_begin(j);
                for (size_t i = 0; i < ELEMENTSOF(stage_names); i++)
                        json_kv_uint(j, stage_names[i], s->last_pass_usec[i]);
                json_object_end(j);
        } else
                json_null(j);
        json_key(j, "timer_passes_skipped");
        json_object_begin(j);
        json_kv_uint(j, "idle", s->idle_skips);
        json_kv_uint(j, "exec_storm", s->storm_defers);
        json_object_end(j);
        json_kv_uint(j, "reloads", s->reloads);
        json_kv_uint(j, "reloads_refused", s->reloads_refused);
        json_key(j, "apply_results");
        json_object_begin(j);
        for (size_t i = 0; i < _METRICS_APPLY_MAX; i++)
                json_kv_uint(j, apply_names[i], s->apply[i]);
        json_object_end(j);
        json_kv_uint(j, "fast_path_placements", s->fast_placed);
        json_histogram(j, "exec_to_placed", &s->exec_to_placed);
        json_object_end(j);
}
