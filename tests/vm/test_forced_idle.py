#!/usr/bin/env python3
"""vm-forced-idle: what cookies cost, read back, and a policy held to it.

One guest boot (SMT on), schedstats on (kernel.sched_schedstats = 1: the
kernel accounts forced idle only then). Two cookie groups share the one
core of CPUs 0-1: a busy fa1 (policy fa, [when] forced_idle = 0-1%) and a
busy fb1 (policy fb, no band), one thread each, so that neither sibling
ever has a thread of the running one's cookie: each keeps the other's
sibling idle.

Checks: the fb group's cgroup cpu.stat shows non-zero
core_sched.force_idle_usec, and `topoctl explain` of fb1 shows its own and
its cgroup's forced idle (from /proc/<tid>/sched and cpu.stat); policy fa
leaves force (status: its share past the band; explain: why), its
processes let go with their cookies cleared, and after the 3 s dwell at 0%
it takes them back (in topod.slice/fa with a cookie again), topod saying
both with the figure. Before all
that, with schedstats off, status says forced idle is not accounted.
Exit 0 pass, 1 fail, 77 skip."""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "forced-idle")

SETUP = ("echo 0 > /proc/sys/kernel/sched_schedstats; "
         "for n in fa1 fb1; do cp /usr/bin/workload /tmp/$n; done")
UP = ("topod --config /etc/topod-test/topod.conf >> /tmp/topod.log 2>&1 & echo $! > /tmp/topod.pid; "
      "for i in $(seq 300); do grep -q ready /tmp/topod.log && exit 0; sleep 0.1; done; exit 1")
OFF = "topoctl status --json"
# schedstats on, the four busy loops; then a line per 0.25 s of where fa1
# is and its cookie, until fa has been let go and taken back (90 s at most).
SCENARIO = ("echo 1 > /proc/sys/kernel/sched_schedstats; "
            "for n in fa1 fb1; do /tmp/$n busy & echo $n=$! >> /tmp/pids; done; "
            "FA=$(sed -n 's/^fa1=//p' /tmp/pids); placed=; left=; END=$(($(date +%s) + 90)); "
            "while [ $(date +%s) -lt $END ]; do "
            "cg=$(cut -d: -f3 /proc/$FA/cgroup); ck=$(workload cookie $FA | cut -d' ' -f2); "
            "echo \"at $(cut -d' ' -f1 /proc/uptime) $cg $ck\"; "
            "if [ \"$cg\" = /topod.slice/fa ] && [ \"$ck\" != 0 ]; then "
            "[ -z \"$left\" ] || { echo back; break; }; placed=1; "
            "elif [ -n \"$placed\" ] && [ -z \"$left\" ]; then left=1; topoctl status --json > /tmp/status-out.json; fi; "
            "sleep 0.25; done")
READ = ("FB=$(sed -n 's/^fb1=//p' /tmp/pids); echo \"== cpu.stat\"; cat /sys/fs/cgroup/topod.slice/fb/cpu.stat; "
        "echo \"== explain\"; topoctl explain $FB --json; echo; echo \"== explain-text\"; topoctl explain $FB; "
        "echo \"== status-out\"; cat /tmp/status-out.json")
STOP = ("T=$(cat /tmp/topod.pid); kill -TERM $T; "
        "for i in $(seq 300); do [ -d /proc/$T ] || exit 0; sleep 0.1; done; exit 1")


def sections(text):
    out, name = {}, None
    for l in text.splitlines():
        if l.startswith("== "):
            name = l[3:].strip()
            out[name] = []
        elif name:
            out[name].append(l)
    return {k: "\n".join(v) for k, v in out.items()}


def test(args):
    r = vmlib.run_guest([SETUP, UP, OFF, SCENARIO, READ, STOP, "cat /tmp/topod.log"],
                        binaries={"topod": args.topod, "topoctl": args.topoctl, "workload": args.workload},
                        files={"/etc/topod-test/topod.conf": os.path.join(DATA, "topod.conf"),
                               "/etc/topod-test/policies.d/10-fa.ini": os.path.join(DATA, "10-fa.ini"),
                               "/etc/topod-test/policies.d/20-fb.ini": os.path.join(DATA, "20-fb.ini")},
                        name="test_forced_idle", cmd_timeout=300, timeout=600)
    c = vmlib.Checks()
    c.eq(r.rc(1), 0, "topod started")
    st = c.json(r, 2, "topoctl status --json, schedstats off")
    c.eq(c.get(st, "kernel.capabilities.schedstats.available"), False, "status: schedstats off")
    fa = [p for p in (c.get(st, "policies") or []) if p.get("name") == "fa"]
    c.eq(c.get(fa[0] if fa else {}, "forced_idle.accounted"), False, "status: fa's forced idle not accounted")

    lines = r.stdout(3).splitlines()
    states = [l.split()[2:4] for l in lines if l.startswith("at ") and len(l.split()) >= 4]
    print("  fa1 over time: %s" % " ".join("%s:%s" % (s[0].rsplit('/', 1)[-1], "c" if s[1] != "0" else "0")
                                           for s in states[:60]))
    c.true(any(s[0] == "/topod.slice/fa" and s[1] != "0" for s in states), "fa1 placed with a cookie first")
    first = next((i for i, s in enumerate(states) if s[0] == "/topod.slice/fa" and s[1] != "0"), len(states))
    # the first stretch out of its group, to its taking back: a reading
    # between the cookie and the move of that (the fast path gives the
    # cookie first) is the taking back, not the letting go
    gone, after = [], None
    for i, s in enumerate(states[first:]):
        if s[0] != "/topod.slice/fa":
            gone.append(s)
        elif gone:
            after = s
            break
    if after is not None and gone and gone[-1][1] != "0":
        gone.pop()
    c.true(gone and all(s[1] == "0" for s in gone[1:]), "fa let go past its budget: fa1 out of its group, cookie cleared",
           str(gone[:5]))
    c.true("back" in lines, "fa taken back after the dwell: fa1 in its group with a cookie again", "\n".join(lines[-3:]))

    sec = sections(r.stdout(4))
    fi = None
    for l in sec.get("cpu.stat", "").splitlines():
        if l.startswith("core_sched.force_idle_usec "):
            fi = int(l.split()[1])
    c.true(fi is not None and fi > 0, "fb's cgroup: core_sched.force_idle_usec > 0", "got %r" % (fi,))
    try:
        ex = json.loads(sec.get("explain", ""))
    except ValueError:
        ex = None
    th = (c.get(ex, "threads") or [{}])[0] if ex else {}
    c.true((c.get(th, "forced_idle.thread_usec") or 0) > 0, "explain fb1: its own forced idle > 0",
           str(c.get(th, "forced_idle")))
    c.true((c.get(th, "forced_idle.cgroup_usec") or 0) > 0, "explain fb1: its cgroup's forced idle > 0",
           str(c.get(th, "forced_idle")))
    c.true("idle:     forced idle" in sec.get("explain-text", ""), "explain text shows the forced idle line",
           sec.get("explain-text", "")[-600:])
    try:
        so = json.loads(sec.get("status-out", ""))
    except ValueError:
        so = None
    fa = [p for p in (c.get(so, "policies") or []) if p.get("name") == "fa"] if so else []
    c.true(fa and c.get(fa[0], "forced_idle.accounted") is True, "status: fa's forced idle accounted now",
           str(fa))
    log = r.stdout(6)
    left = [l for l in log.splitlines() if "policy fa left force" in l]
    came = [l for l in log.splitlines() if "policy fa entered force" in l]
    share = None
    if left:
        try:
            share = float(left[0].split("kept idle ")[1].split("%")[0])
        except (IndexError, ValueError):
            share = None
    c.true(share is not None and share > 1, "topod said fa left force, with its share past 1%", "\n".join(left[:1]))
    c.true(len(came) >= 1, "topod said fa entered force again", "\n".join(log.splitlines()[-8:]))
    c.eq(r.rc(5), 0, "topod stopped")
    if c.failed:
        print("outputs: %s/out/" % r.run_dir)
        print(r.stdout(6)[-3000:])
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--topod", required=True)
    p.add_argument("--topoctl", required=True)
    p.add_argument("--workload", required=True)
    vmlib.main(test, p.parse_args())
