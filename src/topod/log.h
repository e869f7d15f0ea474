/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The daemon's log: to the journal (sd-journal, with the priority as a
 * field) when systemd connected our stderr to it (JOURNAL_STREAM names
 * stderr's device and inode), to stderr as "topod: message" otherwise.
 * Messages above the level (syslog priorities: err 3 … debug 7; topod.conf
 * log_level, or --log-level which wins) are dropped. Library code does not
 * log: the daemon logs what it is told, once. */

#include <stdbool.h>
#include <stddef.h>
#include <syslog.h>

#include "base/macro.h"

typedef struct Log {
        int level;     /* the highest priority value printed */
        bool fixed;    /* --log-level: the configuration does not change it */
        bool journal;
} Log;

/* level < 0: info until the configuration says otherwise. */
void log_open(Log *l, int level);
/* The configuration's level, unless --log-level fixed one. */
void log_set_config_level(Log *l, int level);
void log_at(const Log *l, int priority, const char *fmt, ...) _printf_(3, 4);
/* One entry with structured fields ("NAME=value" each, MESSAGE= among
 * them): to the journal with them, to stderr as "topod: message" alone. */
void log_fields(const Log *l, int priority, char *const *fields, size_t n, const char *message);
/* Would a message at priority be printed? */
static inline bool log_wants(const Log *l, int priority) {
        return priority <= l->level;
}

/* "err", "warning", "notice", "info", "debug" → priority; -EINVAL. */
int log_level_from_string(const char *s);
