/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The plan printed, as text and as JSON (topoctl plan, topod --dry-run, the
 * golden plans): byte for byte the same for the same plan. Its own file:
 * printing decides nothing. */
#include "plan-internal.h"

#include <stdio.h>

#include "base/escape.h"
#include "base/util.h"

static const char *policy_name(const PolicySet *ps, int i) {
        return i >= 0 && (size_t) i < ps->n ? ps->policies[i]->name : NULL;
}

static int list_string(const Bitmap *b, char **ret) {
        return bitmap_format_list(b, ret);
}

/* Under a policy's group, where the kernel has its own LLC aggregation:
 * which of the two decides the LLC (plan-llc.c). */
static int print_llc_text(FILE *f, const Plan *p, const PlanGroup *g, const PolicySet *ps) {
        _cleanup_free_ char *why = NULL;
        int k = plan_llc_decider(p, g, ps, &why);

        if (k >= 0 && why)
                fprintf(f, "  llc: %s\n", why);
        return k;
}

int plan_print_text(FILE *f, const Plan *p, const PolicySet *ps) {
        int k;

        fprintf(f, "Plan: %s hierarchy under %s\n", p->hierarchy == CONFIG_HIERARCHY_NESTED ? "nested" : "flat",
                p->cgroup_root);
        if (p->mode)
                fprintf(f, "cgroup_mode: %s (%s, from %s)\n", p->mode,
                        p->mode_written ? "written" : p->mode_emulated ? "emulated by cpu.weight" : "not set",
                        policy_name(ps, p->kernel->cgroup_mode_policy) ?: "?");
        else
                fputs("cgroup_mode: kept as it is\n", f);
        for (size_t i = 0; i < p->kernel->n_features; i++)
                fprintf(f, "feature: %s%s (from %s)\n", p->kernel->features[i].on ? "" : "NO_",
                        p->kernel->features[i].name, policy_name(ps, p->kernel->feature_policy[i]) ?: "?");
        for (size_t i = 0; i < p->kernel->n_settings; i++)
                fprintf(f, "setting: %s %s (from %s)\n", p->kernel->settings[i].info->name, p->kernel->settings[i].value,
                        policy_name(ps, p->kernel->setting_policy[i]) ?: "?");
        for (size_t i = 0; i < p->kernel->n_conflicts; i++)
                fprintf(f, "conflict: %s: %s wins over %s\n", p->kernel->conflicts[i].what,
                        policy_name(ps, (int) p->kernel->conflicts[i].winner) ?: "?",
                        policy_name(ps, (int) p->kernel->conflicts[i].loser) ?: "?");
        for (size_t i = 0; i < p->n_groups; i++) {
                const PlanGroup *g = &p->groups[i];
                _cleanup_free_ char *cpus = NULL, *mems = NULL;

                if ((k = list_string(g->cpus, &cpus)) < 0 || (k = list_string(g->mems, &mems)) < 0)
                        return k;
                fprintf(f, "group %s: cpus %s mems %s%s weight %u (%s)", g->path, cpus, mems,
                        g->exclusive ? " exclusive" : "", g->weight, g->weight_why);
                if (g->policy >= 0)
                        fprintf(f, ", policy %s, %u tasks", policy_name(ps, g->policy), g->n_tasks);
                fputc('\n', f);
                if (g->policy >= 0 && (k = print_llc_text(f, p, g, ps)) < 0)
                        return k;
        }
        for (size_t i = 0; i < p->n_cookie_groups; i++)
                fprintf(f, "cookie %zu: policy %s%s, %u tasks\n", i, policy_name(ps, p->cookie_groups[i].policy),
                        p->cookie_groups[i].tgid ? " process" : "", p->cookie_groups[i].n_tasks);
        for (size_t i = 0; i < p->n_tasks; i++) {
                const PlanTask *t = &p->tasks[i];

                fprintf(f, "task %d (", (int) t->tid);
                escape_write(f, t->comm, ESCAPE_CONTROL);
                fprintf(f, ", process %d, %s): %s → %s", (int) t->tgid, policy_class_to_string(t->class),
                        policy_name(ps, t->policy), p->groups[t->group].path);
                if (t->cookie_group >= 0)
                        fprintf(f, ", cookie %d", t->cookie_group);
                fputc('\n', f);
        }
        for (char **n = p->notes; n && *n; n++)
                fprintf(f, "note: %s\n", *n);
        return 0;
}

int plan_print_json(Json *j, const Plan *p, const PolicySet *ps) {
        int k;

        json_object_begin(j);
        json_kv_string(j, "hierarchy", p->hierarchy == CONFIG_HIERARCHY_NESTED ? "nested" : "flat");
        json_kv_string(j, "cgroup_root", p->cgroup_root);
        json_key(j, "cgroup_mode");
        json_object_begin(j);
        json_kv_string(j, "mode", p->mode);
        json_kv_bool(j, "written", p->mode_written);
        json_kv_bool(j, "emulated", p->mode_emulated);
        json_kv_string(j, "policy", policy_name(ps, p->kernel->cgroup_mode_policy));
        json_object_end(j);
        json_key(j, "features");
        json_array_begin(j);
        for (size_t i = 0; i < p->kernel->n_features; i++) {
                json_object_begin(j);
                json_kv_string(j, "name", p->kernel->features[i].name);
                json_kv_bool(j, "on", p->kernel->features[i].on);
                json_kv_string(j, "policy", policy_name(ps, p->kernel->feature_policy[i]));
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "conflicts");
        json_array_begin(j);
        for (size_t i = 0; i < p->kernel->n_conflicts; i++) {
                json_object_begin(j);
                json_kv_string(j, "what", p->kernel->conflicts[i].what);
                json_kv_string(j, "winner", policy_name(ps, (int) p->kernel->conflicts[i].winner));
                json_kv_string(j, "loser", policy_name(ps, (int) p->kernel->conflicts[i].loser));
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "settings");
        json_array_begin(j);
        for (size_t i = 0; i < p->kernel->n_settings; i++) {
                json_object_begin(j);
                json_kv_string(j, "name", p->kernel->settings[i].info->name);
                json_kv_string(j, "value", p->kernel->settings[i].value);
                json_kv_string(j, "policy", policy_name(ps, p->kernel->setting_policy[i]));
                json_object_end(j);
        }
        json_array_end(j);
        json_kv_bool(j, "cookies_allowed", p->cookies_allowed);
        json_key(j, "groups");
        json_array_begin(j);
        for (size_t i = 0; i < p->n_groups; i++) {
                const PlanGroup *g = &p->groups[i];
                _cleanup_free_ char *cpus = NULL, *mems = NULL;

                if ((k = list_string(g->cpus, &cpus)) < 0 || (k = list_string(g->mems, &mems)) < 0)
                        return k;
                json_object_begin(j);
                json_kv_string(j, "path", g->path);
                json_kv_string(j, "policy", policy_name(ps, g->policy));
                json_kv_string(j, "domain", plan_domain_kind_to_string(g->kind));
                json_kv_int(j, "domain_id", g->domain);
                json_kv_string(j, "cpus", cpus);
                json_kv_string(j, "mems", mems);
                json_kv_bool(j, "exclusive", g->exclusive);
                json_kv_uint(j, "weight", g->weight);
                json_kv_string(j, "weight_why", g->weight_why);
                json_kv_uint(j, "tasks", g->n_tasks);
                json_kv_uint(j, "runnable", g->n_runnable);
                if (g->policy >= 0 && p->llc_balancing.present) {
                        _cleanup_free_ char *why = NULL;

                        if ((k = plan_llc_decider(p, g, ps, &why)) < 0)
                                return k;
                        json_kv_string(j, "llc", why);
                }
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "cookie_groups");
        json_array_begin(j);
        for (size_t i = 0; i < p->n_cookie_groups; i++) {
                json_object_begin(j);
                json_kv_uint(j, "id", i);
                json_kv_string(j, "policy", policy_name(ps, p->cookie_groups[i].policy));
                json_kv_int(j, "process", p->cookie_groups[i].tgid);
                json_kv_uint(j, "tasks", p->cookie_groups[i].n_tasks);
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "tasks");
        json_array_begin(j);
        for (size_t i = 0; i < p->n_tasks; i++) {
                const PlanTask *t = &p->tasks[i];

                json_object_begin(j);
                json_kv_int(j, "tid", t->tid);
                json_kv_int(j, "tgid", t->tgid);
                json_kv_string(j, "comm", t->comm);
                json_kv_string(j, "class", policy_class_to_string(t->class));
                json_kv_string(j, "policy", policy_name(ps, t->policy));
                json_kv_string(j, "group", p->groups[t->group].path);
                json_key(j, "cookie_group");
                if (t->cookie_group < 0)
                        json_null(j);
                else
                        json_int(j, t->cookie_group);
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "notes");
        json_array_begin(j);
        for (char **n = p->notes; n && *n; n++)
                json_string(j, *n);
        json_array_end(j);
        json_object_end(j);
        return 0;
}
