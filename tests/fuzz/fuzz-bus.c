/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer entry point for the bus's check of a client's bytes
 * (bus-feed.h): fed in pieces of every size the input's first byte picks,
 * it must never write past its output's bound, never pass on more than it
 * was given beyond rewritten handshake lines, and never let a message over
 * BUS_FEED_MESSAGE_MAX through. */

#include <stdlib.h>
#include <string.h>

#include "bus-feed.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t out[BUS_FEED_OUT_MAX(256)];
        size_t step, total_in = 0, total_out = 0;
        BusFeed f;

        if (size < 1 || size > 65536)
                return 0;
        step = 1 + data[0] % 256;
        bus_feed_init(&f, 0);
        for (size_t i = 1; i < size; i += step) {
                size_t n = size - i < step ? size - i : step, o = 0;

                if (bus_feed(&f, data + i, n, out, &o) < 0)
                        break;
                if (o > BUS_FEED_OUT_MAX(n) || f.left > BUS_FEED_MESSAGE_MAX)
                        abort();
                total_in += n;
                total_out += o;
                if (total_out > total_in + (size_t) f.lines * 64 + 1)
                        abort();
        }
        return 0;
}
