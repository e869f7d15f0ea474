/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The bus's check of a client's bytes (bus-feed.h), without sockets: the
 * handshake's EXTERNAL token rewritten to the daemon's uid, everything
 * after BEGIN passed on byte for byte (a pipelined call included), a
 * message over BUS_FEED_MESSAGE_MAX refused from its header, and what is
 * not D-Bus refused. */

#include <errno.h>
#include <string.h>

#include "bus-feed.h"
#include "tests.h"

static int feed(BusFeed *f, const void *in, size_t n, char *out, size_t *ret_len) {
        return bus_feed(f, in, n, (uint8_t *) out, ret_len);
}

static void test_token_and_pipelined(void) {
        static const char in[] = "\0AUTH EXTERNAL 3635353334\r\nBEGIN\r\nl\1\0\1\4\0\0\0\1\0\0\0\0\0\0\0ABCD";
        char out[BUS_FEED_OUT_MAX(sizeof(in))];
        size_t n = 0;
        BusFeed f;

        bus_feed_init(&f, 0);
        ASSERT_EQ(feed(&f, in, sizeof(in) - 1, out, &n), 0);
        /* uid 65534's token becomes uid 0's ("0" is 0x30) */
        ASSERT_EQ(n, sizeof(in) - 1 - strlen("3635353334") + 2);
        ASSERT_EQ(memcmp(out, "\0AUTH EXTERNAL 30\r\nBEGIN\r\n", 26), 0);
        ASSERT_EQ(memcmp(out + 26, in + 34, 20), 0);
        ASSERT_TRUE(f.running);
        ASSERT_EQ(f.calls, 1u);
        ASSERT_EQ(f.left, 0u);
}

static void test_byte_by_byte(void) {
        static const char in[] = "\0AUTH EXTERNAL\r\nDATA\r\nBEGIN\r\nl\1\0\1\0\0\0\0\1\0\0\0\0\0\0\0";
        char out[BUS_FEED_OUT_MAX(1)], all[256];
        size_t total = 0;
        BusFeed f;

        bus_feed_init(&f, 0);
        for (size_t i = 0; i < sizeof(in) - 1; i++) {
                size_t n = 0;

                ASSERT_EQ(feed(&f, in + i, 1, out, &n), 0);
                memcpy(all + total, out, n);
                total += n;
        }
        ASSERT_EQ(total, sizeof(in) - 1); /* no token: nothing rewritten */
        ASSERT_EQ(memcmp(all, in, total), 0);
        ASSERT_EQ(f.calls, 1u);
}

static void test_refused(void) {
        static const char big[] = "\0BEGIN\r\nl\1\0\1\0\0\1\0\1\0\0\0\0\0\0\0"; /* a 64 KiB body */
        char out[BUS_FEED_OUT_MAX(512)], line[400];
        size_t n;
        BusFeed f;

        bus_feed_init(&f, 0);
        ASSERT_EQ(feed(&f, big, sizeof(big) - 1, out, &n), -EMSGSIZE);
        bus_feed_init(&f, 0);
        ASSERT_EQ(feed(&f, "GET / HTTP/1.0\r\n", 16, out, &n), -EPROTO);
        bus_feed_init(&f, 0);
        ASSERT_EQ(feed(&f, "\0BEGIN\r\nX\1\0\1\0\0\0\0\1\0\0\0\0\0\0\0", 24, out, &n), -EPROTO);
        bus_feed_init(&f, 0);
        ASSERT_EQ(feed(&f, "\0BEGIN\n", 7, out, &n), -EPROTO);
        memset(line, 'A', sizeof(line));
        line[0] = '\0';
        bus_feed_init(&f, 0);
        ASSERT_EQ(feed(&f, line, sizeof(line), out, &n), -EPROTO);
        bus_feed_init(&f, 0);
        for (unsigned i = 0; i < BUS_FEED_LINES; i++)
                ASSERT_EQ(feed(&f, i == 0 ? "\0DATA\r\n" : "DATA\r\n", i == 0 ? 7 : 6, out, &n), 0);
        ASSERT_EQ(feed(&f, "DATA\r\n", 6, out, &n), -EPROTO);
}

int main(void) {
        RUN(test_token_and_pipelined);
        RUN(test_byte_by_byte);
        RUN(test_refused);
        return 0;
}
