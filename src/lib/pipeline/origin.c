/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where a process is judged from (origin.h). */
#include "origin.h"

#include <string.h>

/* Is cgroup root itself or below it? */
static bool in_tree(const char *root, const char *cgroup) {
        size_t n = strlen(root);

        return strncmp(cgroup, root, n) == 0 && (cgroup[n] == '\0' || cgroup[n] == '/');
}

const char *origin_cgroup(const Journal *j, const char *cgroup_root, const TaskSnapshot *snap, pid_t tgid,
                          uint64_t start_time, pid_t ppid, const char *cgroup) {
        if (!j || !cgroup || !cgroup_root || !in_tree(cgroup_root, cgroup))
                return cgroup;
        for (unsigned depth = 0; depth < ORIGIN_DEPTH_MAX && tgid > 1; depth++) {
                const JournalTask *jt = start_time != 0 ? journal_get_task(j, tgid, start_time) : NULL;
                const TaskFacts *parent;

                if (jt)
                        return jt->cgroup;
                parent = snap && ppid > 1 ? task_snapshot_find(snap, ppid) : NULL;
                if (!parent)
                        break;
                tgid = parent->tgid;
                start_time = parent->start_time;
                ppid = parent->ppid;
        }
        return cgroup;
}
