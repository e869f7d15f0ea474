/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topod's state directory (run/topod below the root, or --state-dir): the
 * journal of what was changed, its lock, and the daemon's bus socket. The
 * daemon, topod --oneshot, topod --restore and topoctl reset open the
 * journal the same way (locked: one writer at a time), and topoctl finds
 * the socket there; its own file so that each program takes it from here,
 * not from the other's folder. */

#include <stdbool.h>

#include "apply/journal.h"
#include "base/root.h"

/* state_dir, or run/topod below the root. */
int state_dir_path(const char *state_dir, const Root *root, char **ret);
/* Lock the directory (creating it, 0700) against another topod, then load
 * (or start) the journal there. -EBUSY (said on stderr) when another
 * topod holds it; *ret_lock is the lock, to close when done. */
int state_dir_open_journal(const char *state_dir, const Root *root, Journal **ret, bool *ret_found, int *ret_lock);
/* Let go of the lock; remove: unlink it too (when nothing is left to
 * restore, so the directory is left empty). */
void state_dir_unlock(const char *dir, int *lock, bool remove);
