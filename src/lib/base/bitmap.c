/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bitmap.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Bitmap *bitmap_new(void) {
        return calloc(1, sizeof(Bitmap));
}

Bitmap *bitmap_free(Bitmap *b) {
        if (!b)
                return NULL;
        free(b->words);
        free(b);
        return NULL;
}

Bitmap *bitmap_copy(const Bitmap *b) {
        Bitmap *c = bitmap_new();

        if (!c)
                return NULL;
        if (b->n_words > 0) {
                c->words = malloc(b->n_words * sizeof(uint64_t));
                if (!c->words)
                        return bitmap_free(c);
                memcpy(c->words, b->words, b->n_words * sizeof(uint64_t));
                c->n_words = b->n_words;
        }
        return c;
}

static int bitmap_reserve(Bitmap *b, size_t n_words) {
        uint64_t *nw;

        if (n_words <= b->n_words)
                return 0;
        nw = realloc(b->words, n_words * sizeof(uint64_t));
        if (!nw)
                return -ENOMEM;
        memset(nw + b->n_words, 0, (n_words - b->n_words) * sizeof(uint64_t));
        b->words = nw;
        b->n_words = n_words;
        return 0;
}

int bitmap_set(Bitmap *b, unsigned bit) {
        int k;

        if (bit > BITMAP_MAX_BIT)
                return -ERANGE;
        k = bitmap_reserve(b, bit / 64 + 1);
        if (k < 0)
                return k;
        b->words[bit / 64] |= UINT64_C(1) << (bit % 64);
        return 0;
}

void bitmap_clear(Bitmap *b, unsigned bit) {
        if (bit / 64 < b->n_words)
                b->words[bit / 64] &= ~(UINT64_C(1) << (bit % 64));
}

bool bitmap_isset(const Bitmap *b, unsigned bit) {
        return bit / 64 < b->n_words && (b->words[bit / 64] >> (bit % 64)) & 1;
}

unsigned bitmap_count(const Bitmap *b) {
        unsigned n = 0;

        for (size_t i = 0; i < b->n_words; i++)
                n += (unsigned) __builtin_popcountll(b->words[i]);
        return n;
}

bool bitmap_is_empty(const Bitmap *b) {
        for (size_t i = 0; i < b->n_words; i++)
                if (b->words[i])
                        return false;
        return true;
}

static uint64_t word_at(const Bitmap *b, size_t i) {
        return i < b->n_words ? b->words[i] : 0;
}

bool bitmap_equal(const Bitmap *a, const Bitmap *b) {
        for (size_t i = 0; i < MAX(a->n_words, b->n_words); i++)
                if (word_at(a, i) != word_at(b, i))
                        return false;
        return true;
}

bool bitmap_intersects(const Bitmap *a, const Bitmap *b) {
        for (size_t i = 0; i < MIN(a->n_words, b->n_words); i++)
                if (a->words[i] & b->words[i])
                        return true;
        return false;
}

bool bitmap_is_subset(const Bitmap *sub, const Bitmap *super) {
        for (size_t i = 0; i < sub->n_words; i++)
                if (sub->words[i] & ~word_at(super, i))
                        return false;
        return true;
}

int bitmap_or(Bitmap *dst, const Bitmap *src) {
        int k = bitmap_reserve(dst, src->n_words);

        if (k < 0)
                return k;
        for (size_t i = 0; i < src->n_words; i++)
                dst->words[i] |= src->words[i];
        return 0;
}

int bitmap_next(const Bitmap *b, unsigned from) {
        for (size_t i = from / 64; i < b->n_words; i++) {
                uint64_t w = b->words[i];

                if (i == from / 64)
                        w &= ~UINT64_C(0) << (from % 64);
                if (w)
                        return (int) (i * 64 + (unsigned) __builtin_ctzll(w));
        }
        return -1;
}

static int parse_uint(const char **p, unsigned *ret) {
        unsigned long v = 0;
        const char *s = *p;

        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        while (isdigit((unsigned char) *s)) {
                v = v * 10 + (unsigned long) (*s - '0');
                if (v > BITMAP_MAX_BIT)
                        return -ERANGE;
                s++;
        }
        *p = s;
        *ret = (unsigned) v;
        return 0;
}

int bitmap_parse_list(const char *s, Bitmap **ret) {
        _cleanup_(bitmap_freep) Bitmap *b = bitmap_new();
        const char *p = s;
        int k;

        if (!b)
                return -ENOMEM;
        while (isspace((unsigned char) *p))
                p++;
        while (*p && !isspace((unsigned char) *p)) {
                unsigned lo, hi;

                k = parse_uint(&p, &lo);
                if (k < 0)
                        return k;
                hi = lo;
                if (*p == '-') {
                        p++;
                        k = parse_uint(&p, &hi);
                        if (k < 0)
                                return k;
                        if (hi < lo)
                                return -EINVAL;
                }
                for (unsigned i = lo; i <= hi; i++) {
                        k = bitmap_set(b, i);
                        if (k < 0)
                                return k;
                }
                if (*p == ',') {
                        p++;
                        if (!isdigit((unsigned char) *p))
                                return -EINVAL;
                }
        }
        while (isspace((unsigned char) *p))
                p++;
        if (*p)
                return -EINVAL;
        *ret = TAKE_PTR(b);
        return 0;
}

int bitmap_format_list(const Bitmap *b, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        FILE *f;
        bool first = true;
        int i;

        f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        i = bitmap_next(b, 0);
        while (i >= 0) {
                int j = i;

                while (bitmap_isset(b, (unsigned) j + 1))
                        j++;
                fprintf(f, first ? "%d" : ",%d", i);
                if (j > i)
                        fprintf(f, "-%d", j);
                first = false;
                i = bitmap_next(b, (unsigned) j + 1);
        }
        if (fclose(f) != 0 || !buf)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}
