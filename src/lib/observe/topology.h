/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The machine's shape as plain values: packages, NUMA nodes (with their
 * distance matrix), last-level caches, cores and their PUs.
 *
 * Loaded once through hwloc; nothing of hwloc is visible past this header.
 * Every object has a dense logical id (its index in its array) and, where
 * the kernel numbers it, an os_index. Cross references are logical ids,
 * -1 where there is none. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bitmap.h"
#include "base/macro.h"

typedef enum TopologySourceKind {
        TOPOLOGY_SOURCE_ROOT,      /* a root directory: "/" is the live machine */
        TOPOLOGY_SOURCE_XML,       /* an hwloc XML export */
        TOPOLOGY_SOURCE_SYNTHETIC, /* an hwloc synthetic description */
} TopologySourceKind;

typedef struct TopologySource {
        TopologySourceKind kind;
        const char *arg; /* root path, XML path or synthetic string */
} TopologySource;

typedef struct TopoPackage {
        unsigned id;
        unsigned os_index;
        Bitmap *cpus;
        Bitmap *numa_nodes; /* logical node ids */
} TopoPackage;

typedef struct TopoNumaNode {
        unsigned id;
        unsigned os_index;
        int package;
        Bitmap *cpus; /* may be empty: memory-only nodes */
        uint64_t memory_bytes;
} TopoNumaNode;

typedef struct TopoLlc {
        unsigned id;
        unsigned level; /* 3, 2, 1; 0 when the machine reports no cache and the package stands in */
        uint64_t size_bytes;
        int package;
        Bitmap *cpus;
        Bitmap *numa_nodes; /* logical node ids; more than one with SNC-like layouts */
} TopoLlc;

typedef struct TopoCore {
        unsigned id;
        int llc;
        int numa_node;
        int package;
        Bitmap *cpus; /* its PUs: the SMT siblings */
} TopoCore;

typedef struct Topology {
        char *source; /* "live", "root:DIR", "xml:FILE", "synthetic:STRING" */
        char *cpu_vendor; /* "GenuineIntel", "AuthenticAMD", … or NULL */
        char *cpu_model;  /* or NULL */

        TopoPackage *packages;
        size_t n_packages;
        TopoNumaNode *numa_nodes;
        size_t n_numa_nodes;
        TopoLlc *llcs;
        size_t n_llcs;
        TopoCore *cores;
        size_t n_cores;

        unsigned n_pus;
        Bitmap *cpus; /* all PUs */
        unsigned llc_level;
        unsigned max_threads_per_core;

        /* n_numa_nodes × n_numa_nodes, row-major, by logical node id; NULL
         * when the source gives no distances. */
        uint64_t *distances;
} Topology;

int topology_load(const TopologySource *source, Topology **ret);
Topology *topology_free(Topology *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Topology *, topology_free);

/* SMT is present when some core has more than one PU. */
static inline bool topology_has_smt(const Topology *t) {
        return t->max_threads_per_core > 1;
}

/* Lookups by OS cpu number; -1 when unknown. */
int topology_core_of_cpu(const Topology *t, unsigned cpu);
int topology_llc_of_cpu(const Topology *t, unsigned cpu);
int topology_node_of_cpu(const Topology *t, unsigned cpu);
