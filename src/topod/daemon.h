/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The long-running topod: recover a journal left by a crash, then every
 * sample interval (and at once on process events) observe, decide and
 * reconcile; on SIGHUP reload the configuration (all or nothing); on
 * SIGTERM or SIGINT put everything back (restore_on_exit) and exit. Signals are handled through the event loop, never in a signal
 * handler. */

typedef struct DaemonArgs {
        const char *root, *config, *policies, *state_dir;
        int log_level; /* syslog priority from --log-level; -1: topod.conf's */
} DaemonArgs;

int topod_run(const DaemonArgs *a);
