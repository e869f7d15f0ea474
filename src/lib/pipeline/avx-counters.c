/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The AVX-512 counters around each scan (pipeline.h): which threads are
 * counted, and their counts handed to the classifier. Its own file: the
 * loop between observe's counters and decide's candidates. */

#include <errno.h>
#include <stdlib.h>

#include "base/macro.h"
#include "pipeline/pipeline.h"

int pipeline_counters_read(Pipeline *p) {
        TaskSnapshot *snap = p->observe.snap;

        if (!p->observe.counters || !snap)
                return 0;
        for (size_t i = 0; i < snap->n_tasks; i++) {
                TaskFacts *t = &snap->tasks[i];
                uint64_t v;

                t->has_avx512_ops = counter_set_read(p->observe.counters, t->tid, &v) >= 0;
                t->avx512_ops = t->has_avx512_ops ? v : 0;
        }
        return 0;
}

int pipeline_counters_sync(Pipeline *p) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n;
        int k;

        if (!kernelcaps_avx512_counters(p->observe.caps))
                return 0;
        if (!p->observe.counters &&
            (k = counter_set_new(NULL, &p->observe.caps->avx512_counter_attr, &p->observe.counters)) < 0)
                return k;
        if (!(tids = calloc(COUNTERS_MAX, sizeof(pid_t))))
                return -ENOMEM;
        n = classifier_avx_candidates(p->decide.classifier, tids, COUNTERS_MAX);
        k = counter_set_sync(p->observe.counters, tids, n);
        return k < 0 ? k : 0;
}
