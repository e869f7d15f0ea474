/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Diagnostics: what the parsers and the checker found, as data.
 *
 * Library code never prints. Each finding is {file, line, severity, id,
 * message}; the caller prints them compiler style ("file:line: error: …")
 * or as JSON. The id is a stable short word per class of finding
 * ("unknown-key", "bad-value", "shadowed", …) for tests and machines. */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/macro.h"

/* Bad input can produce a finding per line; past this many the list ends
 * with one "too-many" error instead of growing without bound. */
#define DIAG_MAX 1000u

typedef enum DiagSeverity {
        DIAG_WARNING,
        DIAG_ERROR,
} DiagSeverity;

typedef struct Diagnostic {
        char *file;       /* as given to the parser; never NULL */
        unsigned line;    /* 1-based; 0 when about the whole file */
        DiagSeverity severity;
        const char *id;   /* static string */
        char *message;    /* one line, no trailing period */
        size_t seq;       /* insertion order, for a stable sort */
} Diagnostic;

typedef struct Diagnostics {
        Diagnostic *items;
        size_t n;
        size_t n_errors;
        size_t n_warnings;
        bool truncated;
} Diagnostics;

Diagnostics *diag_new(void);
Diagnostics *diag_free(Diagnostics *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Diagnostics *, diag_free);

/* Append one finding. Returns 0, or -ENOMEM. When DIAG_MAX is reached the
 * finding is dropped (and counted) and 0 is returned: running out of room
 * for messages is not a reason to stop parsing. */
_printf_(6, 7) int diag_add(Diagnostics *d, DiagSeverity sev, const char *file, unsigned line, const char *id,
                            const char *fmt, ...);
_printf_(6, 0) int diag_addv(Diagnostics *d, DiagSeverity sev, const char *file, unsigned line, const char *id,
                             const char *fmt, va_list ap);

/* Sort by file, then line, keeping insertion order among equals. */
void diag_sort(Diagnostics *d);

/* Does some finding carry this id (and severity, or any when sev < 0)? For tests. */
bool diag_has(const Diagnostics *d, int sev, const char *id);
size_t diag_count_id(const Diagnostics *d, const char *id);
bool diag_has_line(const Diagnostics *d, const char *file, unsigned line);

const char *diag_severity_to_string(DiagSeverity s);

/* The candidate closest to word by edit distance (case-insensitive), when
 * close enough to be a plausible typo; NULL otherwise. candidates ends with
 * NULL. */
const char *diag_closest(const char *word, const char *const *candidates);

/* Levenshtein distance, case-insensitive, capped at cap+1 (inputs longer
 * than 64 characters give cap+1). */
unsigned diag_edit_distance(const char *a, const char *b, unsigned cap);
