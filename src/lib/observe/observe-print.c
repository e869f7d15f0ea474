/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "observe-print.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static void format_bytes(uint64_t b, char *buf, size_t len) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
        size_t u = 0;
        uint64_t whole = b, rem = 0;

        while (whole >= 1024 && u + 1 < ELEMENTSOF(units)) {
                rem = whole % 1024;
                whole /= 1024;
                u++;
        }
        if (rem == 0)
                snprintf(buf, len, "%" PRIu64 " %s", whole, units[u]);
        else
                snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " %s", whole, rem * 10 / 1024, units[u]);
}

static int print_list(FILE *f, const Bitmap *b) {
        _cleanup_free_ char *s = NULL;
        int k = bitmap_format_list(b, &s);

        if (k < 0)
                return k;
        fputs(*s ? s : "none", f);
        return 0;
}

static int print_cores(FILE *f, const Topology *t, int llc, int node) {
        for (size_t i = 0; i < t->n_cores; i++) {
                const TopoCore *c = &t->cores[i];
                int k;

                if (c->llc != llc || c->numa_node != node)
                        continue;
                fprintf(f, "      core %u: PUs ", c->id);
                k = print_list(f, c->cpus);
                if (k < 0)
                        return k;
                fputc('\n', f);
        }
        return 0;
}

static int print_node(FILE *f, const Topology *t, size_t n) {
        const TopoNumaNode *nd = &t->numa_nodes[n];
        char mem[32];
        int k;

        format_bytes(nd->memory_bytes, mem, sizeof(mem));
        fprintf(f, "  NUMA node %u (os %u): cpus ", nd->id, nd->os_index);
        if ((k = print_list(f, nd->cpus)) < 0)
                return k;
        fprintf(f, ", memory %s", mem);
        if (t->distances) {
                fputs(", distances", f);
                for (size_t j = 0; j < t->n_numa_nodes; j++)
                        fprintf(f, " %" PRIu64, t->distances[n * t->n_numa_nodes + j]);
        }
        fputc('\n', f);

        for (size_t l = 0; l < t->n_llcs; l++) {
                const TopoLlc *c = &t->llcs[l];

                if (!bitmap_isset(c->numa_nodes, (unsigned) n) && !bitmap_intersects(c->cpus, nd->cpus))
                        continue;
                if (c->level > 0) {
                        char size[32];

                        format_bytes(c->size_bytes, size, sizeof(size));
                        fprintf(f, "    L%u %u (%s): cpus ", c->level, c->id, size);
                } else
                        fprintf(f, "    cache domain %u (no cache reported; package-wide): cpus ", c->id);
                if ((k = print_list(f, c->cpus)) < 0)
                        return k;
                if (bitmap_count(c->numa_nodes) > 1) {
                        fputs(" (spans NUMA nodes ", f);
                        if ((k = print_list(f, c->numa_nodes)) < 0)
                                return k;
                        fputc(')', f);
                }
                fputc('\n', f);
                if ((k = print_cores(f, t, (int) l, (int) n)) < 0)
                        return k;
        }
        return 0;
}

int topology_print_text(FILE *f, const Topology *t) {
        int k;

        fprintf(f, "Topology: %s\n", t->source);
        if (t->cpu_vendor || t->cpu_model)
                fprintf(f, "CPU: %s%s%s\n", t->cpu_vendor ?: "", t->cpu_vendor && t->cpu_model ? ", " : "",
                        t->cpu_model ?: "");
        fprintf(f, "%zu packages, %zu NUMA nodes, %zu LLCs (%s), %zu cores, %u PUs, ", t->n_packages,
                t->n_numa_nodes, t->n_llcs,
                t->llc_level == 3 ? "L3" : t->llc_level == 2 ? "L2" : t->llc_level == 1 ? "L1" : "no cache: per package",
                t->n_cores, t->n_pus);
        if (topology_has_smt(t))
                fprintf(f, "SMT%u\n", t->max_threads_per_core);
        else
                fputs("no SMT\n", f);

        for (size_t p = 0; p < t->n_packages; p++) {
                fprintf(f, "Package %zu (os %u): cpus ", p, t->packages[p].os_index);
                if ((k = print_list(f, t->packages[p].cpus)) < 0)
                        return k;
                fputc('\n', f);
                for (size_t n = 0; n < t->n_numa_nodes; n++)
                        if (t->numa_nodes[n].package == (int) p && (k = print_node(f, t, n)) < 0)
                                return k;
        }
        for (size_t n = 0; n < t->n_numa_nodes; n++)
                if (t->numa_nodes[n].package < 0) {
                        fputs("Outside any package:\n", f);
                        if ((k = print_node(f, t, n)) < 0)
                                return k;
                }

        fputs("SMT siblings:", f);
        if (!topology_has_smt(t))
                fputs(" none", f);
        else
                for (size_t i = 0; i < t->n_cores; i++)
                        if (bitmap_count(t->cores[i].cpus) > 1) {
                                fputc(' ', f);
                                if ((k = print_list(f, t->cores[i].cpus)) < 0)
                                        return k;
                        }
        fputc('\n', f);
        return 0;
}

static int json_kv_list(Json *j, const char *key, const Bitmap *b) {
        _cleanup_free_ char *s = NULL;
        int k = bitmap_format_list(b, &s);

        if (k < 0)
                return k;
        json_kv_string(j, key, s);
        return 0;
}

static void json_kv_ids(Json *j, const char *key, const Bitmap *b) {
        json_key(j, key);
        json_array_begin(j);
        BITMAP_FOREACH(i, b)
                json_int(j, i);
        json_array_end(j);
}

static void json_kv_ref(Json *j, const char *key, int id) {
        json_key(j, key);
        if (id < 0)
                json_null(j);
        else
                json_int(j, id);
}

int topology_print_json(Json *j, const Topology *t) {
        int k;

        json_object_begin(j);
        json_kv_string(j, "source", t->source);
        json_kv_string(j, "cpu_vendor", t->cpu_vendor);
        json_kv_string(j, "cpu_model", t->cpu_model);
        json_key(j, "counts");
        json_object_begin(j);
        json_kv_uint(j, "packages", t->n_packages);
        json_kv_uint(j, "numa_nodes", t->n_numa_nodes);
        json_kv_uint(j, "llcs", t->n_llcs);
        json_kv_uint(j, "cores", t->n_cores);
        json_kv_uint(j, "pus", t->n_pus);
        json_object_end(j);
        json_kv_uint(j, "llc_level", t->llc_level);
        json_kv_bool(j, "smt", topology_has_smt(t));
        json_kv_uint(j, "max_threads_per_core", t->max_threads_per_core);
        if ((k = json_kv_list(j, "cpus", t->cpus)) < 0)
                return k;

        json_key(j, "packages");
        json_array_begin(j);
        for (size_t i = 0; i < t->n_packages; i++) {
                json_object_begin(j);
                json_kv_uint(j, "id", t->packages[i].id);
                json_kv_uint(j, "os_index", t->packages[i].os_index);
                if ((k = json_kv_list(j, "cpus", t->packages[i].cpus)) < 0)
                        return k;
                json_kv_ids(j, "numa_nodes", t->packages[i].numa_nodes);
                json_object_end(j);
        }
        json_array_end(j);

        json_key(j, "numa_nodes");
        json_array_begin(j);
        for (size_t i = 0; i < t->n_numa_nodes; i++) {
                const TopoNumaNode *n = &t->numa_nodes[i];

                json_object_begin(j);
                json_kv_uint(j, "id", n->id);
                json_kv_uint(j, "os_index", n->os_index);
                json_kv_ref(j, "package", n->package);
                if ((k = json_kv_list(j, "cpus", n->cpus)) < 0)
                        return k;
                json_kv_uint(j, "memory_bytes", n->memory_bytes);
                json_key(j, "distances");
                if (t->distances) {
                        json_array_begin(j);
                        for (size_t m = 0; m < t->n_numa_nodes; m++)
                                json_uint(j, t->distances[i * t->n_numa_nodes + m]);
                        json_array_end(j);
                } else
                        json_null(j);
                json_object_end(j);
        }
        json_array_end(j);

        json_key(j, "llcs");
        json_array_begin(j);
        for (size_t i = 0; i < t->n_llcs; i++) {
                const TopoLlc *c = &t->llcs[i];

                json_object_begin(j);
                json_kv_uint(j, "id", c->id);
                json_kv_uint(j, "level", c->level);
                json_kv_uint(j, "size_bytes", c->size_bytes);
                if ((k = json_kv_list(j, "cpus", c->cpus)) < 0)
                        return k;
                json_kv_ids(j, "numa_nodes", c->numa_nodes);
                json_kv_ref(j, "package", c->package);
                json_object_end(j);
        }
        json_array_end(j);

        json_key(j, "cores");
        json_array_begin(j);
        for (size_t i = 0; i < t->n_cores; i++) {
                const TopoCore *c = &t->cores[i];

                json_object_begin(j);
                json_kv_uint(j, "id", c->id);
                json_kv_ref(j, "llc", c->llc);
                json_kv_ref(j, "numa_node", c->numa_node);
                json_kv_ref(j, "package", c->package);
                if ((k = json_kv_list(j, "cpus", c->cpus)) < 0)
                        return k;
                json_object_end(j);
        }
        json_array_end(j);

        json_key(j, "smt_siblings");
        json_array_begin(j);
        for (size_t i = 0; i < t->n_cores; i++) {
                _cleanup_free_ char *s = NULL;

                if (bitmap_count(t->cores[i].cpus) < 2)
                        continue;
                if ((k = bitmap_format_list(t->cores[i].cpus, &s)) < 0)
                        return k;
                json_string(j, s);
        }
        json_array_end(j);
        json_object_end(j);
        return 0;
}

typedef struct CapRow {
        const char *name;     /* text output */
        const char *json_key; /* JSON output */
        const CapStatus *cap;
} CapRow;

#define CAP_ROWS 14u /* the capabilities KernelCaps has */

static size_t cap_rows(const KernelCaps *c, CapRow rows[static CAP_ROWS]) {
        size_t n = 0;

        rows[n++] = (CapRow) { "core-scheduling", "core_scheduling", &c->core_sched };
        rows[n++] = (CapRow) { "smt", "smt", &c->smt };
        rows[n++] = (CapRow) { "cgroup2", "cgroup2", &c->cgroup2 };
        rows[n++] = (CapRow) { "debugfs", "debugfs", &c->debugfs };
        rows[n++] = (CapRow) { "sched-features", "sched_features", &c->sched_features };
        rows[n++] = (CapRow) { "cgroup-mode", "cgroup_mode", &c->cgroup_mode };
        rows[n++] = (CapRow) { "sched-settings", "sched_settings", &c->sched_settings };
        rows[n++] = (CapRow) { "sched-ext", "sched_ext", &c->sched_ext };
        rows[n++] = (CapRow) { "proc-connector", "proc_connector", &c->proc_connector };
        rows[n++] = (CapRow) { "avx512-state", "avx512_state", &c->avx512_state };
        rows[n++] = (CapRow) { "avx512-evidence", "avx512_evidence", &c->avx512_evidence };
        rows[n++] = (CapRow) { "avx512-counters", "avx512_counters", &c->avx512_counters };
        rows[n++] = (CapRow) { "schedstats", "schedstats", &c->schedstats };
        rows[n++] = (CapRow) { "pidfs", "pidfs", &c->pidfs };
        return n;
}

/* Under the sched-settings row: each setting found, its value, whether it
 * can be written (and the name it has here, where that is another); then
 * the names of those absent. */
static void print_settings_text(FILE *f, const KernelCaps *c) {
        bool absent = false;

        for (size_t i = 0; i < c->n_settings; i++) {
                const KernelSetting *ks = &c->settings[i];

                bool renamed;

                if (kernelcaps_setting_unknown(ks))
                        fprintf(f, "  %-38s cannot tell (%s)\n", ks->info->name, kernelcaps_setting_unknown(ks));
                if (!ks->file)
                        continue;
                renamed = !streq(ks->file, ks->info->name);
                fprintf(f, "  %-38s %-10s %s%s", ks->info->name, ks->value[0] ? ks->value : "?",
                        ks->writable ? "writable" : "read-only: ", ks->writable ? "" : errno_name(ks->error));
                if (renamed)
                        fprintf(f, " (as %s)", ks->file);
                fputc('\n', f);
        }
        for (size_t i = 0; i < c->n_settings; i++)
                if (!c->settings[i].file && !kernelcaps_setting_unknown(&c->settings[i])) {
                        fprintf(f, "%s%s", absent ? " " : "  absent here: ", c->settings[i].info->name);
                        absent = true;
                }
        if (absent)
                fputc('\n', f);
}

int kernelcaps_print_text(FILE *f, const KernelCaps *c, const char *root) {
        CapRow rows[CAP_ROWS];
        size_t n = cap_rows(c, rows);

        fprintf(f, "Root: %s%s\n", root,
                c->syscalls_from_host ? " (core-scheduling and proc-connector probed on the running kernel)" : "");
        if (c->lockdown)
                fprintf(f, "Lockdown: %s\n", c->lockdown);
        for (size_t i = 0; i < n; i++) {
                fprintf(f, "%-16s %-3s %s\n", rows[i].name, rows[i].cap->available ? "yes" : "no",
                        rows[i].cap->reason ?: "");
                if (rows[i].cap == &c->sched_settings)
                        print_settings_text(f, c);
        }
        return 0;
}

static void json_kv_strv(Json *j, const char *key, char *const *l) {
        json_key(j, key);
        json_array_begin(j);
        for (char *const *p = l; p && *p; p++)
                json_string(j, *p);
        json_array_end(j);
}

static void json_cap_common(Json *j, const CapStatus *cap) {
        json_kv_bool(j, "available", cap->available);
        json_kv_string(j, "error", cap->error ? errno_name(cap->error) : NULL);
        json_kv_string(j, "reason", cap->reason);
}

int kernelcaps_print_json(Json *j, const KernelCaps *c, const char *root) {
        CapRow rows[CAP_ROWS];
        size_t n = cap_rows(c, rows);

        json_object_begin(j);
        json_kv_string(j, "root", root);
        json_kv_string(j, "lockdown", c->lockdown);
        json_kv_string(j, "avx512_arch_status", kernel_avx_evidence_to_string(c->avx512_arch_status));
        json_kv_bool(j, "syscall_probes_from_host", c->syscalls_from_host);
        json_key(j, "capabilities");
        json_object_begin(j);
        for (size_t i = 0; i < n; i++) {
                const CapStatus *cap = rows[i].cap;

                json_key(j, rows[i].json_key);
                json_object_begin(j);
                json_cap_common(j, cap);
                if (cap == &c->smt) {
                        json_kv_bool(j, "active", c->smt_active);
                        json_kv_string(j, "control", c->smt_control);
                } else if (cap == &c->cgroup2) {
                        json_kv_string(j, "mount", c->cgroup2_mount);
                        json_kv_bool(j, "hybrid", c->cgroup_hybrid);
                        json_kv_strv(j, "controllers", c->cgroup2_controllers);
                        json_kv_strv(j, "subtree_control", c->cgroup2_subtree);
                        json_kv_strv(j, "v1_controllers", c->cgroup_v1_controllers);
                } else if (cap == &c->debugfs)
                        json_kv_string(j, "mount", c->debugfs_mount);
                else if (cap == &c->sched_features) {
                        json_kv_bool(j, "readable", c->features_readable);
                        json_kv_bool(j, "writable", c->features_writable);
                        json_kv_string(j, "write_error",
                                       c->features_write_error ? errno_name(c->features_write_error) : NULL);
                        json_kv_strv(j, "features", c->features);
                } else if (cap == &c->cgroup_mode) {
                        json_kv_strv(j, "modes", c->cgroup_modes);
                        json_kv_string(j, "active", c->cgroup_mode_active);
                        json_kv_bool(j, "writable", c->cgroup_mode_writable);
                } else if (cap == &c->sched_settings) {
                        json_key(j, "settings");
                        json_array_begin(j);
                        for (size_t s = 0; s < c->n_settings; s++) {
                                const KernelSetting *ks = &c->settings[s];

                                json_object_begin(j);
                                json_kv_string(j, "name", ks->info->name);
                                json_kv_bool(j, "present", ks->file != NULL);
                                json_kv_string(j, "file", ks->file);
                                json_kv_string(j, "value", ks->file && ks->value[0] ? ks->value : NULL);
                                json_kv_bool(j, "writable", ks->writable);
                                json_kv_string(j, "error", ks->error ? errno_name(ks->error) : NULL);
                                if (ks->info->kind == SCHED_SETTING_CHOICE)
                                        json_kv_strv(j, "choices", ks->choices);
                                if (kernelcaps_setting_unknown(ks))
                                        json_kv_string(j, "cannot_tell", kernelcaps_setting_unknown(ks));
                                else if (!ks->file)
                                        json_kv_string(j, "why_absent", ks->info->absent);
                                json_object_end(j);
                        }
                        json_array_end(j);
                } else if (cap == &c->sched_ext) {
                        json_kv_string(j, "state", c->sched_ext_state);
                        json_kv_string(j, "ops", c->sched_ext_ops);
                        json_kv_bool(j, "active", c->sched_ext_active);
                }
                json_object_end(j);
        }
        json_object_end(j);
        json_object_end(j);
        return 0;
}
