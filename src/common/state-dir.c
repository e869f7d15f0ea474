/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state directory, its lock and the journal in it (see state-dir.h). */
#include "state-dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/util.h"

int state_dir_path(const char *state_dir, const Root *root, char **ret) {
        if (state_dir) {
                *ret = strdup(state_dir);
                return *ret ? 0 : -ENOMEM;
        }
        return root_host_path(root, "run/topod", ret);
}

/* One writer of the journal at a time: the daemon holds the lock for its
 * life, topod --oneshot and topoctl reset while they work. The holder's pid
 * is in the file, for the message. */
static int take_lock(const char *dir, int *ret) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        char pid[32] = "";
        ssize_t n;

        if (asprintf(&path, "%s/lock", dir) < 0)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return negative_errno();
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                int k = negative_errno();

                if (k != -EWOULDBLOCK)
                        return k;
                n = pread(fd, pid, sizeof(pid) - 1, 0);
                pid[n > 0 ? n : 0] = 0;
                fprintf(stderr, "%s: %s is in use by another topod%s%s%s: not touching its journal\n",
                        program_invocation_short_name, dir, *pid ? " (pid " : "", strstrip(pid), *pid ? ")" : "");
                return -EBUSY;
        }
        n = snprintf(pid, sizeof(pid), "%d\n", (int) getpid());
        if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t) n, 0) != n)
                return negative_errno();
        *ret = TAKE_FD(fd);
        return 0;
}

void state_dir_unlock(const char *dir, int *lock, bool remove) {
        _cleanup_free_ char *path = NULL;

        if (*lock < 0)
                return;
        /* Unlinked while still held: one that opened it meanwhile gets the
         * old file's lock, finds no journal, and has nothing to do. */
        if (remove && dir && asprintf(&path, "%s/lock", dir) >= 0)
                (void) unlink(path);
        close(*lock);
        *lock = -EBADF;
}

int state_dir_open_journal(const char *state_dir, const Root *root, Journal **ret, bool *ret_found, int *ret_lock) {
        _cleanup_free_ char *dir = NULL, *boot = NULL;
        int k2;
        _cleanup_close_ int lock = -EBADF;
        JournalError e = {};
        int k;

        if ((k = state_dir_path(state_dir, root, &dir)) < 0)
                return k;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                k = negative_errno();
                fprintf(stderr, "%s: cannot create %s: %s\n", program_invocation_short_name, dir, strerror(-k));
                return k;
        }
        if ((k = take_lock(dir, &lock)) < 0) {
                if (k != -EBUSY)
                        fprintf(stderr, "%s: cannot lock %s: %s\n", program_invocation_short_name, dir, strerror(-k));
                return k;
        }
        k = journal_load(dir, ret, &e);
        if (k < 0) {
                fprintf(stderr, "%s: %s/%s:%u: %s\n", program_invocation_short_name, dir,
                        e.log ? JOURNAL_LOG_NAME : JOURNAL_FILE_NAME, e.line, e.message[0] ? e.message : strerror(-k));
                return k;
        }
        if (k > 0 && (*ret)->n_damaged > 0)
                fprintf(stderr, "%s: %s/journal:%u: %s; %u damaged line%s skipped, the other entries restored\n",
                        program_invocation_short_name, dir, (*ret)->damage->line, (*ret)->damage->message,
                        (*ret)->n_damaged, (*ret)->n_damaged == 1 ? "" : "s");
        if (k > 0 && (*ret)->n_log_damaged > 0)
                fprintf(stderr, "%s: %s/" JOURNAL_LOG_NAME ":%u: %s; %u damaged line%s skipped, the other entries restored\n",
                        program_invocation_short_name, dir, (*ret)->log_damage->line, (*ret)->log_damage->message,
                        (*ret)->n_log_damaged, (*ret)->n_log_damaged == 1 ? "" : "s");
        /* A journal of an earlier boot records changes that died with
         * it (cgroups, cookies, features are the kernel's): restoring them
         * now would move whoever has those pids today. */
        if (root_read_line(root, "proc/sys/kernel/random/boot_id", &boot) >= 0) {
                if (k > 0 && (*ret)->boot_id && !streq((*ret)->boot_id, boot)) {
                        fprintf(stderr, "%s: %s/journal is from an earlier boot (%s): nothing to restore, discarded\n",
                                program_invocation_short_name, dir, (*ret)->boot_id);
                        *ret = journal_free(*ret);
                        if ((k = journal_remove(dir)) < 0 || (k = journal_load(dir, ret, &e)) < 0)
                                return k;
                }
                if ((k2 = journal_set_boot_id(*ret, boot)) < 0) {
                        *ret = journal_free(*ret);
                        return k2;
                }
        }
        *ret_found = k > 0;
        *ret_lock = TAKE_FD(lock);
        return 0;
}
