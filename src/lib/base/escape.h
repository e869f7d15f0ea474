/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The one way a string from outside (a comm, an exe path, a policy file's
 * bytes, a cgroup name) is made safe to leave topod: the bus, JSON and the
 * terminal all escape the same way. Its own file: every writer of output
 * uses it, and it depends on nothing.
 *
 *   - valid UTF-8 is kept as it is (no re-encoding);
 *   - a byte that does not start a valid UTF-8 sequence (a stray
 *     continuation byte, an overlong form, a surrogate, past U+10FFFF, a
 *     truncated sequence) becomes the four characters \xHH;
 *   - with ESCAPE_CONTROL, control characters (U+0000..U+001F, U+007F and
 *     U+0080..U+009F) become \xHH too, as \n, \t and ESC would otherwise
 *     forge lines or terminal sequences; ESCAPE_KEEP_NEWLINE keeps \n and
 *     \t (a whole reply of lines).
 *
 * A backslash is kept as it is: cgroup paths hold systemd's own \x2d
 * escapes, which must read the same in topod's output as in /sys. */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum EscapeFlags {
        ESCAPE_CONTROL = 1 << 0,
        ESCAPE_KEEP_NEWLINE = 1 << 1,
} EscapeFlags;

/* The length of the valid UTF-8 sequence at s (at most n bytes), 0 when
 * it is not one; *ret_cp gets its code point. */
size_t utf8_sequence(const unsigned char *s, size_t n, unsigned *ret_cp);
/* Whether s[0..n) is all valid UTF-8 (NUL bytes count as invalid); the
 * offset of the first bad byte in *ret_bad when not. */
bool utf8_valid(const char *s, size_t n, size_t *ret_bad);
/* Write s escaped (see above) onto f. */
void escape_write(FILE *f, const char *s, EscapeFlags flags);
/* The same into a new string; NULL on OOM (NULL s gives NULL). */
char *escape_string(const char *s, EscapeFlags flags);
