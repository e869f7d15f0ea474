/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Drive inih over text in memory, with the line numbers right.
 *
 * inih (as Debian builds it) passes no line number to its handler and splits
 * lines longer than its buffer into several. So the text goes through
 * ini_parse_stream() with our own line reader, which hands inih exactly one
 * physical line per call and knows which line that is. The reader also
 * reports, as diagnostics, what inih would reject without saying why: a line
 * without '=', an unclosed '[', an overlong line, a NUL byte. Continuation
 * lines (inih's multi-line values) are turned off by removing leading
 * whitespace, so an indented line is an ordinary line. */

#include <stddef.h>

#include "diag.h"

/* One file's text in memory; text need not be NUL-terminated. */
typedef struct IniSource {
        const char *file;
        const char *text;
        size_t len;
} IniSource;

typedef struct IniTextCallbacks {
        /* A "[name]" line; name is stripped of surrounding blanks. */
        int (*section)(void *userdata, const char *name, unsigned line);
        /* A "key = value" line inside the current section ("" before any). */
        int (*key)(void *userdata, const char *section, const char *key, const char *value, unsigned line);
} IniTextCallbacks;

/* Returns 0 when the text was walked (diagnostics may have been added), or
 * a negative errno (-ENOMEM, or the first negative value a callback
 * returned). Callbacks return 0 or a negative errno. */
int initext_parse(const char *text, size_t len, const char *file, Diagnostics *d, const IniTextCallbacks *cb,
                  void *userdata);
