/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cost of one full /proc scan (tasks_scan) with N extra idle threads on the
 * machine, and the scanner's memory. Prints figures; asserts nothing.
 *
 *   bench-scan [-t THREADS] [-r ROUNDS]
 *
 * The idle threads live in child processes (100 threads each) that block in
 * pause(); they are killed at the end. */

#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
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
#include "decide/classify.h"
#include "observe/tasks.h"

#define THREADS_PER_CHILD 100





int main(int argc, char *argv[]) {
        unsigned threads = 1000, rounds = 10, n_children;
        pid_t *children;
        int pipefd[2], c, k;
        _cleanup_(root_freep) Root *root = NULL;
        double cpu_min = 1e9, cpu_sum = 0, wall_sum = 0;
        size_t seen = 0;

        while ((c = getopt(argc, argv, "t:r:")) >= 0)
                switch (c) {
                case 't':
                        threads = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'r':
                        rounds = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                default:
                        fprintf(stderr, "usage: bench-scan [-t THREADS] [-r ROUNDS]\n");
                        return 2;
                }
        if (rounds == 0)
                rounds = 1;
        /* As topod does: big arrays stay mmap()ed and go back to the kernel
         * when freed, instead of glibc raising its threshold and keeping
         * them on the heap. */
        if (!getenv("BENCH_DEFAULT_MALLOC"))
                mallopt(M_MMAP_THRESHOLD, 128 * 1024);

        n_children = (threads + THREADS_PER_CHILD - 1) / THREADS_PER_CHILD;
        children = calloc(n_children + 1, sizeof(pid_t));
        if (!children || pipe(pipefd) < 0)
                return 1;
        for (unsigned i = 0; i < n_children; i++) {
                unsigned n = MIN(THREADS_PER_CHILD, threads - i * THREADS_PER_CHILD);
                children[i] = spawn_idle(n, pipefd[1]);
        }
        for (unsigned i = 0; i < n_children; i++) {
                char x;
                if (read(pipefd[0], &x, 1) != 1)
                        return 1;
        }

        k = root_open("/", &root);
        if (k < 0)
                return 1;
        {
                /* Held schedstat fds need one descriptor per thread. */
                struct rlimit rl;
                if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                        rl.rlim_cur = rl.rlim_max;
                        (void) setrlimit(RLIMIT_NOFILE, &rl);
                }
        }
        for (unsigned r = 0; r < rounds; r++) {
                _cleanup_(task_snapshot_freep) TaskSnapshot *s = NULL;
                double c0 = cpu_seconds(), w0 = wall_seconds(), dc;

                k = tasks_scan(root, NULL, &s);
                dc = cpu_seconds() - c0;
                wall_sum += wall_seconds() - w0;
                if (k < 0) {
                        fprintf(stderr, "scan failed: %s\n", strerror(-k));
                        break;
                }
                cpu_sum += dc;
                cpu_min = MIN(cpu_min, dc);
                seen = s->n_tasks;
        }

        printf("bench-scan: after one-shot scans: RSS %ld KiB, peak %ld KiB\n", status_kib("VmRSS:"), status_kib("VmHWM:"));
        {
                /* Reset the peak (VmHWM) so the scanner's own is measured. */
                FILE *f = fopen("/proc/self/clear_refs", "we");
                if (f) {
                        fputs("5", f);
                        fclose(f);
                }
        }
        {
                _cleanup_(task_scanner_freep) TaskScanner *sc = NULL;
                _cleanup_(classifier_freep) Classifier *cl = NULL;
                TaskScanStats st;
                double inc_sum = 0, inc_min = 1e9, cls_sum = 0;

                k = task_scanner_new(root, NULL, &sc);
                if (k < 0 || classifier_new(NULL, &cl) < 0)
                        return 1;
                for (unsigned r = 0; r <= rounds; r++) {
                        _cleanup_(task_snapshot_freep) TaskSnapshot *s = NULL;
                        double c0 = cpu_seconds(), dc;

                        k = task_scanner_scan(sc, false, &s);
                        dc = cpu_seconds() - c0;
                        if (k < 0) {
                                fprintf(stderr, "scan failed: %s\n", strerror(-k));
                                return 1;
                        }
                        c0 = cpu_seconds();
                        if (classifier_update(cl, s) < 0)
                                return 1;
                        if (r > 0)
                                cls_sum += cpu_seconds() - c0;
                        if (r == 0) {
                                printf("bench-scan: scanner first (cold) scan CPU %.2f ms\n", dc * 1e3);
                                continue;
                        }
                        inc_sum += dc;
                        inc_min = MIN(inc_min, dc);
                }
                task_scanner_stats(sc, &st);
                printf("bench-scan: scanner steady scan CPU mean %.2f ms, min %.2f ms (reread %u, reused %u, held fds %u%s)\n",
                       inc_sum / rounds * 1e3, inc_min * 1e3, st.threads_reread, st.threads_reused, st.held_fds,
                       st.fd_limit_hit ? ", fd limit hit" : "");
                printf("bench-scan: classifier update CPU mean %.2f ms\n", cls_sum / rounds * 1e3);
                /* The same, trusting the proc connector: no listing of /proc
                 * (the idle threads send no events). */
                task_scanner_trust_events(sc, true);
                inc_sum = 0;
                for (unsigned r = 0; r < rounds; r++) {
                        _cleanup_(task_snapshot_freep) TaskSnapshot *s = NULL;
                        double c0 = cpu_seconds();

                        if (task_scanner_scan(sc, false, &s) < 0)
                                return 1;
                        inc_sum += cpu_seconds() - c0;
                }
                task_scanner_stats(sc, &st);
                printf("bench-scan: scanner steady scan trusting events CPU mean %.2f ms (reused %u, listing skipped: %s)\n",
                       inc_sum / rounds * 1e3, st.threads_reused, st.by_events ? "yes" : "no");
                printf("bench-scan: scanner + classifier RSS %ld KiB, peak %ld KiB (TaskFacts %zu B, ThreadClass %zu B)\n",
                       status_kib("VmRSS:"), status_kib("VmHWM:"), sizeof(TaskFacts), sizeof(ThreadClass));
        }
        printf("bench-scan: extra idle threads %u, threads seen %zu, rounds %u\n", threads, seen, rounds);
        printf("bench-scan: full scan CPU mean %.2f ms, min %.2f ms; wall mean %.2f ms; %.2f us CPU per thread\n",
               cpu_sum / rounds * 1e3, cpu_min * 1e3, wall_sum / rounds * 1e3,
               seen ? cpu_sum / rounds / (double) seen * 1e6 : 0.0);

        for (unsigned i = 0; i < n_children; i++)
                kill(children[i], SIGKILL);
        for (unsigned i = 0; i < n_children; i++)
                waitpid(children[i], NULL, 0);
        free(children);
        return 0;
}
