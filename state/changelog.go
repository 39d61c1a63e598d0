package state

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ChangelogError is a changelog topic that exists but cannot serve as one:
// its partition count differs from the tasks', or it is not compacted.
// Startup must stop on it: re-mapping keys silently would lose state.
type ChangelogError struct {
	Topic string
	// Partitions is the topic's partition count; Want the number of tasks.
	Partitions, Want int32
	// CleanupPolicy is the topic's cleanup.policy when it lacks "compact".
	CleanupPolicy string
}

func (e *ChangelogError) Error() string {
	if e.Partitions != e.Want {
		return fmt.Sprintf("changelog topic %s has %d partitions, but the application has %d tasks (input partitions): they must be equal; recreate the changelog or fix the inputs",
			e.Topic, e.Partitions, e.Want)
	}
	return fmt.Sprintf("changelog topic %s has cleanup.policy=%s: a changelog must be compacted (cleanup.policy=compact)", e.Topic, e.CleanupPolicy)
}

// ensureChangelogs creates the missing changelog topics with partitions
// partitions, cleanup.policy=compact and replicationFactor; -1 is the
// broker's default. It sets min.insync.replicas to one less than the
// replication factor where that is at least 1: losing one zone's broker
// then loses no acknowledged write. It validates the existing topics, and returns every
// mismatch as a *ChangelogError, joined. A topic created a moment ago may
// be unknown for the client's metadata min age: that is retried for
// unknownTopicPatience.
func ensureChangelogs(ctx context.Context, adm *kadm.Client, partitions int32, replicationFactor int16, topics ...string) error {
	return ensureChangelogTopics(ctx, adm, nil, partitions, replicationFactor, nil, topics)
}

// ensureChangelogTopics is ensureChangelogs creating each missing topic
// with configs[topic] over the defaults, with its leaders aligned by align
// unless it is nil.
func ensureChangelogTopics(ctx context.Context, adm *kadm.Client, align *leaderAlignment, partitions int32, replicationFactor int16, configs map[string]map[string]string, topics []string) error {
	if partitions <= 0 {
		return fmt.Errorf("state: ensure changelogs: partition count %d must be positive", partitions)
	}
	topics = slices.Compact(slices.Sorted(slices.Values(topics)))
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("state: list changelog topics: %w", err)
	}
	var missing, existing []string
	for _, topic := range topics {
		d, ok := details[topic]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			missing = append(missing, topic)
		case d.Err != nil:
			return fmt.Errorf("state: describe changelog topic %s: %w", topic, d.Err)
		default:
			existing = append(existing, topic)
		}
	}
	for _, topic := range missing {
		created, err := createChangelog(ctx, adm, align, topic, partitions, replicationFactor, configs[topic])
		if err != nil {
			return err
		}
		if !created { // another instance created it first: validate it
			existing = append(existing, topic)
		}
	}
	if len(existing) == 0 {
		return nil
	}
	return validateChangelogs(ctx, adm, partitions, existing)
}

// createChangelog creates topic, with aligned leaders when align is not
// nil and the cluster allows; false with no error when it already exists.
func createChangelog(ctx context.Context, adm *kadm.Client, align *leaderAlignment, topic string, partitions int32, rf int16, extra map[string]string) (bool, error) {
	configs := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	for k, v := range extra {
		configs[k] = kadm.StringPtr(v)
	}
	if align != nil {
		if created, handled, err := align.create(ctx, adm, topic, partitions, rf, configs); handled {
			return created, err
		}
	}
	if rf-1 >= 1 {
		configs["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(int(rf - 1)))
	}
	resp, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state: create changelog topic %s (%d partitions, replication factor %d): %w", topic, partitions, rf, err)
	}
	if rf >= 1 {
		return true, nil
	}
	// The broker chose the replication factor. The create response says
	// which on Kafka 2.4 and later; else read it back. Then set
	// min.insync.replicas.
	n := int(resp.ReplicationFactor)
	if n <= 0 {
		err := retryUnknownTopic(ctx, func() error {
			details, err := adm.ListTopics(ctx, topic)
			if err != nil {
				return err
			}
			if err := details.Error(); err != nil {
				return err
			}
			for _, p := range details[topic].Partitions {
				n = max(n, len(p.Replicas))
			}
			return nil
		})
		if err != nil {
			return true, fmt.Errorf("state: describe new changelog topic %s: %w", topic, err)
		}
	}
	if n-1 >= 1 {
		v := strconv.Itoa(n - 1)
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: &v}}, topic)
		if err == nil {
			for _, r := range rs {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			return true, fmt.Errorf("state: set min.insync.replicas=%s on changelog topic %s: %w", v, topic, err)
		}
	}
	return true, nil
}

func validateChangelogs(ctx context.Context, adm *kadm.Client, partitions int32, topics []string) error {
	var details kadm.TopicDetails
	// A topic created a moment ago may still be unknown to cached
	// metadata, the client's or a broker's: retry that for a while.
	err := retryUnknownTopic(ctx, func() error {
		var err error
		if details, err = adm.ListTopics(ctx, topics...); err != nil {
			return err
		}
		return details.Error()
	})
	if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("state: list changelog topics: %w", err)
	}
	var configs kadm.ResourceConfigs
	err = retryUnknownTopic(ctx, func() error {
		var err error
		if configs, err = adm.DescribeTopicConfigs(ctx, topics...); err != nil {
			return err
		}
		for _, rc := range configs {
			if rc.Err != nil {
				return rc.Err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("state: describe changelog topic configs: %w", err)
	}
	policy := make(map[string]string, len(topics))
	for _, rc := range configs {
		if rc.Err != nil {
			return fmt.Errorf("state: describe configs of changelog topic %s: %w", rc.Name, rc.Err)
		}
		policy[rc.Name] = "delete" // Kafka's default when unset
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil {
				policy[rc.Name] = *c.Value
			}
		}
	}
	var errs []error
	for _, topic := range topics {
		d := details[topic]
		if d.Err != nil {
			errs = append(errs, fmt.Errorf("state: describe changelog topic %s: %w", topic, d.Err))
			continue
		}
		if n := int32(len(d.Partitions)); n != partitions {
			errs = append(errs, &ChangelogError{Topic: topic, Partitions: n, Want: partitions})
			continue
		}
		if p := policy[topic]; !slices.Contains(strings.Split(strings.ReplaceAll(p, " ", ""), ","), "compact") {
			errs = append(errs, &ChangelogError{Topic: topic, Partitions: partitions, Want: partitions, CleanupPolicy: p})
		}
	}
	return errors.Join(errs...)
}

// changelogTopics returns the changelog topics of specs under appID, in
// order, defaults filled in.
func changelogTopics(appID string, specs []StoreSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Changelog
		if out[i] == "" {
			out[i] = ChangelogTopic(appID, s.Name)
		}
	}
	return out
}

// ChangelogPartitioner returns a partitioner that keeps Record.Partition
// as set for topics where isChangelog is true, and defers to fallback for
// the rest. A store's changelog records must land in their task's
// partition, whatever their key hashes to.
func ChangelogPartitioner(isChangelog func(topic string) bool, fallback kgo.Partitioner) kgo.Partitioner {
	return &changelogPartitioner{isChangelog: isChangelog, fallback: fallback, manual: kgo.ManualPartitioner()}
}

type changelogPartitioner struct {
	isChangelog func(string) bool
	fallback    kgo.Partitioner
	manual      kgo.Partitioner
}

func (p *changelogPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if p.isChangelog(topic) {
		return p.manual.ForTopic(topic)
	}
	return p.fallback.ForTopic(topic)
}

// retryUnknownTopic calls fn until it returns something other than
// UnknownTopicOrPartition, or unknownTopicPatience has passed.
func retryUnknownTopic(ctx context.Context, fn func() error) error {
	began := time.Now()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := fn()
		if !errors.Is(err, kerr.UnknownTopicOrPartition) || time.Since(began) > unknownTopicPatience {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}
