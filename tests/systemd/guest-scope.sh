# guest-scope.sh - sd-scope in the guest (test_scope.py reads out/).
#
# A fresh install: the shipped policies/*.ini and topod.conf as shipped,
# plus two policies that name a unit (crunch.service) and a process in a
# `systemd-run --scope` scope (scoped-1). The state of every process and
# unit before topod, after it ran a while, and after its stop.
. /host/payload/guest-lib.sh
set -u

systemctl start crunch
systemd-run --scope --unit=lab-job --quiet \
	bash -c 'workload idle scoped-1 & exec workload idle lab-keeper' </dev/null >/dev/null 2>&1 &
# processes of the kind the shipped class policies are for, in a unit no
# policy names: a busy loop (throughput) and a ticker (latency: sleeps 2 ms
# at a time)
systemd-run --unit=bystander --quiet bash -c 'workload busy & ticker & wait'
wait_for 30 pgrep -x crunch-w1
wait_for 30 pgrep -x scoped-1
wait_for 30 pgrep -x lab-keeper
sleep 1

log "before topod"
systemctl list-units --type=service --state=running --plain --no-legend > "$OUT/services.txt"
snap before

log "start topod"
topod_start > "$OUT/start.kv" 2>&1
CG=/sys/fs/cgroup/system.slice/crunch.service
t0=$SECONDS
wait_for 30 sh -c '[ "$(cat '$CG'/cpuset.cpus.effective 2>/dev/null)" = 2-3 ] &&
	sed -n "s/^0:://p" /proc/$(pgrep -x scoped-1)/cgroup | grep -q "^/topod.slice/"'
echo "placed_rc=$? after $((SECONDS - t0)) s" >> "$OUT/start.kv"
# a while: until topod's classifier calls the ticker latency (what the
# shipped latency-services acts on), then a few more passes
t0=$SECONDS
wait_for 120 sh -c 'topoctl explain --json $(pgrep -x ticker) | grep -q "\"class\": *\"latency\""'
echo "classified_rc=$? after $((SECONDS - t0)) s" >> "$OUT/start.kv"
# what topod decides for it, whatever the apply could do: 8 looks, 2 s apart
for i in 1 2 3 4 5 6 7 8; do
	topoctl explain --json "$(pgrep -x ticker)" > "$OUT/explain-ticker-$i.json" 2>&1
	sleep 2
done
topoctl explain --json "$(pgrep -x workload | head -n 1)" > "$OUT/explain-busy.json" 2>&1
{
	echo "crunch.cpus=$(cat $CG/cpuset.cpus.effective 2>/dev/null)"
	echo "crunch.weight=$(cat $CG/cpu.weight 2>/dev/null)"
	echo "crunch.pids=$(pgrep -x "crunch(-w[12])?" | tr '\n' ' ')"
	echo "scoped=$(pgrep -x scoped-1)"
	echo "scoped.cgroup=$(cgroup_of "$(pgrep -x scoped-1)")"
	echo "scoped.cookie=$(workload cookie "$(pgrep -x scoped-1)" | awk '{print $2}')"
	echo "topod.active=$(systemctl is-active topod)"
	echo "ticker=$(pgrep -x ticker)"
	echo "topod.pid=$(systemctl show -p MainPID --value topod)"
} > "$OUT/running.kv"
snap running
topoctl status --json > "$OUT/status.json" 2> "$OUT/status.err"
topoctl plan --json > "$OUT/plan.json" 2> "$OUT/plan.err"

# the busy bystander slows the emulated guest: gone before the stop
systemctl stop bystander

log "stop topod"
topod_stop > "$OUT/stop.kv" 2>&1
sleep 1
echo "units=$(topod_units | tr '\n' ' ')" >> "$OUT/stop.kv"
snap stopped
log "done"
