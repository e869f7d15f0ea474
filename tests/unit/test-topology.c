/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The topology model on synthetic machines and on a recorded sysfs tree. */

#include <stdlib.h>

#include "base/json.h"
#include "observe/observe-print.h"
#include "observe/topology.h"
#include "tests.h"

static Topology *load_synthetic(const char *desc) {
        TopologySource s = { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = desc };
        Topology *t = NULL;

        ASSERT_OK(topology_load(&s, &t));
        return t;
}

static void assert_list(const Bitmap *b, const char *expected) {
        _cleanup_free_ char *s = NULL;

        ASSERT_OK(bitmap_format_list(b, &s));
        ASSERT_STREQ(s, expected);
}

/* Invariants every loaded topology must keep, whatever its shape. */
static void check_invariants(const Topology *t) {
        _cleanup_(bitmap_freep) Bitmap *seen = bitmap_new();
        unsigned pus = 0;

        ASSERT_NOT_NULL(seen);
        for (size_t i = 0; i < t->n_cores; i++) {
                const TopoCore *c = &t->cores[i];

                ASSERT_EQ(c->id, i);
                ASSERT_FALSE(bitmap_is_empty(c->cpus));
                ASSERT_FALSE(bitmap_intersects(seen, c->cpus)); /* a PU belongs to one core */
                ASSERT_OK(bitmap_or(seen, c->cpus));
                pus += bitmap_count(c->cpus);
                ASSERT_GE(c->llc, 0);
                ASSERT_LT((size_t) c->llc, t->n_llcs);
                ASSERT_TRUE(bitmap_is_subset(c->cpus, t->llcs[c->llc].cpus));
                ASSERT_GE(c->numa_node, 0);
                ASSERT_LT((size_t) c->numa_node, t->n_numa_nodes);
                ASSERT_TRUE(bitmap_is_subset(c->cpus, t->numa_nodes[c->numa_node].cpus));
                ASSERT_GE(c->package, 0);
                ASSERT_LT((size_t) c->package, t->n_packages);
                BITMAP_FOREACH(cpu, c->cpus) {
                        ASSERT_EQ(topology_core_of_cpu(t, (unsigned) cpu), i);
                        ASSERT_EQ(topology_llc_of_cpu(t, (unsigned) cpu), c->llc);
                        ASSERT_EQ(topology_node_of_cpu(t, (unsigned) cpu), c->numa_node);
                }
        }
        ASSERT_EQ(pus, t->n_pus);
        ASSERT_TRUE(bitmap_equal(seen, t->cpus));
        for (size_t i = 0; i < t->n_llcs; i++) {
                ASSERT_GE(t->llcs[i].package, 0);
                ASSERT_FALSE(bitmap_is_empty(t->llcs[i].numa_nodes));
                ASSERT_EQ(t->llcs[i].level, t->llc_level);
        }
        for (size_t i = 0; i < t->n_numa_nodes; i++)
                ASSERT_GE(t->numa_nodes[i].package, 0);
        ASSERT_EQ(topology_core_of_cpu(t, 60000), -1);
}

static void check_counts(const Topology *t, size_t packages, size_t nodes, size_t llcs, size_t cores, unsigned pus) {
        ASSERT_EQ(t->n_packages, packages);
        ASSERT_EQ(t->n_numa_nodes, nodes);
        ASSERT_EQ(t->n_llcs, llcs);
        ASSERT_EQ(t->n_cores, cores);
        ASSERT_EQ(t->n_pus, pus);
        check_invariants(t);
}

/* AMD Zen3 (Milan) 2S x 64C, SMT2, 8 CCDs (one L3 each) per socket. */
static void test_zen3_2s(void) {
        _cleanup_(topology_freep) Topology *t = load_synthetic("pack:2 [numa] l3:8 core:8 pu:2");

        check_counts(t, 2, 2, 16, 128, 256);
        ASSERT_EQ(t->llc_level, 3);
        ASSERT_TRUE(topology_has_smt(t));
        ASSERT_EQ(t->max_threads_per_core, 2);
        for (size_t i = 0; i < t->n_llcs; i++) {
                ASSERT_EQ(bitmap_count(t->llcs[i].cpus), 16);
                ASSERT_EQ(bitmap_count(t->llcs[i].numa_nodes), 1);
                ASSERT_EQ(t->llcs[i].package, i / 8);
        }
        assert_list(t->llcs[0].cpus, "0-15");
        assert_list(t->llcs[15].cpus, "240-255");
        assert_list(t->numa_nodes[1].cpus, "128-255");
        assert_list(t->cores[0].cpus, "0-1");
        ASSERT_EQ(topology_llc_of_cpu(t, 17), 1);
        ASSERT_EQ(topology_node_of_cpu(t, 127), 0);
        ASSERT_EQ(topology_node_of_cpu(t, 128), 1);
        ASSERT_TRUE(bitmap_isset(t->packages[1].numa_nodes, 1));
        ASSERT_NULL(t->distances); /* synthetic strings carry none */
}

/* AMD Zen4 (Genoa/Bergamo-like) 2S x 128C, SMT2, 16 LLCs per socket. */
static void test_zen4_2s(void) {
        _cleanup_(topology_freep) Topology *t = load_synthetic("pack:2 [numa] l3:16 core:8 pu:2");

        check_counts(t, 2, 2, 32, 256, 512);
        for (size_t i = 0; i < t->n_llcs; i++)
                ASSERT_EQ(bitmap_count(t->llcs[i].cpus), 16);
        assert_list(t->packages[0].cpus, "0-255");
        assert_list(t->llcs[31].cpus, "496-511");
}

/* Intel-like 2S with one L3 per socket and sub-NUMA clustering (SNC2): the
 * LLC spans two NUMA nodes. */
static void test_intel_snc2(void) {
        _cleanup_(topology_freep) Topology *t = load_synthetic("pack:2 l3:1 group:2 [numa] core:14 pu:2");

        check_counts(t, 2, 4, 2, 56, 112);
        assert_list(t->llcs[0].cpus, "0-55");
        assert_list(t->llcs[0].numa_nodes, "0-1");
        assert_list(t->llcs[1].numa_nodes, "2-3");
        assert_list(t->numa_nodes[1].cpus, "28-55");
        ASSERT_EQ(t->numa_nodes[2].package, 1);
        assert_list(t->packages[0].numa_nodes, "0-1");
        ASSERT_EQ(t->cores[14].numa_node, 1);
        ASSERT_EQ(t->cores[14].llc, 0);
}

/* An s390-like LPAR: 32 vCPUs, no SMT, one memory node, a shared cache per
 * "drawer" and private L2s. */
static void test_s390_lpar(void) {
        _cleanup_(topology_freep) Topology *t = load_synthetic("pack:4 l3:1 l2:8 core:1 pu:1");

        check_counts(t, 4, 1, 4, 32, 32);
        ASSERT_FALSE(topology_has_smt(t));
        ASSERT_EQ(t->max_threads_per_core, 1);
        ASSERT_EQ(t->llc_level, 3);
        assert_list(t->llcs[3].cpus, "24-31");
        assert_list(t->llcs[3].numa_nodes, "0");
}

/* No L3: the deepest cache there is (L2) stands in. */
static void test_l2_only(void) {
        _cleanup_(topology_freep) Topology *t = load_synthetic("pack:2 [numa] l2:4 core:4 pu:2");

        check_counts(t, 2, 2, 8, 32, 64);
        ASSERT_EQ(t->llc_level, 2);
        assert_list(t->llcs[1].cpus, "8-15");
}

/* A single core, no cache reported: the package is the cache domain. */
static void test_single_core(void) {
        _cleanup_(topology_freep) Topology *t = load_synthetic("pack:1 core:1 pu:1");

        check_counts(t, 1, 1, 1, 1, 1);
        ASSERT_EQ(t->llc_level, 0);
        ASSERT_FALSE(topology_has_smt(t));
        assert_list(t->llcs[0].cpus, "0");
}

static void test_bad_sources(void) {
        TopologySource s = { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = "pack:2 bogus:3" };
        Topology *t = NULL;

        ASSERT_ERROR(topology_load(&s, &t), EINVAL);
        s = (TopologySource) { .kind = TOPOLOGY_SOURCE_XML, .arg = "/nonexistent/topo.xml" };
        ASSERT_ERROR(topology_load(&s, &t), ENOENT);
        s = (TopologySource) { .kind = TOPOLOGY_SOURCE_ROOT, .arg = "/nonexistent-root" };
        ASSERT_ERROR(topology_load(&s, &t), ENOENT);
        s = (TopologySource) { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = NULL };
        ASSERT_ERROR(topology_load(&s, &t), EINVAL);
        ASSERT_NULL(t);
}

static char *render_json(const Topology *t) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        Json *j;

        ASSERT_NOT_NULL(f);
        j = json_new(f, true);
        ASSERT_OK(topology_print_json(j, t));
        json_free(j);
        fclose(f);
        return buf;
}

/* A sysfs tree recorded with hwloc-gather-topology, loaded through the root
 * prefix, must give the committed JSON byte for byte. Set
 * TOPOD_UPDATE_GOLDEN=1 to rewrite the expected file after a deliberate
 * change. Runs with the source tree as working directory. */
static void golden(const char *name) {
        _cleanup_free_ char *root = NULL, *expected_path = NULL, *got = NULL;
        _cleanup_(topology_freep) Topology *t = NULL;
        TopologySource s = { .kind = TOPOLOGY_SOURCE_ROOT };

        ASSERT_GT(asprintf(&root, "tests/data/sysfs/%s", name), 0);
        ASSERT_GT(asprintf(&expected_path, "tests/data/sysfs/%s.json", name), 0);
        s.arg = root;
        ASSERT_OK(topology_load(&s, &t));
        check_invariants(t);
        got = render_json(t);
        test_golden(expected_path, got);
}

static void test_recorded_trees(void) {
        golden("host-2cpu");
        golden("guest-2s-4llc");
}

int main(void) {
        RUN(test_zen3_2s);
        RUN(test_zen4_2s);
        RUN(test_intel_snc2);
        RUN(test_s390_lpar);
        RUN(test_l2_only);
        RUN(test_single_core);
        RUN(test_bad_sources);
        RUN(test_recorded_trees);
        return 0;
}
