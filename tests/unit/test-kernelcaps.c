/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The capability probe against fake /proc and /sys trees: each capability
 * present, absent and refused. The two syscall probes are stood in for. */

#include <linux/fs.h>
#include <sys/ioctl.h>

#include "base/util.h"
#include "fake-root.h"
#include "observe/kernelcaps.h"

typedef struct FakeSyscalls {
        int core_sched;
        int proc_connector;
        int pidfs;
} FakeSyscalls;

static int fake_core_sched(void *u) {
        return ((FakeSyscalls *) u)->core_sched;
}
static int fake_proc_connector(void *u) {
        return ((FakeSyscalls *) u)->proc_connector;
}

static int fake_pidfs(void *u) {
        return ((FakeSyscalls *) u)->pidfs;
}

static KernelCaps *probe(const char *dir, FakeSyscalls *fs) {
        _cleanup_(root_freep) Root *r = NULL;
        KernelProbeOps ops = { .core_sched_get = fake_core_sched, .proc_connector = fake_proc_connector,
                               .pidfs = fake_pidfs, .userdata = fs };
        KernelCaps *c = NULL;

        ASSERT_OK(root_open(dir, &r));
        ASSERT_OK(kernelcaps_probe(r, &ops, &c));
        return c;
}

#define MOUNTINFO_V2                                                                                    \
        "22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"                  \
        "23 1 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"                  \
        "26 22 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n" \
        "30 22 0:7 / /sys/kernel/debug rw,nosuid,nodev,noexec,relatime shared:15 - debugfs debugfs rw\n"

#define PROC_CGROUPS_V2                                         \
        "#subsys_name\thierarchy\tnum_cgroups\tenabled\n"       \
        "cpuset\t0\t5\t1\ncpu\t0\t5\t1\nmemory\t0\t5\t1\n"

/* A 7.3-like machine where everything is present. */
static char *full_tree(void) {
        char *d = fake_root_new();

        fake_write(d, "proc/self/mountinfo", MOUNTINFO_V2);
        fake_write(d, "proc/cgroups", PROC_CGROUPS_V2);
        fake_write(d, "proc/self/arch_status", "AVX512_elapsed_ms:\t-1\n");
        fake_write(d, "sys/devices/system/cpu/smt/active", "1\n");
        fake_write(d, "sys/devices/system/cpu/smt/control", "on\n");
        fake_write(d, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_write(d, "sys/fs/cgroup/cgroup.subtree_control", "cpu memory\n");
        fake_write(d, "sys/kernel/debug/sched/features", "PLACE_LAG RUN_TO_PARITY NO_NEXT_BUDDY TTWU_QUEUE NO_HRTICK \n");
        fake_write(d, "sys/kernel/debug/sched/cgroup_mode", "up smp (concur) max tasks \n");
        fake_write(d, "sys/kernel/sched_ext/state", "disabled\n");
        fake_write(d, "sys/kernel/security/lockdown", "[none] integrity confidentiality\n");
        return d;
}

static void test_all_present(void) {
        char *d = full_tree();
        FakeSyscalls fs = { 0, 0, 1 };
        _cleanup_(kernelcaps_freep) KernelCaps *c = probe(d, &fs);

        ASSERT_TRUE(c->core_sched.available);
        ASSERT_EQ(c->core_sched.error, 0);
        ASSERT_TRUE(c->smt.available);
        ASSERT_TRUE(c->smt_active);
        ASSERT_STREQ(c->smt_control, "on");
        ASSERT_TRUE(c->cgroup2.available);
        ASSERT_STREQ(c->cgroup2_mount, "/sys/fs/cgroup");
        ASSERT_FALSE(c->cgroup_hybrid);
        ASSERT_TRUE(strv_contains(c->cgroup2_controllers, "cpuset"));
        ASSERT_TRUE(strv_contains(c->cgroup2_subtree, "memory"));
        ASSERT_EQ(strv_length(c->cgroup_v1_controllers), 0);
        ASSERT_TRUE(c->debugfs.available);
        ASSERT_STREQ(c->debugfs_mount, "/sys/kernel/debug");
        ASSERT_TRUE(c->sched_features.available);
        ASSERT_TRUE(c->features_readable);
        ASSERT_TRUE(c->features_writable); /* root can write-open a plain file */
        ASSERT_EQ(strv_length(c->features), 5);
        ASSERT_TRUE(strv_contains(c->features, "NO_HRTICK"));
        ASSERT_TRUE(c->cgroup_mode.available);
        ASSERT_EQ(strv_length(c->cgroup_modes), 5);
        ASSERT_STREQ(c->cgroup_modes[2], "concur");
        ASSERT_STREQ(c->cgroup_mode_active, "concur");
        ASSERT_TRUE(c->sched_ext.available);
        ASSERT_FALSE(c->sched_ext_active);
        ASSERT_TRUE(c->proc_connector.available);
        ASSERT_TRUE(c->avx512_state.available);
        ASSERT_TRUE(c->pidfs.available);
        ASSERT_STREQ(c->lockdown, "none");
        ASSERT_STR_CONTAINS(c->cgroup2.reason, "cpu");
        fake_root_remove(d);
}

/* An empty tree and a kernel that has nothing. */
static void test_all_absent(void) {
        char *d = fake_root_new();
        FakeSyscalls fs = { -EINVAL, -EPROTONOSUPPORT, 0 };
        _cleanup_(kernelcaps_freep) KernelCaps *c = probe(d, &fs);

        ASSERT_FALSE(c->core_sched.available);
        ASSERT_EQ(c->core_sched.error, -EINVAL);
        ASSERT_STR_CONTAINS(c->core_sched.reason, "CONFIG_SCHED_CORE");
        ASSERT_FALSE(c->smt.available);
        ASSERT_EQ(c->smt.error, -ENOENT);
        ASSERT_FALSE(c->cgroup2.available);
        ASSERT_NULL(c->cgroup2_mount);
        ASSERT_STR_CONTAINS(c->cgroup2.reason, "not mounted");
        ASSERT_FALSE(c->debugfs.available);
        ASSERT_FALSE(c->sched_features.available);
        ASSERT_FALSE(c->cgroup_mode.available);
        ASSERT_FALSE(c->sched_ext.available);
        ASSERT_STR_CONTAINS(c->sched_ext.reason, "CONFIG_SCHED_CLASS_EXT");
        ASSERT_FALSE(c->proc_connector.available);
        ASSERT_STR_CONTAINS(c->proc_connector.reason, "CONFIG_CONNECTOR");
        ASSERT_FALSE(c->avx512_state.available);
        ASSERT_FALSE(c->pidfs.available);
        ASSERT_STR_CONTAINS(c->pidfs.reason, "start times");
        ASSERT_NULL(c->lockdown);
        /* Every capability explains itself. */
        ASSERT_NOT_NULL(c->core_sched.reason);
        ASSERT_NOT_NULL(c->smt.reason);
        ASSERT_NOT_NULL(c->cgroup2.reason);
        ASSERT_NOT_NULL(c->debugfs.reason);
        ASSERT_NOT_NULL(c->sched_features.reason);
        ASSERT_NOT_NULL(c->cgroup_mode.reason);
        ASSERT_NOT_NULL(c->sched_ext.reason);
        ASSERT_NOT_NULL(c->proc_connector.reason);
        ASSERT_NOT_NULL(c->avx512_state.reason);
        ASSERT_NOT_NULL(c->pidfs.reason);
        fake_root_remove(d);
}

/* Built in but no SMT; the connector refused without CAP_NET_ADMIN;
 * debugfs mounted on a kernel before 7.3 (no cgroup_mode); a CPU without
 * AVX-512; a BPF scheduler running. */
static void test_partial(void) {
        char *d = full_tree();
        FakeSyscalls fs = { -ENODEV, -EPERM, -EMFILE };
        _cleanup_(kernelcaps_freep) KernelCaps *c = NULL;
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/sys/kernel/debug/sched/cgroup_mode", d);
        ASSERT_EQ(unlink(path), 0);
        fake_write(d, "sys/devices/system/cpu/smt/active", "0\n");
        fake_write(d, "sys/devices/system/cpu/smt/control", "off\n");
        fake_write(d, "proc/self/arch_status", "");
        fake_write(d, "sys/kernel/sched_ext/state", "enabled\n");
        fake_write(d, "sys/kernel/sched_ext/root/ops", "simple\n");

        c = probe(d, &fs);
        ASSERT_FALSE(c->core_sched.available);
        ASSERT_EQ(c->core_sched.error, -ENODEV);
        ASSERT_STR_CONTAINS(c->core_sched.reason, "SMT");
        ASSERT_FALSE(c->smt.available);
        ASSERT_FALSE(c->smt_active);
        ASSERT_STREQ(c->smt_control, "off");
        ASSERT_FALSE(c->cgroup_mode.available);
        ASSERT_EQ(c->cgroup_mode.error, -ENOENT);
        ASSERT_STR_CONTAINS(c->cgroup_mode.reason, "7.3");
        ASSERT_TRUE(c->sched_features.available);
        ASSERT_FALSE(c->avx512_state.available);
        ASSERT_EQ(c->avx512_state.error, -ENODATA);
        ASSERT_EQ(c->avx512_arch_status, KERNEL_AVX_NONE);
        ASSERT_FALSE(kernelcaps_avx512_arch_status_tells(c));
        ASSERT_STR_PREFIX(c->avx512_evidence.reason, "none:");
        ASSERT_TRUE(c->sched_ext_active);
        ASSERT_STREQ(c->sched_ext_ops, "simple");
        ASSERT_STR_CONTAINS(c->sched_ext.reason, "cookies");
        ASSERT_FALSE(c->proc_connector.available);
        ASSERT_STR_CONTAINS(c->proc_connector.reason, "CAP_NET_ADMIN");
        ASSERT_STR_CONTAINS(c->proc_connector.reason, "polling /proc");
        ASSERT_FALSE(c->pidfs.available);
        ASSERT_EQ(c->pidfs.error, -EMFILE);
        fake_root_remove(d);
}

/* The layout of the build machines: cgroup v1 for cpu/cpuset, cgroup2 at
 * /sys/fs/cgroup/unified with no useful controllers, no debugfs. */
static void test_hybrid(void) {
        char *d = fake_root_new();
        FakeSyscalls fs = { -EINVAL, 0 };
        _cleanup_(kernelcaps_freep) KernelCaps *c = NULL;

        fake_write(d, "proc/self/mountinfo",
                   "25 22 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:8 - tmpfs tmpfs ro,mode=755\n"
                   "26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw\n"
                   "27 25 0:25 / /sys/fs/cgroup/systemd rw,nosuid - cgroup cgroup rw,xattr,name=systemd\n"
                   "30 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
                   "31 25 0:29 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset\n");
        fake_write(d, "proc/cgroups", "#subsys_name\thierarchy\tnum_cgroups\tenabled\n"
                                      "cpuset\t3\t1\t1\ncpu\t4\t1\t1\ncpuacct\t4\t1\t1\nhugetlb\t0\t1\t1\n");
        fake_write(d, "sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
        fake_write(d, "sys/fs/cgroup/unified/cgroup.subtree_control", "\n");

        c = probe(d, &fs);
        ASSERT_FALSE(c->cgroup2.available);
        ASSERT_TRUE(c->cgroup_hybrid);
        ASSERT_STREQ(c->cgroup2_mount, "/sys/fs/cgroup/unified");
        ASSERT_TRUE(strv_contains(c->cgroup_v1_controllers, "cpu"));
        ASSERT_TRUE(strv_contains(c->cgroup_v1_controllers, "cpuset"));
        ASSERT_FALSE(strv_contains(c->cgroup_v1_controllers, "hugetlb"));
        ASSERT_STR_CONTAINS(c->cgroup2.reason, "hybrid");
        ASSERT_STR_CONTAINS(c->cgroup2.reason, "cpu, cpuset bound to cgroup v1");
        ASSERT_FALSE(c->debugfs.available);
        ASSERT_STR_CONTAINS(c->sched_features.reason, "debugfs not mounted");
        fake_root_remove(d);
}

/* A sched_ext scheduler loaded and unloaded, SMT switched off and on,
 * while topod runs: the refresh sees each change once. */
static void test_refresh_interlocks(void) {
        char *d = full_tree();
        FakeSyscalls fs = { 0, 0, 1 };
        _cleanup_(kernelcaps_freep) KernelCaps *c = probe(d, &fs);
        _cleanup_(root_freep) Root *r = NULL;
        KernelProbeOps ops = { .core_sched_get = fake_core_sched, .proc_connector = fake_proc_connector,
                               .pidfs = fake_pidfs, .userdata = &fs };

        ASSERT_OK(root_open(d, &r));
        ASSERT_FALSE(c->sched_ext_active);
        ASSERT_TRUE(c->smt_active);
        ASSERT_EQ(kernelcaps_refresh_interlocks(c, r, &ops), 0);

        fake_write(d, "sys/kernel/sched_ext/state", "enabled\n");
        fake_write(d, "sys/kernel/sched_ext/root/ops", "simple\n");
        ASSERT_EQ(kernelcaps_refresh_interlocks(c, r, &ops), 1);
        ASSERT_TRUE(c->sched_ext_active);
        ASSERT_STREQ(c->sched_ext_ops, "simple");
        ASSERT_STR_CONTAINS(c->sched_ext.reason, "simple");
        ASSERT_EQ(kernelcaps_refresh_interlocks(c, r, &ops), 0); /* once */
        ASSERT_TRUE(c->sched_ext_active);

        fake_write(d, "sys/devices/system/cpu/smt/active", "0\n");
        fake_write(d, "sys/devices/system/cpu/smt/control", "off\n");
        ASSERT_EQ(kernelcaps_refresh_interlocks(c, r, &ops), 1);
        ASSERT_FALSE(c->smt_active);
        ASSERT_STREQ(c->smt_control, "off");

        fake_write(d, "sys/kernel/sched_ext/state", "disabled\n");
        fake_write(d, "sys/devices/system/cpu/smt/active", "1\n");
        ASSERT_EQ(kernelcaps_refresh_interlocks(c, r, &ops), 1);
        ASSERT_FALSE(c->sched_ext_active);
        ASSERT_TRUE(c->smt_active);
        ASSERT_STR_CONTAINS(c->sched_ext.reason, "no BPF scheduler");
        fake_root_remove(d);
}

/* Started with SMT off, core scheduling answers ENODEV: built in, not
 * usable. SMT switched on, the kernel is asked again and it is usable; off
 * again, unusable again. A kernel without it (EINVAL) is not asked again. */
static void test_refresh_core_sched(void) {
        char *d = full_tree();
        FakeSyscalls fs = { -ENODEV, 0, 1 };
        KernelProbeOps ops = { .core_sched_get = fake_core_sched, .proc_connector = fake_proc_connector,
                               .pidfs = fake_pidfs, .userdata = &fs };
        _cleanup_(kernelcaps_freep) KernelCaps *c = NULL;
        _cleanup_(root_freep) Root *r = NULL;

        fake_write(d, "sys/devices/system/cpu/smt/active", "0\n");
        fake_write(d, "sys/devices/system/cpu/smt/control", "off\n");
        c = probe(d, &fs);
        ASSERT_OK(root_open(d, &r));
        ASSERT_FALSE(c->core_sched.available);
        ASSERT_TRUE(kernelcaps_core_sched_built(c));

        /* Unchanged SMT: the kernel is not asked (it would say yes now). */
        fs.core_sched = 0;
        ASSERT_EQ(kernelcaps_refresh_interlocks(c, r, &ops), 0);
        ASSERT_FALSE(c->core_sched.available);

        fake_write(d, "sys/devices/system/cpu/smt/active", "1\n");
        ASSERT_EQ(kernelcaps_refresh_interlocks(c, r, &ops), 1);
        ASSERT_TRUE(c->smt_active);
        ASSERT_TRUE(c->core_sched.available);
        ASSERT_STR_CONTAINS(c->core_sched.reason, "usable");

        fs.core_sched = -ENODEV;
        fake_write(d, "sys/devices/system/cpu/smt/active", "0\n");
        ASSERT_EQ(kernelcaps_refresh_interlocks(c, r, &ops), 1);
        ASSERT_FALSE(c->core_sched.available);
        ASSERT_EQ(c->core_sched.error, -ENODEV);
        ASSERT_TRUE(kernelcaps_core_sched_built(c));
        /* SMT that can never come on: nothing to wait for. */
        fake_write(d, "sys/devices/system/cpu/smt/control", "notsupported\n");
        ASSERT_EQ(kernelcaps_refresh_interlocks(c, r, &ops), 0);
        ASSERT_FALSE(kernelcaps_core_sched_built(c));
        fake_write(d, "sys/devices/system/cpu/smt/control", "off\n");
        kernelcaps_free(TAKE_PTR(c));

        /* Without core scheduling: SMT changes, the answer stays. */
        fs.core_sched = -EINVAL;
        c = probe(d, &fs);
        ASSERT_FALSE(kernelcaps_core_sched_built(c));
        fs.core_sched = 0;
        fake_write(d, "sys/devices/system/cpu/smt/active", "1\n");
        ASSERT_EQ(kernelcaps_refresh_interlocks(c, r, &ops), 1);
        ASSERT_FALSE(c->core_sched.available);
        ASSERT_EQ(c->core_sched.error, -EINVAL);
        fake_root_remove(d);
}

/* Lockdown refuses write-opens of debugfs files with EPERM, even for root.
 * The immutable flag makes the kernel do the same to a file of ours. */
static void test_features_refused(void) {
        char *d = full_tree();
        FakeSyscalls fs = { 0, 0 };
        _cleanup_(kernelcaps_freep) KernelCaps *c = NULL;
        char path[PATH_MAX];
        int fd, flags = FS_IMMUTABLE_FL;

        snprintf(path, sizeof(path), "%s/sys/kernel/debug/sched/features", d);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        if (ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0) {
                int e = errno;
                close(fd);
                fake_root_remove(d);
                test_skip("cannot make a file immutable here (%s: needs root and a file system with "
                          "chattr +i) to produce a real EPERM on open",
                          strerror(e));
        }
        fake_write(d, "sys/kernel/security/lockdown", "none [integrity] confidentiality\n");
        c = probe(d, &fs);
        flags = 0;
        (void) ioctl(fd, FS_IOC_SETFLAGS, &flags);
        close(fd);

        ASSERT_TRUE(c->sched_features.available); /* still readable */
        ASSERT_TRUE(c->features_readable);
        ASSERT_FALSE(c->features_writable);
        ASSERT_EQ(c->features_write_error, -EPERM);
        ASSERT_EQ(c->sched_features.error, -EPERM);
        ASSERT_STR_CONTAINS(c->sched_features.reason, "read-only");
        ASSERT_STR_CONTAINS(c->sched_features.reason, "lockdown");
        ASSERT_STREQ(c->lockdown, "integrity");
        ASSERT_TRUE(c->cgroup_mode_writable); /* only the features file was locked */
        fake_root_remove(d);
}

static void test_parse_cgroup_mode(void) {
        char **modes = NULL;
        char *active = NULL;

        ASSERT_OK(kernelcaps_parse_cgroup_mode("up smp (concur) max tasks ", &modes, &active));
        ASSERT_EQ(strv_length(modes), 5);
        ASSERT_STREQ(active, "concur");
        modes = strv_free(modes);
        free(active);
        active = NULL;

        /* Whatever modes a future kernel lists are taken as listed. */
        ASSERT_OK(kernelcaps_parse_cgroup_mode("(up) smp newmode\n", &modes, &active));
        ASSERT_EQ(strv_length(modes), 3);
        ASSERT_STREQ(modes[2], "newmode");
        ASSERT_STREQ(active, "up");
        modes = strv_free(modes);
        free(active);
        active = NULL;

        ASSERT_OK(kernelcaps_parse_cgroup_mode("up smp", &modes, &active));
        ASSERT_NULL(active);
        modes = strv_free(modes);

        ASSERT_ERROR(kernelcaps_parse_cgroup_mode("", &modes, &active), EINVAL);
        ASSERT_ERROR(kernelcaps_parse_cgroup_mode("(up) (smp)", &modes, &active), EINVAL);
        ASSERT_ERROR(kernelcaps_parse_cgroup_mode("up (smp", &modes, &active), EINVAL);
        ASSERT_ERROR(kernelcaps_parse_cgroup_mode("()", &modes, &active), EINVAL);
        ASSERT_ERROR(kernelcaps_parse_cgroup_mode("UP;rm", &modes, &active), EINVAL);
        ASSERT_NULL(modes);
        ASSERT_NULL(active);
}

static void test_parse_mountinfo(void) {
        _cleanup_free_ char *cg = NULL, *dbg = NULL;
        bool v1 = true;

        ASSERT_OK(kernelcaps_parse_mountinfo(
                        "36 35 98:0 / /mnt/with\\040space rw - cgroup2 none rw\n"
                        "garbage line\n"
                        "37 35 0:7 / /dbg rw shared:1 master:2 - debugfs debugfs rw\n",
                        &cg, &dbg, &v1));
        ASSERT_STREQ(cg, "/mnt/with space");
        ASSERT_STREQ(dbg, "/dbg");
        ASSERT_FALSE(v1);
}

/* Whether arch_status tells AVX-512 work here, from what topod's own
 * thread shows after the C library's string functions and a sleep
 * (recorded machines' files): recent AVX-512 state is the library's, not
 * work (polluted); none, or a stale stamp, leaves it telling (clean). A
 * thread-self file, where there is one, is the one read. */
static void test_avx512_evidence(void) {
        static const struct {
                const char *file, *text;
                KernelAvxEvidence want;
        } cases[] = {
                { "proc/self/arch_status", "AVX512_elapsed_ms:\t0\n", KERNEL_AVX_POLLUTED },
                { "proc/self/arch_status", "AVX512_elapsed_ms:\t50\n", KERNEL_AVX_POLLUTED },
                { "proc/self/arch_status", "AVX512_elapsed_ms:\t51\n", KERNEL_AVX_CLEAN },
                { "proc/self/arch_status", "AVX512_elapsed_ms:\t5368\n", KERNEL_AVX_CLEAN },
                { "proc/self/arch_status", "AVX512_elapsed_ms:\t-1\n", KERNEL_AVX_CLEAN },
                { "proc/thread-self/arch_status", "AVX512_elapsed_ms:\t4\n", KERNEL_AVX_POLLUTED },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *d = full_tree();
                FakeSyscalls fs = { 0, 0, 0 };
                _cleanup_(kernelcaps_freep) KernelCaps *c = NULL;

                fake_write(d, cases[i].file, cases[i].text);
                c = probe(d, &fs);
                printf("  %s %s", cases[i].file, cases[i].text);
                ASSERT_TRUE(c->avx512_state.available);
                ASSERT_EQ(c->avx512_arch_status, cases[i].want);
                ASSERT_EQ(c->avx512_evidence.available, cases[i].want == KERNEL_AVX_CLEAN);
                ASSERT_EQ(kernelcaps_avx512_arch_status_tells(c), cases[i].want == KERNEL_AVX_CLEAN);
                ASSERT_STR_PREFIX(c->avx512_evidence.reason, kernel_avx_evidence_to_string(cases[i].want));
                fake_root_remove(d);
        }
}

int main(void) {
        RUN(test_parse_cgroup_mode);
        RUN(test_parse_mountinfo);
        RUN(test_all_present);
        RUN(test_all_absent);
        RUN(test_partial);
        RUN(test_avx512_evidence);
        RUN(test_hybrid);
        RUN(test_refresh_interlocks);
        RUN(test_refresh_core_sched);
        RUN(test_features_refused); /* last: it may skip */
        return 0;
}
