/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

/* Is stderr the journal stream systemd gave us? */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void log_open(Log *l, int level) {
        *l = (Log) { .level = level >= 0 ? level : LOG_INFO, .fixed = level >= 0, .journal = stderr_is_journal() };
}

void log_set_config_level(Log *l, int level) {
        if (!l->fixed && level >= LOG_EMERG && level <= LOG_DEBUG)
                l->level = level;
}

void log_at(const Log *l, int priority, const char *fmt, ...) {
        va_list ap;

        if (priority > l->level)
                return;
        va_start(ap, fmt);
        if (l->journal)
                (void) sd_journal_printv(priority, fmt, ap);
        else {
                /* one write per line, so lines of threads do not mix */
                char buf[2048];
                int n = vsnprintf(buf, sizeof(buf), fmt, ap);

                if (n >= 0)
                        fprintf(stderr, "topod: %s\n", buf);
        }
        va_end(ap);
}

void log_fields(const Log *l, int priority, char *const *fields, size_t n, const char *message) {
        struct iovec iov[24];
        char prio[16];
        size_t m = 0;

        if (priority > l->level)
                return;
        if (!l->journal) {
                fprintf(stderr, "topod: %s\n", message);
                return;
        }
        snprintf(prio, sizeof(prio), "PRIORITY=%d", priority);
        iov[m++] = (struct iovec) { .iov_base = prio, .iov_len = strlen(prio) };
        for (size_t i = 0; i < n && m < ELEMENTSOF(iov); i++)
                iov[m++] = (struct iovec) { .iov_base = fields[i], .iov_len = strlen(fields[i]) };
        (void) sd_journal_sendv(iov, (int) m);
}

int log_level_from_string(const char *s) {
        static const char *const names[] = { "err", "warning", "notice", "info", "debug" };

        for (int i = 0; i < 5; i++)
                if (strcmp(s, names[i]) == 0)
                        return LOG_ERR + i;
        return -EINVAL;
}
