#!/usr/bin/env bash
# cover-runtime.sh: the statement coverage of the runtime's commit and
# rebalance paths by their broker-free unit tests alone (a fake producer, a
# fake committer and transactional client, real stores in a temp dir, on a
# disk that can be made to fail; no broker, not even kfake). Each file has
# its own bar (FILES below): 90%, or for a file below it the coverage it
# had when it joined the gate, so that the gate stops it going down. The
# script exits 1 when a file is under its bar, or when a file or test file
# it expects is missing: a rename must update the list, never drop a file
# from the gate.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# processor/<file>:<bar in %>
FILES=(
	commit.go:90         # the at-least-once commit
	cut.go:90            # a task's part in it
	acks.go:90           # the produce acknowledgements it waits for
	txn.go:90            # the exactly-once commit
	rebalance.go:90      # assign, revoke, lost
	lifecycle_plan.go:90 # their decisions, as plans
)
# The tests that run: every Test function of these files.
TESTS=(commit_test.go cut_test.go acks_test.go txn_test.go rebalance_test.go lifecycle_plan_test.go)

missing=0
for f in "${FILES[@]%%:*}" "${TESTS[@]}"; do
	if [[ ! -f processor/$f ]]; then
		echo "cover-runtime: processor/$f is missing: update the lists in $0" >&2
		missing=1
	fi
done
((missing == 0)) || exit 1

names=$(cd processor && grep -hoP '^func \KTest\w+' "${TESTS[@]}" | paste -sd'|')
prof=$(mktemp)
trap 'rm -f "$prof"' EXIT
if ! out=$(env -u RACKSTREAM_TEST_BROKERS go test -count=1 -run "^($names)\$" -coverprofile="$prof" ./processor/ 2>&1); then
	printf '%s\n' "$out" >&2
	exit 1
fi
# The profile lists each block as file:start,end statements count.
awk -v bars="${FILES[*]}" '
	BEGIN {
		n = split(bars, list, " ")
		for (i = 1; i <= n; i++) { split(list[i], fb, ":"); bar[fb[1]] = fb[2]; order[i] = fb[1] }
	}
	NR > 1 {
		split($1, a, ":"); k = split(a[1], p, "/"); f = p[k]
		if (!(f in bar)) next
		total[f] += $2; if ($3 > 0) hit[f] += $2
	}
	END {
		bad = 0
		for (i = 1; i <= n; i++) {
			f = order[i]
			if (!(f in total)) {
				printf "processor/%s: not in the coverage profile\n", f
				bad = 1
				continue
			}
			pct = 100 * hit[f] / total[f]
			verdict = pct < bar[f] ? "  BELOW" : ""
			printf "processor/%s: %.1f%% of %d statements (bar %d%%)%s\n", f, pct, total[f], bar[f], verdict
			if (pct < bar[f]) bad = 1
		}
		exit bad
	}' "$prof"
