/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The running daemon's costs. Prints figures; asserts nothing.
 *
 *   bench-daemon --topod PATH [--threads N] [--policies P] [--calls C]
 *                [--idle SECONDS] [--topoctl PATH] [--managed M]
 *
 * Starts N idle threads (in children of 100 threads each), writes P policy
 * files that match nothing on a real machine (so nothing is changed: safe
 * anywhere), starts topod on them (own state directory, seccomp as shipped)
 * and measures:
 *   - the Explain round trip over the socket: one connection, C calls, for a
 *     one-thread process and for a 100-thread one; and `topoctl explain` as
 *     a whole command (fork, exec, connect, call, print), C/10 times;
 *   - Reload with P policies and N threads: C/10 calls, each one waiting
 *     for the answer (parse and check every file, swap, one reconcile pass);
 *     with --managed M, M more processes (comm "bench-managed") that one
 *     more policy places into a group of its own, so that every pass checks
 *     M processes in place (--policies 1 --managed M: what that check
 *     costs a pass);
 *   - the daemon's steady CPU over SECONDS with everything idle (the sum of
 *     its threads' schedstat run time), and its memory.
 * Root is needed (topod is started as it would be). Only the bench's own
 * children are moved (--managed), and topod puts them back when stopped. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "idle-threads.h"
#include <dirent.h>
#include <systemd/sd-bus.h>

#define THREADS_PER_CHILD 100


static double now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static void print_stats(const char *what, double *v, unsigned n, const char *goal) {
        if (n == 0)
                return;
        qsort(v, n, sizeof(double), cmp_double);
        printf("%-44s p50 %7.3f ms  p90 %7.3f ms  max %7.3f ms  (n=%u)%s%s\n", what, v[n / 2], v[(n * 9) / 10],
               v[n - 1], n, goal ? "  goal " : "", goal ?: "");
}

/* The daemon's CPU so far: the sum of its threads' run time (ns). */
static unsigned long long daemon_cpu_ns(pid_t pid) {
        char path[64];
        unsigned long long sum = 0;
        DIR *d;
        struct dirent *de;

        snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                char p[300];
                unsigned long long ns;
                FILE *f;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", (int) pid, de->d_name);
                f = fopen(p, "re");
                if (f && fscanf(f, "%llu", &ns) == 1)
                        sum += ns;
                if (f)
                        fclose(f);
        }
        closedir(d);
        return sum;
}

static void print_memory(pid_t pid) {
        char path[64], line[256];
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f))
                if (!strncmp(line, "VmRSS:", 6) || !strncmp(line, "VmHWM:", 6))
                        printf("daemon %s", line);
        fclose(f);
}

static int write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        if (!f)
                return -errno;
        fputs(text, f);
        return fclose(f) == 0 ? 0 : -errno;
}

static int call(sd_bus *bus, const char *method, const char *sig, unsigned pid) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        int k;

        if (sig[0] == 'u')
                k = sd_bus_call_method(bus, NULL, "/io/topod/Manager1", "io.topod.Manager1", method, &error, &reply, "ub",
                                       pid, 1);
        else
                k = sd_bus_call_method(bus, NULL, "/io/topod/Manager1", "io.topod.Manager1", method, &error, &reply, "b",
                                       0);
        if (k < 0)
                fprintf(stderr, "bench-daemon: %s: %s\n", method, error.message ?: strerror(-k));
        sd_bus_error_free(&error);
        sd_bus_message_unref(reply);
        return k;
}

static int connect_bus(const char *socket_path, sd_bus **ret) {
        char address[512];
        sd_bus *bus = NULL;
        int k;

        snprintf(address, sizeof(address), "unix:path=%s", socket_path);
        if ((k = sd_bus_new(&bus)) < 0 || (k = sd_bus_set_address(bus, address)) < 0 || (k = sd_bus_start(bus)) < 0) {
                sd_bus_unref(bus);
                return k;
        }
        *ret = bus;
        return 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "topod", required_argument, NULL, 'd' },   { "topoctl", required_argument, NULL, 'c' },
                { "threads", required_argument, NULL, 't' }, { "policies", required_argument, NULL, 'p' },
                { "calls", required_argument, NULL, 'n' },   { "idle", required_argument, NULL, 's' },
                { "managed", required_argument, NULL, 'm' },
                {},
        };
        const char *topod = NULL, *topoctl = NULL;
        unsigned n_threads = 10000, n_policies = 1000, calls = 200, idle = 20, n_managed = 0;
        pid_t *managed = NULL;
        char dir[] = "/tmp/bench-daemon.XXXXXX", path[600], text[1024], socket_path[600];
        pid_t *children, daemon_pid, small_pid, mid_pid;
        unsigned n_children;
        int pipefd[2], c;
        sd_bus *bus = NULL;
        double *v;

        while ((c = getopt_long(argc, argv, "d:c:t:p:n:s:m:", options, NULL)) >= 0)
                switch (c) {
                case 'd': topod = optarg; break;
                case 'c': topoctl = optarg; break;
                case 't': n_threads = (unsigned) strtoul(optarg, NULL, 10); break;
                case 'p': n_policies = (unsigned) strtoul(optarg, NULL, 10); break;
                case 'n': calls = (unsigned) strtoul(optarg, NULL, 10); break;
                case 's': idle = (unsigned) strtoul(optarg, NULL, 10); break;
                case 'm': n_managed = (unsigned) strtoul(optarg, NULL, 10); break;
                default:
                        fprintf(stderr, "usage: bench-daemon --topod PATH [--topoctl PATH] [--threads N] [--policies P] "
                                        "[--calls C] [--idle SECONDS] [--managed M]\n");
                        return 2;
                }
        if (!topod || calls < 10 || n_policies < 1) {
                fprintf(stderr, "bench-daemon: --topod is needed (and --calls at least 10)\n");
                return 2;
        }
        if (geteuid() != 0) {
                fprintf(stderr, "bench-daemon: run as root (topod is)\n");
                return 77;
        }
        if (!mkdtemp(dir))
                return 1;

        /* P policies that match nothing real: comm patterns no task has. */
        snprintf(path, sizeof(path), "%s/policies.d", dir);
        mkdir(path, 0755);
        for (unsigned i = 0; i < n_policies; i++) {
                snprintf(path, sizeof(path), "%s/policies.d/p%04u.ini", dir, i);
                snprintf(text, sizeof(text),
                         "[policy]\nname = bench-%04u\npriority = %u\n\n[match]\ncomm = no-such-task-%04u-*\n"
                         "class = throughput\n\n[place]\ngroup = g%04u\ncookie = none\ncpus = llc\nweight = %u\n",
                         i, i % 1000, i, i, 100 + i % 900);
                if (write_file(path, text) < 0)
                        return 1;
        }
        if (n_managed > 0) {
                snprintf(path, sizeof(path), "%s/policies.d/managed.ini", dir);
                if (write_file(path, "[policy]\nname = bench-managed\npriority = 1\n\n[match]\ncomm = bench-managed\n\n"
                                     "[place]\ngroup = managed\ncookie = none\ncpus = all\n") < 0)
                        return 1;
        }
        snprintf(path, sizeof(path), "%s/topod.conf", dir);
        snprintf(text, sizeof(text),
                 "[daemon]\npolicies_dir = %s/policies.d\n\n[cgroup]\ncgroup_root = /topod-bench.slice\nhierarchy = flat\n",
                 dir);
        if (write_file(path, text) < 0)
                return 1;

        /* The idle threads. */
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return 1;
        n_children = (n_threads + THREADS_PER_CHILD - 1) / THREADS_PER_CHILD;
        children = calloc(n_children, sizeof(pid_t));
        for (unsigned i = 0; i < n_children; i++)
                children[i] = spawn_idle(THREADS_PER_CHILD, pipefd[1]);
        for (unsigned i = 0; i < n_children; i++) {
                char x;
                (void) !read(pipefd[0], &x, 1);
        }
        small_pid = getpid();
        mid_pid = children[0];
        printf("%u idle threads in %u processes, %u policies\n", n_children * THREADS_PER_CHILD, n_children, n_policies);

        /* topod, as the unit starts it (plus its own state directory). */
        snprintf(path, sizeof(path), "%s/topod.conf", dir);
        snprintf(text, sizeof(text), "%s/state", dir);
        snprintf(socket_path, sizeof(socket_path), "%s/state/bus", dir);
        daemon_pid = fork();
        if (daemon_pid == 0) {
                char log[600];
                int fd;

                snprintf(log, sizeof(log), "%s/topod.log", dir);
                fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd >= 0)
                        dup2(fd, STDERR_FILENO);
                execl(topod, topod, "--config", path, "--state-dir", text, (char *) NULL);
                _exit(127);
        }
        {
                double start = now_ms();

                while (now_ms() - start < 120000) {
                        if (access(socket_path, F_OK) == 0 && connect_bus(socket_path, &bus) >= 0 &&
                            call(bus, "Status", "b", 0) >= 0)
                                break;
                        bus = sd_bus_flush_close_unref(bus);
                        usleep(50000);
                }
                if (!bus) {
                        char cmd[700];

                        fprintf(stderr, "bench-daemon: topod did not answer; its log:\n");
                        snprintf(cmd, sizeof(cmd), "cat %s/topod.log >&2", dir);
                        (void) !system(cmd);
                        goto out;
                }
                printf("topod up and answering after %.0f ms (first scan of every thread included)\n", now_ms() - start);
        }
        sleep(2); /* a few passes: the classifier's rings and the scanner's held fds settle */

        /* The processes topod is to place, and the wait until it has. */
        managed = calloc(n_managed + 1, sizeof(pid_t));
        if (!managed)
                goto out;
        for (unsigned i = 0; i < n_managed; i++) {
                managed[i] = fork();
                if (managed[i] == 0) {
                        (void) prctl(PR_SET_NAME, "bench-managed");
                        pause();
                        _exit(0);
                }
                if (managed[i] < 0) {
                        fprintf(stderr, "bench-daemon: fork: %s; %u managed processes instead of %u\n",
                                strerror(errno), i, n_managed);
                        n_managed = i;
                        break;
                }
        }
        if (n_managed > 0) {
                double start = now_ms();
                unsigned placed = 0;

                while (now_ms() - start < 60000) {
                        placed = 0;
                        for (unsigned i = 0; i < n_managed; i++) {
                                char cg[600], line[600];
                                FILE *f;

                                /* The cgroup2 line ("0::", the last on a hybrid host). */
                                snprintf(cg, sizeof(cg), "/proc/%d/cgroup", (int) managed[i]);
                                f = fopen(cg, "re");
                                while (f && fgets(line, sizeof(line), f))
                                        if (!strncmp(line, "0::", 3) && strstr(line, "/managed"))
                                                placed++;
                                if (f)
                                        fclose(f);
                        }
                        if (placed == n_managed)
                                break;
                        usleep(100000);
                }
                printf("%u of %u managed processes placed after %.0f ms\n", placed, n_managed, now_ms() - start);
        }

        v = calloc(calls, sizeof(double));
        for (unsigned i = 0; i < calls; i++) {
                double t = now_ms();
                call(bus, "Explain", "ub", (unsigned) small_pid);
                v[i] = now_ms() - t;
        }
        print_stats("Explain, 1-thread process, open connection:", v, calls, "< 5 ms");
        for (unsigned i = 0; i < calls; i++) {
                double t = now_ms();
                call(bus, "Explain", "ub", (unsigned) mid_pid);
                v[i] = now_ms() - t;
        }
        print_stats("Explain, 100-thread process, open connection:", v, calls, "< 5 ms");
        for (unsigned i = 0; i < calls / 10; i++) {
                sd_bus *b = NULL;
                double t = now_ms();

                if (connect_bus(socket_path, &b) >= 0)
                        call(b, "Explain", "ub", (unsigned) small_pid);
                sd_bus_flush_close_unref(b);
                v[i] = now_ms() - t;
        }
        print_stats("Explain, new connection each time:", v, calls / 10, "< 5 ms");
        if (topoctl) {
                for (unsigned i = 0; i < calls / 10; i++) {
                        char cmd[1200];
                        double t = now_ms();

                        snprintf(cmd, sizeof(cmd), "%s --state-dir %s/state explain %d --json >/dev/null", topoctl, dir,
                                 (int) small_pid);
                        if (system(cmd) != 0)
                                fprintf(stderr, "bench-daemon: topoctl explain failed\n");
                        v[i] = now_ms() - t;
                }
                print_stats("topoctl explain (whole command):", v, calls / 10, "< 5 ms");
        }
        for (unsigned i = 0; i < calls / 10; i++) {
                double t = now_ms();
                call(bus, "Reload", "b", 0);
                v[i] = now_ms() - t;
        }
        snprintf(text, sizeof(text), "Reload, %u policies, %u threads, %u placed:", n_policies + (n_managed > 0),
                 n_children * THREADS_PER_CHILD, n_managed);
        print_stats(text, v, calls / 10, "< 100 ms");
        free(v);

        {
                unsigned long long a = daemon_cpu_ns(daemon_pid), b;
                double t = now_ms(), dt;

                sleep(idle);
                b = daemon_cpu_ns(daemon_pid);
                dt = now_ms() - t;
                printf("steady daemon CPU over %.0f s, everything idle: %.3f%% of a core (%.2f ms CPU per second)  goal < 0.1%%\n",
                       dt / 1e3, (double) (b - a) / 1e4 / dt, (double) (b - a) / 1e3 / dt);
        }
        print_memory(daemon_pid);
out:
        sd_bus_flush_close_unref(bus);
        kill(daemon_pid, SIGTERM);
        waitpid(daemon_pid, NULL, 0);
        for (unsigned i = 0; i < n_children; i++)
                kill(children[i], SIGKILL);
        for (unsigned i = 0; i < n_children; i++)
                waitpid(children[i], NULL, 0);
        for (unsigned i = 0; managed && i < n_managed; i++)
                if (managed[i] > 0) {
                        kill(managed[i], SIGKILL);
                        waitpid(managed[i], NULL, 0);
                }
        free(managed);
        snprintf(text, sizeof(text), "rm -rf %s", dir);
        (void) !system(text);
        return 0;
}
