#!/usr/bin/env python3
"""vm-ipc-LEVEL: topod's operator interface on a real kernel.

topod runs with NOTIFY_SOCKET pointed at a test listener (notifylisten) and
seccomp at LEVEL (log, or enforce: the whole run then also proves the
allow-list). Over the private bus socket:

  - explain on a task placed by an explicit rule (crunch-1, cookie group),
    on a latency task (the ping-pong pair: placed by its rule, a class-based
    policy shadowed), on an unmanaged task, on a kernel thread, on a pid
    that does not exist;
  - a non-root client can explain but not reload;
  - a policy edit + topoctl reload moves the group; a broken policy +
    topoctl reload exits non-zero with file:line, and explain shows the old
    placement still in force;
  - topoctl reset restores and pauses; reload resumes;
  - READY=1, STATUS=, RELOADING=1 with MONOTONIC_USEC then READY=1,
    STOPPING=1, and (WATCHDOG_USEC set) WATCHDOG=1 reach the notify socket.

Exit 0 pass, 1 fail, 77 skip."""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vmlib  # noqa: E402

APPLY = os.path.join(HERE, "data", "apply")
IPC = os.path.join(HERE, "data", "ipc")
CONF = "--config /etc/topod-test/topod.conf"
PD = "/etc/topod-test/policies.d"

START = ("workload idle crunch-1 & echo c1=$! > /tmp/pids; "
         "workload pingpong & echo pp=$! >> /tmp/pids; "
         "workload idle & echo by=$! >> /tmp/pids; sleep 1.5")
PIDS = "C1=$(sed -n 's/^c1=//p' /tmp/pids); PP=$(sed -n 's/^pp=//p' /tmp/pids); BY=$(sed -n 's/^by=//p' /tmp/pids); "
# Up: the listener, then topod; wait (60 s at most: TCG) for the ping-pong
# pair to be placed and one of its threads classified latency.
UP = ("notifylisten /run/notify.sock 600 > /tmp/notify.log 2>&1 & sleep 0.2; "
      "NOTIFY_SOCKET=/run/notify.sock WATCHDOG_USEC=2000000 topod " + CONF + " >> /tmp/topod.log 2>&1 & echo $! > /tmp/topod.pid; "
      + PIDS +
      "for i in $(seq 600); do grep -q topod.slice /proc/$PP/cgroup && "
      "topoctl explain $PP --json 2>/dev/null | grep -q '\"class\": \"latency\"' && exit 0; sleep 0.1; done; exit 1")
EXPLAIN = PIDS + "topoctl explain $%s --json"
# The ping-pong process while a thread of it is classed latency: the class
# follows its wake-ups, which a busy host slows for a sample or two (UP
# saw it once; 20 s at most).
EXPLAIN_LATENCY = (PIDS + "for i in $(seq 200); do topoctl explain $PP --json > /tmp/x.json; "
                   "grep -q '\"class\": \"latency\"' /tmp/x.json && break; sleep 0.1; done; cat /tmp/x.json")
NONROOT = (PIDS + "runas 65534 topoctl explain $PP --json > /tmp/nr.json; "
           "echo explain=$?; runas 65534 topoctl reload 2>&1; echo reload=$?; "
           "grep -c '\"tid\"' /tmp/nr.json")
RELOAD_GOOD = ("sed -i 's/^cpus = 8-15/cpus = 0-7/' " + PD + "/20-pingpong.ini; "
               "topoctl reload; echo rc=$?; " + PIDS + "topoctl explain $PP --json")
# The bad reload also carries a good edit (back to 8-15): all or nothing.
RELOAD_BAD = ("sed -i 's/^cpus = 0-7/cpus = 8-15/' " + PD + "/20-pingpong.ini; "
              "printf '[policy]\\nname = broken\\n[match]\\nclas = avx\\n' > " + PD + "/30-broken.ini; "
              "topoctl reload > /tmp/out 2> /tmp/err; echo rc=$? >&2; cat /tmp/err >&2; sleep 1; "
              + PIDS + "topoctl explain $PP --json")
RESET = (PIDS + "topoctl reset --json > /tmp/reset.json; echo rc=$? >&2; sleep 1; "
         "cat /proc/$PP/cgroup >&2; topoctl status --json")
RESUME = ("rm " + PD + "/30-broken.ini; topoctl reload >&2; echo rc=$? >&2; " + PIDS +
          "for i in $(seq 300); do grep -q topod.slice /proc/$PP/cgroup && break; sleep 0.1; done; "
          "topoctl explain $PP --json")
STOP = ("T=$(cat /tmp/topod.pid); kill -TERM $T; "
        "for i in $(seq 300); do [ -d /proc/$T ] || break; sleep 0.1; done; sleep 1.5; "
        "cat /tmp/notify.log; echo ---; cat /tmp/topod.log; [ -d /proc/$T ] && exit 1; "
        "ls /sys/fs/cgroup/topod.slice >/dev/null 2>&1 && exit 1; exit 0")


def thread_of(x, name=None):
    ts = (x or {}).get("threads") or [{}]
    if name:
        ts = [t for t in ts if t.get("comm") == name] or [{}]
    return ts[0]


def test(args):
    conf = open(os.path.join(IPC, "topod.conf.in")).read().replace("@SECCOMP@", args.seccomp)
    r = vmlib.run_guest(
        [START,                                                        # 0
         UP,                                                           # 1
         EXPLAIN % "C1",                                               # 2
         EXPLAIN_LATENCY,                                              # 3
         EXPLAIN % "BY",                                               # 4
         "topoctl explain 2 --json",                                   # 5
         "topoctl explain 999999",                                     # 6
         PIDS + "topoctl explain $PP; topoctl status; topoctl plan | head -5",  # 7
         NONROOT,                                                      # 8
         RELOAD_GOOD,                                                  # 9
         RELOAD_BAD,                                                   # 10
         "grep Seccomp: /proc/$(cat /tmp/topod.pid)/status",           # 11
         RESET,                                                        # 12
         RESUME,                                                       # 13
         STOP],                                                        # 14
        binaries={"topod": args.topod, "topoctl": args.topoctl, "workload": args.workload,
                  "notifylisten": args.notifylisten, "runas": args.runas},
        files={"/etc/topod-test/topod.conf": conf.encode(),
               PD + "/10-crunch.ini": os.path.join(APPLY, "10-crunch.ini"),
               PD + "/20-pingpong.ini": os.path.join(APPLY, "20-pingpong.ini"),
               PD + "/40-latency.ini": os.path.join(IPC, "40-latency.ini")},
        name="test_ipc_" + args.seccomp, timeout=600)
    c = vmlib.Checks()
    end = r.stdout(14)
    notify, _, log = end.partition("---\n")
    print("  topod log:\n    " + "\n    ".join(log.splitlines()[-40:]))

    c.eq(r.rc(1), 0, "topod started, placed the ping-pong pair and classed it latency")

    x = c.json(r, 2, "explain crunch-1")
    t = thread_of(x)
    pol = t.get("policy") or {}
    cg = t.get("cgroup") or {}
    ck = t.get("cookie") or {}
    c.true(t.get("managed") is True and pol.get("name") == "vm-crunch", "crunch-1: placed by vm-crunch", json.dumps(t)[:600])
    c.true(pol.get("file", "").endswith("10-crunch.ini") and pol.get("line", 0) > 0, "crunch-1: the policy's file:line",
           str(pol))
    c.true((cg.get("path") or "").startswith("/topod.slice/crunch"), "crunch-1: in topod's crunch cgroup", str(cg))
    c.true(len(cg.get("llcs", [])) == 1 and cg["llcs"][0].get("whole") and cg.get("cpus_effective") in
           ("0-3", "4-7", "8-11", "12-15"), "crunch-1: cpuset.cpus.effective is one whole LLC", str(cg))
    c.true(ck.get("group") is not None and ck.get("shared_by", 0) >= 1 and ck.get("kernel") not in (0, None),
           "crunch-1: cookie group, threads sharing it, the kernel's cookie", str(ck))

    x = c.json(r, 3, "explain the ping-pong process")
    lat = [t for t in (x or {}).get("threads", []) if t.get("class") == "latency"]
    t = lat[0] if lat else thread_of(x)
    also = {a.get("name"): a for a in t.get("also_matched", [])}
    c.true(bool(lat), "ping-pong: a thread classed latency", json.dumps(x)[:800])
    c.eq((t.get("policy") or {}).get("name"), "vm-pingpong", "ping-pong: placed by its rule")
    c.true(also.get("vm-latency", {}).get("verdict") == "shadowed" and
           "vm-pingpong" in also.get("vm-latency", {}).get("why", ""),
           "ping-pong: the class-based vm-latency matched too, shadowed by vm-pingpong", str(also))
    ev = t.get("evidence") or {}
    c.true(ev.get("rule") and "thresholds" in ev and ev.get("samples", 0) > 0, "ping-pong: class evidence with thresholds",
           str(ev)[:400])
    c.eq((t.get("cgroup") or {}).get("cpus_effective"), "8-15", "ping-pong: cpus 8-15")
    c.eq([n.get("id") for n in (t.get("cgroup") or {}).get("nodes", [])], [1], "ping-pong: that is node 1")
    feats = {f.get("name"): f for f in (x or {}).get("features", [])}
    c.true(feats.get("TTWU_QUEUE", {}).get("on") is False and feats["TTWU_QUEUE"].get("policy") == "vm-pingpong",
           "features in force, with the policy that set each", str(feats))
    c.true((t.get("cookie") or {}).get("kernel") not in (0, None), "ping-pong: a kernel cookie")

    t = thread_of(c.json(r, 4, "explain the bystander"))
    c.true(t.get("managed") is False and "not managed because" in (t.get("reason") or ""),
           "bystander: not managed, and why", str(t.get("reason")))
    t = thread_of(c.json(r, 5, "explain kthreadd"))
    c.true("kernel thread" in (t.get("reason") or ""), "kthreadd: a kernel thread, not managed", str(t.get("reason")))
    c.true(r.rc(6) == 1 and "999999" in r.stderr(6), "explain of a missing pid: exit 1, says which",
           "rc=%s %s" % (r.rc(6), r.stderr(6)))
    out7 = r.stdout(7)
    c.true("policy:   vm-pingpong" in out7 and "running" in out7, "explain and status as text", out7[:600])

    out8 = r.stdout(8)
    c.true("explain=0" in out8 and "reload=1" in out8 and "only root" in out8,
           "non-root: explain works, reload is refused", out8)

    out9 = r.stdout(9)
    c.true("rc=0" in out9, "topoctl reload of an edited policy: exit 0", out9[:300])
    x = json.loads(out9[out9.index("{"):]) if "{" in out9 else {}
    c.eq((thread_of(x, "ping").get("cgroup") or thread_of(x).get("cgroup") or {}).get("cpus_effective"), "0-7",
         "after the reload the pair runs on 0-7")

    err10 = r.stderr(10)
    c.true("rc=1" in err10 and "30-broken.ini:4: error" in err10,
           "topoctl reload of a broken policy: exit 1 with file:line", err10)
    x = c.json(r, 10, "explain after the refused reload")
    c.eq((thread_of(x).get("cgroup") or {}).get("cpus_effective"), "0-7",
         "after the refused reload the old placement stays (0-7, not the 8-15 the same reload carried)")

    seccomp = r.stdout(11).split()
    c.eq(seccomp[-1:], ["0"] if args.seccomp == "off" else ["2"], "seccomp filter mode in /proc/PID/status")

    err12 = r.stderr(12)
    st = c.json(r, 12, "status after reset")
    c.true("rc=0" in err12 and "topod.slice" not in err12.split("rc=0", 1)[-1], "reset: exit 0, the pair moved back",
           err12)
    c.eq((st or {}).get("state"), "paused", "reset: the daemon says it is paused")

    err13 = r.stderr(13)
    t = thread_of(c.json(r, 13, "explain after resume"))
    c.true("rc=0" in err13 and (t.get("cgroup") or {}).get("path", "").startswith("/topod.slice"),
           "reload resumes: placed again", err13 + str(t.get("cgroup")))

    c.eq(r.rc(14), 0, "SIGTERM: stopped and restored")
    msgs = [l.split(" ", 1)[1] for l in notify.splitlines() if " " in l]
    ready = [i for i, m in enumerate(msgs) if "READY=1" in m]
    reloading = [i for i, m in enumerate(msgs) if "RELOADING=1" in m and "MONOTONIC_USEC=" in m]
    c.true(bool(ready), "NOTIFY_SOCKET got READY=1", notify[:800])
    c.true(any(m.startswith("STATUS=") for m in msgs), "NOTIFY_SOCKET got STATUS=")
    c.true(len(reloading) >= 3 and all(any(j > i for j in ready) for i in reloading),
           "every reload: RELOADING=1 + MONOTONIC_USEC, then READY=1", str(msgs[:20]))
    c.true(any("STOPPING=1" in m for m in msgs), "NOTIFY_SOCKET got STOPPING=1")
    c.true(sum("WATCHDOG=1" in m for m in msgs) >= 3, "WATCHDOG_USEC set: the loop pings WATCHDOG=1",
           str(sum("WATCHDOG=1" in m for m in msgs)))
    c.true("seccomp: refused" not in log, "no syscall refused by the sandbox", log[-800:])

    if c.failed:
        print("outputs: %s/out/" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--topod", required=True)
    p.add_argument("--topoctl", required=True)
    p.add_argument("--workload", required=True)
    p.add_argument("--notifylisten", required=True)
    p.add_argument("--runas", required=True)
    p.add_argument("--seccomp", default="log", choices=["off", "log", "enforce"])
    vmlib.main(test, p.parse_args())
