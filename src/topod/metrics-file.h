/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The metrics file, replaced whole: written to "<path>.tmp" beside it
 * (node_exporter's textfile collector reads only *.prom files), mode 0644
 * whatever the umask (the collector runs as another user), then renamed
 * over path, so a reader sees the old file or the new one, never a part.
 * No fsync: the file is remade after every pass, and a crash's loss is a
 * reading, not state. */

#include <stddef.h>

/* 0, or a negative errno (the directory missing or read-only, a full
 * disk); the temporary file is removed on failure. */
int metrics_file_write(const char *path, const char *text, size_t len);
