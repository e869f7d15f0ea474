# sd-driver-guest.sh - bench/sd-driver's guest side (bash, in the systemd
# guest of tests/systemd, run in /host = the run directory by sdlib.boot()).
#
# For each cgroup driver in turn (DRIVERS, from /etc/sdbench.conf), topod as
# its unit with a topod.conf.d drop-in choosing the driver, then:
#   hand  exec-spawn in a `systemd-run --scope` scope starts topod-probe at
#         RATE/s for SECONDS_RUN (burst: BURST_RATE/s for BURST_SECONDS,
#         faster than the systemd driver places them); the policy sdbench-hand (comm = topod-probe)
#         places each in the group "bench" (CPUs 0-1): cgroupfs moves it
#         into /sdbench/bench, systemd moves it into a transient scope
#         topod-bench-PID.scope in topod's slice.
#   svc   UNITS transient services sdb-svc-DRIVER-N.service, one after the
#         other, each exec-spawn starting PER_UNIT svc-probe processes
#         (2/s); the policy sdbench-svc (unit = sdb-svc-*.service, comm =
#         svc-probe) places them in "svc" (CPUs 2-3): cgroupfs moves each
#         into /sdbench/svc, systemd gives the unit AllowedCPUs= (its first
#         process places the unit; the others are born placed).
# Rulers: the probe's (running -> its cgroup's cpuset.cpus.effective is
# the policy's CPUs: exec-probe.c "cpus="), and the kernel's, from a
# tracefs instance: sched_process_exec -> cgroup_attach_task (exec-trace),
# and, for a unit given CPUs where it is, -> the first cpuset write
# (kprobe on cpuset_write_resmask) after the exec. System calls: a second
# instance counting raw_syscalls:sys_enter (or a kprobe on x64_sys_call)
# of topod's threads, PID 1 and dbus-daemon; bus calls: topod's own count
# (topoctl status --json, bus_calls). Everything goes to out/ for the host.
. /host/payload/guest-lib.sh
set -u

# shellcheck disable=SC1091
. /etc/sdbench.conf
B=/usr/local/lib/sdbench
for f in exec-spawn exec-trace topod-probe; do
	base64 -d "$B/$f.b64" > "$B/$f" && chmod 755 "$B/$f" || { echo "cannot unpack $f"; exit 1; }
done
cp "$B/topod-probe" "$B/svc-probe"
mkdir -p /run/sdbench

T=/sys/kernel/tracing
[ -d "$T/instances" ] || mount -t tracefs nodev "$T" || { echo "no tracefs"; exit 1; }
{
	echo "kernel=$(uname -r)"
	echo "cpus=$(nproc)"
	echo "systemd=$(systemctl --version | head -n 1)"
} > "$OUT/guest.kv"

# The cpuset write of a unit given CPUs where it is, and the system calls.
CPUSET_EV=
if echo 'p:sdbench/cpuset_write cpuset_write_resmask' >> "$T/kprobe_events" 2>/dev/null; then
	CPUSET_EV=sdbench/cpuset_write
fi
SYS_EV=
if [ -d "$T/events/raw_syscalls/sys_enter" ]; then
	SYS_EV=raw_syscalls/sys_enter
elif echo 'p:sdbench/syscall x64_sys_call' >> "$T/kprobe_events" 2>/dev/null; then
	SYS_EV=sdbench/syscall
fi
echo "cpuset_event=${CPUSET_EV:-none}" >> "$OUT/guest.kv"
echo "syscall_event=${SYS_EV:-none}" >> "$OUT/guest.kv"

P_I=$T/instances/sdb-place
S_I=$T/instances/sdb-sys
mkdir "$P_I" "$S_I" || { echo "cannot make trace instances"; exit 1; }
echo 16384 > "$P_I/buffer_size_kb"
echo 32768 > "$S_I/buffer_size_kb"
for e in sched/sched_process_exec cgroup/cgroup_attach_task $CPUSET_EV; do
	echo 1 > "$P_I/events/$e/enable" || { echo "cannot enable $e"; exit 1; }
done
[ -z "$SYS_EV" ] || echo 1 > "$S_I/options/event-fork"

place_start() { echo 0 > "$P_I/tracing_on"; : > "$P_I/trace"; echo 1 > "$P_I/tracing_on"; }
place_stop() { echo 0 > "$P_I/tracing_on"; cat "$P_I/trace" > "$1"; }
# System calls of topod (every thread, those it starts meanwhile too),
# PID 1 and dbus-daemon, counted over one run.
sys_start() {
	[ -n "$SYS_EV" ] || return 0
	echo 0 > "$S_I/tracing_on"
	echo 0 > "$S_I/events/$SYS_EV/enable"
	: > "$S_I/trace"
	: > "$S_I/set_event_pid"
	local t
	for t in /proc/"$(systemctl show -p MainPID --value topod)"/task/* /proc/1 /proc/"$(pidof dbus-daemon)"; do
		echo "${t##*/}" >> "$S_I/set_event_pid"
	done
	echo 1 > "$S_I/events/$SYS_EV/enable"
	echo 1 > "$S_I/tracing_on"
}
sys_stop() { # KEY: out/KEY.sys, "topod=N systemd=N dbus=N lost=N"
	[ -n "$SYS_EV" ] || { echo "none=1" > "$OUT/$1.sys"; return 0; }
	echo 0 > "$S_I/tracing_on"
	local dbus
	dbus=$(pidof dbus-daemon)
	awk -v d="$dbus" '
		/LOST/ { lost++ }
		match($0, /-[0-9]+ +\[[0-9]+\]/) {
			p = substr($0, RSTART + 1, RLENGTH - 1); sub(/ .*/, "", p)
			if (p == 1) s++; else if (p == d) b++; else t++
		}
		END { printf "topod=%d systemd=%d dbus=%d lost=%d\n", t, s, b, lost }' "$S_I/trace" > "$OUT/$1.sys"
	echo 0 > "$S_I/events/$SYS_EV/enable"
}

bus_calls() {
	topoctl status --json 2>/dev/null | grep -o '"bus_calls": *[0-9]*' | grep -o '[0-9]*$' || echo 0
}

drv_start() { # DRIVER
	mkdir -p /etc/topod/topod.conf.d
	if [ "$1" = cgroupfs ]; then
		# A cgroup of its own beside systemd's, made here: the unit's
		# root has no CAP_DAC_OVERRIDE for the cgroup2 root directory.
		mkdir -p /sys/fs/cgroup/sdbench
		printf '[cgroup]\ndriver = cgroupfs\ncgroup_root = /sdbench\nhierarchy = flat\n'
	else
		printf '[cgroup]\ndriver = systemd\ncgroup_root = /topod.slice\nhierarchy = flat\n'
	fi > /etc/topod/topod.conf.d/50-sdbench.conf
	printf '[daemon]\nlog_level = %s\n' "$LOG_LEVEL" >> /etc/topod/topod.conf.d/50-sdbench.conf
	systemctl start topod || return 1
	wait_for 120 sh -c 'topoctl status --json | grep -q "\"passes\": *[1-9]"' || return 1
	sleep "$SETTLE"
	topoctl status > "$OUT/status-$1-start.txt" 2>&1
}

drv_stop() { # DRIVER
	topoctl status > "$OUT/status-$1-end.txt" 2>&1
	systemctl stop topod
	rm -f /etc/topod/topod.conf.d/50-sdbench.conf
	rmdir /sys/fs/cgroup/sdbench/* /sys/fs/cgroup/sdbench 2>/dev/null
	journalctl -b -u topod --no-pager -o short-monotonic > "$OUT/journal-$1.txt" 2>&1
}

run_hand() { # DRIVER CASE RATE SECONDS
	local b0 b1 k=$2-$1
	place_start
	sys_start
	b0=$(bus_calls)
	systemd-run --scope --unit="sdb-$k" --quiet \
		"$B/exec-spawn" -r "$3" -d "$4" -g cpus=0-1 -t "$TIMEOUT_MS" -p "$B/topod-probe" \
		--kv --raw "/run/sdbench/$k.raw" > "$OUT/$k.spawn" 2> "$OUT/$k.spawn.err"
	sleep "$SETTLE"
	b1=$(bus_calls)
	sys_stop "$k"
	place_stop "/run/sdbench/$k.trace"
	echo "bus_calls=$((b1 - b0))" > "$OUT/$k.bus"
	cp "/run/sdbench/$k.raw" "$OUT/"
	# the kernel ruler: the cgroupfs driver's group, the systemd driver's scopes
	local g=bench
	[ "$1" = systemd ] && g='topod-bench-*'
	"$B/exec-trace" -g "$g" -f topod-probe --kv "/run/sdbench/$k.trace" > "$OUT/$k.kern"
	# where the probes went (the group's path, for the report)
	grep -o 'cgroup_attach_task: .*topod-probe' "/run/sdbench/$k.trace" | grep -o 'dst_path=[^ ]*' |
		sort | uniq -c | sort -rn | head -n 3 > "$OUT/$k.paths"
}

run_svc() { # DRIVER
	local i b0 b1
	sys_start
	b0=$(bus_calls)
	for i in $(seq 1 "$UNITS"); do
		place_start
		systemd-run --wait --quiet --unit="sdb-svc-$1-$i" -p Type=exec \
			/bin/sh -c "exec $B/exec-spawn -r 2 -n $PER_UNIT -g cpus=2-3 -t $TIMEOUT_MS -p $B/svc-probe --kv --raw /run/sdbench/svc-$1-$i.raw > /run/sdbench/svc-$1-$i.spawn"
		place_stop "/run/sdbench/svc-$1-$i.trace"
		# exec of each svc-probe, attaches into .../svc, cpuset writes
		grep -E 'sched_process_exec: .*svc-probe|cgroup_attach_task: .*dst_path=[^ ]*/svc |cpuset_write' \
			"/run/sdbench/svc-$1-$i.trace" > "$OUT/svc-$1-$i.events"
		cp "/run/sdbench/svc-$1-$i.raw" "$OUT/"
		cat "/run/sdbench/svc-$1-$i.spawn" >> "$OUT/svc-$1.spawn"
		sleep 1
	done
	sleep "$SETTLE"
	b1=$(bus_calls)
	sys_stop "svc-$1"
	echo "bus_calls=$((b1 - b0))" > "$OUT/svc-$1.bus"
}

for d in $DRIVERS; do
	log "driver $d"
	if ! drv_start "$d"; then
		echo "$d: topod did not start" > "$OUT/failed-$d"
		systemctl status --no-pager topod > "$OUT/status-$d-failed.txt" 2>&1
		drv_stop "$d"
		continue
	fi
	case " $CASES " in *" hand "*) log "$d: by hand"; run_hand "$d" hand "$RATE" "$SECONDS_RUN" ;; esac
	case " $CASES " in *" burst "*) log "$d: by hand, a burst"; run_hand "$d" burst "$BURST_RATE" "$BURST_SECONDS" ;; esac
	case " $CASES " in *" svc "*) log "$d: service units"; run_svc "$d" ;; esac
	drv_stop "$d"
	log "$d: done"
done
touch "$OUT/done"
