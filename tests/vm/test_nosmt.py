#!/usr/bin/env python3
"""vm-nosmt: the standard guest booted with `nosmt`: core scheduling is
unavailable (prctl gives ENODEV) and topoctl says so, naming SMT; SMT is not
active. Then topod, started with SMT off, gives the ping-pong pair no cookie and plans
on the CPUs online; SMT switched on (smt/control) while it runs, the pair
gets its cookie and the worker its keep-alive, read back with
PR_SCHED_CORE_GET, and the group's cpuset takes the siblings. With SMT off
the kernel refuses to clear cookies, which come back into force with SMT,
so the journal keeps them: a topoctl reset then keeps them and the paused
topod clears them once SMT is on; a reload resumes. A stop with SMT off
keeps them too (topod --restore meanwhile exits 0, keeping them); SMT on,
the recovery (topod --restore) clears them and removes the journal.
Exit 0 pass, 1 fail, 77 skip (no kernel/qemu)."""

import argparse
import os
import re
import sys

sys.dont_write_bytecode = True        # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402
from test_apply import CONF, DATA  # noqa: E402
from test_daemon import COOKIES, STOP, cookie_lines, up  # noqa: E402

# No topod runs here: status says so on stderr, prints the kernel probe and
# exits 1; any other exit status is a failure.
STATUS = "topoctl status --json || [ $? -eq 1 ]"

START = "workload pingpong & echo pp=$! > /tmp/pids; sleep 1.5"
# SMT on while topod runs: wait (60 s of the guest's clock at most: a
# round of cookies() execs a dozen times) for every ping-pong thread and
# the keep-alive to read a cookie, and for the group's cpuset.
SMT_ON = (COOKIES + "echo on > /sys/devices/system/cpu/smt/control; cat /sys/devices/system/cpu/smt/active; "
          "G=/sys/fs/cgroup/topod.slice/pingpong; END=$(($(date +%s) + 60)); "
          "while [ $(date +%s) -lt $END ]; do cookies > /tmp/ck; "
          "grep -qE '^[a-z]+$| 0$' /tmp/ck || [ \"$(cat $G/cpuset.cpus)\" != 8-15 ] || break; sleep 0.2; done; "
          "cat /tmp/ck; echo cpus $(cat $G/cpuset.cpus) effective $(cat $G/cpuset.cpus.effective); "
          "grep -oE 'SMT is .*|CPUs online.*|seccomp.*' /tmp/topod.log")

# No topod runs: cookies() without its threads.
COOKIES_ALONE = COOKIES.replace("T=$(cat /tmp/topod.pid); ", "T=0; ")
# SMT off, then topoctl reset: topod restores and pauses, the pair's
# cookies refused and kept. SMT on: the paused topod clears them itself
# (no pass applies anything while paused). Then a reload resumes it, and
# the pair gets its cookie again (60 s of the guest's clock at most each).
RESET_PAUSED = (COOKIES + "echo off > /sys/devices/system/cpu/smt/control; sleep 1; topoctl reset; echo reset=$?; "
                "echo run: $(ls -A /run/topod); echo on > /sys/devices/system/cpu/smt/control; "
                "END=$(($(date +%s) + 60)); while [ $(date +%s) -lt $END ]; do cookies > /tmp/ck; "
                "grep -qE '^pp [0-9]+ [1-9][0-9]*$' /tmp/ck || break; sleep 0.2; done; cat /tmp/ck; "
                "echo run: $(ls -A /run/topod); grep -o 'SMT is on again after a reset.*' /tmp/topod.log")
RESUME = (COOKIES + "topoctl reload; END=$(($(date +%s) + 60)); while [ $(date +%s) -lt $END ]; do cookies > /tmp/ck; "
          "grep -qE '^pp [0-9]+ 0$' /tmp/ck || break; sleep 0.2; done; cat /tmp/ck")
SMT_OFF_STOP = ("echo off > /sys/devices/system/cpu/smt/control; cat /sys/devices/system/cpu/smt/active; sleep 1; "
                + STOP)
# SMT on with no topod: the pair's cookies, which the stop could not
# clear, in force again (60 s of the guest's clock at most).
SMT_BACK = (COOKIES_ALONE + "topod --restore > /tmp/restore0.log 2>&1; echo rc0=$?; "
            "ls -A /run/topod; echo on > /sys/devices/system/cpu/smt/control; "
            "END=$(($(date +%s) + 60)); while [ $(date +%s) -lt $END ]; do cookies > /tmp/ck; "
            "grep -qE '^pp [0-9]+ [1-9][0-9]*$' /tmp/ck && break; sleep 0.2; done; cat /tmp/ck")
RECOVER = (COOKIES_ALONE + "topod --restore > /tmp/restore.log 2>&1; echo rc=$?; cookies; "
           "echo run: $(ls -A /run/topod); cat /tmp/topod.log /tmp/restore.log")


def test(args):
    r = vmlib.run_guest(
        [STATUS,                                                                  # 0
         "cat /sys/devices/system/cpu/smt/active /sys/devices/system/cpu/smt/control",  # 1
         START,                                                                   # 2
         up(1),                                                                   # 3
         COOKIES + "cookies; echo cpus $(cat /sys/fs/cgroup/topod.slice/pingpong/cpuset.cpus)",  # 4
         SMT_ON,                                                                  # 5
         "topoctl status --json",                                                 # 6
         RESET_PAUSED,                                                            # 7
         RESUME,                                                                  # 8
         SMT_OFF_STOP,                                                            # 9
         SMT_BACK,                                                                # 10
         RECOVER],                                                                # 11
        binaries={"topod": args.topod, "topoctl": args.topoctl, "workload": args.workload},
        files={"/etc/topod-test/topod.conf": os.path.join(DATA, "topod.conf"),
               "/etc/topod-test/policies.d/20-pingpong.ini": os.path.join(DATA, "20-pingpong.ini")},
        append_extra="nosmt")
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

    # topod started with SMT off: placed, but no cookie (the kernel answers
    # ENODEV: nothing to read back).
    c.eq(r.rc(3), 0, "topod started with SMT off and placed the ping-pong process")
    before = r.stdout(4).split()
    c.true(before.count("pp") >= 2 and not cookie_lines(r.stdout(4)),
           "SMT off: no cookie to read on the ping-pong threads", r.stdout(4))
    # The cookie worker runs (with SMT off it holds nothing): the same
    # thread takes the keep-alive once SMT is on.
    c.true(r.stdout(4).split("\n").count("keepalive") == 1, "SMT off: topod's cookie worker runs, with no cookie",
           r.stdout(4))
    c.true("cpus 8,10,12,14" in r.stdout(4).splitlines(), "SMT off: the ping-pong group holds the CPUs online (8,10,12,14)",
           r.stdout(4))

    on = r.stdout(5).splitlines()
    c.eq(on[:1], ["1"], "smt/active after smt/control on")
    ck = cookie_lines(r.stdout(5))
    pp = set(ck.get("pp", []))
    c.true(len(ck.get("pp", [])) >= 2 and len(pp) == 1 and 0 not in pp,
           "SMT on: the ping-pong threads share one cookie", str(ck))
    c.true(len(ck.get("keepalive", [])) == 1 and ck["keepalive"][0] not in pp | {0},
           "SMT on: the worker holds a keep-alive cookie of its own", str(ck))
    c.true(any("SMT is on" in l and "cookies are given" in l for l in on),
           "topod says cookies are given now", "\n".join(on))
    # Planned on the CPUs online: 8,10,12,14 with SMT off; the siblings
    # once it is on (topology read again).
    c.true("cpus 8-15 effective 8-15" in on, "SMT on: the ping-pong group's cpuset holds the siblings (8-15)",
           "\n".join(on))
    caps = c.get(c.json(r, 6, "topoctl status --json (from topod, SMT on)"), "kernel.capabilities")
    c.eq(c.get(caps, "core_scheduling.available"), True, "topod's status: core_scheduling.available after SMT on")
    c.eq(c.get(caps, "smt.active"), True, "topod's status: smt.active after SMT on")

    paused = r.stdout(7)
    c.true("reset=0" in paused.splitlines(), "SMT off, topoctl reset succeeds (the cookies it cannot clear skipped)",
           paused)
    runs = re.findall(r"^run:(.*)$", paused, re.M)
    c.true(len(runs) == 2 and "journal" in runs[0].split() and "journal" not in runs[1].split(),
           "the reset kept the cookies in the journal; SMT on, the paused topod cleared them and removed it", paused)
    c.eq(sorted(set(cookie_lines(paused).get("pp", []))), [0], "SMT on after the reset: the pair's cookies cleared")
    c.true("SMT is on again after a reset" in paused, "topod says why it restored", paused)
    resumed = set(cookie_lines(r.stdout(8)).get("pp", []))
    c.true(len(resumed) == 1 and 0 not in resumed, "topoctl reload resumes: the pair's cookie again", r.stdout(8))

    c.eq(r.rc(9), 0, "SMT off again, topod stopped")
    back = r.stdout(10)
    c.true("rc0=0" in back.splitlines(), "topod --restore with SMT off exits 0 (the cookies skipped, kept)", back)
    c.true("journal" in back.split(), "stopped with SMT off: the journal stays, with the cookies it could not clear",
           back)
    held = set(cookie_lines(back).get("pp", []))
    c.true(len(held) == 1 and 0 not in held, "SMT on again: the pair's cookies are in force again", back)
    rec = r.stdout(11)
    c.true(re.search(r"stopping: 2 journal entries not undone yet stay in /run/topod/journal", rec) is not None,
           "the stop says what it left in the journal (the pair's two cookies)", rec)
    c.true("rc=0" in rec.splitlines(), "topod --restore (the recovery) succeeded", rec)
    c.eq(sorted(set(cookie_lines(rec).get("pp", []))), [0], "the recovery cleared the ping-pong cookies")
    run = re.search(r"^run:(.*)$", rec, re.M)
    c.true(run is not None and "journal" not in run.group(1).split(), "the recovery removed the journal", rec)

    if c.failed:
        print("outputs: %s/out/  (0 = status, 4-5 = cookies before and after SMT on, 11 = logs)" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--topod", required=True, help="path to the topod binary")
    p.add_argument("--topoctl", required=True, help="path to the topoctl binary")
    p.add_argument("--workload", required=True, help="path to the workload helper")
    vmlib.main(test, p.parse_args())
