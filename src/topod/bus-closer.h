/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* File descriptors a bus peer passed, closed on a thread of their own.
 *
 * The bus refuses fd passing (SO_PASSRIGHTS off where the kernel has it,
 * sd_bus_negotiate_fds() false everywhere), but an older kernel still
 * delivers what a peer sends with SCM_RIGHTS, and the last close() of some
 * files waits: a TCP socket with SO_LINGER makes it wait its linger time.
 * So received descriptors go to one closer thread, through a pipe, never
 * closed on the main loop; when the pipe is full they are closed here
 * anyway (the peer is cut off and its uid kept out a while: bus.c). Its
 * own file: the one thread the bus starts, and what it may block on. */

typedef struct BusCloser BusCloser;

int bus_closer_new(BusCloser **ret);
/* Stops the thread once it has closed what it holds. */
BusCloser *bus_closer_free(BusCloser *c);
/* Takes the n descriptors in fds (closed at once if c is NULL or full). */
void bus_closer_take(BusCloser *c, const int *fds, unsigned n);
