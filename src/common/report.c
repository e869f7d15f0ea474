/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reports printed alike by both programs (see report.h). */
#include "report.h"

#include <errno.h>

#include "base/json.h"
#include "base/macro.h"

int report_print(FILE *f, const ReconcileReport *r, bool json) {
        if (json) {
                _cleanup_(json_freep) Json *j = json_new(f, true);

                if (!j)
                        return -ENOMEM;
                return reconcile_report_print_json(j, r);
        }
        return reconcile_report_print_text(f, r);
}

void report_print_nothing(FILE *f, bool json, const char *why) {
        if (json)
                fputs("{\"counts\":{\"done\":0,\"already\":0,\"vanished\":0,\"skipped\":0,\"failed\":0},\"items\":[]}\n", f);
        else
                fprintf(f, "nothing to restore: %s\n", why);
}

void report_print_diagnostics_json(Json *j, const Diagnostics *d) {
        json_array_begin(j);
        for (size_t i = 0; i < d->n; i++) {
                const Diagnostic *x = &d->items[i];

                json_object_begin(j);
                json_kv_string(j, "file", x->file);
                json_kv_uint(j, "line", x->line);
                json_kv_string(j, "severity", diag_severity_to_string(x->severity));
                json_kv_string(j, "id", x->id);
                json_kv_string(j, "message", x->message);
                json_object_end(j);
        }
        json_array_end(j);
}

void report_print_diagnostics(FILE *f, const Diagnostics *d) {
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].line > 0)
                        fprintf(f, "%s:%u: %s: %s\n", d->items[i].file, d->items[i].line,
                                d->items[i].severity == DIAG_ERROR ? "error" : "warning", d->items[i].message);
                else /* about the whole file */
                        fprintf(f, "%s: %s: %s\n", d->items[i].file,
                                d->items[i].severity == DIAG_ERROR ? "error" : "warning", d->items[i].message);
}
