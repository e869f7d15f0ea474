# guest-services.sh - sd-services in the guest (test_services.py reads what
# it writes into out/ and says what each part shows).
#
# crunch.service (Type=simple, Restart=always; its main process, a bash
# script named crunch, forks two workers crunch-w1 and crunch-w2) is named
# by the policy sd-crunch (unit = crunch.service); a process in the
# `systemd-run --scope` scope lab-job.scope is named by sd-scoped (comm =
# scoped-*), beside an unnamed one (lab-keeper) that keeps the scope alive.
# Then topod is started, and stopped, restarted, killed as below.
. /host/payload/guest-lib.sh
set -u

systemctl start crunch
systemd-run --scope --unit=lab-job --quiet \
	bash -c 'workload idle scoped-1 & exec workload idle lab-keeper' </dev/null >/dev/null 2>&1 &
wait_for 30 pgrep -x crunch-w2
wait_for 30 pgrep -x scoped-1
wait_for 30 pgrep -x lab-keeper

crunch_pids() { pgrep -x 'crunch(-w[12])?' | sort -n | tr '\n' ' '; }
CG=/sys/fs/cgroup/system.slice/crunch.service

# What the policies ask for, seen from the cgroup files (kernel) and the
# scoped process's cgroup: crunch's unit cgroup at CPUs 2-3, weight 300.
placed() {
	[ "$(cat $CG/cpuset.cpus.effective 2>/dev/null)" = 2-3 ] &&
		[ "$(cat $CG/cpu.weight 2>/dev/null)" = 300 ] &&
		cgroup_of "$(pgrep -x scoped-1)" | grep -q '^/topod.slice/'
}
# and the workers' cookies: every crunch thread has one
cookied() {
	# shellcheck disable=SC2046
	sdsnap cookies $(crunch_pids) | awk '$3 == 0 {bad = 1} END {exit bad || NR < 3}'
}

record() { # NAME [full]: crunch's and the scoped process's state, out/NAME.kv; with
	# full, `systemctl status` of both units and `systemd-cgls -u crunch.service` too
	local p s u k cg
	s=$(pgrep -x scoped-1)
	k=$(pgrep -x lab-keeper)
	cg=$(cgroup_of "$s")
	u=${cg##*/}
	{
		echo "pids=$(crunch_pids)"
		echo "unitprocs=$(sort -n $CG/cgroup.procs 2>/dev/null | tr '\n' ' ')"
		unitcg /system.slice/crunch.service | sed 's/^/crunch./'
		for p in $(crunch_pids); do echo "cg.$p=$(cgroup_of "$p")"; done
		# shellcheck disable=SC2046
		sdsnap cookies $(crunch_pids) | awk '{print "ck." $1 "=" $3}'
		echo "scoped=$s"
		echo "scoped.cgroup=$cg"
		echo "scoped.unit=$u"
		unitcg "$cg" | sed 's/^/scoped./'
		unitcg "${cg%/*}" | sed 's/^/scopedslice./'
		echo "keeper=$k"
		echo "keeper.cgroup=$(cgroup_of "$k")"
		sdsnap cookies "$s" "$k" | awk -v s="$s" '{print ($2 == s ? "scoped" : "keeper") ".cookie=" $3}'
		# one systemctl call: crunch's properties, the scope's unit, topod's
		systemctl show -p Id -p AllowedCPUs -p AllowedMemoryNodes -p CPUWeight -p NRestarts -p ActiveState \
			-p MainPID -p Slice -- crunch.service topod.service ${u:+"$u"} |
			awk -F= 'function flush(  i) { for (i = 1; i <= n; i++) print id "." l[i]; n = 0 }
				!NF { flush(); next }
				$1 == "Id" { id = ($2 == "crunch.service") ? "crunch" : ($2 == "topod.service") ? "topod" : "scoped"; next }
				{ l[++n] = $0 } END { flush() }'
		echo "topod.units=$(topod_units | tr '\n' ' ')"
		echo "topod.slice=$([ -d /sys/fs/cgroup/topod.slice ] && echo present || echo absent)"
		[ -d /sys/fs/cgroup/system.slice/other-cpu.service ] &&
			unitcg /system.slice/other-cpu.service | sed 's/^/other./'
	} > "$OUT/$1.kv" 2>&1
	[ "${2:-}" = full ] || return 0
	systemctl status --no-pager -l crunch > "$OUT/$1.status-crunch" 2>&1
	systemd-cgls --no-pager -u crunch.service > "$OUT/$1.cgls-crunch" 2>&1
	systemctl status --no-pager -l -- "$u" > "$OUT/$1.status-scoped" 2>&1
}

# Once a placement was not seen in its time, later waits are short: the
# checks say what is missing, and the run ends in time.
WAIT_FAILED=
placed_wait() { # NAME SECS: wait until placed and cookied, say how long
	local t0=$SECONDS secs=$2 rc
	[ -z "$WAIT_FAILED" ] || secs=3
	wait_for "$secs" placed && wait_for 10 cookied
	rc=$?
	[ $rc = 0 ] || WAIT_FAILED=1
	echo "$1.rc=$rc after $((SECONDS - t0)) s" >> "$OUT/waits.kv"
}

# topod's change entries in the journal, by their fields: those about each
# policy (as an operator asks for them), JSON lines in out/fields-NAME.json
changes() { # NAME
	journalctl --sync 2>/dev/null
	for p in sd-crunch sd-scoped; do
		journalctl -b -u topod TOPOD_POLICY=$p -o json --no-pager
	done > "$OUT/fields-$1.json" 2>&1
}

log "before topod"
record before
snap before

log "start topod"
topod_start > "$OUT/start1.kv" 2>&1
placed_wait placed 30
sleep 2
record placed full
snap placed
changes placed
M=$(systemctl show -p MainPID --value crunch)
topoctl plan --json > "$OUT/plan.json" 2> "$OUT/plan.err"
topoctl explain --json "$M" > "$OUT/explain.json" 2> "$OUT/explain.err"
topoctl explain "$M" > "$OUT/explain.txt" 2>&1
topoctl status --json > "$OUT/status.json" 2> "$OUT/status.err"

log "daemon-reload, another unit with CPU properties"
systemctl daemon-reload
systemd-run --unit=other-cpu -p CPUWeight=50 -p AllowedCPUs=0 --quiet sleep 1000
sleep 4
record reloaded

log "systemctl restart crunch"
OLD=$(crunch_pids)
systemctl restart crunch
wait_for 30 sh -c 'p=$(pgrep -x crunch-w2) && ! echo " '"$OLD"' " | grep -q " $p "'
placed_wait restarted 20
echo "old_alive=$(alive $OLD | tr '\n' ' ')" > "$OUT/restart.kv"
record restarted full
sleep 4
record restarted-later

log "systemctl stop crunch"
OLD=$(crunch_pids)
systemctl stop crunch
sleep 1
{
	echo "stopped=$OLD"
	echo "alive=$(alive $OLD | tr '\n' ' ')"
	echo "named=$(pgrep -x 'crunch(-w[12])?' | tr '\n' ' ')"
	echo "active=$(systemctl is-active crunch)"
} > "$OUT/stop-crunch.kv"
systemctl start crunch
wait_for 30 pgrep -x crunch-w2
placed_wait started-again 20
record started-again full

log "systemctl stop topod"
record prestop
topod_stop > "$OUT/stop1.kv" 2>&1
sleep 1
record stopped
snap stopped
changes stopped

log "systemctl start topod; systemctl restart topod"
topod_start > "$OUT/start2.kv" 2>&1
placed_wait placed2 30
record placed2
systemctl restart topod
echo "restart_rc=$?" > "$OUT/restart-topod.kv"
sleep 1
record restarted-topod-at
placed_wait restarted-topod 30
record restarted-topod full

log "kill -9 topod mid-apply"
topod_stop > "$OUT/stop2.kv" 2>&1
snap stopped2
systemctl start --no-block topod
# the first placement done, the pass still going: the crunch unit's CPUs set
wait_for "$([ -z "$WAIT_FAILED" ] && echo 30 || echo 3)" sh -c '[ "$(cat '$CG'/cpuset.cpus.effective 2>/dev/null)" = 2-3 ]'
kill -9 "$(systemctl show -p MainPID --value topod)"
echo "killed_rc=$?" > "$OUT/kill.kv"
record killed
sleep 3
systemctl start topod
echo "start_rc=$?" >> "$OUT/kill.kv"
placed_wait recovered 30
record recovered full
topod_stop > "$OUT/stop3.kv" 2>&1
sleep 1
record final
snap final
log "done"
