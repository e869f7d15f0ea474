/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What topod and topoctl print the same way: an apply or restore report
 * (text or JSON), the report of a restore that found nothing, and the
 * parsers' findings as "file:line: error: message". One place, so that
 * topod --restore, topoctl reset and the daemon's Reset say it alike. */

#include <stdbool.h>
#include <stdio.h>

#include "apply/reconcile.h"
#include "decide/diag.h"

/* 0, or a negative errno (-ENOMEM). */
int report_print(FILE *f, const ReconcileReport *r, bool json);
/* A restore with nothing to do: the empty report in JSON, or "nothing to
 * restore: why". */
void report_print_nothing(FILE *f, bool json, const char *why);
void report_print_diagnostics(FILE *f, const Diagnostics *d);
/* The same as a JSON array (file, line, severity, id, message each). */
struct Json;
void report_print_diagnostics_json(struct Json *j, const Diagnostics *d);
