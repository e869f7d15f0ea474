#!/usr/bin/env python3
"""bench-exec: bench/exec-latency inside the test guest (not a test).

The same driver as on the host (a POSIX sh script: the guest has busybox,
no python) runs in the guest on its real 6.12 kernel with core scheduling
and pure cgroup2: the reference placer, cgrulesengd (the host's binary and
libcgroup, copied in with their libraries) and topod, one after the other,
at 20, 50 and 100 probes/s. Prints the driver's report and, with
--json-out, writes its JSON. Asserts nothing; exit 0 when the guest ran the
driver, 1 when not, 77 when the VM tier cannot run here.

    TOPOD_VM_KERNEL=/work/shared/vm/bzImage-6.12.95-topod \\
        python3 tests/vm/bench_exec.py --build build [--seconds 5] \\
        [--rates 20,50,100] [--peers ref,cgrulesengd,topod] \\
        [--cookie both|yes|no] [--timeout-ms 1000] [--poll-us 10] [--rules N] [--rounds N] \\
        [--json-out FILE] \\
        [--topod PATH] [--topod-b PATH (with topod-b in --peers)]

--cookie both (the default) runs the peers twice: cgroup only (all three do
the same job), then with a cookie per process (ref and topod; cgrulesengd
has no cookies and moves the cgroup only)."""

import argparse
import os
import shutil
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vmlib  # noqa: E402

TOP = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, "data", "bench")
GUEST_DATA = "/etc/topod-bench"

LOOK = ("grep -E 'cgroup|tracefs|debugfs' /proc/mounts; "
        "echo controllers: $(cat /sys/fs/cgroup/cgroup.controllers); "
        "ls /sys/kernel/tracing/events/cgroup/cgroup_attach_task /sys/kernel/debug/tracing 2>&1 | head -5; "
        "exec-spawn --can-cookie; nproc")


def test(args):
    bench = os.path.join(args.build, "bench")
    binaries = {name: os.path.join(bench, name)
                for name in ("exec-spawn", "exec-trace", "placer-ref", "topod-probe")}
    binaries["exec-latency"] = os.path.join(TOP, "bench", "exec-latency")
    binaries["topod"] = args.topod or os.path.join(args.build, "src", "topod", "topod")
    topod_b = ""
    if "topod-b" in args.peers.split(",") and not args.topod_b:
        print("bench-exec: peer topod-b needs --topod-b PATH", file=sys.stderr)
        return 2
    if args.topod_b:
        binaries["topod-b"] = args.topod_b
        topod_b = " --topod-b /usr/bin/topod-b"
    cgr = args.cgrulesengd or shutil.which("cgrulesengd") or "/usr/sbin/cgrulesengd"
    if os.path.isfile(cgr):
        binaries["cgrulesengd"] = cgr
    else:
        print("bench-exec: no cgrulesengd on the host (apt-get install cgroup-tools): "
              "the guest run will report it skipped")
    files = {GUEST_DATA + "/" + f: os.path.join(DATA, f)
             for f in ("topod.conf", "probe.ini", "probe-cookie.ini")}

    modes = ["no", "yes"] if args.cookie == "both" else [args.cookie]
    commands = [LOOK]
    for mode in modes:
        commands.append("exec-latency --data %s --peers %s --rates %s --seconds %s --cookie %s --timeout-ms %d "
                        "--poll-us %d --rules %d --rounds %d --json%s" % (GUEST_DATA, args.peers, args.rates, args.seconds,
                                                                          mode, args.timeout_ms, args.poll_us, args.rules,
                                                                          args.rounds, topod_b))
    r = vmlib.run_guest(commands, binaries=binaries, files=files, timeout=args.timeout,
                        name="bench-exec")
    print("---- guest: mounts, controllers, tracefs, cookies")
    sys.stdout.write(r.stdout(0) + r.stderr(0))
    bad = 0
    out = []
    for i, mode in enumerate(modes, start=1):
        print("---- guest: exec-latency --cookie %s  (rc=%s)" % (mode, r.rc(i)))
        sys.stdout.write(r.stderr(i))
        if r.rc(i) != 0:
            bad = 1
            continue
        try:
            out.append(r.json(i))
        except vmlib.VMFailure as e:
            print("bench-exec: no JSON from the driver: %s" % e)
            bad = 1
    if args.json_out and out:
        import json
        with open(args.json_out, "w") as f:
            json.dump(out if len(out) > 1 else out[0], f, indent=1)
            f.write("\n")
        print("bench-exec: JSON in %s" % args.json_out)
    print("bench-exec: guest outputs in %s/out/" % r.run_dir)
    return bad


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter))
    p.add_argument("--build", default=os.path.join(TOP, "build"), help="the meson build directory")
    p.add_argument("--topod", help="topod binary (default BUILD/src/topod/topod)")
    p.add_argument("--topod-b", help="another topod binary, the peer topod-b (add it to --peers): "
                   "two builds in one run (exec-latency --topod-b)")
    p.add_argument("--cgrulesengd", help="cgrulesengd binary (default: the host's)")
    p.add_argument("--peers", default="ref,cgrulesengd,topod")
    p.add_argument("--rates", default="20,50,100")
    p.add_argument("--seconds", default="5")
    p.add_argument("--timeout-ms", type=int, default=1000)
    p.add_argument("--poll-us", type=int, default=10,
                   help="the probe's first poll interval (exec-latency --poll-us)")
    p.add_argument("--rounds", type=int, default=1,
                   help="the peers in turn N times, medians reported (exec-latency --rounds)")
    p.add_argument("--rules", type=int, default=0,
                   help="N more rules, naming other programs, for topod and cgrulesengd (exec-latency --rules)")
    p.add_argument("--cookie", choices=("both", "yes", "no"), default="both")
    p.add_argument("--timeout", type=int, default=900, help="seconds for the whole guest run")
    p.add_argument("--json-out", help="write the driver's JSON here")
    vmlib.main(test, p.parse_args())
