/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ticker: a latency-class load for the systemd tier's guest. It sleeps 2 ms
 * at a time, for ever: many wake-ups a second, each a short burst, nearly
 * all its switches voluntary, little CPU — what topod's classifier calls
 * latency on the 4-CPU emulated guest, where a ping-pong pair beside a
 * busy loop takes too much CPU to count as latency. A file of its own, as
 * it is a workload, not a recorder (sdsnap.c). */

#include <time.h>

int main(void) {
        const struct timespec t = { .tv_sec = 0, .tv_nsec = 2000000 };

        for (;;)
                nanosleep(&t, NULL);
}
