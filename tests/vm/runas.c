/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* runas UID COMMAND [ARG…]: drop to UID (and GID UID, no supplementary
 * groups) and exec COMMAND. The guest's busybox setpriv cannot change ids. */

#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char *argv[]) {
        unsigned long id;
        char *end;

        if (argc < 3 || (id = strtoul(argv[1], &end, 10), *end) || id == 0) {
                fprintf(stderr, "usage: runas UID COMMAND [ARG...]\n");
                return 2;
        }
        if (setgroups(0, NULL) < 0 || setgid((gid_t) id) < 0 || setuid((uid_t) id) < 0) {
                perror("runas");
                return 1;
        }
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        return 127;
}
