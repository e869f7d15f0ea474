#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The bus's backlog flood: what a connect/close loop costs the daemon.

The real topod on tests/unit/test-bus-attack.py's fake root (the same
Daemon, without its cgroup part); two clients as uid 65534 connect
(nonblocking) and close as fast as they can for 5 s. Printed per round:
the daemon's CPU (utime+stime of all threads over wall time, the attack
test's own figure), the connects the kernel took, and the daemon's CPU
per connect. Needs root and setpriv.

Usage: bench/bus-backlog.py TOPOD TOPOCTL [ROUNDS]   (from the source tree)"""

import importlib.util
import os
import subprocess
import sys
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT = r'''
import socket, sys, time
end = time.monotonic() + float(sys.argv[2]); ok = 0
while time.monotonic() < end:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.setblocking(False)
    try:
        s.connect(sys.argv[1]); ok += 1
    except OSError:
        pass
    s.close()
print(ok)
'''


def main():
    if os.geteuid() != 0:
        print("needs root")
        return 77
    spec = importlib.util.spec_from_file_location("attack", os.path.join(SRC, "tests/unit/test-bus-attack.py"))
    attack = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(attack)
    os.environ["TOPOD_ATTACK_NO_CGROUP"] = "1"
    d = attack.Daemon(sys.argv[1], sys.argv[2], SRC)
    try:
        for _ in range(int(sys.argv[3]) if len(sys.argv) > 3 else 3):
            c0, t0 = attack.cpu_ticks(d.pid), time.monotonic()
            ps = [subprocess.Popen(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                                    sys.executable, "-c", CLIENT, d.bus, "5"], stdout=subprocess.PIPE)
                  for _ in range(2)]
            n = sum(int(p.communicate()[0]) for p in ps)
            cpu = (attack.cpu_ticks(d.pid) - c0) / os.sysconf("SC_CLK_TCK")
            wall = time.monotonic() - t0
            print("backlog flood: daemon CPU %.1f%% of a core, %d connects, %.1f us per connect" %
                  (100 * cpu / wall, n, 1e6 * cpu / max(n, 1)))
    finally:
        d.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
