/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The check of a bus client's bytes before sd-bus reads them (see
 * bus-feed.h). */
#include "bus-feed.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void bus_feed_init(BusFeed *f, uid_t token_uid) {
        *f = (BusFeed) { .token_uid = token_uid };
}

static bool line_is(const char *line, size_t len, const char *word) {
        size_t w = strlen(word);

        return len >= w && memcmp(line, word, w) == 0 && (len == w || line[w] == ' ');
}

/* One authentication line (without its "\r\n"), as sd-bus is to read it. */
static size_t auth_line(BusFeed *f, uint8_t *out) {
        const char *l = f->line;
        size_t len = f->line_len;
        char uid[24], hex[64];
        int n;

        if ((line_is(l, len, "AUTH EXTERNAL") && len > strlen("AUTH EXTERNAL")) ||
            (line_is(l, len, "DATA") && len > strlen("DATA"))) {
                snprintf(uid, sizeof(uid), "%u", (unsigned) f->token_uid);
                for (size_t i = 0; uid[i]; i++)
                        snprintf(hex + 2 * i, 3, "%02x", (unsigned char) uid[i]);
                n = snprintf((char *) out, BUS_FEED_LINE_MAX + 64, "%s %s\r\n",
                             line_is(l, len, "DATA") ? "DATA" : "AUTH EXTERNAL", hex);
                return (size_t) n;
        }
        if (line_is(l, len, "BEGIN"))
                f->running = true;
        memcpy(out, l, len);
        memcpy(out + len, "\r\n", 2);
        return len + 2;
}

/* The authentication phase: bytes taken from in. */
static int feed_auth(BusFeed *f, const uint8_t *in, size_t n, uint8_t *out, size_t *o, size_t *ret_taken) {
        size_t i = 0;

        if (!f->started && n > 0) {
                if (in[0] != '\0')
                        return -EPROTO;
                f->started = true;
                out[(*o)++] = '\0';
                i = 1;
        }
        for (; i < n && !f->running; i++) {
                if (in[i] == '\n') {
                        if (f->line_len == 0 || f->line[f->line_len - 1] != '\r')
                                return -EPROTO;
                        f->line_len--;
                        if (++f->lines > BUS_FEED_LINES)
                                return -EPROTO;
                        *o += auth_line(f, out + *o);
                        f->line_len = 0;
                        continue;
                }
                if (in[i] == '\0' || f->line_len >= BUS_FEED_LINE_MAX - 1)
                        return -EPROTO;
                f->line[f->line_len++] = (char) in[i];
        }
        *ret_taken = i;
        return 0;
}

static uint32_t header_u32(const BusFeed *f, size_t at) {
        const uint8_t *p = f->header + at;

        if (f->header[0] == 'l')
                return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
        return (uint32_t) p[3] | (uint32_t) p[2] << 8 | (uint32_t) p[1] << 16 | (uint32_t) p[0] << 24;
}

/* A whole fixed header: is it D-Bus, and how long is its message? */
static int header_check(BusFeed *f) {
        uint64_t fields, body, total;

        if ((f->header[0] != 'l' && f->header[0] != 'B') || f->header[1] < 1 || f->header[1] > 4 || f->header[3] != 1)
                return -EPROTO;
        body = header_u32(f, 4);
        fields = header_u32(f, 12);
        total = 16 + ((fields + 7) & ~(uint64_t) 7) + body;
        if (total > BUS_FEED_MESSAGE_MAX)
                return -EMSGSIZE;
        f->left = total - 16;
        f->calls += f->header[1] == 1;
        return 0;
}

int bus_feed(BusFeed *f, const uint8_t *in, size_t n, uint8_t *out, size_t *ret_out_len) {
        size_t o = 0, i = 0;
        int k;

        if (!f->running) {
                if ((k = feed_auth(f, in, n, out, &o, &i)) < 0)
                        return k;
        }
        while (i < n) {
                size_t take;

                if (f->left == 0) {
                        f->header[f->header_len++] = in[i];
                        out[o++] = in[i++];
                        if (f->header_len == sizeof(f->header)) {
                                f->header_len = 0;
                                if ((k = header_check(f)) < 0)
                                        return k;
                        }
                        continue;
                }
                take = n - i < f->left ? n - i : (size_t) f->left;
                memcpy(out + o, in + i, take);
                o += take;
                i += take;
                f->left -= take;
        }
        *ret_out_len = o;
        return 0;
}
