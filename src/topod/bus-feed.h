/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a bus client sends, checked before sd-bus reads a byte of it.
 *
 * The server (bus.c) reads each client's socket itself and passes sd-bus
 * only what this parser lets through, on a socket pair: sd-bus reads a
 * whole message into memory as its header declares it (up to 128 MiB) and
 * offers no setting to lower that, so the bound is here. The parser knows
 * the two phases of a D-Bus stream:
 *
 *   - the authentication lines (a NUL, then "\r\n"-ended lines up to
 *     BEGIN): at most BUS_FEED_LINES lines of BUS_FEED_LINE_MAX bytes.
 *     The peer's identity comes from SO_PEERCRED at accept, never from
 *     what it says: the EXTERNAL token it sends is replaced by the uid
 *     sd-bus sees on the socket pair (the daemon's own), so that sd-bus's
 *     own check agrees;
 *   - messages: each fixed header (16 bytes) is checked (endianness,
 *     version 1, a known type) and the message's whole length, header
 *     fields and body, bounded by BUS_FEED_MESSAGE_MAX before any of it is
 *     read on.
 *
 * Its own file: a pure parser over bytes, tested and fuzzed without
 * sockets. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BUS_FEED_LINE_MAX 256u
#define BUS_FEED_LINES 16u
#define BUS_FEED_MESSAGE_MAX (64u * 1024u)
/* Room for what n bytes of input give: the input, a line carried from
 * before, and the longer tokens of BUS_FEED_LINES rewritten lines. */
#define BUS_FEED_OUT_MAX(n) ((n) + 1024u)

typedef struct BusFeed {
        uid_t token_uid; /* what the EXTERNAL token is made to say */
        bool started;    /* the NUL byte seen */
        bool running;    /* past BEGIN */
        unsigned lines;
        size_t line_len;
        char line[BUS_FEED_LINE_MAX];
        size_t header_len;
        uint8_t header[16];
        uint64_t left;   /* bytes of the current message still to come */
        uint64_t calls;  /* method calls begun */
} BusFeed;

void bus_feed_init(BusFeed *f, uid_t token_uid);
/* Take n bytes from the client; what sd-bus may read is written to out
 * (room for BUS_FEED_OUT_MAX(n) bytes), its length in *ret_out_len. 0, or
 * -EPROTO (not D-Bus), -EMSGSIZE (a message over BUS_FEED_MESSAGE_MAX). */
int bus_feed(BusFeed *f, const uint8_t *in, size_t n, uint8_t *out, size_t *ret_out_len);
