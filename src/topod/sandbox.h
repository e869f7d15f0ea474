/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The daemon's in-process syscall filter (libseccomp), the layer inside the
 * unit file's sandbox. It goes on after start-up, when the topology is
 * loaded (hwloc), the proc connector is bound, the journal of an earlier run
 * is recovered and the cookie agents are running: what is left is the loop,
 * and the allow-list in sandbox.c covers what the loop does, on every thread
 * of the process (TSYNC), with no_new_privs set and the native architecture
 * only.
 *
 *   off      nothing installed.
 *   log      a syscall outside the list is allowed and reported by the
 *            kernel (SECCOMP_RET_LOG) through the audit subsystem: with
 *            auditd in audit.log, without it in the kernel log, as
 *            "audit: type=1326 ... syscall=<nr>". Without audit
 *            (CONFIG_AUDITSYSCALL=n, or audit=0 on the kernel command
 *            line) nothing is printed.
 *   enforce  a syscall outside the list is refused (SECCOMP_RET_TRAP): a
 *            SIGSYS handler writes one line to stderr,
 *              topod: seccomp: refused syscall <name> (<nr>); the allow-list in src/topod/sandbox.c lacks it
 *            and the process dies of SIGSYS. systemd restarts it and the
 *            restart recovers the journal, which puts the machine back: a
 *            daemon that half works is worse. The kernel also audit-logs
 *            the refusal where it can, which is the only trace when the
 *            refusing thread blocks SIGSYS (the kernel then kills without
 *            running the handler).
 *
 * Finding a missing syscall: run with seccomp = enforce and read the line in
 * the journal (journalctl -u topod), or run with seccomp = log and look for
 * type=1326 records (ausearch -m SECCOMP, or dmesg without auditd), or
 * strace -f the daemon. Add the name to the group in sandbox.c's list that
 * says which part of topod needs it. A few calls are allowed only with some
 * arguments (socket, ioctl, prctl, clone, tgkill); for those the line says
 * "allows it only with other arguments" and the table of argument rules is
 * the place to extend. Names this architecture or libseccomp does not know
 * are skipped, so the list can name every architecture's variant. */

#include <stddef.h>

typedef enum SandboxLevel {
        SANDBOX_OFF,
        SANDBOX_LOG,
        SANDBOX_ENFORCE,
        _SANDBOX_LEVEL_MAX,
} SandboxLevel;

/* Install the filter on every thread of the process. Returns 0, or a
 * negative errno with a one-line reason in *ret_reason (may be NULL; the
 * caller frees it): -EOPNOTSUPP when the kernel lacks what the level needs
 * (seccomp filters, thread sync, SECCOMP_RET_LOG), -EPERM when loading a
 * filter is forbidden (a container's own filter), -ESRCH when a thread
 * already has another filter, -ENOMEM. Nothing is installed on failure.
 * Call it once. */
int sandbox_install(SandboxLevel level, char **ret_reason);

const char *sandbox_level_to_string(SandboxLevel l);

/* Syscalls the list allows (some with arguments only) that exist on this
 * architecture, for a log line. */
size_t sandbox_allowed_count(void);
