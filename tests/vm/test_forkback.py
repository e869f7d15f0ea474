#!/usr/bin/env python3
"""vm-forkback: a child forked after its parent was placed goes back with
its parent when topod stops, never to the root cgroup (cgroupfs driver).

Two parents, fb-early in the test's cgroup /lab/x and fb-late in /lab/y
(workload forker: named at once, they fork when told), are placed by a comm
policy (fb-* into /topod.slice/fb with a cookie). Once they are there,
fb-early forks a child and topod runs on for 3 s (passes see the child,
which no policy names: it was never journaled); fb-late forks one just
before topod gets SIGTERM (no pass sees it). After the stop each child is
in its parent's original cgroup, as the parent is, none in "/", and no
cookie is left on any of the four. Exit 0 pass, 1 fail, 77 skip."""

import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "forkback")
CG = "/sys/fs/cgroup"

KIDS = ("kid() { awk -v p=$1 '/^PPid:/ && $2 == p { split(FILENAME, f, \"/\"); print f[3] }' "
        "/proc/[0-9]*/status 2>/dev/null | head -n 1; }; ")
SHOW = ("show() { for k in early late; do P=$(sed -n \"s/^$k=//p\" /tmp/pids); C=$(kid $P); "
        "echo $1 parent-$k $(sed -n 's/^0:://p' /proc/$P/cgroup) $(workload cookie $P | cut -d' ' -f2); "
        "[ -n \"$C\" ] && echo $1 child-$k $(sed -n 's/^0:://p' /proc/$C/cgroup) $(workload cookie $C | cut -d' ' -f2); "
        "done; }; ")

START = ("mkdir -p %(cg)s/lab/x %(cg)s/lab/y; "
         "sh -c 'echo $$ > %(cg)s/lab/x/cgroup.procs; exec workload forker fb-early /tmp/go-early' & "
         "echo early=$! > /tmp/pids; "
         "sh -c 'echo $$ > %(cg)s/lab/y/cgroup.procs; exec workload forker fb-late /tmp/go-late' & "
         "echo late=$! >> /tmp/pids; sleep 0.5; "
         "topod --config /etc/topod-test/topod.conf >> /tmp/topod.log 2>&1 & echo $! > /tmp/topod.pid; "
         "E=$(sed -n 's/^early=//p' /tmp/pids); L=$(sed -n 's/^late=//p' /tmp/pids); "
         "for i in $(seq 300); do grep -q topod.slice /proc/$E/cgroup && grep -q topod.slice /proc/$L/cgroup && exit 0; "
         "sleep 0.1; done; exit 1") % {"cg": CG}
EARLY = (KIDS + SHOW + "E=$(sed -n 's/^early=//p' /tmp/pids); touch /tmp/go-early; "
         "for i in $(seq 100); do [ -n \"$(kid $E)\" ] && break; sleep 0.1; done; sleep 3; show forked")
LATE = (KIDS + SHOW + "L=$(sed -n 's/^late=//p' /tmp/pids); touch /tmp/go-late; "
        "for i in $(seq 100); do [ -n \"$(kid $L)\" ] && break; sleep 0.1; done; show forked; "
        "T=$(cat /tmp/topod.pid); kill -TERM $T; "
        "for i in $(seq 300); do [ -d /proc/$T ] || break; sleep 0.1; done; [ ! -d /proc/$T ]")
AFTER = KIDS + SHOW + "show after; cat /tmp/topod.log >&2"


def rows(text, when):
    """{"parent-early": (cgroup, cookie), ...} from SHOW's lines."""
    out = {}
    for l in text.splitlines():
        f = l.split()
        if len(f) == 4 and f[0] == when:
            out[f[1]] = (f[2], f[3])
    return out


def test(args):
    r = vmlib.run_guest([START, EARLY, LATE, AFTER],
                        binaries={"topod": args.topod, "topoctl": args.topoctl, "workload": args.workload},
                        files={"/etc/topod-test/topod.conf": os.path.join(DATA, "topod.conf"),
                               "/etc/topod-test/policies.d/10-forkback.ini": os.path.join(DATA, "10-forkback.ini")})
    c = vmlib.Checks()
    print("  topod log:\n    " + "\n    ".join(r.stderr(3).splitlines()))
    c.eq(r.rc(0), 0, "topod started and placed fb-early and fb-late")
    early = rows(r.stdout(1), "forked")
    late = rows(r.stdout(2), "forked")
    c.true(early.get("child-early", ("",))[0].startswith("/topod.slice/") and
           early.get("child-early") == early.get("parent-early"),
           "fb-early's child forked in its parent's topod group, with its cookie", r.stdout(1))
    c.true(late.get("child-late", ("",))[0].startswith("/topod.slice/") and
           late.get("child-late") == late.get("parent-late"),
           "fb-late's child forked in its parent's topod group, with its cookie", r.stdout(2))
    c.eq(r.rc(2), 0, "SIGTERM: topod stopped")
    after = rows(r.stdout(3), "after")
    want = {"parent-early": ("/lab/x", "0"), "child-early": ("/lab/x", "0"),
            "parent-late": ("/lab/y", "0"), "child-late": ("/lab/y", "0")}
    for k, v in want.items():
        c.eq(after.get(k), v, "after the stop: %s's cgroup and cookie" % k)
    c.true(after and all(cg != "/" for cg, _ in after.values()), "after the stop: nothing in the root cgroup",
           r.stdout(3))
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    p.add_argument("--topod", required=True)
    p.add_argument("--topoctl", required=True)
    p.add_argument("--workload", required=True)
    vmlib.main(test, p.parse_args())
