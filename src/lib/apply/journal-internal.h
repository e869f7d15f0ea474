/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the journal's three files share and nobody else calls: the model
 * (journal.c), its text (journal-format.c) and its files on disk
 * (journal-file.c). Everything else uses journal.h. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apply/journal.h"
#include "base/macro.h"

/* The systemd driver's entries freed (journal-unit.c). */
void journal_units_free(Journal *j);

/* The log's mapping released (journal.c: the struct owns it). */
void journal_log_unmap(Journal *j);

/* Fill in e (may be NULL) and return err. */
_printf_(4, 5) int journal_parse_error(JournalError *e, unsigned line, int err, const char *fmt, ...);

/* The oldest version that says what the entries from the given positions
 * on (features, tasks, cookies, cgroups) say. */
unsigned journal_entries_version(const Journal *j, const size_t from[4]);

/* A log block of the entries added since the last commit, closed by its
 * "end"; with header, the log's first line before it (version, the inode
 * and size of the file it extends). -ENOMEM. */
int journal_format_log_block(const Journal *j, bool header, unsigned version, char **ret, size_t *ret_len);

/* The log's complete blocks into j; a log that extends another file than
 * (ino, size) is ignored. As journal_parse() for the errors. */
int journal_parse_log(Journal *j, const char *text, size_t len, uint64_t ino, uint64_t size, JournalError *e);

/* journal_record_cgroup_root() without dropping the roots a journal with
 * no "cgroup" entry holds: the parser's (the file names its roots before
 * its cgroups). */
int journal_add_cgroup_root(Journal *j, const char *root);
