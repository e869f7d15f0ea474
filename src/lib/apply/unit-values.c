/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The systemd driver's pure parts: property names, the ay bitmasks of
 * AllowedCPUs / AllowedMemoryNodes, the majority rule of a unit whose
 * processes the plan puts in different groups. Its own file: what the
 * unit tests check without any ops. */
#include "apply/unit-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/bitmap.h"
#include "base/util.h"

const char *unit_property_name(UnitProperty p) {
        static const char *const names[_UNIT_PROP_MAX] = {
                [UNIT_PROP_CPUS] = "AllowedCPUs",
                [UNIT_PROP_MEMS] = "AllowedMemoryNodes",
                [UNIT_PROP_WEIGHT] = "CPUWeight",
        };
        return (unsigned) p < _UNIT_PROP_MAX ? names[p] : "?";
}

/* systemd's cpu_set_to_dbus(): byte c/8, bit c%8, as long as the highest
 * CPU needs; the empty set is an empty array ("not set"). */
int unit_list_to_bytes(const char *list, uint8_t **ret, size_t *ret_n) {
        _cleanup_(bitmap_freep) Bitmap *b = NULL;
        uint8_t *bytes;
        int last = -1, k;

        if ((k = bitmap_parse_list(list, &b)) < 0)
                return k == -ERANGE ? -EINVAL : k;
        BITMAP_FOREACH(c, b)
                last = c;
        if (last < 0) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        if (!(bytes = calloc((size_t) last / 8 + 1, 1)))
                return -ENOMEM;
        BITMAP_FOREACH(c, b)
                bytes[c / 8] |= (uint8_t) (1u << (c % 8));
        *ret = bytes;
        *ret_n = (size_t) last / 8 + 1;
        return 0;
}

int unit_bytes_to_list(const uint8_t *bytes, size_t n, char **ret) {
        _cleanup_(bitmap_freep) Bitmap *b = bitmap_new();
        int k;

        if (!b)
                return -ENOMEM;
        if (n > 1024)
                return -EINVAL; /* 8192 CPUs: past what a cpuset names */
        for (size_t i = 0; i < n; i++)
                for (unsigned bit = 0; bit < 8; bit++)
                        if (bytes[i] & (1u << bit) && (k = bitmap_set(b, (unsigned) (i * 8 + bit))) < 0)
                                return k;
        return bitmap_format_list(b, ret);
}

int unit_majority_group(const unsigned *weights, const pid_t *lowest_tgid, size_t n) {
        unsigned best = 0;
        int pick = -1;

        for (size_t g = 0; g < n; g++)
                best = MAX(best, weights[g]);
        if (best == 0)
                return -1;
        for (size_t g = 0; g < n; g++)
                if (weights[g] == best && (pick < 0 || lowest_tgid[g] < lowest_tgid[pick]))
                        pick = (int) g;
        return pick;
}
