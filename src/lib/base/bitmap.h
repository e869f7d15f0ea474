/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A growable bitmap of small non-negative integers: CPU numbers, NUMA node
 * numbers. Printed and parsed in the kernel's list format ("0-3,8,10-11"). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* Upper bound on any bit we accept from outside input (kernel NR_CPUS max is
 * 8192; leave room). */
#define BITMAP_MAX_BIT 65535u

typedef struct Bitmap {
        uint64_t *words;
        size_t n_words;
} Bitmap;

Bitmap *bitmap_new(void);
Bitmap *bitmap_free(Bitmap *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(Bitmap *, bitmap_free);
Bitmap *bitmap_copy(const Bitmap *b);

int bitmap_set(Bitmap *b, unsigned bit);
void bitmap_clear(Bitmap *b, unsigned bit);
bool bitmap_isset(const Bitmap *b, unsigned bit);
unsigned bitmap_count(const Bitmap *b);
bool bitmap_is_empty(const Bitmap *b);
bool bitmap_equal(const Bitmap *a, const Bitmap *b);
bool bitmap_intersects(const Bitmap *a, const Bitmap *b);
bool bitmap_is_subset(const Bitmap *sub, const Bitmap *super);
int bitmap_or(Bitmap *dst, const Bitmap *src);

/* Iteration: first set bit at or after 'from', or -1. */
int bitmap_next(const Bitmap *b, unsigned from);
#define BITMAP_FOREACH(i, b) for (int i = bitmap_next((b), 0); i >= 0; i = bitmap_next((b), (unsigned) i + 1))

/* "0-3,8" <-> bitmap. Whitespace around the text is ignored; the empty string
 * is the empty set. -EINVAL on malformed text, -ERANGE past BITMAP_MAX_BIT. */
int bitmap_parse_list(const char *s, Bitmap **ret);
int bitmap_format_list(const Bitmap *b, char **ret);
