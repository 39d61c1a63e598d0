package processor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// repartitionSegmentBytes is the segment size of a repartition topic,
// Kafka Streams' own: smaller segments than the broker's default let a
// purge free the disk sooner.
const repartitionSegmentBytes = 50 << 20

// repartitionTopicPatience bounds the wait for new repartition topics to
// show in the cluster's metadata.
const repartitionTopicPatience = 30 * time.Second

// repartitionTopicConfigs are the configs a repartition topic is created
// with: Kafka Streams' for its repartition topics. Records never expire by
// time (retention.ms=-1), so none is lost before it is handled; the purge
// deletes them once handled. With a replication factor of at least 2,
// min.insync.replicas is one less, as for changelogs.
func repartitionTopicConfigs(rf int16) map[string]*string {
	c := map[string]*string{
		"cleanup.policy":         kadm.StringPtr("delete"),
		"retention.ms":           kadm.StringPtr("-1"),
		"segment.bytes":          kadm.StringPtr(strconv.Itoa(repartitionSegmentBytes)),
		"message.timestamp.type": kadm.StringPtr("CreateTime"),
	}
	if rf-1 >= 1 {
		c["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(int(rf - 1)))
	}
	return c
}

// ensureRepartitionTopics creates t's missing repartition topics with
// partitions partitions and replication factor rf (-1: the broker's
// default), then waits until the cluster describes every one with that
// count. CheckTopology has checked the existing ones' counts; a topic
// another instance created meanwhile is checked here.
func ensureRepartitionTopics(ctx context.Context, adm *kadm.Client, t *Topology, partitions int32, rf int16) error {
	topics := t.RepartitionTopics()
	if len(topics) == 0 {
		return nil
	}
	counts, err := partitionCounts(ctx, adm, topics)
	if err != nil {
		return err
	}
	configs := repartitionTopicConfigs(rf)
	for _, topic := range topics {
		if counts[topic] >= 0 {
			continue
		}
		resp, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create repartition topic %s (%d partitions, replication factor %d): %w", topic, partitions, rf, err)
		}
	}
	return waitTopicCounts(ctx, adm, topics, partitions, repartitionTopicPatience)
}

// waitTopicCounts waits, at most patience, until the cluster describes
// every topic with partitions partitions. A topic described with another
// count fails at once, naming it and both counts.
func waitTopicCounts(ctx context.Context, adm *kadm.Client, topics []string, partitions int32, patience time.Duration) error {
	deadline := time.Now().Add(patience)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		counts, err := partitionCounts(ctx, adm, topics)
		if err != nil {
			return err
		}
		var missing []string
		for _, topic := range topics {
			switch n := counts[topic]; {
			case n < 0:
				missing = append(missing, topic)
			case n != partitions:
				return fmt.Errorf("repartition topic %s has %d partitions, but the application has %d tasks (input partitions): they must be equal", topic, n, partitions)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("repartition topics %v created but not described by the cluster within %v", missing, patience)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}
