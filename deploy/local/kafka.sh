#!/usr/bin/env bash
# kafka.sh runs one Apache Kafka broker on loopback for Rackstream's tests:
# KRaft, combined broker and controller, node 1, fast-test settings
# (docs/design.md §9). See deploy/local/README.md.
#
#   deploy/local/kafka.sh start    fetch (once), format, start, wait until it answers
#   deploy/local/kafka.sh stop     SIGTERM, wait, SIGKILL after a deadline
#   deploy/local/kafka.sh restart  stop, then start afresh
#   deploy/local/kafka.sh resume   start again on the data an earlier start left (after
#                                  a stop or a kill): no wipe, no format
#   deploy/local/kafka.sh status   exit 0 when it runs
#   deploy/local/kafka.sh env      print the test variables as shell exports
#   deploy/local/kafka.sh fetch    only fetch the jars into the cache
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
HEAP=${RACKSTREAM_KAFKA_HEAP:--Xms256m -Xmx768m}
START_TIMEOUT=${RACKSTREAM_KAFKA_START_TIMEOUT:-120}
# A properties file appended to the generated server.properties: its keys
# override ours (the last value of a key wins).
EXTRA_PROPERTIES=${RACKSTREAM_KAFKA_EXTRA_PROPERTIES:-}
# Extra PLAINTEXT listeners, space-separated NAME:PORT:ADVERTISED_PORT (all
# on $HOST): a client bootstrapping through ADVERTISED_PORT (a proxy in
# front of PORT) is sent back there for every connection (the fault suite
# cuts one instance off this way).
EXTRA_LISTENERS=${RACKSTREAM_KAFKA_EXTRA_LISTENERS:-}
STOP_TIMEOUT=${RACKSTREAM_KAFKA_STOP_TIMEOUT:-30}

PID_FILE=$RUN_DIR/kafka.pid
PORTS_FILE=$RUN_DIR/ports
LOG_DIR=$RUN_DIR/logs
CONFIG=$RUN_DIR/server.properties
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

# pid_running prints the broker's pid when the pid file names a live
# kafka.Kafka process using our config (not a recycled pid).
pid_running() {
	[[ -f $PID_FILE ]] || return 1
	local pid
	pid=$(cat "$PID_FILE")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "kafka.Kafka $CONFIG" || return 1
	echo "$pid"
}

# use_running_ports makes status, env and the rest name the ports the running
# broker was started with, whatever this shell's defaults are.
use_running_ports() {
	pid_running >/dev/null || return 0
	[[ -f $PORTS_FILE ]] || return 0
	# shellcheck disable=SC1090 # written by start below
	. "$PORTS_FILE"
	# A broker started by an older kafka.sh has no TLS listeners.
	if grep -q '^SSL_PORT=' "$PORTS_FILE"; then TLS_RUNNING=1; else TLS_RUNNING=""; fi
}

port_free() { ! (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# jvm_args sets JVM to the options both the storage tool and the broker run with.
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
# listeners, advertised.listeners and the protocol map, and XPORTS to its
# ports.
extra_listeners() {
	XL="" XA="" XP="" XPORTS=()
	local l name port adv
	for l in $EXTRA_LISTENERS; do
		IFS=: read -r name port adv <<<"$l"
		[[ $name =~ ^[A-Z][A-Z0-9_]*$ && $port =~ ^[0-9]+$ && $adv =~ ^[0-9]+$ ]] ||
			die "RACKSTREAM_KAFKA_EXTRA_LISTENERS: '$l' is not NAME:PORT:ADVERTISED_PORT (NAME in capitals)"
		XL+=",$name://$HOST:$port" XA+=",$name://$HOST:$adv" XP+=",$name:PLAINTEXT"
		XPORTS+=("$port")
	done
}

write_config() {
	extra_listeners
	cat >"$CONFIG" <<EOF
# Written by deploy/local/kafka.sh; regenerated on every start.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$CONTROLLER_PORT
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://$HOST:$PORT,CONTROLLER://$HOST:$CONTROLLER_PORT,SASL_PLAINTEXT://$HOST:$SASL_PORT,SSL://$HOST:$SSL_PORT,MTLS://$HOST:$MTLS_PORT,SASL_SSL://$HOST:$SASL_SSL_PORT,OAUTH://$HOST:$OAUTH_PORT$XL
advertised.listeners=PLAINTEXT://$HOST:$PORT,SASL_PLAINTEXT://$HOST:$SASL_PORT,SSL://$HOST:$SSL_PORT,MTLS://$HOST:$MTLS_PORT,SASL_SSL://$HOST:$SASL_SSL_PORT,OAUTH://$HOST:$OAUTH_PORT$XA
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
log.dirs=$RUN_DIR/data

# One node: replication factor 1 everywhere.
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1

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

# start [resume]: a fresh broker (the run dir wiped and formatted), or with
# resume the broker again on the data an earlier start left.
start() {
	local mode=${1:-fresh}
	need_java
	command -v go >/dev/null 2>&1 || unavailable "go not found: kafka.sh waits for the broker with harness/kafkatest/cmd/kafkaping"
	fetch
	if pid=$(pid_running); then
		use_running_ports
		die "already running (pid $pid, run dir $RUN_DIR): 'deploy/local/kafka.sh stop' first, or use it: RACKSTREAM_TEST_BROKERS=$HOST:$PORT"
	fi
	local p
	extra_listeners
	for p in "$PORT" "$CONTROLLER_PORT" "$SASL_PORT" "$SSL_PORT" "$MTLS_PORT" "$SASL_SSL_PORT" "$OAUTH_PORT" "${XPORTS[@]}"; do
		port_free "$p" || die "port $HOST:$p is in use by another process: set RACKSTREAM_KAFKA_PORT, RACKSTREAM_KAFKA_CONTROLLER_PORT, RACKSTREAM_KAFKA_SASL_PORT, RACKSTREAM_KAFKA_SSL_PORT, RACKSTREAM_KAFKA_MTLS_PORT, RACKSTREAM_KAFKA_SASL_SSL_PORT, RACKSTREAM_KAFKA_OAUTH_PORT"
	done

	local t0=$SECONDS
	if [[ $mode == resume ]]; then
		[[ -s $RUN_DIR/cluster-id && -d $RUN_DIR/data ]] || die "nothing to resume in $RUN_DIR: 'deploy/local/kafka.sh start' first"
	else
		rm -rf "$RUN_DIR"
	fi
	mkdir -p "$LOG_DIR" "$RUN_DIR/data" "$RUN_DIR/bin"
	write_config
	printf 'PORT=%s\nCONTROLLER_PORT=%s\nSASL_PORT=%s\nSSL_PORT=%s\nMTLS_PORT=%s\nSASL_SSL_PORT=%s\nOAUTH_PORT=%s\n' \
		"$PORT" "$CONTROLLER_PORT" "$SASL_PORT" "$SSL_PORT" "$MTLS_PORT" "$SASL_SSL_PORT" "$OAUTH_PORT" >"$PORTS_FILE"

	# Build the readiness probe and the key generator while nothing else runs
	# (cached after the first time), then make this life's keys.
	(cd "$ROOT" && go build -o "$RUN_DIR/bin/kafkaping" ./harness/kafkatest/cmd/kafkaping &&
		go build -o "$RUN_DIR/bin/kafkacerts" ./harness/kafkatest/cmd/kafkacerts) ||
		die "cannot build harness/kafkatest/cmd/kafkaping and kafkacerts"
	"$RUN_DIR/bin/kafkacerts" -dir "$TLS_DIR" -hosts "$HOST,localhost" || die "cannot write the TLS material into $TLS_DIR"

	jvm_args
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
		if ! java "${JVM[@]}" kafka.tools.StorageTool format --cluster-id "$cluster_id" --config "$CONFIG" \
			--add-scram "SCRAM-SHA-512=[name=$SASL_USER,password=$SASL_PASSWORD]" \
			--add-scram "SCRAM-SHA-256=[name=$SASL_USER,password=$SASL_PASSWORD]" \
			>"$LOG_DIR/format.log" 2>&1; then
			die "formatting $RUN_DIR/data failed: $(tail -n3 "$LOG_DIR/format.log" | tr '\n' ' ')"
		fi
	fi

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

	local deadline=$((SECONDS + START_TIMEOUT)) out=""
	while :; do
		# The pid file names the child from before its exec of java: a live
		# process that is not java yet is still starting.
		if ! pid_running >/dev/null && ! [[ -s $PID_FILE && $(ps -o stat= -p "$(cat "$PID_FILE")" 2>/dev/null) == [^Z]* ]]; then
			die "the broker exited during startup: $(grep -m1 -E 'ERROR|Exception' "$LOG_DIR/server.log" "$LOG_DIR/stdout.log" 2>/dev/null | cut -c1-300) (logs: $LOG_DIR)"
		fi
		if out=$(RACKSTREAM_TEST_SASL_USER=$SASL_USER RACKSTREAM_TEST_SASL_PASSWORD=$SASL_PASSWORD \
			"$RUN_DIR/bin/kafkaping" -brokers "$HOST:$PORT" -sasl-brokers "$HOST:$SASL_PORT" -timeout 3s 2>&1); then
			break
		fi
		if ((SECONDS >= deadline)); then
			stop >/dev/null 2>&1 || true
			die "the broker did not answer within ${START_TIMEOUT}s: $(tail -n1 <<<"$out") (logs: $LOG_DIR)"
		fi
		sleep 0.5
	done
	local version
	version=$(sed -n 's/.*Kafka version: \([^ ]*\).*/\1/p' "$LOG_DIR/server.log" | head -n1)
	echo "${version:-unknown}" >"$RUN_DIR/version"
	say "Apache Kafka ${version:-(version not in the log)} (KRaft, node 1, pid $(cat "$PID_FILE")) ready in $((SECONDS - t0))s; logs in $LOG_DIR"
	printf '%s\n' "$out"
	say "PLAINTEXT      $HOST:$PORT"
	say "SASL_PLAINTEXT $HOST:$SASL_PORT (SCRAM-SHA-512, user $SASL_USER; 'kafka.sh env' prints the password)"
	say "SSL            $HOST:$SSL_PORT (CA $TLS_DIR/ca.pem)"
	say "SSL (mutual)   $HOST:$MTLS_PORT (client certificate $TLS_DIR/client.pem)"
	say "SASL_SSL       $HOST:$SASL_SSL_PORT (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN; user $SASL_USER)"
	say "SASL_SSL       $HOST:$OAUTH_PORT (OAUTHBEARER: RS256 tokens from issuer rackstream-test-issuer for audience rackstream-test, keys $TLS_DIR/jwks.json)"
	echo "RACKSTREAM_TEST_BROKERS=$HOST:$PORT"
}

stop() {
	local pid
	if ! pid=$(pid_running); then
		say "not running (run dir $RUN_DIR)"
		rm -f "$PID_FILE"
		return 0
	fi
	kill -TERM "$pid"
	local deadline=$((SECONDS + STOP_TIMEOUT))
	while [[ -e /proc/$pid ]] && ((SECONDS < deadline)); do sleep 0.2; done
	if [[ -e /proc/$pid ]]; then
		say "pid $pid still running ${STOP_TIMEOUT}s after SIGTERM: SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		while [[ -e /proc/$pid ]]; do sleep 0.1; done
	fi
	rm -f "$PID_FILE"
	say "stopped (pid $pid)"
}

status() {
	local pid
	use_running_ports
	if pid=$(pid_running); then
		say "running (pid $pid, Apache Kafka $(cat "$RUN_DIR/version" 2>/dev/null || echo '?')): PLAINTEXT $HOST:$PORT, SASL_PLAINTEXT $HOST:$SASL_PORT${TLS_RUNNING:+, SSL $HOST:$SSL_PORT, mutual TLS $HOST:$MTLS_PORT, SASL_SSL $HOST:$SASL_SSL_PORT, OAUTHBEARER $HOST:$OAUTH_PORT}; run dir $RUN_DIR"
		return 0
	fi
	say "not running (run dir $RUN_DIR)"
	return 1
}

print_env() {
	use_running_ports
	# RACKSTREAM_TEST_BROKER_RUN names this broker's life (its cluster id):
	# kafkatest reads it, so go test's cache never answers for a test that
	# ran against an earlier broker.
	cat <<EOF
export RACKSTREAM_TEST_BROKERS=$HOST:$PORT
export RACKSTREAM_TEST_BROKER_RUN=$(cat "$RUN_DIR/cluster-id" 2>/dev/null || echo none)
export RACKSTREAM_TEST_SASL_BROKERS=$HOST:$SASL_PORT
export RACKSTREAM_TEST_SASL_MECHANISM=SCRAM-SHA-512
export RACKSTREAM_TEST_SASL_USER=$SASL_USER
export RACKSTREAM_TEST_SASL_PASSWORD=$SASL_PASSWORD
EOF
	[[ -n ${TLS_RUNNING:-} ]] || return 0
	cat <<EOF
export RACKSTREAM_TEST_SSL_BROKERS=$HOST:$SSL_PORT
export RACKSTREAM_TEST_MTLS_BROKERS=$HOST:$MTLS_PORT
export RACKSTREAM_TEST_SASL_SSL_BROKERS=$HOST:$SASL_SSL_PORT
export RACKSTREAM_TEST_OAUTH_BROKERS=$HOST:$OAUTH_PORT
export RACKSTREAM_TEST_TLS_DIR=$TLS_DIR
EOF
}

case ${1:-} in
start) lock 8 "$RUN_DIR.lock" && start ;;
stop) lock 8 "$RUN_DIR.lock" && stop ;;
restart) lock 8 "$RUN_DIR.lock" && stop && start ;;
resume) lock 8 "$RUN_DIR.lock" && start resume ;;
status) status ;;
env) print_env ;;
fetch) need_java && fetch && say "jars in $LIBS" ;;
version) cat "$RUN_DIR/version" 2>/dev/null || echo unknown ;;
*)
	echo "usage: $0 start|stop|restart|resume|status|env|fetch|version" >&2
	exit 1
	;;
esac
