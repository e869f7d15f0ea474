#!/usr/bin/env python3
"""vm-nosmt: the standard guest booted with `nosmt`: core scheduling is
unavailable (prctl gives ENODEV) and topoctl says so, naming SMT; SMT is not
active.  Exit 0 pass, 1 fail, 77 skip (no kernel/qemu)."""

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
        [STATUS,
         "cat /sys/devices/system/cpu/smt/active /sys/devices/system/cpu/smt/control"],
        binaries={"topoctl": args.topoctl}, append_extra="nosmt")
    c = vmlib.Checks()

    c.eq(r.stdout(1).split(), ["0", "off"], "guest sysfs: smt/active, smt/control")

    caps = c.get(c.json(r, 0, "topoctl status --json"), "capabilities")
    c.eq(c.get(caps, "core_scheduling.available"), False,
         "status core_scheduling.available")
    c.eq(c.get(caps, "core_scheduling.error"), "ENODEV",
         "status core_scheduling.error")
    reason = c.get(caps, "core_scheduling.reason")
    c.true(isinstance(reason, str) and "smt" in reason.lower(),
           "status core_scheduling.reason mentions SMT", "reason: %r" % (reason,))
    c.eq(c.get(caps, "smt.active"), False, "status smt.active")

    if c.failed:
        print("outputs: %s/out/  (0 = status)" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--topoctl", required=True, help="path to the topoctl binary")
    vmlib.main(test, p.parse_args())
