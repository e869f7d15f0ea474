/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer entry point for every parser of /proc text (per task, and
 * /proc/stat) and of proc-connector datagrams: the first byte picks the
 * parser, the rest is its input. Each
 * parser gets a copy without a trailing NUL, so reading past the length is
 * caught by ASan. */

#include <stdlib.h>
#include <string.h>

#include "observe/events.h"
#include "observe/procfs.h"
#include "observe/sysload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf, *s = NULL;
        size_t len;

        if (size < 1 || size > 65536)
                return 0;
        len = size - 1;
        buf = malloc(len ? len : 1);
        if (!buf)
                return 0;
        memcpy(buf, data + 1, len);

        switch (data[0] % 8) {
        case 0: {
                ProcStat st;
                (void) procfs_parse_stat(buf, len, &st);
                break;
        }
        case 1: {
                ProcStatus st;
                (void) procfs_parse_status(buf, len, &st);
                break;
        }
        case 2: {
                ProcSchedstat ss;
                (void) procfs_parse_schedstat(buf, len, &ss);
                break;
        }
        case 3: {
                ProcAvx kind;
                uint64_t ms;
                (void) procfs_parse_arch_status(buf, len, &kind, &ms);
                break;
        }
        case 4:
                if (procfs_parse_cgroup(buf, len, &s) >= 0)
                        free(s);
                break;
        case 5:
                if (procfs_format_cmdline(buf, len, 4096, &s) >= 0)
                        free(s);
                break;
        case 6: {
                SysLoad l;
                (void) sysload_parse(buf, len, &l);
                break;
        }
        default: {
                /* A datagram needs the netlink header's alignment. */
                uint64_t *aligned = malloc(len ? len : 1);
                TaskEvent ev;

                if (aligned) {
                        memcpy(aligned, buf, len);
                        (void) proc_events_parse(aligned, len, &ev);
                        free(aligned);
                }
        }
        }
        free(buf);
        return 0;
}
