/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cost of the AVX-512 counters (observe/counters.h): opening one per
 * candidate thread, reading them all at every scan, and what they add to
 * the scan's classification; with the machine's own AVX-512 event where
 * its PMU is visible, else a software event (task-clock) through the same
 * calls, and it says which. Prints figures; asserts nothing.
 *
 *   bench-counters [-t THREADS] [-c CANDIDATES] [-r ROUNDS]
 *
 * THREADS idle threads (processes of 100 that block in pause()) are on the
 * machine; the first CANDIDATES of them get a counter. */

#include <dirent.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "idle-threads.h"

#include "base/root.h"
#include "base/util.h"
#include "decide/classify.h"
#include "observe/counters.h"
#include "observe/tasks.h"

#define THREADS_PER_CHILD 100



/* The children's thread ids, sorted, at most max. */
static size_t child_tids(const pid_t *children, unsigned n_children, pid_t *ret, size_t max) {
        size_t n = 0;

        for (unsigned i = 0; i < n_children && n < max; i++) {
                char path[64];
                DIR *d;
                struct dirent *de;

                snprintf(path, sizeof(path), "/proc/%d/task", (int) children[i]);
                if (!(d = opendir(path)))
                        continue;
                while ((de = readdir(d)) && n < max)
                        if (de->d_name[0] != '.')
                                ret[n++] = (pid_t) atoi(de->d_name);
                closedir(d);
        }
        qsort(ret, n, sizeof(pid_t), compare_pid);
        return n;
}

/* Scan and classify, rounds times; with a set, its counts go into the
 * snapshot first, as the pipeline does. Mean CPU of the classification
 * (with the reads). */
static double classify_rounds(Root *root, CounterSet *set, unsigned rounds, double *ret_read) {
        _cleanup_(task_scanner_freep) TaskScanner *sc = NULL;
        _cleanup_(classifier_freep) Classifier *cl = NULL;
        double cls = 0, rd = 0;

        if (task_scanner_new(root, NULL, &sc) < 0 || classifier_new(NULL, &cl) < 0)
                return -1;
        for (unsigned r = 0; r <= rounds; r++) {
                _cleanup_(task_snapshot_freep) TaskSnapshot *s = NULL;
                double c0, c1;

                if (task_scanner_scan(sc, false, &s) < 0)
                        return -1;
                c0 = cpu_seconds();
                for (size_t i = 0; set && i < s->n_tasks; i++) {
                        uint64_t v;

                        s->tasks[i].has_avx512_ops = counter_set_read(set, s->tasks[i].tid, &v) >= 0;
                        s->tasks[i].avx512_ops = s->tasks[i].has_avx512_ops ? v : 0;
                }
                c1 = cpu_seconds();
                if (classifier_update(cl, s) < 0)
                        return -1;
                if (r > 0) {
                        rd += c1 - c0;
                        cls += cpu_seconds() - c0;
                }
        }
        *ret_read = rd / rounds;
        return cls / rounds;
}

int main(int argc, char *argv[]) {
        unsigned threads = 1000, candidates = 1000, rounds = 10, n_children;
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(counter_set_freep) CounterSet *set = NULL;
        CounterProbe probe = {};
        CounterAttr attr = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_TASK_CLOCK };
        const char *event = "software task-clock (no AVX-512 event here)";
        pid_t *children, *tids;
        size_t n;
        double c0, open_cpu, read_cpu = 0, base, base_read, with, with_read;
        int pipefd[2], c, k;

        while ((c = getopt(argc, argv, "t:c:r:")) >= 0)
                switch (c) {
                case 't':
                        threads = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'c':
                        candidates = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'r':
                        rounds = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                default:
                        fprintf(stderr, "usage: bench-counters [-t THREADS] [-c CANDIDATES] [-r ROUNDS]\n");
                        return 2;
                }
        rounds = MAX(rounds, 1u);
        candidates = MIN(MIN(candidates, threads), COUNTERS_MAX);
        if (!getenv("BENCH_DEFAULT_MALLOC"))
                mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        {
                struct rlimit rl;

                if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                        rl.rlim_cur = rl.rlim_max;
                        (void) setrlimit(RLIMIT_NOFILE, &rl);
                }
        }
        if (counters_probe(NULL, &probe) < 0)
                return 1;
        printf("bench-counters: probe: %s: %s\n", counter_state_to_string(probe.state), probe.reason);
        if (probe.state == COUNTER_AVAILABLE) {
                attr = probe.attr;
                event = probe.event;
        }
        printf("bench-counters: counting with %s\n", event);

        n_children = (threads + THREADS_PER_CHILD - 1) / THREADS_PER_CHILD;
        children = calloc(n_children + 1, sizeof(pid_t));
        tids = calloc(threads + 1, sizeof(pid_t));
        if (!children || !tids || pipe(pipefd) < 0)
                return 1;
        for (unsigned i = 0; i < n_children; i++)
                children[i] = spawn_idle(MIN(THREADS_PER_CHILD, threads - i * THREADS_PER_CHILD), pipefd[1]);
        for (unsigned i = 0; i < n_children; i++) {
                char x;

                if (read(pipefd[0], &x, 1) != 1)
                        return 1;
        }
        if ((k = root_open("/", &root)) < 0)
                return 1;
        n = child_tids(children, n_children, tids, candidates);

        base = classify_rounds(root, NULL, rounds, &base_read);

        if (counter_set_new(NULL, &attr, &set) < 0)
                return 1;
        c0 = cpu_seconds();
        k = counter_set_sync(set, tids, n);
        open_cpu = cpu_seconds() - c0;
        printf("bench-counters: open %d of %zu candidates: %.2f ms CPU, %.2f us each\n", k, n, open_cpu * 1e3,
               n ? open_cpu / (double) n * 1e6 : 0.0);
        for (unsigned r = 0; r < rounds; r++) {
                c0 = cpu_seconds();
                for (size_t i = 0; i < n; i++) {
                        uint64_t v;

                        (void) counter_set_read(set, tids[i], &v);
                }
                read_cpu += cpu_seconds() - c0;
        }
        printf("bench-counters: read %zu counters per sample: %.2f ms CPU, %.2f us each\n", n, read_cpu / rounds * 1e3,
               n ? read_cpu / rounds / (double) n * 1e6 : 0.0);
        with = classify_rounds(root, set, rounds, &with_read);
        printf("bench-counters: classification per scan (%u threads on the machine besides): without counters %.2f ms, "
               "with %zu counters %.2f ms (their reads %.2f ms)\n",
               threads, base * 1e3, n, with * 1e3, with_read * 1e3);
        printf("bench-counters: RSS %ld KiB, peak %ld KiB\n", status_kib("VmRSS:"), status_kib("VmHWM:"));

        set = counter_set_free(set);
        counter_probe_done(&probe);
        for (unsigned i = 0; i < n_children; i++)
                kill(children[i], SIGKILL);
        for (unsigned i = 0; i < n_children; i++)
                waitpid(children[i], NULL, 0);
        free(children);
        free(tids);
        return 0;
}
