/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sdsnap: what the systemd tier's guest scripts record of every process,
 * in one process (a shell loop forking a reader per file takes most of a
 * minute under TCG for the ~100 processes of a Debian guest):
 *
 *   sdsnap procs           "PID CGROUP COMM" of every process (not kernel
 *                          threads), CGROUP the cgroup2 path of its main thread
 *   sdsnap cookies [PID…]  "TID PID COOKIE" of every thread of those
 *                          processes (default: all but kernel threads),
 *                          COOKIE read back with PR_SCHED_CORE_GET
 *
 * Kernel threads are those with PF_KTHREAD in /proc/PID/stat's flags.
 * A process that ends while it is read is left out. */

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define PF_KTHREAD 0x00200000UL

static int read_line(const char *path, char *buf, size_t len) {
        FILE *f = fopen(path, "re");

        if (!f)
                return -1;
        if (!fgets(buf, (int) len, f)) {
                fclose(f);
                return -1;
        }
        fclose(f);
        buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

static int is_kthread(const char *pid) {
        char path[64], buf[1024], *p;
        unsigned long flags = 0;
        int i;

        snprintf(path, sizeof(path), "/proc/%s/stat", pid);
        if (read_line(path, buf, sizeof(buf)) < 0)
                return -1;
        p = strrchr(buf, ')');
        if (!p)
                return -1;
        /* after ") ": state ppid pgrp session tty_nr tpgid flags */
        for (i = 0, p += 2; i < 6 && p; i++) {
                p = strchr(p, ' ');
                if (p)
                        p++;
        }
        if (!p)
                return -1;
        flags = strtoul(p, NULL, 10);
        return (flags & PF_KTHREAD) != 0;
}

static int cgroup_of(const char *pid, char *buf, size_t len) {
        char path[64], line[4096];
        FILE *f;
        int r = -1;

        snprintf(path, sizeof(path), "/proc/%s/cgroup", pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, "0::", 3) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        snprintf(buf, len, "%s", line + 3);
                        r = 0;
                        break;
                }
        }
        fclose(f);
        return r;
}

static int numeric(const char *s) {
        if (!*s)
                return 0;
        for (; *s; s++)
                if (!isdigit((unsigned char) *s))
                        return 0;
        return 1;
}

static void one_proc(const char *pid) {
        char path[64], cg[4096], comm[64];

        if (is_kthread(pid) != 0 || cgroup_of(pid, cg, sizeof(cg)) < 0 || !cg[0])
                return;
        snprintf(path, sizeof(path), "/proc/%s/comm", pid);
        if (read_line(path, comm, sizeof(comm)) < 0)
                return;
        printf("%s %s %s\n", pid, cg, comm);
}

static void one_cookies(const char *pid) {
        char path[64];
        struct dirent *e;
        DIR *d;

        if (is_kthread(pid) != 0)
                return;
        snprintf(path, sizeof(path), "/proc/%s/task", pid);
        d = opendir(path);
        if (!d)
                return;
        while ((e = readdir(d))) {
                unsigned long long c = 0;

                if (!numeric(e->d_name))
                        continue;
                if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, strtoul(e->d_name, NULL, 10),
                          PR_SCHED_CORE_SCOPE_THREAD, (unsigned long) &c) < 0)
                        continue;
                printf("%s %s %llu\n", e->d_name, pid, c);
        }
        closedir(d);
}

int main(int argc, char *argv[]) {
        void (*each)(const char *);
        struct dirent *e;
        DIR *d;

        if (argc >= 2 && strcmp(argv[1], "procs") == 0)
                each = one_proc;
        else if (argc >= 2 && strcmp(argv[1], "cookies") == 0)
                each = one_cookies;
        else {
                fprintf(stderr, "usage: sdsnap procs | cookies [PID...]\n");
                return 2;
        }
        if (argc > 2) {
                for (int i = 2; i < argc; i++)
                        if (numeric(argv[i]))
                                each(argv[i]);
                return 0;
        }
        d = opendir("/proc");
        if (!d) {
                perror("/proc");
                return 1;
        }
        while ((e = readdir(d)))
                if (numeric(e->d_name))
                        each(e->d_name);
        closedir(d);
        return 0;
}
