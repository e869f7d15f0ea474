/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "topology.h"

#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"

static int bitmap_from_hwloc(hwloc_const_bitmap_t hb, Bitmap **ret) {
        _cleanup_(bitmap_freep) Bitmap *b = bitmap_new();
        int i, k;

        if (!b)
                return -ENOMEM;
        if (hb) {
                if (hwloc_bitmap_weight(hb) < 0) /* infinite: not a real set */
                        return -EINVAL;
                for (i = hwloc_bitmap_first(hb); i >= 0; i = hwloc_bitmap_next(hb, i)) {
                        k = bitmap_set(b, (unsigned) i);
                        if (k < 0)
                                return k;
                }
        }
        *ret = TAKE_PTR(b);
        return 0;
}

Topology *topology_free(Topology *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_packages; i++) {
                bitmap_free(t->packages[i].cpus);
                bitmap_free(t->packages[i].numa_nodes);
        }
        for (size_t i = 0; i < t->n_numa_nodes; i++)
                bitmap_free(t->numa_nodes[i].cpus);
        for (size_t i = 0; i < t->n_llcs; i++) {
                bitmap_free(t->llcs[i].cpus);
                bitmap_free(t->llcs[i].numa_nodes);
        }
        for (size_t i = 0; i < t->n_cores; i++)
                bitmap_free(t->cores[i].cpus);
        free(t->packages);
        free(t->numa_nodes);
        free(t->llcs);
        free(t->cores);
        free(t->distances);
        bitmap_free(t->cpus);
        free(t->source);
        free(t->cpu_vendor);
        free(t->cpu_model);
        free(t);
        return NULL;
}

static int node_id_by_os_index(const Topology *t, unsigned os_index) {
        for (size_t i = 0; i < t->n_numa_nodes; i++)
                if (t->numa_nodes[i].os_index == os_index)
                        return (int) i;
        return -1;
}

/* Logical node ids for an hwloc nodeset. */
static int nodes_from_nodeset(const Topology *t, hwloc_const_nodeset_t ns, Bitmap **ret) {
        _cleanup_(bitmap_freep) Bitmap *b = bitmap_new();
        int i, k;

        if (!b)
                return -ENOMEM;
        if (ns && hwloc_bitmap_weight(ns) >= 0)
                for (i = hwloc_bitmap_first(ns); i >= 0; i = hwloc_bitmap_next(ns, i)) {
                        int id = node_id_by_os_index(t, (unsigned) i);
                        if (id < 0)
                                continue;
                        k = bitmap_set(b, (unsigned) id);
                        if (k < 0)
                                return k;
                }
        *ret = TAKE_PTR(b);
        return 0;
}

static int package_containing(const Topology *t, const Bitmap *cpus) {
        if (bitmap_is_empty(cpus))
                return -1;
        for (size_t i = 0; i < t->n_packages; i++)
                if (bitmap_is_subset(cpus, t->packages[i].cpus))
                        return (int) i;
        return -1;
}

static int llc_containing(const Topology *t, const Bitmap *cpus) {
        for (size_t i = 0; i < t->n_llcs; i++)
                if (bitmap_is_subset(cpus, t->llcs[i].cpus))
                        return (int) i;
        return -1;
}

static int node_intersecting(const Topology *t, const Bitmap *cpus) {
        for (size_t i = 0; i < t->n_numa_nodes; i++)
                if (bitmap_intersects(cpus, t->numa_nodes[i].cpus))
                        return (int) i;
        return -1;
}

static int load_packages(Topology *t, hwloc_topology_t topo) {
        int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
        int k;

        if (n <= 0) {
                /* Some XML exports and synthetic strings have no package
                 * level: the machine stands in for the one package. */
                hwloc_obj_t m = hwloc_get_root_obj(topo);

                t->packages = calloc(1, sizeof(TopoPackage));
                if (!t->packages)
                        return -ENOMEM;
                t->n_packages = 1;
                return bitmap_from_hwloc(m->cpuset, &t->packages[0].cpus);
        }
        t->packages = calloc((size_t) n, sizeof(TopoPackage));
        if (!t->packages)
                return -ENOMEM;
        t->n_packages = (size_t) n;
        for (int i = 0; i < n; i++) {
                hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, (unsigned) i);
                TopoPackage *p = &t->packages[i];
                const char *v;

                if (!o)
                        return -EINVAL;
                p->id = (unsigned) i;
                p->os_index = o->os_index == HWLOC_UNKNOWN_INDEX ? (unsigned) i : o->os_index;
                k = bitmap_from_hwloc(o->cpuset, &p->cpus);
                if (k < 0)
                        return k;
                v = hwloc_obj_get_info_by_name(o, "CPUVendor");
                if (v && !t->cpu_vendor && !(t->cpu_vendor = strdup(v)))
                        return -ENOMEM;
                v = hwloc_obj_get_info_by_name(o, "CPUModel");
                if (v && !t->cpu_model && !(t->cpu_model = strdup(v)))
                        return -ENOMEM;
        }
        return 0;
}

static int load_numa_nodes(Topology *t, hwloc_topology_t topo) {
        int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
        int k;

        if (n <= 0)
                return -EINVAL; /* hwloc 2 always reports at least one */
        t->numa_nodes = calloc((size_t) n, sizeof(TopoNumaNode));
        if (!t->numa_nodes)
                return -ENOMEM;
        t->n_numa_nodes = (size_t) n;
        for (int i = 0; i < n; i++) {
                hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned) i);
                TopoNumaNode *nd = &t->numa_nodes[i];

                if (!o)
                        return -EINVAL;
                nd->id = (unsigned) i;
                nd->os_index = o->os_index == HWLOC_UNKNOWN_INDEX ? (unsigned) i : o->os_index;
                nd->memory_bytes = o->attr ? o->attr->numanode.local_memory : 0;
                k = bitmap_from_hwloc(o->cpuset, &nd->cpus);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int load_distances(Topology *t, hwloc_topology_t topo) {
        struct hwloc_distances_s *d = NULL;
        unsigned nr = 1;
        size_t n = t->n_numa_nodes;

        if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &d, HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0 ||
            nr == 0 || !d)
                return 0; /* none given: leave NULL */
        if (d->nbobjs == n) {
                t->distances = calloc(n * n, sizeof(uint64_t));
                if (!t->distances) {
                        hwloc_distances_release(topo, d);
                        return -ENOMEM;
                }
                for (size_t i = 0; i < n; i++)
                        for (size_t j = 0; j < n; j++) {
                                unsigned a = d->objs[i]->logical_index, b = d->objs[j]->logical_index;
                                if (a < n && b < n)
                                        t->distances[a * n + b] = d->values[i * n + j];
                        }
        }
        hwloc_distances_release(topo, d);
        return 0;
}

static int load_llcs(Topology *t, hwloc_topology_t topo) {
        static const struct {
                hwloc_obj_type_t type;
                unsigned level;
        } levels[] = {
                { HWLOC_OBJ_L3CACHE, 3 },
                { HWLOC_OBJ_L2CACHE, 2 },
                { HWLOC_OBJ_L1CACHE, 1 },
        };
        int k;

        for (size_t l = 0; l < ELEMENTSOF(levels); l++) {
                int n = hwloc_get_nbobjs_by_type(topo, levels[l].type);

                if (n <= 0)
                        continue;
                t->llcs = calloc((size_t) n, sizeof(TopoLlc));
                if (!t->llcs)
                        return -ENOMEM;
                t->n_llcs = (size_t) n;
                t->llc_level = levels[l].level;
                for (int i = 0; i < n; i++) {
                        hwloc_obj_t o = hwloc_get_obj_by_type(topo, levels[l].type, (unsigned) i);
                        TopoLlc *c = &t->llcs[i];

                        if (!o)
                                return -EINVAL;
                        c->id = (unsigned) i;
                        c->level = levels[l].level;
                        c->size_bytes = o->attr ? o->attr->cache.size : 0;
                        k = bitmap_from_hwloc(o->cpuset, &c->cpus);
                        if (k < 0)
                                return k;
                        k = nodes_from_nodeset(t, o->nodeset, &c->numa_nodes);
                        if (k < 0)
                                return k;
                }
                return 0;
        }

        /* No cache reported at all: each package is the cache domain. */
        t->llcs = calloc(t->n_packages, sizeof(TopoLlc));
        if (!t->llcs)
                return -ENOMEM;
        t->n_llcs = t->n_packages;
        t->llc_level = 0;
        for (size_t i = 0; i < t->n_packages; i++) {
                t->llcs[i].id = (unsigned) i;
                t->llcs[i].cpus = bitmap_copy(t->packages[i].cpus);
                t->llcs[i].numa_nodes = bitmap_new();
                if (!t->llcs[i].cpus || !t->llcs[i].numa_nodes)
                        return -ENOMEM;
                for (size_t j = 0; j < t->n_numa_nodes; j++)
                        if (bitmap_intersects(t->numa_nodes[j].cpus, t->packages[i].cpus) &&
                            (k = bitmap_set(t->llcs[i].numa_nodes, (unsigned) j)) < 0)
                                return k;
        }
        return 0;
}

static int load_cores(Topology *t, hwloc_topology_t topo) {
        hwloc_obj_type_t type = HWLOC_OBJ_CORE;
        int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        int k;

        if (n <= 0) {
                /* No core level (some XML exports): each PU is a core. */
                type = HWLOC_OBJ_PU;
                n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
                if (n <= 0)
                        return -EINVAL;
        }
        t->cores = calloc((size_t) n, sizeof(TopoCore));
        if (!t->cores)
                return -ENOMEM;
        t->n_cores = (size_t) n;
        for (int i = 0; i < n; i++) {
                hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, (unsigned) i);
                TopoCore *c = &t->cores[i];
                unsigned w;

                if (!o)
                        return -EINVAL;
                c->id = (unsigned) i;
                k = bitmap_from_hwloc(o->cpuset, &c->cpus);
                if (k < 0)
                        return k;
                w = bitmap_count(c->cpus);
                t->max_threads_per_core = MAX(t->max_threads_per_core, w);
        }
        return 0;
}

/* Cross references, from the cpusets alone, so any tree shape works. */
static int link_objects(Topology *t, hwloc_topology_t topo) {
        int k;

        for (size_t i = 0; i < t->n_packages; i++) {
                TopoPackage *p = &t->packages[i];
                hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, (unsigned) i);

                if (o) {
                        k = nodes_from_nodeset(t, o->nodeset, &p->numa_nodes);
                        if (k < 0)
                                return k;
                } else {
                        p->numa_nodes = bitmap_new();
                        if (!p->numa_nodes)
                                return -ENOMEM;
                        for (size_t j = 0; j < t->n_numa_nodes; j++)
                                if ((k = bitmap_set(p->numa_nodes, (unsigned) j)) < 0)
                                        return k;
                }
        }
        for (size_t i = 0; i < t->n_numa_nodes; i++) {
                TopoNumaNode *nd = &t->numa_nodes[i];

                nd->package = package_containing(t, nd->cpus);
                if (nd->package < 0)
                        for (size_t j = 0; j < t->n_packages; j++)
                                if (bitmap_isset(t->packages[j].numa_nodes, (unsigned) i)) {
                                        nd->package = (int) j;
                                        break;
                                }
        }
        for (size_t i = 0; i < t->n_llcs; i++)
                t->llcs[i].package = package_containing(t, t->llcs[i].cpus);
        for (size_t i = 0; i < t->n_cores; i++) {
                TopoCore *c = &t->cores[i];

                c->llc = llc_containing(t, c->cpus);
                c->numa_node = node_intersecting(t, c->cpus);
                c->package = package_containing(t, c->cpus);
        }
        return 0;
}

static char *describe_source(const TopologySource *s) {
        char *d = NULL;
        int k;

        switch (s->kind) {
        case TOPOLOGY_SOURCE_ROOT:
                if (!s->arg || streq(s->arg, "/"))
                        return strdup("live");
                k = asprintf(&d, "root:%s", s->arg);
                break;
        case TOPOLOGY_SOURCE_XML:
                k = asprintf(&d, "xml:%s", s->arg);
                break;
        case TOPOLOGY_SOURCE_SYNTHETIC:
                k = asprintf(&d, "synthetic:%s", s->arg);
                break;
        default:
                return NULL;
        }
        return k < 0 ? NULL : d;
}

/* hwloc reads a foreign sysfs tree only through the environment. Setting it
 * is not thread-safe against threads that read the environment: topod
 * reads its topology again (CPUs online changed) with its placer and
 * cookie threads running, which never do. */
typedef struct EnvSave {
        const char *name;
        char *old;
        bool had;
} EnvSave;

static int env_push(EnvSave *e, const char *name, const char *value) {
        const char *o = getenv(name);

        e->name = name;
        e->had = o != NULL;
        e->old = o ? strdup(o) : NULL;
        if (o && !e->old)
                return -ENOMEM;
        return setenv(name, value, 1) < 0 ? negative_errno() : 0;
}

static void env_pop(EnvSave *e) {
        if (!e->name)
                return;
        if (e->had)
                setenv(e->name, e->old, 1);
        else
                unsetenv(e->name);
        free(e->old);
        e->name = NULL;
}

static int load_hwloc(const TopologySource *source, hwloc_topology_t topo) {
        EnvSave fsroot = {}, comps = {};
        int k;

        /* Whole machine, whatever cpuset cgroup we happen to run in: topod
         * places work on CPUs it itself may not be allowed on. No I/O
         * devices: they cost time and we do not use them. */
        hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
        hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);

        switch (source->kind) {
        case TOPOLOGY_SOURCE_SYNTHETIC:
                if (hwloc_topology_set_synthetic(topo, source->arg) < 0)
                        return -EINVAL;
                break;
        case TOPOLOGY_SOURCE_XML:
                if (access(source->arg, R_OK) < 0)
                        return negative_errno();
                if (hwloc_topology_set_xml(topo, source->arg) < 0)
                        return -EINVAL;
                break;
        case TOPOLOGY_SOURCE_ROOT:
                if (source->arg && !streq(source->arg, "/")) {
                        /* hwloc would only print a warning and fall back. */
                        if (access(source->arg, R_OK | X_OK) < 0)
                                return negative_errno();
                        if ((k = env_push(&fsroot, "HWLOC_FSROOT", source->arg)) < 0 ||
                            (k = env_push(&comps, "HWLOC_COMPONENTS", "linux,stop")) < 0) {
                                env_pop(&fsroot);
                                return k;
                        }
                }
                break;
        default:
                return -EINVAL;
        }
        k = hwloc_topology_load(topo) < 0 ? -EINVAL : 0;
        env_pop(&comps);
        env_pop(&fsroot);
        return k;
}

int topology_load(const TopologySource *source, Topology **ret) {
        _cleanup_(topology_freep) Topology *t = NULL;
        hwloc_topology_t topo;
        int k;

        if (source->kind != TOPOLOGY_SOURCE_ROOT && !source->arg)
                return -EINVAL;
        t = calloc(1, sizeof(Topology));
        if (!t)
                return -ENOMEM;
        t->source = describe_source(source);
        if (!t->source)
                return -ENOMEM;

        if (hwloc_topology_init(&topo) < 0)
                return -ENOMEM;
        k = load_hwloc(source, topo);
        if (k >= 0)
                k = load_packages(t, topo);
        if (k >= 0)
                k = load_numa_nodes(t, topo);
        if (k >= 0)
                k = load_distances(t, topo);
        if (k >= 0)
                k = load_llcs(t, topo);
        if (k >= 0)
                k = load_cores(t, topo);
        if (k >= 0)
                k = link_objects(t, topo);
        if (k >= 0) {
                int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
                hwloc_obj_t root = hwloc_get_root_obj(topo);

                t->n_pus = n > 0 ? (unsigned) n : 0;
                k = bitmap_from_hwloc(root->cpuset, &t->cpus);
        }
        hwloc_topology_destroy(topo);
        if (k < 0)
                return k;

        *ret = TAKE_PTR(t);
        return 0;
}

int topology_core_of_cpu(const Topology *t, unsigned cpu) {
        for (size_t i = 0; i < t->n_cores; i++)
                if (bitmap_isset(t->cores[i].cpus, cpu))
                        return (int) i;
        return -1;
}

int topology_llc_of_cpu(const Topology *t, unsigned cpu) {
        for (size_t i = 0; i < t->n_llcs; i++)
                if (bitmap_isset(t->llcs[i].cpus, cpu))
                        return (int) i;
        return -1;
}

int topology_node_of_cpu(const Topology *t, unsigned cpu) {
        for (size_t i = 0; i < t->n_numa_nodes; i++)
                if (bitmap_isset(t->numa_nodes[i].cpus, cpu))
                        return (int) i;
        return -1;
}
