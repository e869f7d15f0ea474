#!/usr/bin/env python3
"""sd-scope: a fresh install moves none of the system's services (one boot).

topod as installed: topod.conf as shipped (the default scope), the shipped
policies/*.ini (class-based: they name nothing), and two policies of this
test's that name a unit (unit = crunch.service) and a process in a
`systemd-run --scope` scope (comm = scoped-*). A unit no policy names runs
a busy loop and a ticker (sleeps 2 ms at a time), what the shipped
throughput and latency policies are for. Every process's cgroup, every loaded unit's AllowedCPUs /
AllowedMemoryNodes / CPUWeight / StartupCPUWeight and every thread's
cookie are recorded before topod starts, once its classifier has called the
ticker latency (what the shipped latency-services acts on), and after its
stop:

- while it runs, the system services (journald, dbus, logind, udevd, cron,
  and every other process but the two named) are where they were, with
  their unit properties and no cookie; the unnamed busy loop and
  ticker too;
- in the same run the named unit has its CPUs and weight and its threads a
  cookie, and the named process was moved into topod's slices: the scope
  does not pass by excluding everything;
- after the stop, everything is as before.
Exit 0 pass, 1 fail, 77 skip."""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdlib  # noqa: E402
from test_services import POLICIES, UNIT_PROPS, check_reconciled  # noqa: E402

vmlib = sdlib.vmlib

# System services the guest runs: each must be found before topod starts
# (so that leaving them alone is shown, not assumed).
SERVICES = ("systemd-journald.service", "dbus.service", "systemd-logind.service",
            "systemd-udevd.service", "cron.service")


def test(args):
    r = sdlib.boot("sd-scope", args, "guest-scope.sh", policies=POLICIES, files=sdlib.CRUNCH, shipped=True)
    c = vmlib.Checks()
    start, run, stop = (sdlib.kv(r.out(n)) for n in ("start.kv", "running.kv", "stop.kv"))
    c.eq(r.rc, 0, "the guest script ran to its end")
    c.eq((start.get("start_rc"), start.get("active")), ("0", "active"), "systemctl start topod: started, active")
    print("  placed: %s" % start.get("placed_rc"))
    c.eq(start.get("classified_rc", "").split()[:1], ["0"],
         "topod's classifier calls the ticker latency (within 120 s): latency-services would place it by class")
    c.eq(run.get("topod.active"), "active", "topod still running")
    shipped = sorted(os.path.basename(p) for p in os.listdir(os.path.join(r.run_dir, "payload", "policies")))
    print("  policies: " + " ".join(shipped))

    pb, pr = sdlib.props(r.out("before.props")), sdlib.props(r.out("running.props"))
    qb, qr = sdlib.procs(r.out("before.procs")), sdlib.procs(r.out("running.procs"))
    cb, cr = sdlib.cookies(r.out("before.cookies")), sdlib.cookies(r.out("running.cookies"))
    for s in SERVICES + ("bystander.service",):
        c.eq(pb.get(s, {}).get("ActiveState"), "active", "before topod: %s runs" % s)
    crunch = set(int(x) for x in run.get("crunch.pids", "").split())
    scoped = int(run.get("scoped") or 0)
    named = crunch | {scoped}
    topod = int(run.get("topod.pid") or 0)

    # The system's services and the unnamed processes: left alone.
    both = sorted(set(qb) & set(qr) - named)
    moved = ["%d %s: %s -> %s" % (p, qr[p][0], qb[p][1], qr[p][1]) for p in both if qb[p][1] != qr[p][1]]
    print("  while topod runs: %d of %d processes not named by a policy are in another cgroup" % (
        len(moved), len(both)))
    c.true(len(both) > 10 and not moved, "while topod runs: every process no policy names where it was (%d)" % len(
        both), "\n".join(moved))
    for s in SERVICES + ("bystander.service",):
        cg = pb.get(s, {}).get("ControlGroup")
        # (udevd runs in a cgroup of its unit's own: .../systemd-udevd.service/udev)
        pids = sorted(p for p in both if cg and (qb[p][1] == cg or qb[p][1].startswith(cg + "/")))
        c.true(pids and all(qr[p][1] == qb[p][1] for p in pids), "while topod runs: %s's processes %s in %s" % (
            s, pids, cg), "\n".join("%d: %s -> %s" % (p, qb[p][1], qr[p][1]) for p in pids))
    diff = ["%s %s: %r -> %r" % (u, k, pb[u].get(k), pr[u].get(k)) for u in sorted(set(pb) & set(pr))
            if u != "crunch.service" for k in UNIT_PROPS if pb[u].get(k) != pr[u].get(k)]
    c.true(len(pb) > 10 and not diff, "while topod runs: every other unit's %s unchanged (%d units)" % (
        "/".join(UNIT_PROPS), len(set(pb) & set(pr)) - 1), "\n".join(diff))
    given = ["tid %d (%s, pid %d): %d" % (t, qr.get(g, ("?",))[0], g, k) for t, (g, k) in sorted(cr.items())
             if g not in named and g != topod and k != cb.get(t, (g, 0))[1]]
    c.true(len(cr) > 10 and not given, "while topod runs: no thread of a process no policy names got a cookie",
           "\n".join(given))

    # What topod decided for the ticker, 8 times while it runs: no policy
    # (the apply may fail where the decision is wrong; the decision shows).
    looks = []
    for i in range(1, 9):
        try:
            ex = json.loads(r.out("explain-ticker-%d.json" % i) or "{}")
        except ValueError:
            ex = {}
        looks += [(i, t.get("class"), t.get("managed"), (t.get("policy") or {}).get("name"))
                  for t in ex.get("threads", [])]
    c.true(len(looks) >= 8 and all(m is False for _, _, m, _ in looks),
           "while topod runs: `topoctl explain` never has a policy managing the unnamed ticker (%d looks)" % len(looks),
           "\n".join("look %d: class %s, managed %s, policy %s" % l for l in looks) or "no explain output")

    # The named ones: placed (the scope is not "exclude everything").
    c.eq((run.get("crunch.cpus"), run.get("crunch.weight")), ("2-3", "300"),
         "while topod runs: crunch.service (unit = crunch.service) at CPUs 2-3, weight 300")
    c.eq((pr.get("crunch.service", {}).get("AllowedCPUs"), pr.get("crunch.service", {}).get("CPUWeight")),
         ("2-3", "300"), "while topod runs: systemctl show crunch AllowedCPUs, CPUWeight")
    ck = {k for t, (g, k) in cr.items() if g in crunch}
    c.true(len(crunch) == 3 and len(ck) == 1 and 0 not in ck, "while topod runs: crunch's threads share a cookie",
           "%s: %s" % (sorted(crunch), ck))
    c.true(run.get("scoped.cgroup", "").startswith("/topod.slice/") and run.get("scoped.cookie") not in ("0", "", None),
           "while topod runs: the scoped process (comm = scoped-*) moved into topod's slices, with a cookie",
           "%r, cookie %r" % (run.get("scoped.cgroup"), run.get("scoped.cookie")))

    # After the stop: everything as before.
    c.eq(stop.get("units", "").split(), [], "after the stop: no unit of topod's")
    check_reconciled(c, r, "after the stop", "before", "stopped", stop)
    return sdlib.finish(r, c)


if __name__ == "__main__":
    a = sdlib.add_args(argparse.ArgumentParser(description=__doc__.splitlines()[0])).parse_args()
    vmlib.main(test, a)
