/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Replay a corpus through a fuzz target without libFuzzer: every regular
 * file of each directory (or each file) given. Part of the normal test run,
 * so past crashers stay fixed. */

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/macro.h"
#include "base/root.h"
#include "fuzz.h"

#define REPLAY_MAX (1024u * 1024u)

static int replay_file(const char *path) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t len = 0;
        int k;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "%s: %m\n", path);
                return -errno;
        }
        k = read_full_fd(fd, REPLAY_MAX, &buf, &len);
        if (k < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(-k));
                return k;
        }
        LLVMFuzzerTestOneInput((const uint8_t *) buf, len);
        return 0;
}

int main(int argc, char *argv[]) {
        size_t n = 0;
        int bad = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                struct dirent **list;
                int m;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %m\n", argv[i]);
                        return EXIT_FAILURE;
                }
                if (!S_ISDIR(st.st_mode)) {
                        bad |= replay_file(argv[i]) < 0;
                        n++;
                        continue;
                }
                m = scandir(argv[i], &list, NULL, alphasort);
                if (m < 0) {
                        fprintf(stderr, "%s: %m\n", argv[i]);
                        return EXIT_FAILURE;
                }
                for (int j = 0; j < m; j++) {
                        char path[4096];

                        if (list[j]->d_name[0] != '.') {
                                snprintf(path, sizeof path, "%s/%s", argv[i], list[j]->d_name);
                                if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                                        bad |= replay_file(path) < 0;
                                        n++;
                                }
                        }
                        free(list[j]);
                }
                free(list);
        }
        printf("replayed %zu inputs\n", n);
        if (n == 0) {
                fputs("no inputs: an empty corpus proves nothing\n", stderr);
                return EXIT_FAILURE;
        }
        return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
