/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The bus methods' names, the one table both ends read. */
#include "bus-protocol.h"

#include <stddef.h>

static const char *const method_names[_BUS_METHOD_MAX] = {
        [BUS_METHOD_EXPLAIN] = "Explain", [BUS_METHOD_STATUS] = "Status", [BUS_METHOD_PLAN] = "Plan",
        [BUS_METHOD_RELOAD] = "Reload",   [BUS_METHOD_RESET] = "Reset",   [BUS_METHOD_METRICS] = "Metrics",
};

const char *bus_method_to_string(BusMethod m) {
        return m >= 0 && m < _BUS_METHOD_MAX ? method_names[m] : NULL;
}
