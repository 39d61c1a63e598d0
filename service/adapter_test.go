package service

import (
	"fmt"
	"testing"

	"github.com/rackstream/rackstream/processor"
)

// The runtime's readiness reasons reach /readyz, which anyone may read: its
// worded conditions pass, a raw error does not.
func TestReadinessReasonsShowWordsNeverRawErrors(t *testing.T) {
	counts := fmt.Errorf("topology app: %w", &processor.PartitionCountError{
		Inputs:     []processor.TopicCount{{Topic: "orders", Partitions: 8}},
		Changelogs: []processor.TopicCount{{Topic: "app-counts-changelog", Partitions: 6}},
	})
	for _, tc := range []struct{ reason, shown string }{
		{"", "not ready"},
		{"starting", "starting"},
		{"joining the group", "joining the group"},
		{"stopped", "stopped"},
		{"task 12 is restoring", "task 12 is restoring"},
		{counts.Error(), counts.Error()},
		{"topology app: partition count changed from 6 to 8 while running", "topology app: partition count changed from 6 to 8 while running"},
		{"rebuilding the Kafka client after: dial tcp 10.0.0.7:9092: connect: connection refused", "rebuilding the Kafka client after an error"},
		{"task 3: store counts: leveldb: corrupted /var/lib/rackstream/app/3/counts/000005.ldb", "stopped by an error (details in the instance's log)"},
		{"task 3 is restoring; see 10.0.0.7", "stopped by an error (details in the instance's log)"},
	} {
		nr := notReady(tc.reason)
		if nr.Condition != tc.shown {
			t.Errorf("reason %q shows %q, want %q", tc.reason, nr.Condition, tc.shown)
		}
		if tc.shown != tc.reason && tc.reason != "" && (nr.Cause == nil || nr.Cause.Error() != tc.reason) {
			t.Errorf("reason %q: cause %v, want the reason, for the log", tc.reason, nr.Cause)
		}
	}
}
