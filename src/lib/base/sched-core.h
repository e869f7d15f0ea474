/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The core-scheduling prctl's numbers (linux/prctl.h, 5.14), for C
 * libraries whose headers predate them. Header only. */

#include <sys/prctl.h>

#ifndef PR_SCHED_CORE
#define PR_SCHED_CORE 62
#endif
#ifndef PR_SCHED_CORE_GET
#define PR_SCHED_CORE_GET 0
#endif
#ifndef PR_SCHED_CORE_SCOPE_THREAD
#define PR_SCHED_CORE_SCOPE_THREAD 0
#endif
#ifndef PR_SCHED_CORE_SCOPE_THREAD_GROUP
#define PR_SCHED_CORE_SCOPE_THREAD_GROUP 1
#endif
