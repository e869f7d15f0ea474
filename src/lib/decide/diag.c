/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "diag.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

Diagnostics *diag_new(void) {
        return calloc(1, sizeof(Diagnostics));
}

Diagnostics *diag_free(Diagnostics *d) {
        if (!d)
                return NULL;
        for (size_t i = 0; i < d->n; i++) {
                free(d->items[i].file);
                free(d->items[i].message);
        }
        free(d->items);
        free(d);
        return NULL;
}

int diag_add(Diagnostics *d, DiagSeverity sev, const char *file, unsigned line, const char *id, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = diag_addv(d, sev, file, line, id, fmt, ap);
        va_end(ap);
        return k;
}

int diag_addv(Diagnostics *d, DiagSeverity sev, const char *file, unsigned line, const char *id, const char *fmt,
              va_list ap) {
        Diagnostic *n, *x;
        char *msg = NULL;
        int k;

        if (sev == DIAG_ERROR)
                d->n_errors++;
        else
                d->n_warnings++;

        if (d->n >= DIAG_MAX) {
                d->truncated = true;
                return 0;
        }

        k = vasprintf(&msg, fmt, ap);
        if (k < 0)
                return -ENOMEM;

        n = realloc(d->items, (d->n + 1) * sizeof(Diagnostic));
        if (!n) {
                free(msg);
                return -ENOMEM;
        }
        d->items = n;
        x = &d->items[d->n];
        *x = (Diagnostic) {
                .file = strdup(file ?: ""),
                .line = line,
                .severity = sev,
                .id = id,
                .message = msg,
                .seq = d->n,
        };
        if (!x->file) {
                free(msg);
                return -ENOMEM;
        }
        d->n++;
        return 0;
}

static int diag_cmp(const void *a, const void *b) {
        const Diagnostic *x = a, *y = b;
        int c = strcmp(x->file, y->file);

        if (c != 0)
                return c;
        if (x->line != y->line)
                return x->line < y->line ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void diag_sort(Diagnostics *d) {
        if (d->n > 1)
                qsort(d->items, d->n, sizeof(Diagnostic), diag_cmp);
}

bool diag_has(const Diagnostics *d, int sev, const char *id) {
        for (size_t i = 0; i < d->n; i++)
                if ((sev < 0 || (int) d->items[i].severity == sev) && streq(d->items[i].id, id))
                        return true;
        return false;
}

size_t diag_count_id(const Diagnostics *d, const char *id) {
        size_t n = 0;

        for (size_t i = 0; i < d->n; i++)
                if (streq(d->items[i].id, id))
                        n++;
        return n;
}

bool diag_has_line(const Diagnostics *d, const char *file, unsigned line) {
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].line == line && streq(d->items[i].file, file ?: ""))
                        return true;
        return false;
}

const char *diag_severity_to_string(DiagSeverity s) {
        return s == DIAG_ERROR ? "error" : "warning";
}

/* Optimal string alignment distance: insertions, deletions, substitutions
 * and transpositions of neighbours ("plcae") each count one. */
unsigned diag_edit_distance(const char *a, const char *b, unsigned cap) {
        unsigned m[65][65], la = strlen(a), lb = strlen(b);

        if (la > 64 || lb > 64)
                return cap + 1;
        for (unsigned i = 0; i <= la; i++)
                m[i][0] = i;
        for (unsigned j = 0; j <= lb; j++)
                m[0][j] = j;
        for (unsigned i = 1; i <= la; i++) {
                for (unsigned j = 1; j <= lb; j++) {
                        int ca = tolower((unsigned char) a[i - 1]), cb = tolower((unsigned char) b[j - 1]);
                        unsigned v = MIN(MIN(m[i - 1][j] + 1, m[i][j - 1] + 1), m[i - 1][j - 1] + (ca != cb));

                        if (i > 1 && j > 1 && ca == tolower((unsigned char) b[j - 2]) &&
                            tolower((unsigned char) a[i - 2]) == cb)
                                v = MIN(v, m[i - 2][j - 2] + 1);
                        m[i][j] = v;
                }
        }
        return MIN(m[la][lb], cap + 1);
}

const char *diag_closest(const char *word, const char *const *candidates) {
        const char *best = NULL;
        unsigned best_d = UINT32_MAX, len = strlen(word);
        /* A typo is a small share of the word: one edit in short words, up
         * to a third of longer ones. */
        unsigned cap = MAX(1u, MIN(3u, len / 3));

        if (len == 0)
                return NULL;
        for (const char *const *c = candidates; c && *c; c++) {
                unsigned dist = diag_edit_distance(word, *c, cap);

                if (dist <= cap && dist < best_d && dist < strlen(*c)) {
                        best = *c;
                        best_d = dist;
                }
        }
        return best;
}
