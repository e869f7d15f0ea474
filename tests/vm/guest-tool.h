/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the guest helpers (cgrouptool, feattool) share: errors as JSON on
 * stdout for the host to read, a way to stop at a known point (for kill -9
 * tests), and loading the journal. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "apply/journal.h"
#include "base/json.h"
#include "base/util.h"

static inline void error_json(const char *what, int err, const char *message) {
        _cleanup_(json_freep) Json *j = json_new(stdout, true);

        json_object_begin(j);
        json_kv_string(j, "failed", what);
        json_kv_string(j, "error", errno_name(err));
        json_kv_string(j, "message", message ?: strerror(-err));
        json_object_end(j);
}

/* Create file (the host's signal that we got here), then wait to be killed. */
static inline void hold(const char *file) {
        int fd;

        if (!file)
                return;
        fflush(stdout);
        fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
                close(fd);
        for (;;)
                pause();
}

/* The journal in dir (a file left by a crash is loaded), or an in-memory
 * one without dir. Returns as journal_load(): 1 found, 0 new. */
static inline int open_journal(const char *dir, Journal **ret) {
        JournalError e = {};
        char msg[256];
        int k;

        if (!dir)
                return journal_new(NULL, ret) < 0 ? -ENOMEM : 0;
        k = journal_load(dir, ret, &e);
        if (k < 0) {
                snprintf(msg, sizeof(msg), "%s/%s:%u: %s", dir, JOURNAL_FILE_NAME, e.line, e.message);
                error_json("journal_load", k, msg);
        }
        return k;
}
