/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Human and JSON renderings of the observed values, shared by topoctl and
 * topod. Pure: they only write to the stream given. */

#include <stdio.h>

#include "base/json.h"
#include "observe/kernelcaps.h"
#include "observe/topology.h"

int topology_print_text(FILE *f, const Topology *t);
int topology_print_json(Json *j, const Topology *t);

int kernelcaps_print_text(FILE *f, const KernelCaps *c, const char *root);
int kernelcaps_print_json(Json *j, const KernelCaps *c, const char *root);
