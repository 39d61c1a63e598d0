package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTimeout is the broker-side timeout of an aligned CreateTopics
// request, kadm's default for its own.
const createTimeout = 15000

// leaderAlignment creates changelogs with an explicit replica assignment
// whose preferred leaders sit in the racks of input's partition leaders
// (alignedReplicas). It is only ever used for a topic being created.
type leaderAlignment struct {
	cl    *kgo.Client
	input string
	log   *slog.Logger
}

// create creates topic with aligned replicas and configs; min.insync.replicas
// is set from the replication factor the assignment has. handled is false,
// with the reason logged, when the broker's own placement must create the
// topic instead: a broker without a rack, unreadable metadata, or a cluster
// that refuses explicit assignments. created is false when the topic
// already exists.
func (a *leaderAlignment) create(ctx context.Context, adm *kadm.Client, topic string, partitions int32, rf int16, configs map[string]*string) (created, handled bool, err error) {
	lists, err := a.assignment(ctx, adm, partitions, rf)
	if err != nil {
		a.log.Warn("state: changelog leaders not aligned with the input's: the broker places the replicas",
			"changelog", topic, "input", a.input, "err", err)
		return false, false, nil
	}
	n := len(lists[0])
	cfg := maps.Clone(configs)
	if n-1 >= 1 {
		cfg["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(n - 1))
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = createTimeout
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range lists {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, cfg[k]
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, a.cl)
	if err == nil && len(resp.Topics) != 1 {
		err = fmt.Errorf("%d topics in the response to one", len(resp.Topics))
	}
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	switch {
	case err == nil:
		a.log.Info("state: changelog created with its leaders in the racks of the input's",
			"changelog", topic, "input", a.input, "partitions", len(lists), "replication_factor", n)
		return true, true, nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return false, true, nil
	case refusesAssignment(err):
		a.log.Warn("state: the cluster refused the changelog's replica assignment: the broker places the replicas",
			"changelog", topic, "input", a.input, "err", err)
		return false, false, nil
	}
	return false, true, fmt.Errorf("state: create changelog topic %s with its leaders in the racks of %s's (%d partitions, replication factor %d): %w",
		topic, a.input, len(lists), n, err)
}

// refusesAssignment reports whether a CreateTopics error says the cluster
// does not take explicit replica assignments, as some managed services
// do, or not this one.
func refusesAssignment(err error) bool {
	for _, e := range []error{kerr.PolicyViolation, kerr.InvalidReplicaAssignment, kerr.InvalidRequest, kerr.UnsupportedVersion, kerr.InvalidReplicationFactor} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// assignment reads the brokers' racks, the racks of the input's partition
// leaders and, for rf -1, the brokers' default.replication.factor, and
// returns alignedReplicas' lists for partitions changelog partitions.
func (a *leaderAlignment) assignment(ctx context.Context, adm *kadm.Client, partitions int32, rf int16) ([][]int32, error) {
	md, err := adm.Metadata(ctx, a.input)
	if err != nil {
		return nil, fmt.Errorf("metadata of input topic %s: %w", a.input, err)
	}
	if len(md.Brokers) == 0 {
		return nil, errors.New("the metadata lists no broker")
	}
	rack := make(map[int32]string, len(md.Brokers))
	brokers := make([]brokerRack, 0, len(md.Brokers))
	for _, b := range md.Brokers {
		r := ""
		if b.Rack != nil {
			r = *b.Rack
		}
		rack[b.NodeID] = r
		brokers = append(brokers, brokerRack{ID: b.NodeID, Rack: r})
	}
	td, ok := md.Topics[a.input]
	if !ok {
		return nil, fmt.Errorf("the metadata lacks input topic %s", a.input)
	}
	if td.Err != nil {
		return nil, fmt.Errorf("metadata of input topic %s: %w", a.input, td.Err)
	}
	leaders := make([]string, partitions)
	for p := range partitions {
		if pd, ok := td.Partitions[p]; ok && pd.Leader >= 0 {
			leaders[p] = rack[pd.Leader]
		}
	}
	n := int(rf)
	if rf < 1 {
		if n, err = defaultReplicationFactor(ctx, adm, md.Brokers[0].NodeID); err != nil {
			return nil, err
		}
	}
	return alignedReplicas(brokers, leaders, n)
}

// defaultReplicationFactor reads broker's default.replication.factor: the
// replication factor the broker would have given the topic.
func defaultReplicationFactor(ctx context.Context, adm *kadm.Client, broker int32) (int, error) {
	const key = "default.replication.factor"
	rcs, err := adm.DescribeBrokerConfigs(ctx, broker)
	if err != nil {
		return 0, fmt.Errorf("describe the configs of broker %d: %w", broker, err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return 0, fmt.Errorf("describe the configs of broker %d: %w", broker, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key == key && c.Value != nil {
				n, err := strconv.Atoi(*c.Value)
				if err != nil || n < 1 {
					return 0, fmt.Errorf("broker %d has %s=%q", broker, key, *c.Value)
				}
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("broker %d does not report %s", broker, key)
}
