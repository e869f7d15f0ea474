/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer entry point: topod.conf text, as the main file and a drop-in. */

#include <stddef.h>
#include <stdint.h>

#include "decide/config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(diag_freep) Diagnostics *d = NULL;
        _cleanup_(config_freep) Config *c = NULL;
        IniSource main_file, dropin;

        if (size > CONFIG_FILE_SIZE_MAX + 16)
                return 0;
        d = diag_new();
        if (!d)
                return 0;
        main_file = (IniSource) { .file = "topod.conf", .text = (const char *) data, .len = size };
        dropin = (IniSource) { .file = "topod.conf.d/10.conf", .text = (const char *) data, .len = size };
        (void) config_parse_all(&main_file, &dropin, 1, d, &c);
        return 0;
}
