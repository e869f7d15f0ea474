/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer entry point for the journal parser: whatever parses must format
 * and parse again to the same text, byte for byte. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "apply/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Journal *j = NULL, *j2 = NULL;
        JournalError e;
        char *t = NULL, *t2 = NULL;
        size_t n, n2;

        if (size > 65536)
                return 0;
        if (journal_parse((const char *) data, size, &j, &e) < 0)
                return 0;
        if (journal_format(j, &t, &n) < 0 || journal_parse(t, n, &j2, &e) < 0 ||
            journal_format(j2, &t2, &n2) < 0 || n != n2 || memcmp(t, t2, n) != 0)
                abort();
        free(t);
        free(t2);
        journal_free(j);
        journal_free(j2);
        return 0;
}
