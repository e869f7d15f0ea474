#!/usr/bin/env python3
"""vm-settings: the scheduler's debugfs settings of a policy's [kernel],
managed by the running topod on a real kernel (7.3 and 6.12).

The policy (data/settings/10-llc-pinned.ini) pins the workload processes to
an LLC and sets llc_balancing/enabled = off (7.3's cache-aware load
balancing), base_slice_ns = 3000000, and numa_balancing/scan_delay_ms,
which neither guest kernel has (CONFIG_NUMA_BALANCING off).

  * topoctl check --strict on the kernel: the settings it lacks are
    warnings that --strict makes an error (numa_balancing on both;
    llc_balancing too on 6.12, named as 7.3's);
  * topoctl status lists the settings found, their values and writable;
  * topod applies: base_slice_ns and (7.3) llc_balancing/enabled written and
    read back, their originals in the journal before; the settings the
    kernel lacks are skipped with the reason (the log says so), nothing
    fails;
  * SIGTERM: both back, the journal gone;
  * started again, then kill -9: the values stay changed and the journal
    holds their originals; started once more without the policy: the
    recovery puts them back.

On 6.12 the same policy gives the documented skips: llc_balancing/enabled
is skipped as 7.3's (CONFIG_SCHED_CACHE), base_slice_ns is written.
Exit 0 pass, 1 fail, 77 skip."""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vmlib  # noqa: E402

DATA = os.path.join(HERE, "data", "settings")
EXAMPLES = os.path.join(HERE, "..", "..", "policies", "examples")
CONF = "--config /etc/topod-test/topod.conf"
POLICY = "/etc/topod-test/policies.d/10-llc-pinned.ini"
D = "/sys/kernel/debug/sched"
VALS = ("vals() { echo \"slice $(cat %s/base_slice_ns) llc $(cat %s/llc_balancing/enabled 2>/dev/null || echo absent)\"; }; "
        % (D, D))
JOURNAL = "echo '--- journal'; cat /run/topod/journal 2>&1; echo '---'"


def up(n):
    """Start topod; wait for its n-th "ready" in the log and the workload placed."""
    return ("topod " + CONF + " >> /tmp/topod.log 2>&1 & echo $! > /tmp/topod.pid; W=$(cat /tmp/w); "
            "for i in $(seq 300); do [ $(grep -c 'ready:' /tmp/topod.log) -ge %d ] && "
            "grep -q topod.slice /proc/$W/cgroup && exit 0; sleep 0.1; done; exit 1" % n)


STOP = ("T=$(cat /tmp/topod.pid); kill -TERM $T; "
        "for i in $(seq 300); do [ -d /proc/$T ] || break; sleep 0.1; done; [ ! -d /proc/$T ]")
CRASH = ("T=$(cat /tmp/topod.pid); kill -9 $T; "
         "for i in $(seq 300); do [ -d /proc/$T ] || break; sleep 0.1; done; ")

COMMANDS = [
    # 0: the originals, and a process the policy matches
    VALS + "vals; workload idle & echo $! > /tmp/w; sleep 1",
    # 1: the check on this kernel; then the documented examples
    "topoctl check --strict /etc/topod-test/policies.d 2>&1; echo rc=$?; echo '--- examples'; "
    "for e in shared-runqueue-light llc-pinned-no-aggregation; do "
    "topoctl check --strict /etc/topod-test/examples/$e.ini 2>&1; echo \"$e rc=$?\"; done",
    # 2: the probe (no topod yet: exit 1, the probe printed)
    "topoctl status --json || [ $? -eq 1 ]",
    # 3: topod applies
    up(1),
    # 4: read back, the journal, what the log says, status from the daemon
    VALS + "vals; " + JOURNAL + "; grep -E 'skipped|failed' /tmp/topod.log; echo '--- status'; topoctl status; "
    "echo '--- explain'; topoctl explain $(cat /tmp/w); echo '--- plan'; topoctl plan --json",
    # 5: SIGTERM: back, the journal gone
    STOP + " && { " + VALS + "vals; " + JOURNAL + "; }",
    # 6: again, then kill -9 in the middle
    "( " + up(2) + " ); " + CRASH + VALS + "vals; " + JOURNAL,
    # 7: started without the policy: the recovery puts them back
    "mkdir -p /tmp/away; mv " + POLICY + " /tmp/away/; printf '[policy]\\nname = vm-none\\n' "
    "> /etc/topod-test/policies.d/90-none.ini; topod " + CONF + " >> /tmp/topod.log 2>&1 & echo $! > /tmp/topod.pid; "
    "for i in $(seq 300); do [ $(grep -c 'ready:' /tmp/topod.log) -ge 3 ] && break; sleep 0.1; done; "
    + VALS + "vals; " + JOURNAL + "; " + STOP,
    # 8: the log, for a failure's report
    "cat /tmp/topod.log",
]


def split(text):
    return [p.strip() for p in text.split("---")]


def vals(line):
    """{"slice": "...", "llc": "..."} from "slice N llc M"."""
    f = line.split()
    return dict(zip(f[0::2], f[1::2])) if len(f) == 4 else {}


def journal_lines(text):
    """The journal part of an output: the lines between "--- journal" and "---"."""
    if "--- journal" not in text:
        return []
    part = text.split("--- journal", 1)[1].split("\n---", 1)[0]
    return [l for l in part.strip().splitlines() if l]


def test(args):
    r = vmlib.run_guest(
        COMMANDS,
        binaries={"topod": args.topod, "topoctl": args.topoctl, "workload": args.workload},
        files={"/etc/topod-test/topod.conf": os.path.join(DATA, "topod.conf"),
               POLICY: os.path.join(DATA, "10-llc-pinned.ini"),
               "/etc/topod-test/examples/shared-runqueue-light.ini": os.path.join(EXAMPLES, "shared-runqueue-light.ini"),
               "/etc/topod-test/examples/llc-pinned-no-aggregation.ini":
                   os.path.join(EXAMPLES, "llc-pinned-no-aggregation.ini")},
        timeout=600, cmd_timeout=120)
    c = vmlib.Checks()
    orig = vals(r.stdout(0).strip())
    has_llc = vmlib.kernel_has("llc_balancing")
    if has_llc is None:
        has_llc = orig.get("llc") not in (None, "absent")
    c.eq(orig.get("llc") != "absent", has_llc,
         "sched/llc_balancing/enabled present on the %s kernel" % (vmlib.kernel_slot() or "given"))
    c.true(orig.get("slice", "").isdigit() and orig["slice"] != "3000000", "base_slice_ns read, not already 3000000",
           str(orig))
    if has_llc:
        c.eq(orig.get("llc"), "1", "llc_balancing/enabled is on by default")

    # 1: check --strict
    out, ex = (r.stdout(1).split("--- examples", 1) + [""])[:2]
    c.true("this kernel lists no sched feature SHARED_RUNQ" in ex and "shared-runqueue-light rc=1" in ex,
           "check --strict: the shared-runqueue example fails here (no mainline kernel has SHARED_RUNQ)", ex)
    if has_llc:
        c.true("llc-pinned-no-aggregation rc=0" in ex, "check --strict: the llc_balancing example passes on 7.3", ex)
    else:
        c.true("llc_balancing/enabled cannot apply" in ex and "llc-pinned-no-aggregation rc=1" in ex,
               "check --strict: the llc_balancing example fails on 6.12", ex)
    c.true(out.rstrip().endswith("rc=1"), "check --strict: exit 1 (a setting this kernel lacks)", out)
    c.true("numa_balancing/scan_delay_ms cannot apply" in out and "CONFIG_NUMA_BALANCING" in out,
           "check: numa_balancing/scan_delay_ms lacks CONFIG_NUMA_BALANCING here", out)
    if has_llc:
        c.true("llc_balancing/enabled cannot apply" not in out, "check: llc_balancing/enabled applies on 7.3", out)
    else:
        c.true("llc_balancing/enabled cannot apply" in out and "7.3" in out,
               "check: llc_balancing/enabled named as 7.3's", out)
    c.true("base_slice_ns cannot apply" not in out, "check: base_slice_ns applies", out)

    # 2: the probe's list
    st = c.json(r, 2, "topoctl status --json")
    settings = {s.get("name"): s for s in (c.get(st, "capabilities.sched_settings.settings") or [])}
    c.eq(c.get(settings, "base_slice_ns.present"), True, "status: base_slice_ns found")
    c.eq(c.get(settings, "base_slice_ns.writable"), True, "status: base_slice_ns writable")
    c.eq(c.get(settings, "base_slice_ns.value"), orig.get("slice"), "status: base_slice_ns's value")
    c.eq(c.get(settings, "llc_balancing/enabled.present"), has_llc, "status: llc_balancing/enabled found or not")
    if has_llc:
        c.eq(c.get(settings, "llc_balancing/enabled.writable"), True, "status: llc_balancing/enabled writable")
        c.eq(c.get(settings, "llc_balancing/imb_pct.present"), True, "status: llc_balancing/imb_pct found")
    else:
        c.true("7.3" in str(c.get(settings, "llc_balancing/enabled.why_absent")), "status: why llc_balancing is absent",
               str(c.get(settings, "llc_balancing/enabled")))
    c.eq(c.get(settings, "numa_balancing/scan_delay_ms.present"), False, "status: no numa_balancing here")
    c.eq(c.get(settings, "latency_ns.present"), False, "status: no latency_ns (removed in 6.6)")

    # 3, 4: applied
    c.eq(r.rc(3), 0, "topod started and placed the workload")
    out = r.stdout(4)
    now = vals(out.splitlines()[0] if out else "")
    j = journal_lines(out)
    c.eq(now.get("slice"), "3000000", "applied: base_slice_ns reads 3000000")
    c.contains(j, "setting base_slice_ns %s" % orig.get("slice"), "journal: base_slice_ns's original")
    log = r.stdout(8)
    c.true("setting numa_balancing/scan_delay_ms 2000: skipped: not on this kernel" in log,
           "log: numa_balancing/scan_delay_ms skipped, with why", log[-2000:])
    if has_llc:
        c.eq(now.get("llc"), "0", "applied: llc_balancing/enabled reads 0")
        c.contains(j, "setting llc_balancing/enabled 1", "journal: llc_balancing/enabled's original")
    else:
        c.eq(now.get("llc"), "absent", "6.12: no llc_balancing to write")
        c.true(not any("llc_balancing" in l for l in j), "6.12: nothing journaled for llc_balancing", "\n".join(j))
        c.true("setting llc_balancing/enabled 0: skipped: not on this kernel: the cache-aware load balancing is 7.3's"
               in log, "log: llc_balancing/enabled skipped as 7.3's", log[-2000:])
    status, explain = (out.split("--- status", 1)[-1].split("--- explain", 1) + [""])[:2]
    explain, plan_text = (explain.split("--- plan", 1) + [""])[:2]
    try:
        diffs = json.loads(plan_text).get("differences", [])
    except ValueError:
        diffs = []
    settings_diff = {x.get("what"): x.get("state") for x in diffs if x.get("kind") == "setting"}
    c.eq(settings_diff.get("base_slice_ns"), "same", "topoctl plan: base_slice_ns as planned")
    if has_llc:
        c.eq(settings_diff.get("llc_balancing/enabled"), "same", "topoctl plan: llc_balancing/enabled as planned")
    c.true("numa_balancing/scan_delay_ms" not in settings_diff, "topoctl plan: an absent setting is no difference",
           str(settings_diff))
    if has_llc:
        c.true("llc:      topod decides: the group is pinned to LLC" in explain and "off by policy vm-llc-pinned" in explain,
               "explain: topod decides the LLC (the kernel's aggregation off by the policy)", explain)
        c.true("setting:     llc_balancing/enabled 0 (by vm-llc-pinned)" in explain, "explain: the setting in force",
               explain)
    else:
        c.true("llc:" not in explain, "explain: no kernel LLC aggregation to speak of on 6.12", explain)
        c.true("setting:     base_slice_ns 3000000 (by vm-llc-pinned)" in explain, "explain: the setting in force",
               explain)
    c.true("sched-settings   yes" in status and "base_slice_ns" in status and "writable" in status,
           "status from the daemon lists the settings and which it can write", status)
    c.true((" 0 failed" in status), "status: the last pass failed nothing", status)

    # 5: SIGTERM
    c.eq(r.rc(5), 0, "SIGTERM: topod stopped")
    out = r.stdout(5)
    back = vals(out.splitlines()[0] if out else "")
    c.eq(back, orig, "SIGTERM: the settings are back")
    c.true("No such file" in out, "SIGTERM: the journal is gone", out)

    # 6: kill -9
    out = r.stdout(6)
    crashed = vals(out.splitlines()[0] if out else "")
    j = journal_lines(out)
    c.eq(crashed.get("slice"), "3000000", "kill -9: base_slice_ns left as set")
    c.contains(j, "setting base_slice_ns %s" % orig.get("slice"), "kill -9: the journal keeps its original")
    if has_llc:
        c.eq(crashed.get("llc"), "0", "kill -9: llc_balancing/enabled left as set")
        c.contains(j, "setting llc_balancing/enabled 1", "kill -9: the journal keeps llc_balancing's original")

    # 7: recovery
    out = r.stdout(7)
    rec = vals(out.splitlines()[0] if out else "")
    c.eq(rec, orig, "restart: the recovery put the settings back")
    c.true(not any(l.startswith("setting ") for l in journal_lines(out)), "restart: no setting left in the journal", out)
    c.eq(r.rc(7), 0, "restart: stopped again")
    if c.failed:
        print("outputs: %s/out/" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--topod", required=True)
    p.add_argument("--topoctl", required=True)
    p.add_argument("--workload", required=True)
    vmlib.main(test, p.parse_args())
