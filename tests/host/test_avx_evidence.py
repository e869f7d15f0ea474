#!/usr/bin/env python3
"""What the AVX-512 evidence of this host allows, on the host itself.

The kernel's AVX512_elapsed_ms (/proc/PID/arch_status) records register
state, not instructions: where the C library's EVEX string functions leave
AVX-512 registers dirty, every dynamically linked program looks like an
AVX-512 user. topod probes that on its own thread (topoctl status:
avx512-evidence) and then never lets arch_status vote avx.

This runs a busy integer loop linked against the C library (workload
busy), a busy shell loop (sh -c 'while :; do :; done') and a wake-up
ping-pong (workload pingpong), watches them with topoctl classify, and
checks, whatever this host is:
  - the busy loops are throughput and the ping-pong latency; none is avx
    (neither runs an AVX-512 instruction);
  - status names the evidence: polluted (then it says why, and every
    sample of the busy loops showed AVX-512 state), clean, or none (then
    no thread shows AVX-512 state at all).
Thresholds are set for a loaded 2-core machine (busy at 5% of a CPU in bursts of 10 us, a
ping-pong thread up to 60%, 30% of its switches voluntary): what is tested is the avx verdict, not the
CPU figures. Exit 0 pass, 1 fail.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CONF = """[classifier]
window = 2s
dwell = 1s
min_task_age = 1s
throughput_cpu_min = 5%
throughput_burst_min = 10us
latency_cpu_max = 60%
latency_voluntary_min = 30%
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--topoctl", required=True)
    ap.add_argument("--workload", required=True)
    a = ap.parse_args()
    failed = []

    def check(what, ok, detail=""):
        print(("ok   " if ok else "FAIL ") + what + (f": {detail}" if detail else ""))
        if not ok:
            failed.append(what)

    st = json.loads(subprocess.run([a.topoctl, "status", "--json"], capture_output=True, text=True).stdout)
    caps = st.get("capabilities", st)
    state = st.get("avx512_arch_status")
    ev = caps.get("avx512_evidence", {}) if isinstance(caps, dict) else {}
    reason = ev.get("reason", "")
    print(f"host: AVX-512 evidence {state}: {reason}")
    check("status names the AVX-512 evidence", state in ("none", "clean", "polluted") and
          reason.startswith(state + ":"), f"{state!r} {reason!r}")

    procs = []
    with tempfile.TemporaryDirectory() as d:
        conf = os.path.join(d, "topod.conf")
        with open(conf, "w") as f:
            f.write(CONF)
        empty = os.path.join(d, "policies.d")
        os.mkdir(empty)
        try:
            procs = [subprocess.Popen([a.workload, "busy"]),
                     subprocess.Popen(["sh", "-c", "while :; do :; done"]),
                     subprocess.Popen([a.workload, "pingpong"])]
            time.sleep(0.5)
            out = subprocess.run([a.topoctl, "classify", "--config", conf, "--policies", empty,
                                  "--interval", "250ms", "--samples", "16", "--json"],
                                 capture_output=True, text=True, timeout=120)
        finally:
            for p in procs:
                p.kill()
                p.wait()
    if out.returncode != 0:
        check("topoctl classify ran", False, out.stderr.strip()[-400:])
        return 1
    threads = json.loads(out.stdout)["threads"]
    names = {procs[0].pid: "glibc integer loop", procs[1].pid: "sh loop", procs[2].pid: "ping-pong"}
    seen = {}
    for t in threads:
        if t["tgid"] in names:
            seen.setdefault(t["tgid"], []).append(t)
    for pid, name in names.items():
        rows = seen.get(pid, [])
        check(f"{name} watched", len(rows) > 0)
        for t in rows:
            e = t["evidence"]
            want = "latency" if pid == procs[2].pid else "throughput"
            desc = f"tid {t['tid']} {t['comm']}: class {t['class']}; {e['text']}"
            print("     " + desc)
            check(f"{name} tid {t['tid']} not avx", t["class"] != "avx" and e["votes_permille"]["avx"] == 0, desc)
            check(f"{name} tid {t['tid']} is {want}", t["class"] == want, desc)
            if state == "polluted" and pid != procs[2].pid:
                # what makes it polluted: a loop with no AVX-512 instruction shows the state
                check(f"{name}: AVX-512 state seen, and ignored", e["avx_permille"] > 0 and
                      "arch_status polluted" in e["text"], e["text"])
            if state == "none":
                check(f"{name}: no AVX-512 line", not e["avx_line"])
    print("PASS" if not failed else f"FAIL: {len(failed)} checks")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
