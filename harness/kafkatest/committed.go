package kafkatest

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// CommittedThrough reports whether group's committed offsets on topic reach
// the topic's end offsets on every non-empty partition: the group has
// processed and committed everything written so far. An error listing
// either counts as false, for a poll to try again.
func CommittedThrough(adm *kadm.Client, group, topic string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return false
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false
	}
	done := true
	ends.Each(func(o kadm.ListedOffset) {
		if c, ok := committed.Lookup(o.Topic, o.Partition); o.Offset > 0 && (!ok || c.At < o.Offset) {
			done = false
		}
	})
	return done
}
