/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The metrics file's atomic replacement (metrics-file.h). */
#include "metrics-file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"

int metrics_file_write(const char *path, const char *text, size_t len) {
        _cleanup_free_ char *tmp = NULL;
        size_t done = 0;
        int fd, k = 0;

        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        /* O_NOFOLLOW: a link planted at the temporary name is not followed. */
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        if (fchmod(fd, 0644) < 0)
                k = -errno;
        while (k == 0 && done < len) {
                ssize_t w = write(fd, text + done, len - done);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0) {
                        k = w < 0 ? -errno : -EIO;
                        break;
                }
                done += (size_t) w;
        }
        if (close(fd) < 0 && k == 0)
                k = -errno;
        if (k == 0 && rename(tmp, path) < 0)
                k = -errno;
        if (k < 0)
                (void) unlink(tmp);
        return k;
}
