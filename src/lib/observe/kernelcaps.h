/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the running kernel lets topod do, found by reading only.
 *
 * Every capability says whether it is usable and, in one line, why or why
 * not, with the errno that decided where there was one. File-based probes go
 * through the Root; the three that need a syscall (PR_SCHED_CORE_GET on
 * ourselves, a proc-connector socket, pidfds) go through KernelProbeOps, so tests
 * can stand in for them. */

#include <errno.h>
#include <stdbool.h>

#include "base/macro.h"
#include "base/root.h"
#include "base/sched-settings.h"
#include "base/util.h"
#include "observe/counters.h"

typedef struct CapStatus {
        bool available;
        int error;    /* negative errno that decided, 0 if none */
        char *reason; /* one line for humans, never NULL after a probe */
} CapStatus;

/* One of the scheduler's settings (base/sched-settings.h) as this kernel
 * has it. */
typedef struct KernelSetting {
        const SchedSettingInfo *info;
        const char *file;                    /* its name here (into the catalog); NULL: absent */
        char value[SCHED_SETTING_VALUE_MAX]; /* as read; "" when it could not be */
        char **choices;                      /* CHOICE: the words the file lists */
        bool writable;                       /* the file opens for writing (lockdown says no) */
        int error; /* -ENOENT absent; file NULL with another: cannot tell (EACCES as non-root);
                    * else what the read or write-open gave, or 0 */
} KernelSetting;

/* Why the probe cannot tell whether the kernel has this setting: "not
 * root" (EACCES) or the errno's name; NULL when it found it or knows it is
 * absent. Inline, as kernelcaps_setting(): the checker uses it without
 * the probe. */
static inline const char *kernelcaps_setting_unknown(const KernelSetting *ks) {
        if (ks->file || ks->error == -ENOENT || ks->error == 0)
                return NULL;
        return ks->error == -EACCES ? "not root" : errno_name(ks->error);
}

/* What /proc/<pid>/arch_status's AVX512_elapsed_ms says on this host.
 *
 * The kernel records register state at context switch, not instructions:
 * a thread whose AVX-512 registers are not in their initial state counts
 * as using AVX-512 for as long as they stay so. glibc's EVEX string
 * functions (strlen, memcpy, ...) leave the upper registers (Hi16_ZMM)
 * dirty, so on an AVX-512 host with such a libc every dynamically linked
 * program looks like an AVX-512 user for its whole life. topod runs no
 * AVX-512 code of its own: if its own thread, just switched out by a
 * short sleep, shows AVX-512 state, the signal is polluted here. */
typedef enum KernelAvxEvidence {
        KERNEL_AVX_NONE,     /* no AVX512_elapsed_ms line: not x86, or no AVX-512 */
        KERNEL_AVX_CLEAN,    /* topod's own thread shows no AVX-512 state: arch_status tells */
        KERNEL_AVX_POLLUTED, /* topod's own thread shows it: arch_status tells nothing */
        _KERNEL_AVX_MAX,
} KernelAvxEvidence;

/* After a sleep that switched the probing thread out, AVX512_elapsed_ms at
 * most this: its state was dirty at that switch. A stale timestamp (one
 * inherited at fork, or from before the registers were reset) is older. */
#define KERNEL_AVX_POLLUTED_MS 50u

/* Inline: the checker uses it without the probe. */
static inline const char *kernel_avx_evidence_to_string(KernelAvxEvidence e) {
        static const char *const names[_KERNEL_AVX_MAX] = {
                [KERNEL_AVX_NONE] = "none",
                [KERNEL_AVX_CLEAN] = "clean",
                [KERNEL_AVX_POLLUTED] = "polluted",
        };

        return e >= 0 && e < _KERNEL_AVX_MAX ? names[e] : "unknown";
}

typedef struct KernelCaps {
        CapStatus core_sched;

        CapStatus smt;
        bool smt_active;
        char *smt_control; /* "on", "off", "forceoff", "notsupported", … or NULL */

        CapStatus cgroup2;
        char *cgroup2_mount;        /* path as the kernel sees it, or NULL */
        bool cgroup_hybrid;         /* cgroup v1 hierarchies mounted beside it */
        char **cgroup2_controllers; /* cgroup.controllers of the mount */
        char **cgroup2_subtree;     /* cgroup.subtree_control of the mount */
        char **cgroup_v1_controllers; /* controllers bound to v1 hierarchies */

        CapStatus debugfs;
        char *debugfs_mount;

        CapStatus sched_features;
        bool features_readable;
        bool features_writable;
        int features_write_error; /* negative errno from the write-open, or 0 */
        char **features;          /* tokens as listed: "TTWU_QUEUE", "NO_HRTICK", … */

        CapStatus cgroup_mode;
        char **cgroup_modes;      /* as listed by the kernel, never hard-coded */
        char *cgroup_mode_active; /* the parenthesised one, or NULL */
        bool cgroup_mode_writable;

        CapStatus sched_settings; /* how many of the catalog's this kernel has, and writable */
        KernelSetting *settings;  /* one per sched_settings[] entry, in its order */
        size_t n_settings;

        CapStatus sched_ext;
        char *sched_ext_state; /* "disabled", "enabled", … or NULL */
        char *sched_ext_ops;   /* name of the loaded scheduler, or NULL */
        bool sched_ext_active;

        CapStatus proc_connector;
        CapStatus avx512_state;
        /* Whether arch_status tells AVX-512 work from the rest here
         * (kernelcaps_avx512_arch_status_tells()): available = clean;
         * else none (no AVX-512 line) or polluted, the reason saying why. */
        CapStatus avx512_evidence;
        /* kernel.sched_schedstats: available = on, so the kernel accounts
         * forced idle (observe/forced-idle.h); kernelcaps_refresh_schedstats() */
        CapStatus schedstats;
        /* Hardware counters of AVX-512 work (observe/counters.h): available
         * = an event resolved and opened here; they then decide avx. */
        CapStatus avx512_counters;
        CounterState avx512_counter_state;
        CounterAttr avx512_counter_attr;
        char *avx512_counter_event;
        KernelAvxEvidence avx512_arch_status;
        CapStatus pidfs; /* a pidfd's inode number names its struct pid (6.9, 64-bit) */

        char *lockdown; /* "none", "integrity", "confidentiality", or NULL when unknown */
        bool syscalls_from_host; /* the syscall probes ran on this kernel, not the root's */
} KernelCaps;

/* arch_status alone may vote avx: the AVX-512 line is there and clean. */
static inline bool kernelcaps_avx512_arch_status_tells(const KernelCaps *c) {
        return c && c->avx512_arch_status == KERNEL_AVX_CLEAN;
}

/* Hardware counters decide avx here. */
static inline bool kernelcaps_avx512_counters(const KernelCaps *c) {
        return c && c->avx512_counters.available;
}

/* Some evidence here tells AVX-512 work: counters, or a clean arch_status. */
static inline bool kernelcaps_avx512_tellable(const KernelCaps *c) {
        return kernelcaps_avx512_counters(c) || kernelcaps_avx512_arch_status_tells(c);
}

typedef struct KernelProbeOps {
        /* prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET) on ourselves: 0 or negative errno. */
        int (*core_sched_get)(void *userdata);
        /* Open, bind and subscribe a proc-connector socket: 0 or negative errno. */
        int (*proc_connector)(void *userdata);
        /* Are pidfds inodes of pidfs, one number per process? 1, 0, or
         * negative errno. NULL: not probed (not available). */
        int (*pidfs)(void *userdata);
        /* The AVX-512 counter probe (observe/counters.h): 0 and *ret, or
         * -ENOMEM. NULL: not probed (no counters). */
        int (*counters)(CounterProbe *ret, void *userdata);
        void *userdata;
} KernelProbeOps;

/* The real syscalls. */
extern const KernelProbeOps kernel_probe_ops_host;

int kernelcaps_probe(const Root *root, const KernelProbeOps *ops, KernelCaps **ret);

/* The probe of another host, from its `topoctl status --json` (the kernel
 * object, or a running topod's status holding it as "kernel"): to check
 * and plan for that host class here (kernelcaps-json.c). 0 and *ret;
 * -EINVAL with *ret_error saying why (a line, the missing object);
 * -ENOMEM. */
int kernelcaps_from_json(const char *text, size_t len, KernelCaps **ret, char **ret_error);
/* The same from a file (at most KERNELCAPS_JSON_MAX bytes); *ret_error
 * names the file. */
#define KERNELCAPS_JSON_MAX (4u * 1024u * 1024u)
int kernelcaps_load_json_file(const char *path, KernelCaps **ret, char **ret_error);
KernelCaps *kernelcaps_free(KernelCaps *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(KernelCaps *, kernelcaps_free);

/* Whether the kernel has core scheduling, usable now or once SMT is
 * switched on (PR_SCHED_CORE_GET gave ENODEV: built in, no SMT sibling
 * online; and smt/control is "off" or "on", not forceoff, notsupported
 * or notimplemented). */
bool kernelcaps_core_sched_built(const KernelCaps *c);

/* Read again what forbids cookies and can change while topod runs: SMT
 * switched off or on (smt/active), a sched_ext scheduler loaded or
 * unloaded (sched_ext/state). Their reasons are rewritten too. When SMT
 * changed on a kernel with core scheduling built in, core_sched is probed
 * again through ops (NULL: the real syscall), so a topod started with SMT
 * off gives cookies once it is on. 1 when smt_active or sched_ext_active
 * changed, 0 when neither did, negative errno (ENOMEM). */
int kernelcaps_refresh_interlocks(KernelCaps *c, const Root *root, const KernelProbeOps *ops);
/* Read again the value of each scheduler setting the probe found readable
 * (what topod, an operator or the kernel wrote since): 1 when a value
 * changed, 0 when none, negative errno only for out of memory. What was
 * absent, unknown or unreadable stays as probed. */
int kernelcaps_refresh_settings(KernelCaps *c, const Root *root);
/* kernel.sched_schedstats read again (anyone may switch it): 1 when it
 * changed, 0, or -ENOMEM. */
int kernelcaps_refresh_schedstats(KernelCaps *c, const Root *root);

/* The kernel's side of a setting of the catalog (absent ones have file
 * NULL); NULL only for caps that were not probed for settings. Inline: the
 * pure checker reads it from the values alone. */
static inline const KernelSetting *kernelcaps_setting(const KernelCaps *c, const SchedSettingInfo *info) {
        size_t i = sched_setting_index(info);

        return i < c->n_settings ? &c->settings[i] : NULL;
}

/* Parse the text of sched/cgroup_mode ("up smp (concur) max tasks "). */
int kernelcaps_parse_cgroup_mode(const char *text, char ***ret_modes, char **ret_active);

/* Parse /proc/self/mountinfo text: the first cgroup2 and debugfs mount points
 * (unescaped) and whether any cgroup v1 hierarchy is mounted. Outputs may be
 * NULL; missing mounts give NULL strings. */
int kernelcaps_parse_mountinfo(const char *text, char **ret_cgroup2, char **ret_debugfs, bool *ret_has_v1);

/* Parse /proc/cgroups text: the controllers bound to a cgroup v1 hierarchy
 * (hierarchy id != 0) and enabled. */
int kernelcaps_parse_proc_cgroups(const char *text, char ***ret_v1_bound);
