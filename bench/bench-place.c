/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fast path's decision (decide/place.h) against the size of the rule
 * set: P policies ahead of the probe's, each naming another program (-g:
 * the start of other programs' names, "other-N-*"; -G: a glob that is not
 * a start, "*-other-N", which every task is matched against), as a fleet's
 * rule files are on a host where most of them match nothing. Prints the
 * time of one pick for a process the last policy takes and for one no
 * policy takes, warm (a loop of N picks): the pure decision, without the
 * reads and writes around it.
 * With -t, also the planner's pass over TASKS threads (plan_build(), in
 * processes of 10 threads, none of them taken by the other policies).
 * Asserts nothing.
 *
 *   bench-place [-p POLICIES] [-n PICKS] [-g | -G] [-t TASKS] */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "decide/config.h"
#include "decide/diag.h"
#include "decide/place.h"
#include "decide/plan.h"
#include "decide/policy.h"
#include "observe/topology.h"

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* ns per pick of a new process of this comm. */
static double time_picks(const PlaceState *s, const char *comm, unsigned n, PlaceVerdict *ret) {
        PlaceProcess pp = { .tgid = 100000, .n_threads = 1, .have = PLACE_FACT_COMM, .match = { .comm = comm } };
        PlacePick pick = {};
        double t0 = now();

        for (unsigned i = 0; i < n; i++) {
                pp.tgid = 100000 + (pid_t) (i % 1000);
                place_pick(s, &pp, &pick);
        }
        *ret = pick.verdict;
        return (now() - t0) * 1e9 / n;
}

int main(int argc, char *argv[]) {
        TopologySource src = { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = "pack:2 [numa] l3:2 core:4 pu:2" };
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(topology_freep) Topology *t = NULL;
        _cleanup_(config_freep) Config *config = NULL;
        _cleanup_(policy_set_freep) PolicySet *ps = NULL;
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_(place_state_freep) PlaceState *s = NULL;
        unsigned n_pol = 100, n = 200000, n_tasks = 0;
        int glob = 0; /* 'g' starts, 'G' other globs */
        IniSource *ini;
        char **texts, **names;
        bool *in_force;
        KernelCaps caps = { .smt = { .available = true }, .smt_active = true };
        PlanTaskInput task = { .tid = 5000, .tgid = 5000, .start_time = 1, .runnable = true,
                               .match = { .class = POLICY_CLASS_OTHER, .comm = "topod-probe" } };
        PlanInputs in = { .caps = &caps, .tasks = &task, .n_tasks = 1 };
        PlaceVerdict v1, v2;
        double last, none;
        int c, k;

        while ((c = getopt(argc, argv, "p:n:gGt:")) >= 0)
                switch (c) {
                case 't':
                        n_tasks = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'p':
                        n_pol = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'n':
                        n = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'g':
                case 'G':
                        glob = c;
                        break;
                default:
                        fprintf(stderr, "usage: bench-place [-p POLICIES] [-n PICKS] [-g | -G] [-t TASKS]\n");
                        return 2;
                }
        if (n == 0 || n_pol > POLICY_COUNT_MAX - 1) {
                fprintf(stderr, "bench-place: -n must be > 0, -p at most %u\n", POLICY_COUNT_MAX - 1);
                return 2;
        }
        ini = calloc(n_pol + 1, sizeof(IniSource));
        texts = calloc(n_pol + 1, sizeof(char *));
        names = calloc(n_pol + 1, sizeof(char *));
        in_force = calloc(n_pol + 1, sizeof(bool));
        if (!ini || !texts || !names || !in_force)
                return 1;
        for (unsigned i = 0; i <= n_pol; i++) {
                if (i < n_pol)
                        k = asprintf(&texts[i],
                                     "[policy]\nname = other-%u\npriority = 600\n[match]\ncomm = %sother-%u%s\n"
                                     "[place]\ncpus = llc\n",
                                     i, glob == 'G' ? "*-" : "", i, glob == 'g' ? "-*" : "");
                else
                        k = asprintf(&texts[i], "[policy]\nname = probe\npriority = 500\n[match]\ncomm = topod-probe\n"
                                                "[place]\ncpus = llc\n");
                if (k < 0 || asprintf(&names[i], "%04u.ini", i) < 0)
                        return 1;
                ini[i] = (IniSource) { names[i], texts[i], strlen(texts[i]) };
                in_force[i] = true;
        }
        if ((k = topology_load(&src, &t)) < 0 || (k = config_new(&config)) < 0 ||
            (k = policy_set_parse(ini, n_pol + 1, d, &ps)) < 0) {
                fprintf(stderr, "bench-place: setting up: %s\n", strerror(-k));
                return 1;
        }
        in.topology = t;
        in.config = config;
        in.policies = ps;
        in.in_force = in_force;
        if ((k = plan_build(&in, &plan)) < 0 || (k = place_state_new(plan, ps, in_force, &config->scope, t, &s)) < 0) {
                fprintf(stderr, "bench-place: planning: %s\n", strerror(-k));
                return 1;
        }
        (void) time_picks(s, "topod-probe", n / 10, &v1); /* warm up */
        last = time_picks(s, "topod-probe", n, &v1);
        none = time_picks(s, "bash", n, &v2);
        printf("bench-place: %u policies ahead of the probe's (%s), %u picks each\n", n_pol,
               glob == 'g' ? "each the start of other programs' names"
               : glob == 'G' ? "each a glob matched against every task"
                             : "each naming another program",
               n);
        printf("  taken by the last policy: %.0f ns a pick (%s)\n", last, place_verdict_to_string(v1));
        printf("  taken by none:            %.0f ns a pick (%s)\n", none, place_verdict_to_string(v2));
        if (n_tasks > 0) {
                _cleanup_free_ PlanTaskInput *tasks = calloc(n_tasks, sizeof(PlanTaskInput));
                double t0, best = 0;

                if (!tasks)
                        return 1;
                for (unsigned i = 0; i < n_tasks; i++)
                        tasks[i] = (PlanTaskInput) { .tid = 10000 + (pid_t) i, .tgid = 10000 + (pid_t) (i - i % 10),
                                                     .start_time = 1 + i, .runnable = true,
                                                     .match = { .class = POLICY_CLASS_OTHER,
                                                                .comm = i % 100 == 0 ? "topod-probe" : "bash" } };
                in.tasks = tasks;
                in.n_tasks = n_tasks;
                for (int r = 0; r < 5; r++) {
                        _cleanup_(plan_freep) Plan *p2 = NULL;

                        t0 = now();
                        if ((k = plan_build(&in, &p2)) < 0) {
                                fprintf(stderr, "bench-place: planning: %s\n", strerror(-k));
                                return 1;
                        }
                        if (r == 0 || now() - t0 < best)
                                best = now() - t0;
                }
                printf("  the planner over %u threads: %.2f ms (best of 5)\n", n_tasks, best * 1e3);
        }
        for (unsigned i = 0; i <= n_pol; i++) {
                free(texts[i]);
                free(names[i]);
        }
        free(texts);
        free(names);
        free(ini);
        free(in_force);
        return 0;
}
