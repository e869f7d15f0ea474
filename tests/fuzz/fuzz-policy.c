/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer entry point: one policy file's text, then the set-level checks
 * on it, with a machine that has everything (so all paths run). */

#include <stddef.h>
#include <stdint.h>

#include "decide/policy-check.h"
#include "decide/policy.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(diag_freep) Diagnostics *d = NULL;
        _cleanup_(policy_set_freep) PolicySet *s = NULL;
        IniSource src[2];

        if (size > POLICY_FILE_SIZE_MAX + 16)
                return 0;
        d = diag_new();
        if (!d)
                return 0;
        /* Twice, under two names: duplicate names, conflicts, shadowing. */
        src[0] = (IniSource) { .file = "a.ini", .text = (const char *) data, .len = size };
        src[1] = (IniSource) { .file = "b/a.ini", .text = (const char *) data, .len = size };
        if (policy_set_parse(src, 2, d, &s) == -ENOMEM || !s)
                return 0;
        (void) check_policy_set(s, NULL, NULL, 0, d);
        (void) check_policy_set(s, fuzz_topology(), fuzz_caps(), POLICY_KERNEL_VERSION(6, 6, 0), d);
        diag_sort(d);
        return 0;
}
