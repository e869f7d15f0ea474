#!/usr/bin/env python3
"""vm-topology: topoctl on the standard guest (2 packages, 2 NUMA nodes,
4 L3s, 8 cores, SMT2 = 16 CPUs) reports that topology and the capabilities
the guest kernel has (core scheduling, SMT, cgroup2 cpu+cpuset, sched
features).  Exit 0 pass, 1 fail, 77 skip (no kernel/qemu)."""

import argparse
import os
import sys

sys.dont_write_bytecode = True        # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402

# No topod runs here: status says so on stderr, prints the kernel probe and
# exits 1; any other exit status is a failure.
STATUS = "topoctl status --json || [ $? -eq 1 ]"


def test(args):
    r = vmlib.run_guest(
        ["topoctl topology --json",
         STATUS,
         # the kernel's own view, to tell harness trouble from topoctl bugs
         "cat /sys/devices/system/cpu/smt/active /sys/devices/system/cpu/online"],
        binaries={"topoctl": args.topoctl})
    c = vmlib.Checks()

    sysfs = r.stdout(2).split()
    c.eq(sysfs, ["1", "0-15"], "guest sysfs: smt/active, cpu/online")

    topo = c.json(r, 0, "topoctl topology --json")
    g = lambda path: c.get(topo, path)                       # noqa: E731
    each = lambda key, field: [x.get(field) for x in g(key) or []
                               if isinstance(x, dict)]       # noqa: E731
    c.eq(g("source"), "live", "topology.source")
    c.eq(g("counts"), {"packages": 2, "numa_nodes": 2, "llcs": 4,
                       "cores": 8, "pus": 16}, "topology.counts")
    c.eq(g("smt"), True, "topology.smt")
    c.eq(g("llc_level"), 3, "topology.llc_level")
    c.eq(each("packages", "cpus"), ["0-7", "8-15"], "topology.packages[].cpus")
    c.eq(each("numa_nodes", "cpus"), ["0-7", "8-15"], "topology.numa_nodes[].cpus")
    c.eq(each("llcs", "cpus"), ["0-3", "4-7", "8-11", "12-15"],
         "topology.llcs[].cpus")
    pairs = ["%d-%d" % (i, i + 1) for i in range(0, 16, 2)]
    c.eq(g("smt_siblings"), pairs, "topology.smt_siblings")
    c.eq(each("cores", "cpus"), pairs, "topology.cores[].cpus")
    c.eq(each("numa_nodes", "distances"), [[10, 20], [20, 10]],
         "topology.numa_nodes[].distances (0<->1 is 20)")

    caps = c.get(c.json(r, 1, "topoctl status --json"), "capabilities")
    c.true("topod is not running" in r.stderr(1), "status without topod: says so in one line", r.stderr(1))
    c.eq(c.get(caps, "core_scheduling.available"), True,
         "status core_scheduling.available")
    c.eq(c.get(caps, "smt.active"), True, "status smt.active")
    c.eq(c.get(caps, "cgroup2.available"), True, "status cgroup2.available")
    ctl = c.get(caps, "cgroup2.controllers")
    c.contains(ctl, "cpu", "status cgroup2.controllers")
    c.contains(ctl, "cpuset", "status cgroup2.controllers")
    c.eq(c.get(caps, "sched_features.readable"), True,
         "status sched_features.readable")

    if c.failed:
        print("outputs: %s/out/  (0 = topology, 1 = status)" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--topoctl", required=True, help="path to the topoctl binary")
    vmlib.main(test, p.parse_args())
