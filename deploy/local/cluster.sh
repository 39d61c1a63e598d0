#!/usr/bin/env bash
# cluster.sh runs N real `rackstream run` processes on this machine, spread
# over simulated zones and clusters, against the local Kafka broker
# (deploy/local/kafka.sh), for trying failures by hand: kill one instance,
# kill a zone, watch the standbys take over.
#
#   deploy/local/cluster.sh start [N]          build, start a feeder and N instances (6), wait until ready
#   deploy/local/cluster.sh stop               SIGTERM everything, SIGKILL after a deadline
#   deploy/local/cluster.sh status             one line per instance: pid, HTTP, zone, readiness
#   deploy/local/cluster.sh kill I             SIGKILL instance I (a crash)
#   deploy/local/cluster.sh kill-zone ZONE     SIGKILL every instance in ZONE (e.g. eu-central-1a)
#   deploy/local/cluster.sh start-instance I   start instance I again (same state directory)
#   deploy/local/cluster.sh clean              stop, then delete the run directory (state, logs)
#
# Instance i (1-based) has zone eu-central-1{a,b,c}[(i-1)%3], cluster
# k8s-cluster{1,2}[((i-1)/3)%2], HTTP on 127.0.0.1:$((HTTP_PORT+i-1)), its
# state in $DIR/state/i<i> (kept across stop and start, so its process id
# too) and its log in $DIR/i<i>.log. They run the built-in count processor,
# num.standby.replicas=2 spread over zone then cluster, over the topic
# <app>-events, which a feeder (`rackstream dev --instances 0`) creates and
# writes to at RATE records per second.
#
# Environment: RACKSTREAM_BOOTSTRAP (the broker; default: kafka.sh env's
# RACKSTREAM_TEST_BROKERS), RACKSTREAM_CLUSTER_DIR (/tmp/rackstream-cluster),
# RACKSTREAM_CLUSTER_APP (rackstream-local), RACKSTREAM_CLUSTER_HTTP_PORT
# (18080), RACKSTREAM_CLUSTER_PARTITIONS (12), RACKSTREAM_CLUSTER_STANDBYS (2),
# RACKSTREAM_CLUSTER_RATE (20), RACKSTREAM_CLUSTER_READY_TIMEOUT (120 s),
# RACKSTREAM_CLUSTER_BIN (a rackstream binary to use instead of building one).
#
# Exit codes: 0 ok; 1 failed; 2 usage, or no broker to run against.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DIR=${RACKSTREAM_CLUSTER_DIR:-/tmp/rackstream-cluster}
APP=${RACKSTREAM_CLUSTER_APP:-rackstream-local}
HTTP_PORT=${RACKSTREAM_CLUSTER_HTTP_PORT:-18080}
PARTITIONS=${RACKSTREAM_CLUSTER_PARTITIONS:-12}
STANDBYS=${RACKSTREAM_CLUSTER_STANDBYS:-2}
RATE=${RACKSTREAM_CLUSTER_RATE:-20}
READY_TIMEOUT=${RACKSTREAM_CLUSTER_READY_TIMEOUT:-120}
STOP_TIMEOUT=40 # longer than shutdown.timeout.ms below
BIN=${RACKSTREAM_CLUSTER_BIN:-$DIR/bin/rackstream}
ZONES=(eu-central-1a eu-central-1b eu-central-1c)
CLUSTERS=(k8s-cluster1 k8s-cluster2)

say() { printf 'cluster.sh: %s\n' "$*"; }
die() { printf 'cluster.sh: %s\n' "$1" >&2; exit "${2:-1}"; }

zone_of() { echo "${ZONES[$((($1 - 1) % 3))]}"; }
cluster_of() { echo "${CLUSTERS[$((($1 - 1) / 3 % 2))]}"; }
port_of() { echo $((HTTP_PORT + $1 - 1)); }

# alive PIDFILE: the pid when its process runs.
alive() {
	local pid
	[[ -f $1 ]] || return 1
	pid=$(cat "$1")
	kill -0 "$pid" 2>/dev/null || return 1
	# A killed process may linger as a zombie until its reaper gets to it.
	[[ $(ps -o stat= -p "$pid" 2>/dev/null) != Z* ]] || return 1
	echo "$pid"
}

instances() {
	local f
	for f in "$DIR"/i*.pid; do
		[[ -e $f ]] || continue
		f=${f##*/i}
		echo "${f%.pid}"
	done | sort -n
}

bootstrap() {
	if [[ -n ${RACKSTREAM_BOOTSTRAP:-} ]]; then
		echo "$RACKSTREAM_BOOTSTRAP"
		return
	fi
	"$HERE/kafka.sh" status >/dev/null 2>&1 ||
		die "no broker: start one with deploy/local/kafka.sh start, or set RACKSTREAM_BOOTSTRAP=host:port" 2
	eval "$("$HERE/kafka.sh" env)"
	echo "$RACKSTREAM_TEST_BROKERS"
}

build() {
	if [[ -n ${RACKSTREAM_CLUSTER_BIN:-} ]]; then
		[[ -x $BIN ]] || die "RACKSTREAM_CLUSTER_BIN=$BIN is not an executable" 2
		return
	fi
	mkdir -p "$DIR/bin"
	say "building rackstream into $BIN"
	(cd "$ROOT" && go build -o "$BIN" ./cmd/rackstream) || die "go build failed"
}

write_config() {
	cat >"$DIR/rackstream.properties" <<EOF
# Written by deploy/local/cluster.sh; each instance adds its tags, state
# directory and HTTP address with --set.
application.id=$APP
bootstrap.servers=$1
processor.type=count
processor.input.topic=$APP-events
num.standby.replicas=$STANDBYS
rack.aware.assignment.tags=zone,cluster
commit.interval.ms=1000
session.timeout.ms=6000
shutdown.timeout.ms=30000
replication.factor=1
log.format=json
EOF
}

start_instance() {
	local i=$1 port
	port=$(port_of "$i")
	if alive "$DIR/i$i.pid" >/dev/null; then
		die "instance $i runs already (pid $(cat "$DIR/i$i.pid"))"
	fi
	[[ -x $BIN && -f $DIR/rackstream.properties ]] || die "no cluster set up in $DIR: run start first"
	mkdir -p "$DIR/state"
	"$BIN" run --config "$DIR/rackstream.properties" \
		--set "client.tag.zone=$(zone_of "$i")" \
		--set "client.tag.cluster=$(cluster_of "$i")" \
		--set "state.dir=$DIR/state/i$i" \
		--set "http.listen=127.0.0.1:$port" \
		--set "application.server=127.0.0.1:$port" \
		</dev/null >>"$DIR/i$i.log" 2>&1 &
	echo $! >"$DIR/i$i.pid"
	say "instance $i: pid $!, http://127.0.0.1:$port, zone $(zone_of "$i"), cluster $(cluster_of "$i"), log $DIR/i$i.log"
}

ready() {
	curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$(port_of "$1")/readyz" 2>/dev/null
}

wait_ready() {
	local deadline=$((SECONDS + READY_TIMEOUT)) i pending
	while :; do
		pending=()
		for i in "$@"; do
			alive "$DIR/i$i.pid" >/dev/null || die "instance $i exited; see $DIR/i$i.log: $(tail -n 3 "$DIR/i$i.log")"
			ready "$i" || pending+=("$i")
		done
		((${#pending[@]} == 0)) && return 0
		((SECONDS < deadline)) || die "instances ${pending[*]} not ready after ${READY_TIMEOUT}s; see their logs in $DIR"
		sleep 0.5
	done
}

cmd_start() {
	local n=${1:-6} i brokers
	[[ $n =~ ^[1-9][0-9]*$ ]] || die "start N: N is a positive number, not '$n'" 2
	if [[ -n $(instances) ]]; then
		for i in $(instances); do
			alive "$DIR/i$i.pid" >/dev/null && die "the cluster runs already (instance $i); stop it first"
		done
	fi
	brokers=$(bootstrap)
	mkdir -p "$DIR"
	rm -f "$DIR"/i*.pid
	build
	write_config "$brokers"
	say "broker $brokers; group $APP; $n instances; $STANDBYS standbys; run dir $DIR"
	# The feeder creates the topic (or checks its partitions) and writes to it.
	"$BIN" dev --brokers "$brokers" --instances 0 --app "$APP" --partitions "$PARTITIONS" --rate "$RATE" \
		</dev/null >>"$DIR/feeder.log" 2>&1 &
	echo $! >"$DIR/feeder.pid"
	local deadline=$((SECONDS + 60))
	until grep -q "producing to it only" "$DIR/feeder.log" 2>/dev/null; do
		alive "$DIR/feeder.pid" >/dev/null || die "the feeder exited: $(tail -n 3 "$DIR/feeder.log")"
		((SECONDS < deadline)) || die "the feeder did not create $APP-events within 60s; see $DIR/feeder.log"
		sleep 0.2
	done
	say "feeder: pid $(cat "$DIR/feeder.pid"), $RATE records/s to $APP-events, log $DIR/feeder.log"
	for ((i = 1; i <= n; i++)); do
		start_instance "$i"
	done
	local t0=$SECONDS
	wait_ready $(seq 1 "$n")
	say "all $n instances ready in $((SECONDS - t0))s"
	say "try: curl http://127.0.0.1:$HTTP_PORT/v1/metadata"
	say "     deploy/local/cluster.sh kill-zone ${ZONES[0]}"
}

cmd_stop() {
	local f pid pids=() deadline
	for f in "$DIR"/i*.pid "$DIR"/feeder.pid; do
		[[ -e $f ]] || continue
		if pid=$(alive "$f"); then
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
		rm -f "$f"
	done
	deadline=$((SECONDS + STOP_TIMEOUT))
	for pid in "${pids[@]}"; do
		while kill -0 "$pid" 2>/dev/null; do
			if ((SECONDS >= deadline)); then
				say "pid $pid did not stop within ${STOP_TIMEOUT}s; SIGKILL"
				kill -KILL "$pid" 2>/dev/null || true
				break
			fi
			sleep 0.2
		done
	done
	say "stopped ${#pids[@]} processes"
}

cmd_status() {
	local i pid state any=1
	for i in $(instances); do
		any=0
		if pid=$(alive "$DIR/i$i.pid"); then
			state="not ready"
			ready "$i" && state=ready
		else
			pid=-
			state=down
		fi
		printf '%-4s pid %-8s http://127.0.0.1:%-6s %-14s %-13s %s\n' "i$i" "$pid" "$(port_of "$i")" "$(zone_of "$i")" "$(cluster_of "$i")" "$state"
	done
	((any == 0)) || { say "no instance running (run dir $DIR)"; return 1; }
	if pid=$(alive "$DIR/feeder.pid"); then
		printf 'feeder pid %s\n' "$pid"
	fi
}

cmd_kill() {
	local i=${1:-} pid
	[[ $i =~ ^[1-9][0-9]*$ ]] || die "kill I: I is an instance number" 2
	pid=$(alive "$DIR/i$i.pid") || die "instance $i is not running"
	kill -KILL "$pid"
	say "killed instance $i (pid $pid, zone $(zone_of "$i")); its tasks move after session.timeout.ms"
}

cmd_kill_zone() {
	local zone=${1:-} i n=0
	[[ -n $zone ]] || die "kill-zone ZONE: one of ${ZONES[*]}" 2
	for i in $(instances); do
		if [[ $(zone_of "$i") == "$zone" ]] && alive "$DIR/i$i.pid" >/dev/null; then
			cmd_kill "$i"
			n=$((n + 1))
		fi
	done
	((n > 0)) || die "no running instance in zone $zone"
}

cmd_start_instance() {
	local i=${1:-}
	[[ $i =~ ^[1-9][0-9]*$ ]] || die "start-instance I: I is an instance number" 2
	start_instance "$i"
	wait_ready "$i"
	say "instance $i ready"
}

case ${1:-} in
start) cmd_start "${2:-6}" ;;
stop) cmd_stop ;;
status) cmd_status ;;
kill) cmd_kill "${2:-}" ;;
kill-zone) cmd_kill_zone "${2:-}" ;;
start-instance) cmd_start_instance "${2:-}" ;;
clean) cmd_stop && rm -rf "$DIR" && say "removed $DIR" ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
