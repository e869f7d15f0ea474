/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Where topod's files are, as the build was set up: meson's sysconfdir and
 * datadir joined to its prefix (meson.build). Host paths: each is read
 * below the Root (root_host_path()), so a fake tree holds them at the same
 * place below its top.
 *
 * Policies come in three layers (topod.policy(5)), highest first: the
 * transient one in /run, the operator's in sysconfdir, the shipped (vendor)
 * one in datadir. */

#ifndef TOPOD_SYSCONFDIR
#error "TOPOD_SYSCONFDIR is set by meson.build"
#endif
#ifndef TOPOD_DATADIR
#error "TOPOD_DATADIR is set by meson.build"
#endif

#define TOPOD_CONFIG_PATH TOPOD_SYSCONFDIR "/topod/topod.conf"
#define TOPOD_POLICIES_RUNTIME_DIR "/run/topod/policies.d"
#define TOPOD_POLICIES_LOCAL_DIR TOPOD_SYSCONFDIR "/topod/policies.d"
#define TOPOD_POLICIES_VENDOR_DIR TOPOD_DATADIR "/topod/policies.d"
