#!/usr/bin/env bash
# chaos.sh runs the fault suite (package chaos): six real `rackstream run`
# instances against a Kafka broker of the suite's own (started by kafka.sh
# in its own directory and on its own ports, never the shared test broker),
# one fault per scenario, every record accounted for. See chaos/doc.go.
#
#   deploy/local/chaos.sh short   scenarios 1, 3 and 5, 1 under exactly-once, and 8, at a low rate (make test's suite, ~5-6 min)
#   deploy/local/chaos.sh long    every scenario, 1-6 and 9-11 also under exactly-once, higher rate, longer faults (make chaos)
#   deploy/local/chaos.sh soak [D] the soak (chaos/soak_test.go): a fault a minute for D (default 30m; make soak),
#                                 at the long form's rate; CI runs it for 3m
#
# It prints one line per scenario (scenario=... produced=... lost=0 ...) and
# each test's result; the whole `go test -v` output goes to
# $RACKSTREAM_CHAOS_LOG (default: a file under /tmp, named at the end).
# Extra go test flags in GOTEST_FLAGS, passed after the package (e.g.
# -run TestKillInstanceThenZone, or -run TestFrozenInstanceExactlyOnce -count=4).
# Exit codes: 0 pass; 1 fail; 2 usage.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE/../.."
GO=${GO:-go}
FORM=${1:-}
NAME=$FORM # what the run is called in its log's name and last line
SOAK_FOR=${RACKSTREAM_SOAK:-}
unset RACKSTREAM_SOAK # only the soak form runs TestSoak
read -r -a FLAGS <<<"${GOTEST_FLAGS:-}"
case $FORM in
short) TIMEOUT=20m ;;
long) TIMEOUT=90m ;;
soak)
	SOAK=${2:-${SOAK_FOR:-30m}}
	if ! [[ $SOAK =~ ^[0-9]+[smh]$ ]]; then
		echo "usage: $0 soak [DURATION], e.g. 30m" >&2
		exit 2
	fi
	export RACKSTREAM_SOAK=$SOAK
	TIMEOUT=24h # the soak bounds itself: its duration, then a fault's heal and the end checks
	FORM=long
	FLAGS+=(-run '^TestSoak$')
	;;
*)
	echo "usage: $0 short|long|soak [DURATION]" >&2
	exit 2
	;;
esac
LOG=${RACKSTREAM_CHAOS_LOG:-$(mktemp "${TMPDIR:-/tmp}/rackstream-chaos-$NAME-XXXXXX.log")}

RACKSTREAM_CHAOS=$FORM "$GO" test -count=1 -v -timeout "$TIMEOUT" ./chaos/ "${FLAGS[@]}" >"$LOG" 2>&1
rc=$?
grep -E '^(scenario=|soak: |--- (PASS|FAIL|SKIP)|FAIL|ok )' "$LOG"
if ((rc != 0)); then
	# The tests' own lines (not the instances' logs they dump), last 40.
	echo "chaos.sh: FAIL; the tests' last lines (instance logs and the rest in $LOG):"
	grep -E '^ +[a-z_]+_test\.go:[0-9]+: ' "$LOG" | grep -v ' (tail):$' | tail -n 40 | cut -c1-400
else
	echo "chaos.sh: $NAME form passed; full output in $LOG"
fi
exit "$rc"
