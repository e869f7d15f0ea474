#!/usr/bin/env python3
"""vm-cookie: the core-scheduling cookie applier on a real kernel.

Two guest boots.  With SMT: `workload` processes (a ping-pong pair, a busy
loop, two idle ones) are put into cookie groups by `cookietool` (linked with
the library): group A = the two ping-pong threads, group B = the busy and one
idle process; read back with PR_SCHED_CORE_GET they are equal within a group,
different between groups, 0 for the untouched one; the applier's worker
holds a keep-alive cookie of its own; clearing A gives 0 and leaves B; a
task that exits before its assignment is reported vanished, not failed; a
forked child and a new thread of a cookie'd process inherit its cookie, and
a process that was not there joins a group with cookie_join; the time per
assignment for 100 threads is printed.  With `nosmt`: every call reports
ENODEV, cleanly.  Exit 0 pass, 1 fail, 77 skip."""

import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402

SCENARIO = ("workload pingpong & pp=$!; workload busy & busy=$!; "
            "workload idle & idle=$!; workload idle & un=$!; sleep 0.3; "
            "cookietool scenario $pp $busy $idle $un; rc=$?; "
            "kill -9 $pp $busy $idle $un; exit $rc")


def outcomes(c, out, name):
    return [(r.get("outcome"), r.get("error")) for r in (c.get(out, name + ".results") or [])]


def cookie(c, out, path):
    v = c.get(out, path + ".cookie")
    return v if isinstance(v, int) else None


def check_smt(c, out):
    c.eq(outcomes(c, out, "assign_a"), [("done", None)] * 2, "assign group A (ping-pong threads)")
    c.eq(outcomes(c, out, "assign_b"), [("done", None)] * 2, "assign group B (busy + idle)")

    a1, a2 = cookie(c, out, "after_assign.a1"), cookie(c, out, "after_assign.a2")
    b1, b2 = cookie(c, out, "after_assign.b1"), cookie(c, out, "after_assign.b2")
    keep = cookie(c, out, "keepalive")
    print("  cookies: A=%s,%s B=%s,%s keep-alive=%s" % (a1, a2, b1, b2, keep))
    c.true(a1 not in (None, 0) and a1 == a2, "group A: one cookie, not 0", "a1=%r a2=%r" % (a1, a2))
    c.true(b1 not in (None, 0) and b1 == b2, "group B: one cookie, not 0", "b1=%r b2=%r" % (b1, b2))
    c.true(a1 != b1, "groups A and B differ", "a=%r b=%r" % (a1, b1))
    c.eq(cookie(c, out, "after_assign.untouched"), 0, "untouched task's cookie")
    c.eq(cookie(c, out, "after_assign.self"), 0, "the calling thread's cookie")
    c.eq([r.get("cookie") for r in c.get(out, "assign_a.results") or []], [a1, a1],
         "assign A reports the cookie read back")
    c.true(c.get(out, "after_assign.keepalive_tid") not in (0, None) and keep not in (None, 0, a1, b1),
           "worker holds a keep-alive cookie of its own", "tid=%r cookie=%r" % (
               c.get(out, "after_assign.keepalive_tid"), keep))

    c.eq(outcomes(c, out, "assign_vanished"), [("vanished", None), ("done", None)],
         "task exited before assignment: vanished, not failed")
    c.true(cookie(c, out, "vanished_live") not in (None, 0), "its live partner got a cookie")

    parent = cookie(c, out, "inherit.parent")
    c.true(parent not in (None, 0), "spawner has a cookie", "got %r" % parent)
    c.eq(cookie(c, out, "inherit.forked_child"), parent, "forked child inherits the cookie")
    c.eq(cookie(c, out, "inherit.new_thread"), parent, "new thread inherits the cookie")
    c.eq(outcomes(c, out, "join_b"), [("done", None)], "a later process joins group B")
    c.eq(cookie(c, out, "join_b_later"), b1, "joined process has B's cookie")

    c.eq(outcomes(c, out, "clear_a"), [("done", None)] * 2, "clear group A")
    c.eq(outcomes(c, out, "clear_a_again"), [("already", None)] * 2, "clear group A again: already so")
    c.eq([cookie(c, out, "after_clear.a1"), cookie(c, out, "after_clear.a2")], [0, 0], "group A after clear")
    c.eq([cookie(c, out, "after_clear.b1"), cookie(c, out, "after_clear.b2")], [b1, b1], "group B untouched by clear")
    c.true(c.get(out, "after_clear.keepalive_tid") not in (0, None), "keep-alive held after the clear")

    c.eq(outcomes(c, out, "refused_smt_off"), [("refused", "ENODEV")] * 2, "interlock: SMT off")
    c.eq(outcomes(c, out, "refused_sched_ext"), [("refused", "EBUSY")] * 2, "interlock: sched_ext active")

    c.eq(c.get(out, "release.return"), 0, "release the keep-alive")
    c.eq(c.get(out, "release.keepalive_tid"), 0, "no keep-alive after release")
    c.eq(cookie(c, out, "worker_after_release"), 0, "worker's cookie after release")
    c.eq(outcomes(c, out, "clear_b"), [("done", None)] * 2, "clear group B after release")



def check_timing(c, out):
    """The time per assignment for 100 threads, printed (not asserted: a
    figure, not a test), and that every assignment in it was done."""
    t = c.get(out, "timing")
    c.eq(c.get(t, "threads"), 100, "timing: threads")
    for i, r in enumerate(c.get(t, "rounds") or []):
        print("  timing round %d, 100 threads: one group of 100 %.0f us/thread; 100 one-thread "
              "assigns %.0f us each; clear %.0f us/thread.  Pieces: handoff to the worker %.0f us, "
              "identity check %.0f us/thread, bare prctl SHARE_TO %.0f us/thread" % (
                  i, r.get("group_usec_per_thread", -1), r.get("usec_per_single_assign", -1),
                  r.get("clear_usec_per_thread", -1), r.get("handoff_usec", -1),
                  r.get("identity_check_usec", -1), r.get("raw_share_to_usec_per_thread", -1)))
        c.eq([r.get("group_done"), r.get("singles_done"), r.get("clear_done")], [100, 100, 100],
             "timing round %d: all done" % i)


def check_nosmt(c, out):
    for name in ("assign_a", "assign_b", "clear_a", "clear_a_again", "clear_b", "assign_spawner", "join_b"):
        got = outcomes(c, out, name)
        c.true(got and all(o == ("failed", "ENODEV") for o in got), "nosmt: %s reports ENODEV" % name,
               "got %r" % got)
    got = outcomes(c, out, "assign_vanished")
    c.eq(got, [("vanished", None), ("failed", "ENODEV")], "nosmt: exited task vanished, live one ENODEV")
    for path in ("after_assign.a1", "after_assign.untouched", "after_assign.self", "after_clear.b1",
                 "inherit.parent"):
        c.eq(c.get(out, path + ".error"), "ENODEV", "nosmt: GET %s" % path)
    c.eq(c.get(out, "after_assign.keepalive_tid"), 0, "nosmt: no keep-alive")
    c.eq(outcomes(c, out, "refused_smt_off"), [("refused", "ENODEV")] * 2, "nosmt: interlock still refuses")
    c.eq(c.get(out, "end"), True, "nosmt: the tool ran to the end")


def check_timing_nosmt(c, out):
    for i, r in enumerate(c.get(out, "timing.rounds") or []):
        c.eq([r.get("group_done"), r.get("singles_done"), r.get("clear_done"), r.get("raw_error")],
             [0, 0, 0, "ENODEV"], "nosmt: timing round %d does nothing" % i)


def test(args):
    bins = {"cookietool": args.cookietool, "workload": args.workload}
    c = vmlib.Checks()

    # The timing runs after the workloads are gone: under TCG a busy vCPU
    # delays wake-ups on the others by up to its round-robin slice.
    cmds = [SCENARIO, "cat /sys/devices/system/cpu/smt/active", "cookietool timing"]
    r = vmlib.run_guest(cmds, binaries=bins, name="test_cookie-smt", cmd_timeout=400, timeout=600)
    c.eq(r.stdout(1).strip(), "1", "guest: SMT active")
    out = c.json(r, 0, "cookietool scenario (SMT)")
    if out:
        check_smt(c, out)
    out = c.json(r, 2, "cookietool timing (SMT)")
    if out:
        check_timing(c, out)
    if c.failed:
        print("outputs: %s/out/" % r.run_dir)

    r = vmlib.run_guest(cmds, binaries=bins, append_extra="nosmt", name="test_cookie-nosmt",
                        cmd_timeout=400, timeout=600)
    c.eq(r.stdout(1).strip(), "0", "nosmt guest: SMT not active")
    out = c.json(r, 0, "cookietool scenario (nosmt)")
    if out:
        check_nosmt(c, out)
    out = c.json(r, 2, "cookietool timing (nosmt)")
    if out:
        check_timing_nosmt(c, out)
    if c.failed:
        print("outputs: %s/out/" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--cookietool", required=True)
    p.add_argument("--workload", required=True)
    vmlib.main(test, p.parse_args())
