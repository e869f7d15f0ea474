#!/usr/bin/env python3
"""sd-services: topod as a systemd unit places a service and a scope the
systemd way, in a guest with systemd 252 as PID 1 (one boot).

crunch.service (Type=simple, Restart=always, a main process that forks two
workers) is named by a policy (unit = crunch.service: CPUs 2-3, weight 300,
one cookie); a process in the `systemd-run --scope` scope lab-job.scope is
named by another (comm = scoped-*: CPUs 0-1, weight 150, one cookie), beside
an unnamed one that stays. guest-services.sh runs the steps; this checks:

- placed: every crunch process still in its unit (the unit cgroup's
  cgroup.procs, `systemctl status`, `systemd-cgls -u`); the unit's
  cpuset.cpus.effective and cpu.weight what `topoctl plan --json` says for
  its group and the policy asks; AllowedCPUs / CPUWeight as systemctl shows
  them; one cookie on every crunch thread; `explain` names the policy and
  "placed through unit crunch.service"; the scoped process moved by systemd
  into a transient scope in a topod slice (visible in `systemctl status` of
  that unit), at CPUs 0-1 under a slice of weight 150, its own cookie, the
  unnamed one left where it was; `topoctl status` says the systemd driver;
- `systemctl daemon-reload` and a unit started with CPU properties
  (systemd-run -p CPUWeight=50 -p AllowedCPUs=0) change nothing topod
  placed, and topod leaves that unit's properties alone;
- `systemctl restart crunch`: the old processes gone, the new ones placed
  again, no automatic restart (NRestarts unchanged, MainPID steady);
  `systemctl stop crunch` leaves none of its processes alive;
- `systemctl stop topod`: no process killed, crunch still running, every
  unit's AllowedCPUs / AllowedMemoryNodes / CPUWeight / StartupCPUWeight as
  before topod started, topod's transient units and /topod.slice gone,
  every process in the cgroup it was in before (counted), no cookie left;
- topod's journal entries (`journalctl -u topod TOPOD_POLICY=... -o json`)
  after the placement and after the stop: the scoped process's move and
  both policies' cookies and unit properties, then each restored, by
  TOPOD_PID / TOPOD_ACTION / TOPOD_KIND / TOPOD_RESULT / TOPOD_UNIT;
- `systemctl restart topod`: no process killed, placed again;
- kill -9 of topod right after its first placement, then a start and a
  stop: reconciled the same way, the journal recovered.
Exit 0 pass, 1 fail, 77 skip."""

import argparse
import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdlib  # noqa: E402

vmlib = sdlib.vmlib

POLICIES = {
    "50-crunch.ini": """# crunch.service's processes: CPUs 2-3 (the second LLC), a weight, one cookie
[policy]
name = sd-crunch
priority = 300

[match]
unit = crunch.service

[place]
group = crunch
cookie = group
cpus = 2-3
weight = 300
""",
    "51-scoped.ini": """# the process scoped-1 (in a systemd-run --scope scope): CPUs 0-1, one cookie
[policy]
name = sd-scoped
priority = 290

[match]
comm = scoped-*

[place]
group = scoped
cookie = group
cpus = 0-1
weight = 150
""",
}

CRUNCH_CG = "/system.slice/crunch.service"
SCOPE_CG = "/system.slice/lab-job.scope"
UNIT_PROPS = ("AllowedCPUs", "AllowedMemoryNodes", "CPUWeight", "StartupCPUWeight")


def status_pids(text):
    """The pids a `systemctl status` / `systemd-cgls` tree lists."""
    return {int(m.group(1)) for m in re.finditer(r"^\s*[│├└─ ]*[├└]─(\d+) ", text, re.M)}


def pidlist(s):
    return sorted(int(x) for x in (s or "").split() if x.isdigit())


def cookies_of(kv):
    return {k[3:]: v for k, v in kv.items() if k.startswith("ck.")}


def check_placed(c, r, name, kv, plan_cpus="2-3", plan_weight="300"):
    """crunch and the scoped process placed, at step NAME."""
    pids = pidlist(kv.get("pids"))
    c.eq(len(pids), 3, "%s: crunch has its main process and two workers (ps)" % name)
    c.eq(pidlist(kv.get("unitprocs")), pids, "%s: crunch.service's cgroup.procs holds every crunch process" % name)
    c.eq({p: kv.get("cg.%d" % p) for p in pids}, {p: CRUNCH_CG for p in pids},
         "%s: every crunch process's /proc/PID/cgroup is its unit's" % name)
    st = r.out(name + ".status-crunch")
    c.true(set(pids) and set(pids) <= status_pids(st), "%s: `systemctl status crunch` lists every process %s" % (
        name, pids), st)
    m = re.search(r"Tasks: (\d+)", st)
    c.true(m and int(m.group(1)) >= 3, "%s: `systemctl status crunch` counts its tasks (not 0)" % name,
           m.group(0) if m else st)
    cg = r.out(name + ".cgls-crunch")
    c.true(set(pids) and set(pids) <= status_pids(cg), "%s: `systemd-cgls -u crunch.service` lists every process" % name, cg)
    c.eq(kv.get("crunch.cpuset.cpus.effective"), plan_cpus, "%s: crunch unit cgroup cpuset.cpus.effective" % name)
    c.eq(kv.get("crunch.cpu.weight"), plan_weight, "%s: crunch unit cgroup cpu.weight" % name)
    c.eq((kv.get("crunch.AllowedCPUs"), kv.get("crunch.CPUWeight")), ("2-3", "300"),
         "%s: systemctl show crunch AllowedCPUs, CPUWeight" % name)
    ck = cookies_of(kv)
    vals = set(ck.values())
    c.true(len(ck) >= 3 and len(vals) == 1 and "0" not in vals,
           "%s: every crunch thread has one and the same cookie (PR_SCHED_CORE_GET)" % name, str(ck))
    scg = kv.get("scoped.cgroup", "")
    c.true(scg.startswith("/topod.slice/") and scg.endswith(".scope"),
           "%s: the scoped process is in a scope in topod's slices" % name, scg)
    sl = kv.get("scoped.Slice", "")
    c.true(sl.startswith("topod") and sl.endswith(".slice"), "%s: that scope unit's Slice is topod's" % name, sl)
    c.eq(kv.get("scoped.ActiveState"), "active", "%s: that scope unit is active" % name)
    sp = int(kv.get("scoped") or 0)
    st = r.out(name + ".status-scoped")
    c.true(sp and sp in status_pids(st), "%s: `systemctl status %s` shows the scoped process %d" % (
        name, kv.get("scoped.unit"), sp), st)
    # The scope sets no CPUs of its own: systemd enables the cpuset
    # controller only for units that set it, so its slice's confines it.
    eff = kv.get("scoped.cpuset.cpus.effective")
    if eff in (None, "(absent)"):
        eff = kv.get("scopedslice.cpuset.cpus.effective")
    c.eq(eff, "0-1", "%s: the scoped process's CPUs (cpuset.cpus.effective of its scope, or of the slice "
         "that holds it)" % name)
    c.eq(kv.get("scopedslice.cpu.weight"), "150", "%s: its topod slice's cpu.weight" % name)
    c.true(kv.get("scoped.cookie") not in (None, "0", "") and kv.get("scoped.cookie") not in vals,
           "%s: the scoped process has a cookie, not crunch's" % name,
           "scoped %r, crunch %r" % (kv.get("scoped.cookie"), vals))
    c.eq((kv.get("keeper.cgroup"), kv.get("keeper.cookie")), (SCOPE_CG, "0"),
         "%s: the unnamed process of lab-job.scope left where it was, no cookie" % name)


def check_reconciled(c, r, name, before, after, stop_kv, allowed_new=()):
    """After a stop: unit properties, cgroups and cookies as in `before`."""
    c.eq(stop_kv.get("stop_rc"), "0", "%s: systemctl stop topod succeeded" % name)
    pb, pa = sdlib.props(r.out(before + ".props")), sdlib.props(r.out(after + ".props"))
    diff = ["%s %s: %r -> %r" % (u, k, pb[u].get(k), pa[u].get(k)) for u in sorted(set(pb) & set(pa))
            for k in UNIT_PROPS if pb[u].get(k) != pa[u].get(k)]
    c.true(len(pb) > 10 and not diff, "%s: every unit's %s as before topod (%d units compared)" % (
        name, "/".join(UNIT_PROPS), len(set(pb) & set(pa))), "\n".join(diff) or "%d units" % len(pb))
    ours = [u for u in set(pa) - set(pb) if u.startswith("topod") and u != "topod.service"]
    c.eq(sorted(ours), [], "%s: no unit of topod's left loaded" % name)
    qb, qa = sdlib.procs(r.out(before + ".procs")), sdlib.procs(r.out(after + ".procs"))
    both = sorted(set(qb) & set(qa))
    moved = ["%d %s: %s -> %s" % (p, qa[p][0], qb[p][1], qa[p][1]) for p in both if qb[p][1] != qa[p][1]]
    print("  %s: %d of %d processes alive before and after are in another cgroup" % (name, len(moved), len(both)))
    c.true(len(both) > 10 and not moved, "%s: every process in the cgroup it was in before (%d compared)" % (
        name, len(both)), "\n".join(moved))
    known = {cg for _, cg in qb.values()} | set(allowed_new)
    strays = ["%d %s: %s" % (p, qa[p][0], qa[p][1]) for p in sorted(set(qa) - set(qb)) if qa[p][1] not in known]
    c.true(not strays, "%s: no process in a cgroup that held none before" % name, "\n".join(strays))
    ca = sdlib.cookies(r.out(after + ".cookies"))
    left = ["tid %d (tgid %d): %d" % (t, g, k) for t, (g, k) in sorted(ca.items()) if k]
    c.true(len(ca) > 10 and not left, "%s: no thread has a cookie (%d threads)" % (name, len(ca)), "\n".join(left))


def entries(text):
    """The journal's JSON lines (journalctl -o json) as dicts."""
    got = []
    for line in text.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict):
            got.append(e)
    return got


def check_fields(c, name, es, want):
    """An entry of es with every field of want (a value, or a set of them)."""
    def fits(e):
        return all(e.get(k) in v if isinstance(v, (set, frozenset)) else e.get(k) == v for k, v in want.items())
    seen = sorted({"%s %s %s %s %s" % (e.get("TOPOD_POLICY"), e.get("TOPOD_ACTION"), e.get("TOPOD_KIND"),
                                       e.get("TOPOD_RESULT"), e.get("TOPOD_PID")) for e in es})
    hit = [e for e in es if fits(e)]
    c.true(hit, "%s: a journal entry with %s" % (name, " ".join("%s=%s" % (k, "|".join(sorted(v)) if isinstance(v, set) else v)
                                                               for k, v in sorted(want.items()))),
           "entries (policy action kind result pid):\n" + "\n".join(seen))
    return hit


def check_journal_fields(c, r, placed, stopped):
    """topod's change entries: journalctl -u topod TOPOD_POLICY=... after
    the placement and after the stop name the processes moved, their
    cookies and the unit's properties, and their putting back."""
    pe, se = entries(r.out("fields-placed.json")), entries(r.out("fields-stopped.json"))
    c.true(all(e.get("_SYSTEMD_UNIT") == "topod.service" for e in pe + se) and pe,
           "journalctl -u topod TOPOD_POLICY=...: topod's entries (%d after the placement)" % len(pe))
    scoped = placed.get("scoped", "")
    crunch = set(map(str, pidlist(stopped.get("pids"))))  # crunch was restarted since the placement
    main = placed.get("crunch.MainPID", "")
    hit = check_fields(c, "placed", pe, {"TOPOD_POLICY": "sd-scoped", "TOPOD_ACTION": "move", "TOPOD_KIND": "move",
                                         "TOPOD_RESULT": "done", "TOPOD_PID": scoped})
    for e in hit[:1]:
        c.true(str(e.get("TOPOD_GROUP", "")).startswith("/topod.slice/")
               and str(e.get("MESSAGE", "")).startswith("moved %s (scoped-1) to topod.slice/" % scoped)
               and str(e.get("MESSAGE", "")).endswith("[sd-scoped]") and e.get("PRIORITY") == "6",
               "placed: the move's group, message and priority (info)", repr(e))
    check_fields(c, "placed", pe, {"TOPOD_POLICY": "sd-crunch", "TOPOD_ACTION": "property", "TOPOD_RESULT": "done",
                                   "TOPOD_UNIT": "crunch.service"})
    check_fields(c, "placed", pe, {"TOPOD_POLICY": "sd-crunch", "TOPOD_ACTION": "cookie", "TOPOD_RESULT": "done",
                                   "TOPOD_PID": main})
    check_fields(c, "placed", pe, {"TOPOD_POLICY": "sd-scoped", "TOPOD_ACTION": "cookie", "TOPOD_RESULT": "done",
                                   "TOPOD_PID": scoped})
    c.true(not [e for e in pe if e.get("TOPOD_ACTION") == "restore"], "placed: nothing restored yet")
    # systemctl stop topod: each of those put back
    c.true(stopped.get("scoped") == scoped, "the scoped process the same through the stop")
    check_fields(c, "stopped", se, {"TOPOD_POLICY": "sd-scoped", "TOPOD_ACTION": "restore", "TOPOD_KIND": "move",
                                    "TOPOD_RESULT": "done", "TOPOD_PID": scoped})
    check_fields(c, "stopped", se, {"TOPOD_POLICY": "sd-scoped", "TOPOD_ACTION": "restore", "TOPOD_KIND": "cookie",
                                    "TOPOD_RESULT": "done", "TOPOD_PID": scoped})
    check_fields(c, "stopped", se, {"TOPOD_POLICY": "sd-crunch", "TOPOD_ACTION": "restore", "TOPOD_KIND": "cookie",
                                    "TOPOD_RESULT": "done", "TOPOD_PID": crunch})
    check_fields(c, "stopped", se, {"TOPOD_POLICY": "sd-crunch", "TOPOD_ACTION": "restore", "TOPOD_KIND": "property",
                                    "TOPOD_RESULT": "done", "TOPOD_UNIT": "crunch.service"})


def test(args):
    r = sdlib.boot("sd-services", args, "guest-services.sh", policies=POLICIES, files=sdlib.CRUNCH)
    c = vmlib.Checks()
    out = r.out
    kv = {n: sdlib.kv(out(n + ".kv")) for n in (
        "before", "start1", "placed", "reloaded", "restart", "restarted", "restarted-later", "stop-crunch",
        "started-again", "prestop", "stop1", "stopped", "start2", "placed2", "restart-topod",
        "restarted-topod-at", "restarted-topod", "stop2", "kill", "killed", "recovered", "stop3", "final")}
    waits = sdlib.kv(out("waits.kv"))
    print("  waits: " + "; ".join("%s %s" % kv_ for kv_ in waits.items()))

    # The harness itself: the guest booted, topod installed as built and
    # started by systemctl (sdlib.boot fails the run when the install did).
    c.eq(r.rc, 0, "the guest script ran to its end")
    c.eq((kv["start1"].get("start_rc"), kv["start1"].get("active")), ("0", "active"),
         "systemctl start topod: started, active")
    # Before topod: nothing of that (so that the checks below can fail).
    b = kv["before"]
    c.true(b.get("crunch.cpuset.cpus.effective") != "2-3" and not b.get("scoped.cgroup", "").startswith("/topod"),
           "before topod: crunch not at CPUs 2-3, the scoped process in its own scope",
           "%r %r" % (b.get("crunch.cpuset.cpus.effective"), b.get("scoped.cgroup")))
    c.eq(b.get("scoped.cgroup"), SCOPE_CG, "before topod: the scoped process in lab-job.scope")

    st = {}
    try:
        st = json.loads(out("status.json") or "{}")
    except ValueError:
        pass
    c.eq(c.get(st, "cgroup_driver.driver"), "systemd", "topoctl status --json: cgroup_driver.driver")

    # What the plan says for crunch's group and the scoped process's group.
    plan = {}
    try:
        plan = json.loads(out("plan.json") or "{}").get("plan", {})
    except ValueError:
        pass
    p = kv["placed"]
    pids = pidlist(p.get("pids"))
    groups = {g.get("path"): g for g in plan.get("groups", [])}
    cgroups = {t.get("group") for t in plan.get("tasks", []) if t.get("tgid") in pids}
    c.eq(len(cgroups), 1, "topoctl plan --json: every crunch thread in one group (%r)" % sorted(map(str, cgroups)))
    g = groups.get(next(iter(cgroups))) if len(cgroups) == 1 else None
    c.eq((g or {}).get("cpus"), "2-3", "topoctl plan --json: crunch's group cpus")
    c.eq((g or {}).get("weight"), 300, "topoctl plan --json: crunch's group weight")
    check_placed(c, r, "placed", p, str((g or {}).get("cpus")), str((g or {}).get("weight")))
    ex = {}
    try:
        ex = json.loads(out("explain.json") or "{}")
    except ValueError:
        pass
    names = {str(c.get(t, "policy.name")) for t in ex.get("threads", [])} if isinstance(ex, dict) else set()
    c.eq(sorted(map(str, names)), ["sd-crunch"], "topoctl explain --json MAINPID: the threads' policy")
    c.contains(out("explain.txt"), "placed through unit crunch.service", "topoctl explain MAINPID")

    # daemon-reload and another unit with CPU properties change nothing.
    q = kv["reloaded"]
    same = ("pids", "unitprocs", "crunch.cpuset.cpus.effective", "crunch.cpu.weight", "crunch.AllowedCPUs",
            "crunch.CPUWeight", "scoped.cgroup", "scoped.cpuset.cpus.effective", "scopedslice.cpu.weight",
            "scoped.cookie")
    c.eq({k: q.get(k) for k in same} | cookies_of(q), {k: p.get(k) for k in same} | cookies_of(p),
         "after daemon-reload and systemd-run -p CPUWeight=50 -p AllowedCPUs=0: what topod placed is unchanged")
    c.eq((q.get("other.cpuset.cpus.effective"), q.get("other.cpu.weight")), ("0", "50"),
         "the other unit keeps its own CPUs and weight")

    # systemctl restart crunch: new processes, placed again, no restart loop.
    c.eq(sdlib.kv(out("restart.kv")).get("old_alive", "").split(), [],
         "systemctl restart crunch: none of the old processes alive")
    rs, rl = kv["restarted"], kv["restarted-later"]
    c.true(not set(pidlist(rs.get("pids"))) & set(pids), "after the restart: new processes",
           "%s vs %s" % (rs.get("pids"), pids))
    c.eq(waits.get("restarted.rc", "").split()[:1], ["0"], "after the restart: placed again within 30 s")
    check_placed(c, r, "restarted", rs)
    c.eq((rs.get("crunch.NRestarts"), rl.get("crunch.NRestarts")), (b.get("crunch.NRestarts"),) * 2,
         "no automatic restart of crunch (NRestarts)")
    c.eq(rl.get("crunch.MainPID"), rs.get("crunch.MainPID"), "crunch's MainPID steady 4 s after the restart")

    s = sdlib.kv(out("stop-crunch.kv"))
    c.eq((s.get("alive", "").split(), s.get("named", "").split(), s.get("active")), ([], [], "inactive"),
         "systemctl stop crunch: none of its processes alive (%s)" % s.get("stopped", "").strip())
    check_placed(c, r, "started-again", kv["started-again"])

    # systemctl stop topod: nothing killed, everything back.
    pre, sd = kv["prestop"], kv["stopped"]
    c.eq((pidlist(sd.get("pids")), sd.get("crunch.MainPID"), sd.get("crunch.ActiveState")),
         (pidlist(pre.get("pids")), pre.get("crunch.MainPID"), "active"),
         "systemctl stop topod: every crunch process alive, crunch running")
    c.eq((sd.get("scoped"), sd.get("scoped.cgroup"), sd.get("keeper.cgroup")), (pre.get("scoped"), SCOPE_CG, SCOPE_CG),
         "systemctl stop topod: the scoped process alive and back in lab-job.scope")
    c.eq((sd.get("topod.units", "").split(), sd.get("topod.slice")), ([], "absent"),
         "systemctl stop topod: topod's transient units and /topod.slice gone")
    allowed = ("/system.slice/other-cpu.service",)
    check_reconciled(c, r, "stop", "before", "stopped", kv["stop1"], allowed)
    check_journal_fields(c, r, kv["placed"], kv["prestop"])

    # systemctl restart topod: nothing killed, placed again.
    p2, ra, rt = kv["placed2"], kv["restarted-topod-at"], kv["restarted-topod"]
    c.eq(sdlib.kv(out("restart-topod.kv")).get("restart_rc"), "0", "systemctl restart topod succeeded")
    c.eq((pidlist(ra.get("pids")), ra.get("crunch.MainPID"), ra.get("scoped")), (pidlist(p2.get("pids")), p2.get("crunch.MainPID"),
         p2.get("scoped")), "systemctl restart topod: every placed process alive")
    c.eq(waits.get("restarted-topod.rc", "").split()[:1], ["0"], "after systemctl restart topod: placed again")
    check_placed(c, r, "restarted-topod", rt)

    # kill -9 mid-apply, start, stop: reconciled from the journal.
    c.eq(sdlib.kv(out("kill.kv")).get("killed_rc"), "0", "kill -9 of topod's main process")
    c.eq(sdlib.kv(out("kill.kv")).get("start_rc"), "0", "systemctl start topod after the kill")
    jr = out("journal-topod.txt")
    c.true("recovering the journal" in jr, "the start after kill -9 recovered topod's journal",
           "\n".join(l for l in jr.splitlines() if "journal" in l) or "(no such line)")
    check_placed(c, r, "recovered", kv["recovered"])
    fi = kv["final"]
    c.eq((pidlist(fi.get("pids")), fi.get("scoped"), fi.get("crunch.ActiveState")),
         (pidlist(kv["recovered"].get("pids")), kv["recovered"].get("scoped"), "active"),
         "after kill -9, start and stop: every process alive, crunch running")
    c.eq((fi.get("topod.units", "").split(), fi.get("topod.slice"), fi.get("scoped.cgroup")), ([], "absent", SCOPE_CG),
         "after kill -9, start and stop: topod's units gone, the scoped process back")
    check_reconciled(c, r, "kill -9", "before", "final", kv["stop3"], allowed)
    return sdlib.finish(r, c)


if __name__ == "__main__":
    a = sdlib.add_args(argparse.ArgumentParser(description=__doc__.splitlines()[0])).parse_args()
    vmlib.main(test, a)
