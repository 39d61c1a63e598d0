#!/usr/bin/env bash
# kafka.sh runs Apache Kafka on loopback for Rackstream's tests: one broker
# by default (KRaft, combined broker and controller, node 1, fast-test
# settings: docs/design.md §9), or with RACKSTREAM_KAFKA_BROKERS=3 three
# such nodes in one quorum, one per rack (zone-a, zone-b, zone-c). See
# deploy/local/README.md.
#
#   deploy/local/kafka.sh start       fetch (once), format, start, wait until it answers
#   deploy/local/kafka.sh stop [N]    SIGTERM, wait, SIGKILL after a deadline
#   deploy/local/kafka.sh kill [N]    SIGKILL (a crash), wait until the process is gone
#   deploy/local/kafka.sh restart     stop, then start afresh (the same shape)
#   deploy/local/kafka.sh resume [N]  start again on the data an earlier start left (after
#                                     a stop or a kill): no wipe, no format
#   deploy/local/kafka.sh status [N]  exit 0 when it runs
#   deploy/local/kafka.sh env         print the test variables as shell exports
#   deploy/local/kafka.sh fetch       only fetch the jars into the cache
#
# N names one node (1-3) of a three-broker cluster; without it a command
# acts on every node.
#
# Exit codes: 0 ok; 1 failed (did not start, did not stop, not running for
# status); 2 the broker can't be had here (no java or mvn, fetch failed).
set -euo pipefail

KAFKA_VERSION=4.4.0
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

CACHE=${RACKSTREAM_CACHE:-${HOME:-/tmp}/.cache/rackstream}
HOME_DIR=$CACHE/kafka-$KAFKA_VERSION
LIBS=$HOME_DIR/libs
RUN_DIR=${RACKSTREAM_KAFKA_DIR:-/tmp/rackstream-kafka}
HOST=127.0.0.1
# Below the kernel's ephemeral range (32768-60999 on Linux): a port in it can
# be taken at any moment as the local port of some outgoing connection, and
# the broker then fails to bind.
PORT=${RACKSTREAM_KAFKA_PORT:-19092}
CONTROLLER_PORT=${RACKSTREAM_KAFKA_CONTROLLER_PORT:-19093}
SASL_PORT=${RACKSTREAM_KAFKA_SASL_PORT:-19094}
# TLS listeners (certificates from harness/kafkatest/cmd/kafkacerts in
# $RUN_DIR/tls): SSL (server authentication only), MTLS (SSL requiring a
# client certificate), SASL_SSL (SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN) and
# OAUTH (SASL_SSL with OAUTHBEARER, tokens checked against tls/jwks.json).
SSL_PORT=${RACKSTREAM_KAFKA_SSL_PORT:-19095}
MTLS_PORT=${RACKSTREAM_KAFKA_MTLS_PORT:-19096}
SASL_SSL_PORT=${RACKSTREAM_KAFKA_SASL_SSL_PORT:-19097}
OAUTH_PORT=${RACKSTREAM_KAFKA_OAUTH_PORT:-19098}
SASL_USER=${RACKSTREAM_KAFKA_SASL_USER:-rackstream}
SASL_PASSWORD=${RACKSTREAM_KAFKA_SASL_PASSWORD:-rackstream-test-secret}
# The cluster's shape, fixed by start and recorded in the run dir: the other
# commands act on what the run dir holds (see layout).
REQ_BROKERS=${RACKSTREAM_KAFKA_BROKERS:-}
REQ_RF=${RACKSTREAM_KAFKA_REPLICATION_FACTOR:-}
REQ_MIN_ISR=${RACKSTREAM_KAFKA_MIN_ISR:-}
# Node n listens on each port above plus (n-1) * PORT_STEP, extra listeners
# included.
PORT_STEP=${RACKSTREAM_KAFKA_PORT_STEP:-10}
# Empty: 768 MiB for one broker, 384 MiB each for three (see layout).
REQ_HEAP=${RACKSTREAM_KAFKA_HEAP:-}
START_TIMEOUT=${RACKSTREAM_KAFKA_START_TIMEOUT:-120}
# A properties file appended to the generated server.properties: its keys
# override ours (the last value of a key wins).
EXTRA_PROPERTIES=${RACKSTREAM_KAFKA_EXTRA_PROPERTIES:-}
# Extra PLAINTEXT listeners, space-separated NAME:PORT:ADVERTISED_PORT (all
# on $HOST): a client bootstrapping through ADVERTISED_PORT (a proxy in
# front of PORT) is sent back there for every connection (the fault suite
# cuts one instance off this way). Every node has each of them, on its own
# shifted ports (PORT_STEP).
EXTRA_LISTENERS=${RACKSTREAM_KAFKA_EXTRA_LISTENERS:-}
STOP_TIMEOUT=${RACKSTREAM_KAFKA_STOP_TIMEOUT:-30}

# Shared by every node; each node's own files are set by at_node.
PORTS_FILE=$RUN_DIR/ports
TLS_DIR=$RUN_DIR/tls

say() { printf 'kafka.sh: %s\n' "$*"; }
die() { printf 'kafka.sh: %s\n' "$1" >&2; exit "${2:-1}"; }
# unavailable: the broker can't be had on this machine (make test skips the
# real-broker pass on exit code 2 outside CI).
unavailable() { die "$1" 2; }

# The run dir is wiped on start: refuse anything that is not a plain absolute
# path of its own.
case $RUN_DIR in
/ | /tmp | /tmp/ | "${HOME:-/}" | "" | *..*) die "RACKSTREAM_KAFKA_DIR=$RUN_DIR is not a directory kafka.sh may wipe" ;;
/*) ;;
*) die "RACKSTREAM_KAFKA_DIR=$RUN_DIR must be an absolute path" ;;
esac

# lock FD FILE: hold an exclusive lock on FILE through descriptor FD until
# the script exits, so that two kafka.sh runs (two make tests) don't fetch,
# format or stop over each other. Fd 8 guards the run dir, fd 9 the cache;
# the broker must not inherit either.
lock() {
	command -v flock >/dev/null 2>&1 || return 0
	mkdir -p "$(dirname "$2")"
	eval "exec $1>\"\$2\""
	flock -w 600 "$1" || die "waited 600s for the lock $2"
}

need_java() {
	command -v java >/dev/null 2>&1 || unavailable "java not found: the broker needs Java 17 or newer (apt-get install openjdk-17-jre-headless)"
	local v
	v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)
	[[ $v =~ ^[0-9]+$ ]] || unavailable "cannot read the Java version from 'java -version'"
	((v >= 17)) || unavailable "java is version $v: Kafka $KAFKA_VERSION needs Java 17 or newer"
}

# fetch puts kafka_2.13 and its runtime dependencies into $LIBS, once. The
# stamp file names the pom's checksum, so editing pom.xml refetches.
fetch() {
	local want stamp=$HOME_DIR/fetched
	want="$(sha256sum "$HERE/pom.xml" | cut -d' ' -f1) kafka=$KAFKA_VERSION"
	if [[ -f $stamp && $(cat "$stamp") == "$want" && -d $LIBS ]]; then
		return 0
	fi
	command -v mvn >/dev/null 2>&1 || unavailable "mvn not found: Maven fetches the broker's jars (apt-get install maven)"
	lock 9 "$HOME_DIR.lock"
	if [[ -f $stamp && $(cat "$stamp") == "$want" && -d $LIBS ]]; then
		return 0 # fetched by the run we waited for
	fi
	mkdir -p "$HOME_DIR"
	local tmp=$HOME_DIR/libs.tmp.$$ log=$HOME_DIR/fetch.log
	rm -rf "$tmp"
	say "fetching Apache Kafka $KAFKA_VERSION with Maven into $LIBS (log: $log)"
	# timeout: a registry that stops answering must not eat CI's budget.
	if ! timeout "${RACKSTREAM_FETCH_TIMEOUT:-600}" mvn -B -q -f "$HERE/pom.xml" \
		-Dkafka.version="$KAFKA_VERSION" \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$log" 2>&1; then
		rm -rf "$tmp"
		unavailable "mvn could not fetch org.apache.kafka:kafka_2.13:$KAFKA_VERSION: see $log ($(grep -m1 -E 'ERROR' "$log" | cut -c1-200))"
	fi
	[[ -f $tmp/kafka_2.13-$KAFKA_VERSION.jar ]] || unavailable "mvn succeeded but $tmp has no kafka_2.13-$KAFKA_VERSION.jar"
	rm -rf "$LIBS"
	mv "$tmp" "$LIBS"
	echo "$want" >"$stamp"
}

# recorded_brokers prints the number of nodes the run dir's last start made
# (1 for a run dir from before the three-broker mode, or none at all).
recorded_brokers() {
	local n=""
	[[ -f $PORTS_FILE ]] && n=$(sed -n 's/^BROKERS=//p' "$PORTS_FILE")
	echo "${n:-1}"
}

# recorded VAR prints VAR's value in the run dir's ports file, if any.
recorded() { [[ -f $PORTS_FILE ]] && sed -n "s/^$1=//p" "$PORTS_FILE" || true; }

# layout MODE sets BROKERS, RF, MIN_ISR and HEAP. With MODE start they come
# from the environment; otherwise (run, resume) from the run dir, where start
# recorded them, so that a node resumed alone gets the configuration of the
# others. resume refuses a variable that contradicts the record.
layout() {
	if [[ $1 == start ]]; then
		BROKERS=${REQ_BROKERS:-1}
		[[ $BROKERS == 1 || $BROKERS == 3 ]] || die "RACKSTREAM_KAFKA_BROKERS=$BROKERS: want 1 or 3"
		RF=${REQ_RF:-$BROKERS}
		[[ $RF =~ ^[1-9][0-9]*$ ]] && ((RF <= BROKERS)) ||
			die "RACKSTREAM_KAFKA_REPLICATION_FACTOR=$RF: want 1 to $BROKERS (the number of brokers)"
		# One fewer than the replication factor, at least 1: a partition
		# takes writes with acks=all while one replica is down.
		MIN_ISR=${REQ_MIN_ISR:-$((RF > 1 ? RF - 1 : 1))}
		[[ $MIN_ISR =~ ^[1-9][0-9]*$ ]] && ((MIN_ISR <= RF)) ||
			die "RACKSTREAM_KAFKA_MIN_ISR=$MIN_ISR: want 1 to $RF (the replication factor)"
	else
		BROKERS=$(recorded_brokers) RF=$(recorded RF) MIN_ISR=$(recorded MIN_ISR)
		RF=${RF:-1} MIN_ISR=${MIN_ISR:-1}
		if [[ $1 == resume ]]; then
			same RACKSTREAM_KAFKA_BROKERS "$REQ_BROKERS" BROKERS
			same RACKSTREAM_KAFKA_REPLICATION_FACTOR "$REQ_RF" RF
			same RACKSTREAM_KAFKA_MIN_ISR "$REQ_MIN_ISR" MIN_ISR
		fi
	fi
	HEAP=$REQ_HEAP
	if [[ -z $HEAP ]]; then
		if ((BROKERS == 1)); then HEAP="-Xms256m -Xmx768m"; else HEAP="-Xms128m -Xmx384m"; fi
	fi
	[[ $PORT_STEP =~ ^[1-9][0-9]*$ ]] || die "RACKSTREAM_KAFKA_PORT_STEP=$PORT_STEP is not a positive number"
}

# same NAME VALUE VAR dies when the variable NAME is set to VALUE and VAR,
# the run dir's record, differs.
same() {
	[[ -z $2 || $2 == "${!3}" ]] ||
		die "$1=$2, but the cluster in $RUN_DIR has $3=${!3}: resume keeps its shape ('kafka.sh start' afresh to change it)"
}

# at_node N sets the node's files (NODE_DIR, PID_FILE, LOG_DIR, CONFIG,
# DATA_DIR), its ports (N_PORT, N_CONTROLLER_PORT and the rest), its rack
# (RACK, empty for a single broker) and WHO (how messages name it). A single
# broker keeps its files at the top of the run dir.
RACKS=abc
at_node() {
	NODE=$1
	local off=$((($1 - 1) * PORT_STEP))
	if ((BROKERS == 1)); then
		NODE_DIR=$RUN_DIR RACK="" WHO=""
	else
		NODE_DIR=$RUN_DIR/node$1 RACK=zone-${RACKS:$1-1:1} WHO="node $1: "
	fi
	PID_FILE=$NODE_DIR/kafka.pid LOG_DIR=$NODE_DIR/logs CONFIG=$NODE_DIR/server.properties DATA_DIR=$NODE_DIR/data
	N_PORT=$((PORT + off)) N_CONTROLLER_PORT=$((CONTROLLER_PORT + off)) N_SASL_PORT=$((SASL_PORT + off))
	N_SSL_PORT=$((SSL_PORT + off)) N_MTLS_PORT=$((MTLS_PORT + off)) N_SASL_SSL_PORT=$((SASL_SSL_PORT + off))
	N_OAUTH_PORT=$((OAUTH_PORT + off)) N_OFF=$off
}

# nodes ARG sets NODES to the node ARG names, or to every node when ARG is
# empty.
nodes() {
	if [[ -z $1 ]]; then
		mapfile -t NODES < <(seq "$BROKERS")
		return 0
	fi
	[[ $1 =~ ^[1-9]$ ]] && (($1 <= BROKERS)) || die "node '$1': the cluster in $RUN_DIR has nodes 1 to $BROKERS"
	NODES=("$1")
}

# addrs VAR prints the comma-separated addresses of every node's port VAR
# (PORT, SASL_PORT, ...).
addrs() {
	local n out=""
	for n in $(seq "$BROKERS"); do out+=",$HOST:$((${!1} + (n - 1) * PORT_STEP))"; done
	echo "${out#,}"
}

# pid_running prints the current node's pid when its pid file names a live
# kafka.Kafka process using its config (not a recycled pid).
pid_running() {
	[[ -f $PID_FILE ]] || return 1
	local pid
	pid=$(cat "$PID_FILE")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "kafka.Kafka $CONFIG" || return 1
	echo "$pid"
}

# running_nodes prints the nodes of the current layout that run.
running_nodes() {
	local n
	for n in $(seq "$BROKERS"); do
		at_node "$n"
		pid_running >/dev/null && echo "$n"
	done
	return 0
}

# use_running_ports makes status, env and the rest name the ports the running
# cluster was started with, whatever this shell's defaults are.
use_running_ports() {
	[[ -n $(running_nodes) ]] || return 0
	[[ -f $PORTS_FILE ]] || return 0
	# shellcheck disable=SC1090 # written by start below
	. "$PORTS_FILE"
	# A broker started by an older kafka.sh has no TLS listeners.
	if grep -q '^SSL_PORT=' "$PORTS_FILE"; then TLS_RUNNING=1; else TLS_RUNNING=""; fi
}

port_free() { ! (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# jvm_args sets JVM to the options both the storage tool and the current
# node run with.
jvm_args() {
	# shellcheck disable=SC2206 # HEAP is a list of JVM options.
	# The OAUTHBEARER validator reads only the files and URLs these system
	# properties allow (Kafka 4's defence against SSRF through JWKS URLs).
	JVM=($HEAP -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true
		-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls="file://$TLS_DIR/jwks.json"
		-Dorg.apache.kafka.sasl.oauthbearer.allowed.files="$TLS_DIR/jwks.json"
		-Dlog4j2.configurationFile="$HERE/log4j2.xml" -Dkafka.logs.dir="$LOG_DIR" -cp "$LIBS/*")
}

# extra_listeners sets XL, XA and XP to the suffixes EXTRA_LISTENERS adds to
# the current node's listeners, advertised.listeners and protocol map, and
# XPORTS to its ports.
extra_listeners() {
	XL="" XA="" XP="" XPORTS=()
	local l name port adv
	for l in $EXTRA_LISTENERS; do
		IFS=: read -r name port adv <<<"$l"
		[[ $name =~ ^[A-Z][A-Z0-9_]*$ && $port =~ ^[0-9]+$ && $adv =~ ^[0-9]+$ ]] ||
			die "RACKSTREAM_KAFKA_EXTRA_LISTENERS: '$l' is not NAME:PORT:ADVERTISED_PORT (NAME in capitals)"
		port=$((port + N_OFF)) adv=$((adv + N_OFF))
		XL+=",$name://$HOST:$port" XA+=",$name://$HOST:$adv" XP+=",$name:PLAINTEXT"
		XPORTS+=("$port")
	done
}

# node_ports prints the ports the current node binds.
node_ports() {
	extra_listeners
	printf '%s\n' "$N_PORT" "$N_CONTROLLER_PORT" "$N_SASL_PORT" "$N_SSL_PORT" "$N_MTLS_PORT" "$N_SASL_SSL_PORT" "$N_OAUTH_PORT" ${XPORTS[@]+"${XPORTS[@]}"}
}

# voters prints controller.quorum.voters: every node is a voter.
voters() {
	local n out=""
	for n in $(seq "$BROKERS"); do out+=",$n@$HOST:$((CONTROLLER_PORT + (n - 1) * PORT_STEP))"; done
	echo "${out#,}"
}

# write_config writes the current node's server.properties.
write_config() {
	extra_listeners
	local racks=""
	if [[ -n $RACK ]]; then
		racks="
# One rack per node; consumers that name a client.rack fetch from a replica
# in their own rack (follower fetching).
broker.rack=$RACK
replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector
"
	fi
	cat >"$CONFIG" <<EOF
# Written by deploy/local/kafka.sh; regenerated on every start.
process.roles=broker,controller
node.id=$NODE
controller.quorum.voters=$(voters)
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://$HOST:$N_PORT,CONTROLLER://$HOST:$N_CONTROLLER_PORT,SASL_PLAINTEXT://$HOST:$N_SASL_PORT,SSL://$HOST:$N_SSL_PORT,MTLS://$HOST:$N_MTLS_PORT,SASL_SSL://$HOST:$N_SASL_SSL_PORT,OAUTH://$HOST:$N_OAUTH_PORT$XL
advertised.listeners=PLAINTEXT://$HOST:$N_PORT,SASL_PLAINTEXT://$HOST:$N_SASL_PORT,SSL://$HOST:$N_SSL_PORT,MTLS://$HOST:$N_MTLS_PORT,SASL_SSL://$HOST:$N_SASL_SSL_PORT,OAUTH://$HOST:$N_OAUTH_PORT$XA
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL,OAUTH:SASL_SSL$XP
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;

# TLS: one key store and trust store (PEM, from kafkacerts) for every TLS
# listener; only MTLS asks for a client certificate.
ssl.keystore.type=PEM
ssl.keystore.location=$TLS_DIR/broker.pem
ssl.truststore.type=PEM
ssl.truststore.location=$TLS_DIR/ca.pem
ssl.client.auth=none
listener.name.mtls.ssl.client.auth=required
# SASL_SSL: SCRAM users are created at format time (--add-scram); the PLAIN
# user is the JAAS line's user_<name>.
listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$SASL_USER="$SASL_PASSWORD";
# OAUTH: OAUTHBEARER with signed JWTs (RS256) checked against the JWKS file;
# a test serves the token endpoint and signs with tls/oauth-key.pem.
listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER
listener.name.oauth.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;
listener.name.oauth.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
sasl.oauthbearer.jwks.endpoint.url=file://$TLS_DIR/jwks.json
sasl.oauthbearer.expected.audience=rackstream-test
sasl.oauthbearer.expected.issuer=rackstream-test-issuer
log.dirs=$DATA_DIR
$racks
# Replication: factor $RF and min.insync.replicas $MIN_ISR for every topic,
# the internal ones included (RACKSTREAM_KAFKA_REPLICATION_FACTOR, _MIN_ISR).
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=$RF
min.insync.replicas=$MIN_ISR
offsets.topic.replication.factor=$RF
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=$RF
transaction.state.log.min.isr=$MIN_ISR
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=$RF
share.coordinator.state.topic.min.isr=$MIN_ISR

# Fast tests (docs/design.md §9): short sessions allowed, no join delay, and a log
# cleaner that looks for work often so compaction tests need not wait.
group.min.session.timeout.ms=500
group.initial.rebalance.delay.ms=0
log.cleaner.backoff.ms=200
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=16777216

# A small machine shared with the tests.
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
EOF
	if [[ -n $EXTRA_PROPERTIES ]]; then
		[[ -r $EXTRA_PROPERTIES ]] || die "RACKSTREAM_KAFKA_EXTRA_PROPERTIES=$EXTRA_PROPERTIES is not a readable file"
		printf '\n# From %s (RACKSTREAM_KAFKA_EXTRA_PROPERTIES).\n' "$EXTRA_PROPERTIES" >>"$CONFIG"
		cat "$EXTRA_PROPERTIES" >>"$CONFIG"
	fi
}

# node_alive: the current node's process lives. The pid file names the child
# from before its exec of java: a live process that is not java yet is still
# starting.
node_alive() {
	pid_running >/dev/null || [[ -s $PID_FILE && $(ps -o stat= -p "$(cat "$PID_FILE")" 2>/dev/null) == [^Z]* ]]
}

# launch starts the current node's JVM, detached, and waits for its pid file.
launch() {
	jvm_args
	# setsid: the broker outlives the shell (and make) that started it. The
	# pid file of an earlier (killed) broker goes first: the wait below
	# must read the new one.
	rm -f "$PID_FILE"
	setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' kafka "$PID_FILE" \
		java "${JVM[@]}" -Xlog:gc*:file="$LOG_DIR/gc.log":time,tags:filecount=2,filesize=10M kafka.Kafka "$CONFIG" \
		</dev/null >>"$LOG_DIR/stdout.log" 2>&1 8>&- 9>&- &
	# Wait for the pid file the child writes before exec (up to 60 s: on a
	# machine under heavy load 5 s were seen not to be enough).
	local i
	for i in $(seq 600); do [[ -s $PID_FILE ]] && break; sleep 0.1; done
}

# ping_node asks the current node for metadata (and the SASL listener after
# a SCRAM login); it prints kafkaping's lines.
ping_node() {
	RACKSTREAM_TEST_SASL_USER=$SASL_USER RACKSTREAM_TEST_SASL_PASSWORD=$SASL_PASSWORD \
		"$RUN_DIR/bin/kafkaping" -brokers "$HOST:$N_PORT" -sasl-brokers "$HOST:$N_SASL_PORT" -timeout 3s 2>&1
}

# wait_ready WANT NODE...: polls until every NODE answers and lists at least
# WANT brokers (a node answers clients only once the controller has
# unfenced it). On failure it stops every NODE and dies.
wait_ready() {
	local want=$1 n out seen left msg
	shift
	local pending=("$@") deadline=$((SECONDS + START_TIMEOUT))
	local -A last=()
	PINGS=""
	while ((${#pending[@]})); do
		left=()
		for n in "${pending[@]}"; do
			at_node "$n"
			if ! node_alive; then
				msg="${WHO}the broker exited during startup: $(grep -m1 -E 'ERROR|Exception' "$LOG_DIR/server.log" "$LOG_DIR/stdout.log" 2>/dev/null | cut -c1-300) (logs: $LOG_DIR)"
				stop_nodes "$@" >/dev/null 2>&1 || true
				die "$msg"
			fi
			if out=$(ping_node); then
				seen=$(sed -n 's/.*metadata from \([0-9]*\) broker.*/\1/p' <<<"$out" | head -n1)
				if ((${seen:-0} >= want)); then
					PINGS+="$out"$'\n'
					continue
				fi
				out+=$'\n'"it lists ${seen:-0} of the $want brokers"
			fi
			last[$n]=$out
			left+=("$n")
		done
		pending=(${left[@]+"${left[@]}"})
		((${#pending[@]})) || break
		if ((SECONDS >= deadline)); then
			at_node "${pending[0]}"
			msg="${WHO}the broker did not answer within ${START_TIMEOUT}s: $(tail -n1 <<<"${last[${pending[0]}]}") (logs: $LOG_DIR)"
			stop_nodes "$@" >/dev/null 2>&1 || true
			die "$msg"
		fi
		sleep 0.5
	done
}

# refuse_running dies when a node of the run dir's cluster runs: start
# wipes the run dir.
refuse_running() {
	local running
	running=$(running_nodes)
	[[ -n $running ]] || return 0
	use_running_ports
	at_node "${running%%$'\n'*}"
	die "already running (${WHO}pid $(pid_running), run dir $RUN_DIR): 'deploy/local/kafka.sh stop' first, or use it: RACKSTREAM_TEST_BROKERS=$(addrs PORT)"
}

# start MODE [NODE]: with MODE fresh the whole cluster afresh (the run dir
# wiped and formatted); with MODE resume every node that is not running (or
# only NODE) again on the data an earlier start left.
start() {
	local mode=$1 only=${2:-} n p pid
	need_java
	command -v go >/dev/null 2>&1 || unavailable "go not found: kafka.sh waits for the broker with harness/kafkatest/cmd/kafkaping"
	fetch
	nodes "$only"
	local running
	running=$(running_nodes)
	if [[ -n $running ]]; then
		# resume: leave the running nodes be, refuse when nothing is left.
		use_running_ports
		local todo=()
		for n in "${NODES[@]}"; do grep -qx "$n" <<<"$running" || todo+=("$n"); done
		if ((${#todo[@]} == 0)); then
			at_node "${NODES[0]}"
			die "already running (${WHO}pid $(pid_running), run dir $RUN_DIR): 'deploy/local/kafka.sh stop${only:+ $only}' first"
		fi
		NODES=("${todo[@]}")
	fi
	# Every port of the nodes to start is free, and no two nodes share one.
	local -A owner=()
	for n in $(seq "$BROKERS"); do
		at_node "$n"
		for p in $(node_ports); do
			[[ -z ${owner[$p]:-} ]] || die "port $p is node ${owner[$p]}'s and node $n's: set RACKSTREAM_KAFKA_PORT_STEP above the spread of the ports"
			owner[$p]=$n
		done
	done
	for n in "${NODES[@]}"; do
		at_node "$n"
		for p in $(node_ports); do
			port_free "$p" || die "${WHO}port $HOST:$p is in use by another process: set RACKSTREAM_KAFKA_PORT, RACKSTREAM_KAFKA_CONTROLLER_PORT, RACKSTREAM_KAFKA_SASL_PORT, RACKSTREAM_KAFKA_SSL_PORT, RACKSTREAM_KAFKA_MTLS_PORT, RACKSTREAM_KAFKA_SASL_SSL_PORT, RACKSTREAM_KAFKA_OAUTH_PORT"
		done
	done

	local t0=$SECONDS
	if [[ $mode == resume ]]; then
		[[ -s $RUN_DIR/cluster-id ]] || die "nothing to resume in $RUN_DIR: 'deploy/local/kafka.sh start' first"
		for n in "${NODES[@]}"; do
			at_node "$n"
			[[ -d $DATA_DIR ]] || die "nothing to resume in $RUN_DIR: no $DATA_DIR ('deploy/local/kafka.sh start' first)"
		done
	else
		rm -rf "$RUN_DIR"
	fi
	mkdir -p "$RUN_DIR/bin"
	for n in "${NODES[@]}"; do
		at_node "$n"
		mkdir -p "$LOG_DIR" "$DATA_DIR"
		write_config
	done
	printf 'PORT=%s\nCONTROLLER_PORT=%s\nSASL_PORT=%s\nSSL_PORT=%s\nMTLS_PORT=%s\nSASL_SSL_PORT=%s\nOAUTH_PORT=%s\nBROKERS=%s\nPORT_STEP=%s\nRF=%s\nMIN_ISR=%s\n' \
		"$PORT" "$CONTROLLER_PORT" "$SASL_PORT" "$SSL_PORT" "$MTLS_PORT" "$SASL_SSL_PORT" "$OAUTH_PORT" \
		"$BROKERS" "$PORT_STEP" "$RF" "$MIN_ISR" >"$PORTS_FILE"

	# Build the readiness probe and the key generator while nothing else runs
	# (cached after the first time), then make this life's keys: only when
	# no node runs, since the running ones serve the keys they started with.
	(cd "$ROOT" && go build -o "$RUN_DIR/bin/kafkaping" ./harness/kafkatest/cmd/kafkaping &&
		go build -o "$RUN_DIR/bin/kafkacerts" ./harness/kafkatest/cmd/kafkacerts) ||
		die "cannot build harness/kafkatest/cmd/kafkaping and kafkacerts"
	if [[ -z $running ]]; then
		"$RUN_DIR/bin/kafkacerts" -dir "$TLS_DIR" -hosts "$HOST,localhost" || die "cannot write the TLS material into $TLS_DIR"
	fi

	if [[ $mode != resume ]]; then
		# A KRaft cluster id is a base64url UUID without padding, and never
		# one that starts with '-' (1 in 64): the storage tool would read it
		# as an option and fail ("--cluster-id: expected one argument").
		# Kafka's own Uuid.randomUuid draws again for the same reason.
		local cluster_id=-
		while [[ $cluster_id == -* ]]; do
			cluster_id=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
		done
		echo "$cluster_id" >"$RUN_DIR/cluster-id"
		# Every node formatted alike, at once (a JVM start each).
		local fmt=() i
		for n in "${NODES[@]}"; do
			at_node "$n"
			jvm_args
			java "${JVM[@]}" kafka.tools.StorageTool format --cluster-id "$cluster_id" --config "$CONFIG" \
				--add-scram "SCRAM-SHA-512=[name=$SASL_USER,password=$SASL_PASSWORD]" \
				--add-scram "SCRAM-SHA-256=[name=$SASL_USER,password=$SASL_PASSWORD]" \
				>"$LOG_DIR/format.log" 2>&1 8>&- 9>&- &
			fmt+=($!)
		done
		for i in "${!NODES[@]}"; do
			at_node "${NODES[i]}"
			wait "${fmt[i]}" || die "${WHO}formatting $DATA_DIR failed: $(tail -n3 "$LOG_DIR/format.log" | tr '\n' ' ')"
		done
	fi

	for n in "${NODES[@]}"; do
		at_node "$n"
		launch
	done
	# A whole cluster is ready when every node lists every broker; a node
	# resumed alone when it answers (the others may be down).
	local want=$BROKERS
	[[ -z $only ]] || want=1
	wait_ready "$want" "${NODES[@]}"

	local version
	at_node "${NODES[0]}"
	version=$(sed -n 's/.*Kafka version: \([^ ]*\).*/\1/p' "$LOG_DIR/server.log" | head -n1)
	echo "${version:-unknown}" >"$RUN_DIR/version"
	if ((BROKERS == 1)); then
		say "Apache Kafka ${version:-(version not in the log)} (KRaft, node 1, pid $(cat "$PID_FILE")) ready in $((SECONDS - t0))s; logs in $LOG_DIR"
	else
		local who=""
		for n in "${NODES[@]}"; do
			at_node "$n"
			who+=", node $n in $RACK pid $(cat "$PID_FILE")"
		done
		say "Apache Kafka ${version:-(version not in the log)} (KRaft, ${#NODES[@]} of $BROKERS nodes${who}; replication factor $RF, min.insync.replicas $MIN_ISR) ready in $((SECONDS - t0))s; logs in $RUN_DIR/node*/logs"
	fi
	printf '%s' "$PINGS"
	say "PLAINTEXT      $(addrs PORT)"
	say "SASL_PLAINTEXT $(addrs SASL_PORT) (SCRAM-SHA-512, user $SASL_USER; 'kafka.sh env' prints the password)"
	say "SSL            $(addrs SSL_PORT) (CA $TLS_DIR/ca.pem)"
	say "SSL (mutual)   $(addrs MTLS_PORT) (client certificate $TLS_DIR/client.pem)"
	say "SASL_SSL       $(addrs SASL_SSL_PORT) (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN; user $SASL_USER)"
	say "SASL_SSL       $(addrs OAUTH_PORT) (OAUTHBEARER: RS256 tokens from issuer rackstream-test-issuer for audience rackstream-test, keys $TLS_DIR/jwks.json)"
	echo "RACKSTREAM_TEST_BROKERS=$(addrs PORT)"
}

# gone PID: the process has exited, or is a zombie (a container's init may
# be slow to reap it) whose threads have all exited but the main one (a
# killed JVM releases its files only then).
gone() {
	local st
	st=$(cat "/proc/$1/status" 2>/dev/null) || return 0
	[[ $st == *$'State:\tZ'* && $st == *$'Threads:\t1\n'* ]]
}

# signal_nodes SIGNAL NODE...: sends SIGNAL to every NODE that runs and
# sets SIGNALLED (node: pid); it says which NODEs do not run.
declare -A SIGNALLED
signal_nodes() {
	local sig=$1 n pid
	shift
	SIGNALLED=()
	for n; do
		at_node "$n"
		if ! pid=$(pid_running); then
			say "${WHO}not running (run dir $RUN_DIR)"
			rm -f "$PID_FILE"
			continue
		fi
		kill "-$sig" "$pid" 2>/dev/null || true
		SIGNALLED[$n]=$pid
	done
}

# signalled prints the nodes signal_nodes signalled, in order.
signalled() { printf '%s\n' "${!SIGNALLED[@]}" | sort -n; }

# stop_nodes NODE...: SIGTERM to every running NODE at once (a controlled
# shutdown), then waits; SIGKILL for those still running after the deadline.
stop_nodes() {
	local n pid
	signal_nodes TERM "$@"
	local deadline=$((SECONDS + STOP_TIMEOUT))
	for n in $(signalled); do
		at_node "$n"
		pid=${SIGNALLED[$n]}
		while [[ -e /proc/$pid ]] && ((SECONDS < deadline)); do sleep 0.2; done
		if [[ -e /proc/$pid ]]; then
			say "${WHO}pid $pid still running ${STOP_TIMEOUT}s after SIGTERM: SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			while [[ -e /proc/$pid ]]; do sleep 0.1; done
		fi
		rm -f "$PID_FILE"
		say "${WHO}stopped (pid $pid)"
	done
}

# kill_nodes NODE...: kill -9 of every running NODE (a crash: no controlled
# shutdown), then waits until each is gone and its listener refuses
# connections.
kill_nodes() {
	local n pid
	signal_nodes KILL "$@"
	local deadline=$((SECONDS + 60))
	for n in $(signalled); do
		at_node "$n"
		pid=${SIGNALLED[$n]}
		while ! gone "$pid" || ! port_free "$N_PORT"; do
			((SECONDS < deadline)) || die "${WHO}pid $pid still alive 60s after SIGKILL"
			sleep 0.1
		done
		rm -f "$PID_FILE"
		say "${WHO}killed (pid $pid)"
	done
}

# status [NODE]: one line per node; exit 0 when every node asked about runs.
status() {
	local n pid rc=0 line
	use_running_ports
	nodes "${1:-}"
	for n in "${NODES[@]}"; do
		at_node "$n"
		if pid=$(pid_running); then
			line="${WHO}running (pid $pid, Apache Kafka $(cat "$RUN_DIR/version" 2>/dev/null || echo '?')${RACK:+, rack $RACK}): PLAINTEXT $HOST:$N_PORT, SASL_PLAINTEXT $HOST:$N_SASL_PORT${TLS_RUNNING:+, SSL $HOST:$N_SSL_PORT, mutual TLS $HOST:$N_MTLS_PORT, SASL_SSL $HOST:$N_SASL_SSL_PORT, OAUTHBEARER $HOST:$N_OAUTH_PORT}; run dir $RUN_DIR"
		else
			line="${WHO}not running (run dir $RUN_DIR)"
			rc=1
		fi
		say "$line"
	done
	return $rc
}

print_env() {
	use_running_ports
	# RACKSTREAM_TEST_BROKER_RUN names this cluster's life (its cluster id):
	# kafkatest reads it, so go test's cache never answers for a test that
	# ran against an earlier broker.
	cat <<EOF
export RACKSTREAM_TEST_BROKERS=$(addrs PORT)
export RACKSTREAM_TEST_BROKER_RUN=$(cat "$RUN_DIR/cluster-id" 2>/dev/null || echo none)
export RACKSTREAM_TEST_SASL_BROKERS=$(addrs SASL_PORT)
export RACKSTREAM_TEST_SASL_MECHANISM=SCRAM-SHA-512
export RACKSTREAM_TEST_SASL_USER=$SASL_USER
export RACKSTREAM_TEST_SASL_PASSWORD=$SASL_PASSWORD
EOF
	[[ -n ${TLS_RUNNING:-} ]] || return 0
	cat <<EOF
export RACKSTREAM_TEST_SSL_BROKERS=$(addrs SSL_PORT)
export RACKSTREAM_TEST_MTLS_BROKERS=$(addrs MTLS_PORT)
export RACKSTREAM_TEST_SASL_SSL_BROKERS=$(addrs SASL_SSL_PORT)
export RACKSTREAM_TEST_OAUTH_BROKERS=$(addrs OAUTH_PORT)
export RACKSTREAM_TEST_TLS_DIR=$TLS_DIR
EOF
}

# Commands that name a node take it as their second argument; the others
# refuse one.
cmd=${1:-} arg=${2:-}
case $cmd in
stop | kill | resume | status) ;;
*) [[ -z $arg ]] || die "'$cmd' takes no node number: only stop, kill, resume and status do" ;;
esac
case $cmd in
start)
	lock 8 "$RUN_DIR.lock"
	layout run
	refuse_running
	layout start
	start fresh
	;;
stop)
	lock 8 "$RUN_DIR.lock"
	layout run
	nodes "$arg"
	stop_nodes "${NODES[@]}"
	;;
kill)
	lock 8 "$RUN_DIR.lock"
	layout run
	nodes "$arg"
	kill_nodes "${NODES[@]}"
	;;
restart)
	# The same shape again, unless RACKSTREAM_KAFKA_BROKERS names another.
	lock 8 "$RUN_DIR.lock"
	layout run
	nodes ""
	stop_nodes "${NODES[@]}"
	if [[ -z $REQ_BROKERS || $REQ_BROKERS == "$BROKERS" ]]; then
		REQ_BROKERS=$BROKERS REQ_RF=${REQ_RF:-$RF} REQ_MIN_ISR=${REQ_MIN_ISR:-$MIN_ISR}
	fi
	layout start
	start fresh
	;;
resume)
	lock 8 "$RUN_DIR.lock"
	layout resume
	start resume "$arg"
	;;
status)
	layout run
	status "$arg"
	;;
env)
	layout run
	print_env
	;;
fetch) need_java && fetch && say "jars in $LIBS" ;;
version) cat "$RUN_DIR/version" 2>/dev/null || echo unknown ;;
*)
	echo "usage: $0 start|stop [N]|kill [N]|restart|resume [N]|status [N]|env|fetch|version" >&2
	exit 1
	;;
esac
