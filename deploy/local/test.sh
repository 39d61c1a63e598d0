#!/usr/bin/env bash
# test.sh is `make test`: go vet, then every package's tests twice, first on
# in-process kfake clusters (and the concurrent packages a third time under
# the race detector), then on a real Apache Kafka broker that it starts with
# deploy/local/kafka.sh (and stops again, even on failure).
#
# A broker already running from kafka.sh (same RACKSTREAM_KAFKA_DIR) is
# used as it is and left running. Outside CI a machine that can't have the
# broker (no Java, no Maven, jars not fetchable) skips the real-broker pass
# with one line saying why; under CI (CI set to any non-empty value) that
# fails the run.
#
# Tests that read no broker variable are cached by go test between the two
# passes, so the second pass reruns only the tests that touch Kafka.
#
# With every package (PKGS=./...) and the real broker, the fault suite's
# short form follows (deploy/local/chaos.sh short); under CI, the three-broker
# leader kill and the soak's three-minute form too.
#
# Environment: GO (go), GOTEST_TIMEOUT (10m, per package binary), PKGS (./...),
# GOTEST_FLAGS (extra go test flags), RACE_PKGS (the race pass's packages),
# and kafka.sh's own variables.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE/../.."
GO=${GO:-go}
TIMEOUT=${GOTEST_TIMEOUT:-10m}
read -r -a PKGS <<<"${PKGS:-./...}"
read -r -a FLAGS <<<"${GOTEST_FLAGS:-}"
KAFKA=$HERE/kafka.sh
BROKER_VARS=(RACKSTREAM_TEST_BROKERS RACKSTREAM_TEST_BROKER_RUN RACKSTREAM_TEST_SASL_BROKERS RACKSTREAM_TEST_SASL_USER
	RACKSTREAM_TEST_SASL_PASSWORD RACKSTREAM_TEST_SASL_MECHANISM RACKSTREAM_TEST_SSL_BROKERS RACKSTREAM_TEST_MTLS_BROKERS
	RACKSTREAM_TEST_SASL_SSL_BROKERS RACKSTREAM_TEST_OAUTH_BROKERS RACKSTREAM_TEST_TLS_DIR)

failed=0
summary=()
note() { printf 'make test: %s\n' "$*"; }
# record NAME RESULT SECONDS [DETAIL]
record() {
	summary+=("$(printf '%-28s %-7s %5ss  %s' "$1" "$2" "$3" "${4:-}")")
	[[ $2 == FAIL ]] && failed=1
	return 0
}

# suite NAME CMD...: runs one suite, prints and records its result and time.
suite() {
	local name=$1 t0=$SECONDS rc
	shift
	note "== $name: ${*#unset_broker_env }"
	"$@"
	rc=$?
	local took=$((SECONDS - t0)) result=ok
	((rc == 0)) || result=FAIL
	note "== $name: $result in ${took}s"
	record "$name" "$result" "$took"
}

unset_broker_env() { env "${BROKER_VARS[@]/#/-u}" "$@"; }

suite "go vet" "$GO" vet "${PKGS[@]}"
# The runtime's commit, cut, acknowledgement, transaction and rebalance paths
# covered by their broker-free unit tests alone, each at its bar
# (deploy/local/cover-runtime.sh; ~10 s).
suite "runtime coverage" "$HERE/cover-runtime.sh"
suite "go test (kfake)" unset_broker_env "$GO" test -timeout "$TIMEOUT" "${FLAGS[@]}" "${PKGS[@]}"

# The race detector over the packages whose goroutines share memory: the
# runtime and its stores, queries and service, tables, the client and the
# balancer (about 2 minutes on 2 cores; the whole tree takes 6). Only when
# every package is tested. -race needs cgo, so a C compiler: outside CI a
# machine without one skips this pass with a line saying so.
read -r -a RACE_PKGS <<<"${RACE_PKGS:-./state/... ./internal/recarena/... ./processor/... ./codec/... ./partition/... ./query/... ./service/... ./table/... ./client/... ./assignor/balancer/...}"
if [[ ${PKGS[*]} == ./... ]]; then
	if command -v "$("$GO" env CC)" >/dev/null 2>&1; then
		suite "go test -race (kfake)" unset_broker_env "$GO" test -race -timeout "$TIMEOUT" "${FLAGS[@]}" "${RACE_PKGS[@]}"
	elif [[ -z ${CI:-} ]]; then
		note "race pass SKIPPED (outside CI): no C compiler ($("$GO" env CC)) for -race's cgo"
		record "go test -race (kfake)" SKIPPED 0 "no C compiler"
		race_skipped="no C compiler for -race"
	else
		note "under CI (CI=$CI) the race pass must run: no C compiler ($("$GO" env CC))"
		record "go test -race (kfake)" FAIL 0 "no C compiler"
	fi
fi

# The real broker.
started=0
stop_broker() {
	if ((started)); then
		started=0
		"$KAFKA" stop || note "stopping the broker failed: see ${RACKSTREAM_KAFKA_DIR:-/tmp/rackstream-kafka}/logs"
	fi
}
trap stop_broker EXIT
trap 'stop_broker; exit 130' INT TERM

skipped=""
reused=0
broker_log=$(mktemp)
broker_err=$(mktemp)
t0=$SECONDS
if "$KAFKA" status >/dev/null 2>&1; then
	note "using the broker already running ($("$KAFKA" status)); it is left running"
	rc=0
	reused=1
else
	"$KAFKA" start >"$broker_log" 2>"$broker_err"
	rc=$?
	if ((rc == 0)); then
		started=1
		cat "$broker_log"
	fi
fi
start_took=$((SECONDS - t0))
version=$("$KAFKA" version 2>/dev/null || echo unknown)

if ((rc == 0)); then
	if ((reused)); then
		record "kafka (already running)" ok 0 "Apache Kafka $version"
	else
		record "kafka.sh start" ok "$start_took" "Apache Kafka $version"
	fi
	eval "$("$KAFKA" env)"
	export "${BROKER_VARS[@]}"
	suite "go test (kafka $version)" "$GO" test -timeout "$TIMEOUT" "${FLAGS[@]}" "${PKGS[@]}"
	stop_broker
	# The fault suite's short form (chaos/, scenarios 1, 3 and 5): a broker
	# of its own and six instances, run after the package passes so that
	# it has the machine to itself; only when every package is tested.
	if [[ ${PKGS[*]} == ./... ]]; then
		suite "chaos (short)" "$HERE/chaos.sh" short
		# Under CI, or with RACKSTREAM_THREE_BROKERS=1: three brokers in
		# three racks of their own, the leader of most partitions killed
		# (harness/cluster; about a minute and a half).
		if [[ -n ${CI:-} || -n ${RACKSTREAM_THREE_BROKERS:-} ]]; then
			suite "three brokers" env RACKSTREAM_THREE_BROKERS=1 "$GO" test -count=1 -timeout "$TIMEOUT" -run '^TestThreeBrokers' ./harness/cluster/
		fi
		# Under CI, or with RACKSTREAM_SOAK=<duration>: the soak's short
		# form, a fault a minute for three minutes (195-226 s in CI runs).
		if [[ -n ${CI:-} || -n ${RACKSTREAM_SOAK:-} ]]; then
			suite "soak (${RACKSTREAM_SOAK:-3m})" "$HERE/chaos.sh" soak "${RACKSTREAM_SOAK:-3m}"
		fi
	fi
else
	why=$(tail -n1 "$broker_err") # kafka.sh's one-line reason
	if ((rc == 2)) && [[ -z ${CI:-} ]]; then
		note "real-broker pass SKIPPED (outside CI): ${why#kafka.sh: }"
		record "go test (kafka)" SKIPPED 0 "${why#kafka.sh: }"
		skipped=${why#kafka.sh: }
	else
		cat "$broker_log" "$broker_err" >&2
		note "the real broker could not be started: ${why#kafka.sh: }"
		((rc == 2)) && note "under CI (CI=${CI:-}) the real-broker pass must run"
		record "kafka.sh start" FAIL "$start_took" "${why#kafka.sh: }"
		record "go test (kafka)" FAIL 0 "not run: no broker"
	fi
fi
rm -f "$broker_log" "$broker_err"

echo
note "summary"
printf '  %s\n' "${summary[@]}"
if ((failed)); then
	note "FAIL"
	exit 1
fi
if [[ -n ${race_skipped:-} ]]; then
	note "race pass skipped: $race_skipped"
fi
if [[ -n $skipped ]]; then
	note "PASS on kfake only; real-broker pass skipped: $skipped"
else
	note "PASS on kfake and Apache Kafka $version"
fi
