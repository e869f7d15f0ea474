/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "kernelcaps.h"

#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/sched-core.h"
#include "base/util.h"
#include "observe/events.h"
#include "observe/procfs.h"


/* Limits on what a (possibly fake) tree can make us hold. */
#define CAPS_TOKENS_MAX 4096
#define CAPS_TEXT_MAX (1024u * 1024u)

static int host_core_sched_get(void *userdata) {
        unsigned long cookie = 0;

        (void) userdata;
        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, 0, PR_SCHED_CORE_SCOPE_THREAD, (unsigned long) &cookie) < 0)
                return negative_errno();
        return 0;
}

/* Subscribe and wait up to 200 ms for the kernel's acknowledgement, which
 * says whether the subscription was accepted. Any real event also proves it
 * works. */
static int host_proc_connector(void *userdata) {
        _cleanup_(proc_events_freep) ProcEvents *e = NULL;
        struct pollfd p;
        int k;

        (void) userdata;
        k = proc_events_open(&e);
        if (k < 0)
                return k;
        p = (struct pollfd) { .fd = proc_events_fd(e), .events = POLLIN };
        for (int tries = 0; tries < 16; tries++) {
                TaskEvent ev[16];
                size_t n;

                if (poll(&p, 1, 200) <= 0)
                        return -ETIMEDOUT;
                k = proc_events_read(e, ev, ELEMENTSOF(ev), &n);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < n; i++)
                        if (ev[i].type == TASK_EVENT_ACK)
                                return ev[i].error;
                if (n > 0)
                        return 0;
        }
        return -ETIMEDOUT;
}

#define CAPS_PIDFS_MAGIC 0x50494446 /* linux/magic.h PID_FS_MAGIC, 6.9 */

static int host_pidfs(void *userdata) {
        _cleanup_close_ int a = -EBADF, b = -EBADF, c = -EBADF;
        struct statfs sf;
        struct stat sa, sb, sc;

        (void) userdata;
        if (sizeof(sa.st_ino) < 8 || sizeof(long) < 8)
                return 0; /* 32-bit: pidfs numbers are not unique there */
        a = (int) syscall(SYS_pidfd_open, getpid(), 0);
        if (a < 0)
                return errno == ENOSYS ? 0 : negative_errno();
        b = (int) syscall(SYS_pidfd_open, getpid(), 0);
        if (b < 0)
                return negative_errno();
        if (fstatfs(a, &sf) < 0 || fstat(a, &sa) < 0 || fstat(b, &sb) < 0)
                return negative_errno();
        if (sf.f_type != CAPS_PIDFS_MAGIC || sa.st_ino != sb.st_ino)
                return 0; /* anon inodes (before 6.9): one number for all */
        /* Another process has another number (init's, unless we are it). */
        if (getpid() == 1)
                return 1;
        c = (int) syscall(SYS_pidfd_open, 1, 0);
        if (c < 0 || fstat(c, &sc) < 0)
                return negative_errno();
        return sc.st_ino != sa.st_ino;
}

static int host_counters(CounterProbe *ret, void *userdata) {
        (void) userdata;
        return counters_probe(NULL, ret);
}

const KernelProbeOps kernel_probe_ops_host = {
        .core_sched_get = host_core_sched_get,
        .proc_connector = host_proc_connector,
        .pidfs = host_pidfs,
        .counters = host_counters,
};

static void cap_clear(CapStatus *c) {
        free(c->reason);
        c->reason = NULL;
}

KernelCaps *kernelcaps_free(KernelCaps *c) {
        if (!c)
                return NULL;
        CapStatus *all[] = {
                &c->core_sched, &c->smt, &c->cgroup2, &c->debugfs, &c->sched_features,
                &c->cgroup_mode, &c->sched_settings, &c->sched_ext, &c->proc_connector, &c->avx512_state, &c->avx512_evidence, &c->schedstats, &c->avx512_counters, &c->pidfs,
        };
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                cap_clear(all[i]);
        free(c->smt_control);
        free(c->avx512_counter_event);
        free(c->cgroup2_mount);
        strv_free(c->cgroup2_controllers);
        strv_free(c->cgroup2_subtree);
        strv_free(c->cgroup_v1_controllers);
        free(c->debugfs_mount);
        strv_free(c->features);
        strv_free(c->cgroup_modes);
        free(c->cgroup_mode_active);
        for (size_t i = 0; i < c->n_settings; i++)
                strv_free(c->settings[i].choices);
        free(c->settings);
        free(c->sched_ext_state);
        free(c->sched_ext_ops);
        free(c->lockdown);
        free(c);
        return NULL;
}

_printf_(4, 5) static int cap_set(CapStatus *c, bool available, int error, const char *fmt, ...) {
        va_list ap;
        char *s;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        free(c->reason);
        c->reason = s;
        c->available = available;
        c->error = error;
        return 0;
}

/* Undo mountinfo's octal escapes (\040 for space etc.) in place. */
static void unescape_octal(char *s) {
        char *w = s;

        for (char *r = s; *r; r++) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
                    r[3] <= '7') {
                        *w++ = (char) ((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
                        r += 3;
                } else
                        *w++ = *r;
        }
        *w = '\0';
}

int kernelcaps_parse_mountinfo(const char *text, char **ret_cgroup2, char **ret_debugfs, bool *ret_has_v1) {
        _cleanup_free_ char *copy = strdup(text), *cg2 = NULL, *dbg = NULL;
        bool has_v1 = false;
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *fields[8] = {};
                char *sep, *fs, *fsave = NULL;
                size_t n = 0;

                /* The optional fields end at " - "; fstype follows it. */
                sep = strstr(line, " - ");
                if (!sep)
                        continue;
                *sep = '\0';
                fs = strtok_r(sep + 3, " ", &fsave);
                if (!fs)
                        continue;
                for (char *f = strtok_r(line, " ", &fsave); f && n < ELEMENTSOF(fields); f = strtok_r(NULL, " ", &fsave))
                        fields[n++] = f;
                if (n < 5)
                        continue;
                /* fields[4] is the mount point. */
                if (streq(fs, "cgroup2") && !cg2) {
                        cg2 = strdup(fields[4]);
                        if (!cg2)
                                return -ENOMEM;
                        unescape_octal(cg2);
                } else if (streq(fs, "debugfs") && !dbg) {
                        dbg = strdup(fields[4]);
                        if (!dbg)
                                return -ENOMEM;
                        unescape_octal(dbg);
                } else if (streq(fs, "cgroup"))
                        has_v1 = true;
        }
        if (ret_cgroup2)
                *ret_cgroup2 = TAKE_PTR(cg2);
        if (ret_debugfs)
                *ret_debugfs = TAKE_PTR(dbg);
        if (ret_has_v1)
                *ret_has_v1 = has_v1;
        return 0;
}

int kernelcaps_parse_proc_cgroups(const char *text, char ***ret_v1_bound) {
        _cleanup_strv_free_ char **bound = calloc(1, sizeof(char *));
        _cleanup_free_ char *copy = strdup(text);
        char *save = NULL;
        int k;

        if (!copy || !bound)
                return -ENOMEM;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char name[64];
                unsigned hierarchy, num, enabled;

                if (line[0] == '#')
                        continue;
                if (sscanf(line, "%63s %u %u %u", name, &hierarchy, &num, &enabled) != 4)
                        continue;
                if (hierarchy == 0 || !enabled)
                        continue;
                if (strv_length(bound) >= CAPS_TOKENS_MAX)
                        return -E2BIG;
                k = strv_push_dup(&bound, name);
                if (k < 0)
                        return k;
        }
        *ret_v1_bound = TAKE_PTR(bound);
        return 0;
}

int kernelcaps_parse_cgroup_mode(const char *text, char ***ret_modes, char **ret_active) {
        _cleanup_strv_free_ char **tokens = NULL, **modes = calloc(1, sizeof(char *));
        _cleanup_free_ char *active = NULL;
        int k;

        if (!modes)
                return -ENOMEM;
        k = strv_split_ws(text, CAPS_TOKENS_MAX, &tokens);
        if (k < 0)
                return k;
        for (char **t = tokens; *t; t++) {
                size_t len = strlen(*t);
                char *name = *t;

                if (name[0] == '(' || name[0] == '[') {
                        char close = name[0] == '(' ? ')' : ']';

                        if (len < 3 || name[len - 1] != close)
                                return -EINVAL;
                        if (active) /* two active modes: not the format we know */
                                return -EINVAL;
                        name[len - 1] = '\0';
                        name++;
                        active = strdup(name);
                        if (!active)
                                return -ENOMEM;
                }
                for (const char *c = name; *c; c++)
                        if (!(*c >= 'a' && *c <= 'z') && !(*c >= '0' && *c <= '9') && *c != '_' && *c != '-')
                                return -EINVAL;
                k = strv_push_dup(&modes, name);
                if (k < 0)
                        return k;
        }
        if (strv_length(modes) == 0)
                return -EINVAL;
        *ret_modes = TAKE_PTR(modes);
        if (ret_active)
                *ret_active = TAKE_PTR(active);
        return 0;
}

static const char *errno_hint(int err) {
        switch (-err) {
        case EPERM:
                return "refused by the kernel (lockdown?)";
        case EACCES:
                return "permission denied (not root?)";
        case ENOENT:
                return "not present";
        default:
                return "failed";
        }
}

static int probe_core_sched(KernelCaps *c, const KernelProbeOps *ops) {
        int k = ops->core_sched_get(ops->userdata);

        switch (-k) {
        case 0:
                return cap_set(&c->core_sched, true, 0, "usable (PR_SCHED_CORE_GET succeeded)");
        case EINVAL:
                /* The prctl option itself is unknown: CONFIG_SCHED_CORE=n. */
                return cap_set(&c->core_sched, false, k,
                               "kernel built without core scheduling (CONFIG_SCHED_CORE): PR_SCHED_CORE_GET gave EINVAL");
        case ENODEV:
                /* Built in, but sched_smt_present is false. */
                return cap_set(&c->core_sched, false, k,
                               "no SMT: core scheduling needs SMT siblings (PR_SCHED_CORE_GET gave ENODEV)");
        case EPERM:
                return cap_set(&c->core_sched, false, k, "PR_SCHED_CORE_GET refused (EPERM): seccomp or LSM policy?");
        default:
                return cap_set(&c->core_sched, false, k, "PR_SCHED_CORE_GET failed: %s", errno_name(k));
        }
}

static int probe_smt(KernelCaps *c, const Root *root) {
        _cleanup_free_ char *active = NULL;
        int k;

        k = root_read_line(root, "sys/devices/system/cpu/smt/control", &c->smt_control);
        if (k < 0 && k != -ENOENT)
                return cap_set(&c->smt, false, k, "cannot read smt/control: %s", errno_name(k));
        k = root_read_line(root, "sys/devices/system/cpu/smt/active", &active);
        if (k == -ENOENT)
                return cap_set(&c->smt, false, k, "kernel has no SMT control (sys/devices/system/cpu/smt missing)");
        if (k < 0)
                return cap_set(&c->smt, false, k, "cannot read smt/active: %s", errno_name(k));
        c->smt_active = streq(strstrip(active), "1");
        if (c->smt_active)
                return cap_set(&c->smt, true, 0, "active (control: %s)", c->smt_control ?: "unknown");
        return cap_set(&c->smt, false, 0, "inactive (control: %s)", c->smt_control ?: "unknown");
}

static int read_tokens(const Root *root, const char *path, char ***ret) {
        _cleanup_free_ char *text = NULL;
        int k;

        k = root_read_file(root, path, CAPS_TEXT_MAX, &text, NULL);
        if (k < 0)
                return k;
        return strv_split_ws(text, CAPS_TOKENS_MAX, ret);
}

static int probe_cgroup2(KernelCaps *c, const Root *root, const char *mountinfo) {
        _cleanup_free_ char *path = NULL, *cgroups = NULL, *have = NULL, *v1 = NULL;
        bool has_v1 = false;
        int k;

        k = kernelcaps_parse_mountinfo(mountinfo, &c->cgroup2_mount, NULL, &has_v1);
        if (k < 0)
                return k;
        c->cgroup_hybrid = has_v1 && c->cgroup2_mount;
        if (root_read_file(root, "proc/cgroups", CAPS_TEXT_MAX, &cgroups, NULL) >= 0) {
                k = kernelcaps_parse_proc_cgroups(cgroups, &c->cgroup_v1_controllers);
                if (k < 0 && k != -E2BIG)
                        return k;
        }
        if (!c->cgroup2_mount)
                return cap_set(&c->cgroup2, false, -ENOENT,
                               has_v1 ? "cgroup2 not mounted (cgroup v1 only)" : "cgroup2 not mounted");

        if (asprintf(&path, "%s/cgroup.controllers", c->cgroup2_mount) < 0)
                return -ENOMEM;
        k = read_tokens(root, path, &c->cgroup2_controllers);
        if (k < 0)
                return cap_set(&c->cgroup2, false, k, "mounted at %s, but %s unreadable: %s", c->cgroup2_mount, path,
                               errno_name(k));
        free(path);
        if (asprintf(&path, "%s/cgroup.subtree_control", c->cgroup2_mount) < 0)
                return -ENOMEM;
        (void) read_tokens(root, path, &c->cgroup2_subtree);

        k = strv_join(c->cgroup2_controllers, " ", &have);
        if (k < 0)
                return k;
        if (strv_contains(c->cgroup2_controllers, "cpu") && strv_contains(c->cgroup2_controllers, "cpuset"))
                return cap_set(&c->cgroup2, true, 0, "mounted at %s%s, controllers: %s", c->cgroup2_mount,
                               c->cgroup_hybrid ? " (hybrid with cgroup v1)" : "", have);

        /* Mounted, but the controllers topod needs are elsewhere. */
        {
                _cleanup_strv_free_ char **held = NULL;

                for (const char *const *n = (const char *const[]) { "cpu", "cpuset", NULL }; *n; n++)
                        if (strv_contains(c->cgroup_v1_controllers, *n) && (k = strv_push_dup(&held, *n)) < 0)
                                return k;
                if (held) {
                        k = strv_join(held, ", ", &v1);
                        if (k < 0)
                                return k;
                }
        }
        return cap_set(&c->cgroup2, false, -ENODEV, "mounted at %s%s, but without the cpu and cpuset controllers "
                       "(available: %s)%s%s%s",
                       c->cgroup2_mount, c->cgroup_hybrid ? " in the hybrid v1+v2 layout" : "",
                       *have ? have : "none", v1 ? "; " : "", v1 ?: "", v1 ? " bound to cgroup v1" : "");
}

/* 1 when the file can be opened for writing, else negative errno. Opening
 * writes nothing. */
static int probe_writable(const Root *root, const char *path) {
        int fd = root_openat(root, path, O_WRONLY | O_NOCTTY);

        if (fd < 0)
                return fd;
        close(fd);
        return 1;
}

static int probe_debugfs(KernelCaps *c, const Root *root, const char *mountinfo) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int k, w;

        k = kernelcaps_parse_mountinfo(mountinfo, NULL, &c->debugfs_mount, NULL);
        if (k < 0)
                return k;
        if (!c->debugfs_mount) {
                k = cap_set(&c->debugfs, false, -ENOENT, "not mounted (mount -t debugfs none /sys/kernel/debug)");
                if (k >= 0)
                        k = cap_set(&c->sched_features, false, -ENOENT, "debugfs not mounted");
                if (k >= 0)
                        k = cap_set(&c->cgroup_mode, false, -ENOENT, "debugfs not mounted");
                return k;
        }
        k = cap_set(&c->debugfs, true, 0, "mounted at %s", c->debugfs_mount);
        if (k < 0)
                return k;

        /* sched/features: read the list; write-open to learn if lockdown refuses. */
        if (asprintf(&path, "%s/sched/features", c->debugfs_mount) < 0)
                return -ENOMEM;
        k = read_tokens(root, path, &c->features);
        if (k < 0)
                k = cap_set(&c->sched_features, false, k, "%s: %s (%s)", path, errno_hint(k), errno_name(k));
        else {
                c->features_readable = true;
                w = probe_writable(root, path);
                c->features_writable = w > 0;
                c->features_write_error = w > 0 ? 0 : w;
                if (w > 0)
                        k = cap_set(&c->sched_features, true, 0, "%zu features, readable and writable",
                                    strv_length(c->features));
                else
                        k = cap_set(&c->sched_features, true, w, "%zu features, read-only: write %s (%s)",
                                    strv_length(c->features), errno_hint(w), errno_name(w));
        }
        if (k < 0)
                return k;

        free(path);
        if (asprintf(&path, "%s/sched/cgroup_mode", c->debugfs_mount) < 0)
                return -ENOMEM;
        k = root_read_file(root, path, CAPS_TEXT_MAX, &text, NULL);
        if (k == -ENOENT)
                return cap_set(&c->cgroup_mode, false, k, "absent: kernel without flattened-pick cgroup modes (before 7.3)");
        if (k < 0)
                return cap_set(&c->cgroup_mode, false, k, "%s: %s (%s)", path, errno_hint(k), errno_name(k));
        k = kernelcaps_parse_cgroup_mode(text, &c->cgroup_modes, &c->cgroup_mode_active);
        if (k < 0)
                return cap_set(&c->cgroup_mode, false, k, "%s: unexpected format", path);
        w = probe_writable(root, path);
        c->cgroup_mode_writable = w > 0;
        {
                _cleanup_free_ char *list = NULL;

                k = strv_join(c->cgroup_modes, " ", &list);
                if (k < 0)
                        return k;
                return cap_set(&c->cgroup_mode, true, w > 0 ? 0 : w, "modes: %s; active: %s%s%s", list,
                               c->cgroup_mode_active ?: "none", w > 0 ? "" : "; read-only: ",
                               w > 0 ? "" : errno_hint(w));
        }
}

/* One setting: the first of its names the kernel has, its value, and
 * whether it opens for writing. A name is there when it reads, or when the
 * read gives EPERM (lockdown refuses only files that exist); any other
 * error (EACCES: /sys/kernel/debug is 0700, so every file as non-root)
 * tells neither way: file stays NULL and error keeps the first such. */
static int probe_setting(const Root *root, const char *debugfs_mount, KernelSetting *ks) {
        int unknown = 0;

        for (size_t f = 0; f < ks->info->n_files; f++) {
                _cleanup_free_ char *path = NULL, *text = NULL;
                int k, w;

                if (asprintf(&path, "%s/sched/%s", debugfs_mount, ks->info->files[f].name) < 0)
                        return -ENOMEM;
                k = root_read_file(root, path, CAPS_TEXT_MAX, &text, NULL);
                if (k == -ENOMEM)
                        return k;
                if (k == -ENOENT)
                        continue;
                if (k < 0 && k != -EPERM) {
                        if (!unknown)
                                unknown = k;
                        continue;
                }
                ks->file = ks->info->files[f].name;
                if (k >= 0)
                        k = sched_setting_text_parse(ks->info->kind, text, ks->value, &ks->choices);
                if (k == -ENOMEM)
                        return k;
                ks->error = k < 0 ? k : 0;
                if (k < 0)
                        ks->value[0] = '\0';
                w = probe_writable(root, path);
                ks->writable = w > 0;
                if (w < 0 && ks->error == 0)
                        ks->error = w;
                return 0;
        }
        ks->error = unknown ?: -ENOENT;
        return 0;
}

/* The hardware counters of AVX-512 work (observe/counters.h). */
static int probe_counters(KernelCaps *c, const KernelProbeOps *ops) {
        CounterProbe p = {};
        int k;

        if (!ops->counters)
                return cap_set(&c->avx512_counters, false, -ENOENT, "not probed: no counters");
        if ((k = ops->counters(&p, ops->userdata)) < 0)
                return k;
        c->avx512_counter_state = p.state;
        c->avx512_counter_attr = p.attr;
        c->avx512_counter_event = TAKE_PTR(p.event);
        k = cap_set(&c->avx512_counters, p.state == COUNTER_AVAILABLE, p.error, "%s: %s",
                    counter_state_to_string(p.state), p.reason ?: "");
        counter_probe_done(&p);
        return k;
}

/* kernel.sched_schedstats: forced idle is accounted only while it is on
 * (observe/forced-idle.h). */
static int probe_schedstats(KernelCaps *c, const Root *root) {
        _cleanup_free_ char *text = NULL;
        int k;

        k = root_read_file(root, "proc/sys/kernel/sched_schedstats", 64, &text, NULL);
        if (k == -ENOENT)
                return cap_set(&c->schedstats, false, k,
                               "no kernel.sched_schedstats (CONFIG_SCHEDSTATS off): the kernel accounts no forced idle");
        if (k < 0)
                return cap_set(&c->schedstats, false, k, "kernel.sched_schedstats unreadable: %s", errno_name(k));
        if (text[0] == '1')
                return cap_set(&c->schedstats, true, 0,
                               "on (kernel.sched_schedstats = 1): the kernel accounts forced idle");
        return cap_set(&c->schedstats, false, -ENODATA,
                       "off (kernel.sched_schedstats = 0): the kernel accounts no forced idle, so forced idle reads 0 "
                       "and [when] forced_idle always holds; turn it on to measure what cookies cost");
}

int kernelcaps_refresh_schedstats(KernelCaps *c, const Root *root) {
        bool was = c->schedstats.available;
        int k = probe_schedstats(c, root);

        return k < 0 ? k : was != c->schedstats.available;
}

int kernelcaps_refresh_settings(KernelCaps *c, const Root *root) {
        int changed = 0;

        for (size_t i = 0; i < c->n_settings && c->debugfs_mount; i++) {
                KernelSetting *ks = &c->settings[i];
                _cleanup_free_ char *path = NULL, *text = NULL;
                char value[SCHED_SETTING_VALUE_MAX];
                int k;

                if (!ks->file || ks->error < 0)
                        continue; /* absent, unknown or unreadable: as probed */
                if (asprintf(&path, "%s/sched/%s", c->debugfs_mount, ks->file) < 0)
                        return -ENOMEM;
                k = root_read_file(root, path, CAPS_TEXT_MAX, &text, NULL);
                if (k == -ENOMEM)
                        return k;
                if (k < 0 || sched_setting_text_parse(ks->info->kind, text, value, NULL) < 0)
                        continue; /* the probe's value stands; the next read may work */
                if (strcmp(value, ks->value) != 0) {
                        snprintf(ks->value, sizeof(ks->value), "%s", value);
                        changed = 1;
                }
        }
        return changed;
}

static int probe_sched_settings(KernelCaps *c, const Root *root) {
        size_t found = 0, writable = 0, unknown = 0;
        int k, refused = 0, unknown_error = 0;

        c->settings = calloc(sched_settings_count, sizeof(KernelSetting));
        if (!c->settings)
                return -ENOMEM;
        c->n_settings = sched_settings_count;
        for (size_t i = 0; i < c->n_settings; i++) {
                c->settings[i] = (KernelSetting) { .info = &sched_settings[i], .error = -ENOENT };
                if (c->debugfs_mount && (k = probe_setting(root, c->debugfs_mount, &c->settings[i])) < 0)
                        return k;
                found += c->settings[i].file != NULL;
                writable += c->settings[i].writable;
                if (c->settings[i].file && !c->settings[i].writable && !refused)
                        refused = c->settings[i].error;
                if (kernelcaps_setting_unknown(&c->settings[i])) {
                        unknown++;
                        if (!unknown_error)
                                unknown_error = c->settings[i].error;
                }
        }
        if (!c->debugfs_mount)
                return cap_set(&c->sched_settings, false, -ENOENT, "debugfs not mounted");
        if (found == 0 && unknown > 0)
                return cap_set(&c->sched_settings, false, unknown_error,
                               "cannot tell which of the %zu settings topod knows the kernel has: %s (%s)",
                               c->n_settings, errno_hint(unknown_error), errno_name(unknown_error));
        if (found == 0)
                return cap_set(&c->sched_settings, false, -ENOENT, "none of the %zu settings topod knows is under sched/",
                               c->n_settings);
        if (unknown > 0)
                return cap_set(&c->sched_settings, true, unknown_error,
                               "%zu of the %zu settings topod knows found, %zu writable; %zu cannot tell: %s", found,
                               c->n_settings, writable, unknown, errno_hint(unknown_error));
        return cap_set(&c->sched_settings, true, refused, "%zu of the %zu settings topod knows found, %zu writable%s%s",
                       found, c->n_settings, writable, refused ? ": write " : "", refused ? errno_hint(refused) : "");
}

static int probe_sched_ext(KernelCaps *c, const Root *root) {
        int k;

        k = root_read_line(root, "sys/kernel/sched_ext/state", &c->sched_ext_state);
        if (k == -ENOENT)
                return cap_set(&c->sched_ext, false, k, "kernel built without sched_ext (CONFIG_SCHED_CLASS_EXT)");
        if (k < 0)
                return cap_set(&c->sched_ext, false, k, "cannot read sched_ext/state: %s", errno_name(k));
        strstrip(c->sched_ext_state);
        (void) root_read_line(root, "sys/kernel/sched_ext/root/ops", &c->sched_ext_ops);
        c->sched_ext_active = !streq(c->sched_ext_state, "disabled");
        if (c->sched_ext_active)
                return cap_set(&c->sched_ext, true, 0,
                               "a BPF scheduler is %s (%s): topod will not set core-scheduling cookies beside it",
                               c->sched_ext_state, c->sched_ext_ops ?: "unknown");
        return cap_set(&c->sched_ext, true, 0, "built in, no BPF scheduler loaded");
}

bool kernelcaps_core_sched_built(const KernelCaps *c) {
        /* ENODEV: built in, SMT off; unless SMT can never come on
         * (forceoff, notsupported, notimplemented). */
        return c->core_sched.available ||
               (c->core_sched.error == -ENODEV && c->smt_control &&
                (streq(c->smt_control, "off") || streq(c->smt_control, "on")));
}

int kernelcaps_refresh_interlocks(KernelCaps *c, const Root *root, const KernelProbeOps *ops) {
        bool smt = c->smt_active, ext = c->sched_ext_active;
        int k;

        /* As a first probe finds them: what cannot be read is off. */
        c->smt_control = mfree(c->smt_control);
        c->sched_ext_state = mfree(c->sched_ext_state);
        c->sched_ext_ops = mfree(c->sched_ext_ops);
        c->smt_active = c->sched_ext_active = false;
        if ((k = probe_smt(c, root)) < 0 || (k = probe_sched_ext(c, root)) < 0)
                return k;
        /* Core scheduling built in answers ENODEV while SMT is off and
         * works once it is on: ask the kernel again. */
        if (smt != c->smt_active && kernelcaps_core_sched_built(c) &&
            (k = probe_core_sched(c, ops ?: &kernel_probe_ops_host)) < 0)
                return k;
        return smt != c->smt_active || ext != c->sched_ext_active;
}

static int probe_proc_connector(KernelCaps *c, const KernelProbeOps *ops) {
        int k = ops->proc_connector(ops->userdata), r;

        switch (-k) {
        case 0:
                return cap_set(&c->proc_connector, true, 0, "usable (subscription acknowledged)");
        case EPROTONOSUPPORT:
                r = cap_set(&c->proc_connector, false, k, "kernel built without the connector (CONFIG_CONNECTOR)");
                break;
        case EPERM:
        case EACCES:
                r = cap_set(&c->proc_connector, false, k, "subscription refused (%s): needs CAP_NET_ADMIN",
                            errno_name(k));
                break;
        case ETIMEDOUT:
                r = cap_set(&c->proc_connector, false, k,
                            "no acknowledgement: kernel without process events (CONFIG_PROC_EVENTS)?");
                break;
        default:
                r = cap_set(&c->proc_connector, false, k, "failed: %s", errno_name(k));
        }
        if (r < 0)
                return r;
        /* Say what happens instead. */
        {
                char *s;

                if (asprintf(&s, "%s; new and renamed tasks are seen by polling /proc instead", c->proc_connector.reason) < 0)
                        return -ENOMEM;
                free(c->proc_connector.reason);
                c->proc_connector.reason = s;
        }
        return 0;
}

static int probe_arch_status(KernelCaps *c, const Root *root) {
        _cleanup_free_ char *text = NULL;
        int k;

        k = root_read_file(root, "proc/self/arch_status", 64 * 1024, &text, NULL);
        if (k == -ENOENT)
                return cap_set(&c->avx512_state, false, k,
                               "no /proc/<pid>/arch_status (not x86, or CONFIG_PROC_PID_ARCH_STATUS off)");
        if (k < 0)
                return cap_set(&c->avx512_state, false, k, "arch_status unreadable: %s", errno_name(k));
        if (strstr(text, "AVX512_elapsed_ms:"))
                return cap_set(&c->avx512_state, true, 0, "arch_status reports AVX512_elapsed_ms");
        return cap_set(&c->avx512_state, false, -ENODATA,
                       "arch_status has no AVX512_elapsed_ms line: CPU without AVX-512 (AVX classes need explicit rules)");
}

/* What every program linked against this C library does: its string
 * functions on buffers long enough for their vector paths (called through
 * volatile pointers, so that the compiler's builtins do not stand in). If
 * the library picks EVEX variants, this leaves AVX-512 registers dirty in
 * our thread, as it does in every other process of the host. */
static void exercise_libc_strings(void) {
        static char a[4096], b[4096];
        void *(*volatile set)(void *, int, size_t) = memset;
        void *(*volatile copy)(void *, const void *, size_t) = memcpy;
        size_t (*volatile len)(const char *) = strlen;
        void *(*volatile chr)(const void *, int, size_t) = memchr;
        int (*volatile cmp)(const void *, const void *, size_t) = memcmp;

        set(a, 'x', sizeof(a) - 1);
        copy(b, a, sizeof(b));
        (void) len(b);
        (void) chr(b, 'y', sizeof(b));
        (void) cmp(a, b, sizeof(a));
}

/* Our own thread's AVX512_elapsed_ms right after the C library's string
 * functions and a short sleep (which switched the thread out, and so made
 * the kernel look at its registers): see KernelAvxEvidence. Through the
 * root: a recorded machine's file says what that machine's topod saw. */
static int probe_avx512_evidence(KernelCaps *c, const Root *root) {
        struct timespec ms = { .tv_nsec = 1000 * 1000 };
        _cleanup_free_ char *text = NULL;
        uint64_t elapsed = 0;
        ProcAvx kind;
        int k;

        c->avx512_arch_status = KERNEL_AVX_NONE;
        if (!c->avx512_state.available)
                return cap_set(&c->avx512_evidence, false, c->avx512_state.error,
                               "none: no AVX-512 line in arch_status (explicit rules name AVX work)");
        exercise_libc_strings();
        (void) nanosleep(&ms, NULL);
        k = root_read_file(root, "proc/thread-self/arch_status", 64 * 1024, &text, NULL);
        if (k == -ENOENT)
                k = root_read_file(root, "proc/self/arch_status", 64 * 1024, &text, NULL);
        if (k < 0 || procfs_parse_arch_status(text, strlen(text), &kind, &elapsed) < 0)
                return cap_set(&c->avx512_evidence, false, k < 0 ? k : -EBADMSG,
                               "none: topod's own arch_status unreadable, so whether it is polluted cannot be told");
        if (kind == PROC_AVX_ELAPSED && elapsed <= KERNEL_AVX_POLLUTED_MS) {
                c->avx512_arch_status = KERNEL_AVX_POLLUTED;
                return cap_set(&c->avx512_evidence, false, -EDOM,
                               "polluted: topod runs no AVX-512 code, yet its own thread shows AVX-512 register "
                               "state %" PRIu64 " ms after a sleep (the C library's EVEX string functions leave "
                               "it dirty), so every program linked against it looks like an AVX-512 user; "
                               "arch_status never votes avx here",
                               elapsed);
        }
        c->avx512_arch_status = KERNEL_AVX_CLEAN;
        if (kind == PROC_AVX_ELAPSED)
                return cap_set(&c->avx512_evidence, true, 0,
                               "clean: topod's own thread shows no AVX-512 state (its last is %" PRIu64
                               " ms old), so recent AVX-512 state in a thread is its own work",
                               elapsed);
        return cap_set(&c->avx512_evidence, true, 0,
                       "clean: topod's own thread never had AVX-512 state, so recent AVX-512 state in a thread "
                       "is its own work");
}

static int probe_pidfs(KernelCaps *c, const KernelProbeOps *ops) {
        int k;

        if (!ops->pidfs)
                return cap_set(&c->pidfs, false, 0, "not probed");
        k = ops->pidfs(ops->userdata);
        if (k < 0)
                return cap_set(&c->pidfs, false, k, "cannot tell: %s; processes are named by their start times",
                               errno_name(k));
        if (k == 0)
                return cap_set(&c->pidfs, false, 0,
                               "pidfds are not pidfs inodes (before 6.9, or 32-bit): processes are named by their "
                               "start times, read from /proc");
        return cap_set(&c->pidfs, true, 0,
                       "a pidfd's inode names its process: a process pinned to be moved is named by it, "
                       "without a read of /proc/PID/stat");
}

static void probe_lockdown(KernelCaps *c, const Root *root) {
        _cleanup_free_ char *text = NULL;
        char *open, *close;

        if (root_read_line(root, "sys/kernel/security/lockdown", &text) < 0)
                return;
        open = strchr(text, '[');
        close = open ? strchr(open, ']') : NULL;
        if (!open || !close)
                return;
        c->lockdown = strndup(open + 1, (size_t) (close - open - 1));
}

int kernelcaps_probe(const Root *root, const KernelProbeOps *ops, KernelCaps **ret) {
        _cleanup_(kernelcaps_freep) KernelCaps *c = calloc(1, sizeof(KernelCaps));
        _cleanup_free_ char *mountinfo = NULL;
        int k;

        if (!c)
                return -ENOMEM;
        if (!ops)
                ops = &kernel_probe_ops_host;
        c->syscalls_from_host = ops == &kernel_probe_ops_host && !root_is_host(root);

        probe_lockdown(c, root);
        k = root_read_file(root, "proc/self/mountinfo", CAPS_TEXT_MAX, &mountinfo, NULL);
        if (k < 0) {
                /* Without mountinfo neither cgroup2 nor debugfs can be found. */
                mountinfo = strdup("");
                if (!mountinfo)
                        return -ENOMEM;
        }
        if ((k = probe_core_sched(c, ops)) < 0 || (k = probe_smt(c, root)) < 0 ||
            (k = probe_cgroup2(c, root, mountinfo)) < 0 || (k = probe_debugfs(c, root, mountinfo)) < 0 ||
            (k = probe_sched_settings(c, root)) < 0 ||
            (k = probe_sched_ext(c, root)) < 0 || (k = probe_proc_connector(c, ops)) < 0 ||
            (k = probe_arch_status(c, root)) < 0 || (k = probe_avx512_evidence(c, root)) < 0 || (k = probe_schedstats(c, root)) < 0 || (k = probe_counters(c, ops)) < 0 || (k = probe_pidfs(c, ops)) < 0)
                return k;
        *ret = TAKE_PTR(c);
        return 0;
}
