# guest-lib.sh - the systemd tier's guest side (bash, run in /host = the run
# directory; sdlib.py copies it to payload/).
#
#   bash payload/guest-lib.sh install   topod from payload/ installed as shipped
#   bash payload/guest-lib.sh helpers   only the test's tools and files (the test
#                                       installs topod itself: sd-package)
#   bash payload/guest-lib.sh collect   topod's journal and the system's state into out/
#   . payload/guest-lib.sh              (in a test script) the helpers below
#
# Helpers write into out/ (= /host/out), which the host reads:
#   snap NAME         out/NAME.procs (PID CGROUP COMM of every process but
#                     kernel threads: sdsnap.c), .props (AllowedCPUs, AllowedMemoryNodes,
#                     CPUWeight, ... of every loaded unit), .cookies (TID TGID
#                     COOKIE of every thread of those processes)
#   unitcg CGROUP     KEY=VALUE lines: a cgroup's files as the kernel reads
#                     them (cpuset.cpus.effective, cpu.weight, ...)
#   wait_for SECS CMD poll CMD every 0.2 s until it succeeds (status 1 if not)
OUT=/host/out
P=/host/payload
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SYSTEMD_PAGER= SYSTEMD_COLORS=0

log() { echo "[$(cut -d' ' -f1 /proc/uptime)] $*"; }

wait_for() { # SECS CMD...
	local end=$(($(date +%s) + $1)); shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -ge "$end" ] && return 1
		sleep 0.2
	done
}

snap_procs() { sdsnap procs; }  # PID CGROUP COMM

snap_props() { # > FILE: systemctl show blocks of every loaded unit
	local units
	units=$(systemctl list-units --all --plain --no-legend --type=service,scope,slice | awk '{print $1}')
	# shellcheck disable=SC2086
	systemctl show -p Id -p ActiveState -p ControlGroup -p Slice -p AllowedCPUs -p AllowedMemoryNodes \
		-p CPUWeight -p StartupCPUWeight -p MainPID -p NRestarts -- $units
}

snap_cookies() { sdsnap cookies; }  # TID TGID COOKIE

snap() { # NAME
	snap_procs > "$OUT/$1.procs"
	snap_props > "$OUT/$1.props"
	snap_cookies > "$OUT/$1.cookies"
}

unitcg() { # CGROUP: the cgroup's files as the kernel reads them, KEY=VALUE
	local f v
	echo "cgroup=$1"
	for f in cpuset.cpus.effective cpuset.mems.effective cpu.weight cgroup.procs; do
		v="(absent)"
		if [ -n "$1" ] && [ -r "/sys/fs/cgroup$1/$f" ]; then v=$(< "/sys/fs/cgroup$1/$f"); fi
		echo "$f=${v//$'\n'/ }"
	done
}

cgroup_of() { # PID (cgroup2 only: one line, "0::PATH")
	local l
	[ -n "$1" ] && read -r l 2>/dev/null < "/proc/$1/cgroup" && echo "${l#0::}"
}

alive() { # PIDS...: those still alive (not zombies)
	local p
	for p in "$@"; do
		[ -d "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] && echo "$p"
	done
}

topod_start() { # systemctl start topod; KEY=VALUE: rc, active state, pid
	systemctl start topod
	echo "start_rc=$?"
	echo "active=$(systemctl is-active topod)"
	echo "topod_pid=$(systemctl show -p MainPID --value topod)"
}

topod_stop() {
	systemctl stop topod
	echo "stop_rc=$?"
	echo "active=$(systemctl is-active topod)"
}

# The units topod created: its slices and scopes (topod.service is not one).
topod_units() {
	systemctl list-units --all --plain --no-legend 'topod.slice' 'topod-*.slice' 'topod*.scope' |
		awk '{print $1}' | sort
}

# The test's tools and its own files (its units, their programs: payload/root/).
install_helpers() {
	install -D -m 755 "$P/workload" /usr/local/bin/workload &&
	install -D -m 755 "$P/sdsnap" /usr/local/bin/sdsnap &&
	install -D -m 755 "$P/ticker" /usr/local/bin/ticker &&
	{ [ ! -d "$P/root" ] || cp -r "$P/root/." /; }
}

install_topod() {
	local unit=$P/topod.service start reload
	start=$(sed -n 's/^ExecStart=//p' "$unit" | awk '{print $1}')
	reload=$(sed -n 's/^ExecReload=//p' "$unit" | awk '{print $1}')
	[ -n "$start" ] && [ -n "$reload" ] || { echo "no ExecStart=/ExecReload= in $unit"; return 1; }
	# The binaries where the unit as built runs them; the unit as built.
	install -D -m 755 "$P/topod" "$start" &&
	install -D -m 755 "$P/topoctl" "$reload" &&
	install -D -m 644 "$unit" /etc/systemd/system/topod.service &&
	# where the topod built reads its files (meson's sysconfdir)
	local etc=/etc
	[ ! -f "$P/paths.sh" ] || etc=$(. "$P/paths.sh"; echo "$SYSCONFDIR")
	install -D -m 644 "$P/topod.conf" "$etc/topod/topod.conf" &&
	install_helpers &&
	mkdir -p "$etc/topod/policies.d" || return 1
	cp "$P"/policies/*.ini "$etc/topod/policies.d/" 2>/dev/null
	if ldd "$start" "$reload" | grep 'not found'; then return 1; fi
	ls -l "$start" "$reload" /etc/systemd/system/topod.service "$etc/topod/policies.d/"
	systemctl daemon-reload || return 1
	systemctl cat topod.service
	# no drop-in widens the unit: what runs is the file as built
	[ -z "$(systemctl show -p DropInPaths --value topod)" ] || { echo "drop-ins on topod.service"; return 1; }
	echo "ok: installed"
}

collect() {
	journalctl -b -u topod --no-pager -o short-monotonic > "$OUT/journal-topod.txt" 2>&1
	journalctl -b --no-pager -o short-monotonic > "$OUT/journal.txt" 2>&1
	systemd-cgls --no-pager > "$OUT/cgls-end.txt" 2>&1
	dmesg > "$OUT/dmesg.txt" 2>&1
	sync
}

case "${1:-}" in
install)
	mkdir -p "$OUT"
	if install_topod > "$OUT/install.log" 2>&1; then touch "$OUT/installed"; else
		echo "install FAILED" >> "$OUT/install.log"; cat "$OUT/install.log"; exit 1; fi ;;
helpers) # the tools only: the test installs topod itself (sd-package)
	mkdir -p "$OUT"
	install_helpers > "$OUT/helpers.log" 2>&1 && systemctl daemon-reload ||
		{ echo "helpers install FAILED" >> "$OUT/helpers.log"; cat "$OUT/helpers.log"; exit 1; } ;;
collect) collect ;;
esac
