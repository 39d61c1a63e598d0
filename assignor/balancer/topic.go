package balancer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// placementKey is the key of every placement record: compaction keeps the
// latest generation's.
var placementKey = []byte("placement")

// publishTimeout bounds the leader's write of a placement; it runs inside
// the rebalance, so it must stay well under the rebalance timeout.
const publishTimeout = 10 * time.Second

// maxRecordBytes is the placement topic's max.message.bytes, and what its
// readers fetch at most.
const maxRecordBytes = 64 << 20

// maxPlacementBytes bounds a decompressed placement body a member accepts.
const maxPlacementBytes = 256 << 20

// clientOpts returns the connection options of the balancer's own clients.
func (b *Balancer) clientOpts() ([]kgo.Opt, error) {
	if len(b.s.ClientOpts) > 0 {
		return b.s.ClientOpts, nil
	}
	b.mu.Lock()
	cl := b.cl
	b.mu.Unlock()
	if cl == nil {
		return nil, errors.New("the balancer has no client yet")
	}
	var opts []kgo.Opt
	if seeds, ok := cl.OptValue(kgo.SeedBrokers).([]string); ok {
		opts = append(opts, kgo.SeedBrokers(seeds...))
	}
	return opts, nil
}

// auxClient returns the leader's publishing client, creating it once.
func (b *Balancer) auxClient() (*kgo.Client, error) {
	b.mu.Lock()
	aux := b.aux
	b.mu.Unlock()
	if aux != nil {
		return aux, nil
	}
	opts, err := b.clientOpts()
	if err != nil {
		return nil, err
	}
	aux, err = kgo.NewClient(append(opts,
		kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(maxRecordBytes),
		kgo.MaxBufferedRecords(1),
	)...)
	if err != nil {
		return nil, fmt.Errorf("placement client: %w", err)
	}
	b.mu.Lock()
	if b.aux != nil { // lost a race
		defer aux.Close()
		aux = b.aux
	} else {
		b.aux = aux
	}
	b.mu.Unlock()
	return aux, nil
}

// publish writes the placement to the placement topic, creating the topic
// (compacted, one partition) if it does not exist, and returns where it is.
func (b *Balancer) publish(p *Placement, version uint8) (*PlacementRef, error) {
	cl, err := b.auxClient()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	topic := b.PlacementTopic()
	rf := b.s.PlacementReplicationFactor
	compact := "compact"
	maxBytes := fmt.Sprint(maxRecordBytes)
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, rf, map[string]*string{
		"cleanup.policy":    &compact,
		"max.message.bytes": &maxBytes,
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return nil, fmt.Errorf("create placement topic %s: %w", topic, err)
	}
	value, crc := encodePlacementRecord(p, version)
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: placementKey, Value: value}).First()
	if err != nil {
		return nil, fmt.Errorf("write placement of generation %d (%d bytes) to %s: %w", p.Generation, len(value), topic, err)
	}
	b.published.Add(1)
	b.log.Info("published the placement", "generation", p.Generation, "topic", topic, "offset", r.Offset, "bytes", len(value))
	return &PlacementRef{Topic: topic, Partition: r.Partition, Offset: r.Offset, CRC: crc}, nil
}

// readPlacement reads the placement an assignment refers to.
func (b *Balancer) readPlacement(ctx context.Context, a *AssignmentData) (*Placement, error) {
	opts, err := b.clientOpts()
	if err != nil {
		return nil, err
	}
	ref := a.Ref
	cl, err := kgo.NewClient(append(opts,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{ref.Topic: {ref.Partition: kgo.NewOffset().At(ref.Offset)}}),
		kgo.FetchMaxBytes(maxRecordBytes),
		kgo.FetchMaxPartitionBytes(maxRecordBytes),
	)...)
	if err != nil {
		return nil, fmt.Errorf("placement reader: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, b.s.readTimeout)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read placement %s/%d@%d: %w", ref.Topic, ref.Partition, ref.Offset, err)
		}
		var rec *kgo.Record
		fs.EachError(func(_ string, _ int32, e error) { err = e })
		if err != nil {
			return nil, fmt.Errorf("read placement %s/%d@%d: %w", ref.Topic, ref.Partition, ref.Offset, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if rec == nil && r.Offset >= ref.Offset {
				rec = r
			}
		})
		if rec == nil {
			continue
		}
		if rec.Offset != ref.Offset {
			return nil, fmt.Errorf("placement %s/%d@%d was compacted away: a newer generation's follows", ref.Topic, ref.Partition, ref.Offset)
		}
		return decodePlacementRecord(rec.Value, b.s.wireVersion, a.Generation, ref.CRC, maxPlacementBytes)
	}
}
