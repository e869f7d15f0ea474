#!/usr/bin/env python3
"""vm-classify: the observer and classifier on a real kernel.

Starts a busy loop, a ping-pong pair of threads, an idle process that renames
itself to solver-1 (matched by an explicit comm rule), and a shell that execs
into another program; `topoctl classify --events` must report throughput,
latency and the rule match, and see the exec and the rename through the proc
connector.  Exit 0 pass, 1 fail, 77 skip."""

import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402

# No topod runs here: status says so on stderr, prints the kernel probe and
# exits 1; any other exit status is a failure.
STATUS = "topoctl status --json || [ $? -eq 1 ]"

HERE = os.path.dirname(os.path.abspath(__file__))

# The rename (prctl PR_SET_NAME: the kernel sends a COMM event for it, not
# for a write to /proc/PID/comm) and the exec happen once topoctl has
# subscribed to the proc connector (netlink sockets among its fds: two,
# the execs' apart, where the kernel filters; the probe's one before them
# comes and goes, so one is not enough; 20 s at most): then /tmp/go
# appears and both follow half a second later.
START = ("workload busy & echo busy=$! > /tmp/pids; "
         "workload pingpong & echo pingpong=$! >> /tmp/pids; "
         "workload idle solver-1 /tmp/go & echo solver=$! >> /tmp/pids; "
         "sh -c 'while [ ! -e /tmp/go ]; do sleep 0.05; done; sleep 0.5; exec workload idle' & "
         "echo exec=$! >> /tmp/pids; "
         "sleep 0.2")

CLASSIFY = ("topoctl classify --json --events --samples 16 --config /etc/topod-test/topod.conf > /tmp/c.json & T=$!; "
            "END=$(($(date +%s) + 20)); "
            "while [ $(ls -l /proc/$T/fd 2>/dev/null | grep -c socket) -lt 2 ] && [ $(date +%s) -lt $END ]; do "
            "sleep 0.05; done; touch /tmp/go; "
            "wait $T; rc=$?; cat /tmp/c.json; exit $rc")


def test(args):
    r = vmlib.run_guest(
        [START,
         CLASSIFY,
         "cat /tmp/pids",
         STATUS],
        binaries={"topoctl": args.topoctl, "workload": args.workload},
        files={"/etc/topod-test/topod.conf": os.path.join(HERE, "data", "classify.conf"),
               "/etc/topod-test/policies.d/solver.ini": os.path.join(HERE, "data", "solver.ini")})
    c = vmlib.Checks()
    pids = dict(line.split("=", 1) for line in r.stdout(2).split())
    pids = {k: int(v) for k, v in pids.items()}
    out = c.json(r, 1, "topoctl classify --json --events")
    threads = c.get(out, "threads") or []

    def of(tgid):
        return [t for t in threads if t.get("tgid") == tgid]

    busy = of(pids.get("busy"))
    c.eq([t.get("class") for t in busy], ["throughput"], "busy loop class")
    pp = of(pids.get("pingpong"))
    c.eq(sorted(t.get("comm") for t in pp), ["ping", "pong"], "ping-pong thread names")
    c.eq([t.get("class") for t in pp], ["latency", "latency"], "ping-pong classes")
    for t in pp:
        ev = t.get("evidence", {})
        print("  ping-pong %s: %s" % (t.get("comm"), ev.get("text")))
        c.true(ev.get("wakeups_per_sec", 0) >= 100, "ping-pong %s wakes >= 100/s" % t.get("comm"),
               "got %s" % ev.get("wakeups_per_sec"))
    for t in busy:
        print("  busy: %s" % t.get("evidence", {}).get("text"))

    solver = of(pids.get("solver"))
    c.eq([t.get("comm") for t in solver], ["solver-1"], "renamed process comm (seen after the COMM event)")
    c.eq([(t.get("policy") or {}).get("name") for t in solver], ["vm-solver"], "explicit rule match")
    c.eq([(t.get("policy") or {}).get("file") for t in solver],
         ["/etc/topod-test/policies.d/solver.ini"], "explicit rule file")
    c.eq([t.get("policy") for t in busy + pp], [None, None, None], "no policy for unmatched tasks")

    events = c.get(out, "events") or []
    c.true(c.get(out, "proc_connector") is True, "proc connector used")
    comm_ev = [e for e in events if e.get("type") == "comm" and e.get("pid") == pids.get("solver")]
    c.eq([e.get("comm") for e in comm_ev], ["solver-1"], "COMM event for the rename")
    exec_ev = [e for e in events if e.get("type") == "exec" and e.get("tgid") == pids.get("exec")]
    c.eq(len(exec_ev), 1, "EXEC event for the shell that exec'd")
    execd = of(pids.get("exec"))
    c.eq([t.get("comm") for t in execd], ["workload"], "exec'd process seen with its new comm")
    c.eq([t.get("exe") for t in execd], ["/usr/bin/workload"], "exec'd process seen with its new exe")

    caps = c.get(c.json(r, 3, "topoctl status --json"), "capabilities")
    c.eq(c.get(caps, "proc_connector.available"), True, "status proc_connector.available")

    if c.failed:
        print("outputs: %s/out/" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--topoctl", required=True)
    p.add_argument("--workload", required=True)
    vmlib.main(test, p.parse_args())
