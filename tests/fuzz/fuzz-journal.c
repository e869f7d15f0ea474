/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer entry point for the journal parser: whatever parses must format
 * and parse again to the same text, byte for byte. An input that starts as
 * a log ("topod-journal-log") is read as the log of an empty journal bound
 * to the inode and size its header names, the way journal_load() salvages
 * it: whatever it keeps must format and parse again, its damage counted. */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply/journal.h"
#include "apply/journal-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Journal *j = NULL, *j2 = NULL;
        JournalError e;
        char *t = NULL, *t2 = NULL;
        size_t n, n2;

        if (size > 65536)
                return 0;
        if (size >= 17 && memcmp(data, "topod-journal-log", 17) == 0) {
                char head[128] = {};
                uint64_t ino = 0, sz = 0;
                unsigned v;

                memcpy(head, data, MIN(size, sizeof(head) - 1));
                (void) sscanf(head, "topod-journal-log %u %" SCNu64 " %" SCNu64, &v, &ino, &sz);
                if (journal_new(NULL, &j) < 0)
                        return 0;
                if (journal_parse_log(j, (const char *) data, size, ino, sz, &e) >= 0) {
                        if ((j->n_log_damaged > 0) != (j->log_damage != NULL))
                                abort();
                        if (journal_format(j, &t, &n) < 0 || journal_parse(t, n, &j2, &e) < 0)
                                abort();
                }
                free(t);
                journal_free(j);
                journal_free(j2);
                return 0;
        }
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
