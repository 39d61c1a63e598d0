package cluster

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/partition"
)

// Keys returns n key names, "key-0" to "key-<n-1>".
func Keys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
	}
	return keys
}

// Producer writes per-key sequence numbers to a topic at a steady rate:
// record i has key keys[i%len(keys)] and value the decimal sequence number
// i/len(keys)+1, so each key gets 1, 2, 3, ... in order (an idempotent
// producer with acks=all and unlimited retries keeps that order through
// broker restarts). When it stops, every key has the same last sequence
// number: a checker knows exactly which records exist.
type Producer struct {
	topic string
	keys  []string
	cl    *kgo.Client

	stamp func(i int) time.Time // nil: the time each record is handed to the client

	stop   chan struct{}
	done   chan struct{}
	sent   atomic.Int64
	acked  atomic.Int64
	mu     sync.Mutex // guards err and rounds
	err    error      // the first produce error
	rounds int        // complete rounds handed to the client (valid after done)
}

// ProducerOption configures StartProducer.
type ProducerOption func(*Producer)

// Timestamps gives record i (0, 1, 2... in the order produced: key
// keys[i%len(keys)], sequence number i/len(keys)+1) the timestamp ts(i),
// called as the record is handed to the client. Without it a record
// carries that moment.
func Timestamps(ts func(i int) time.Time) ProducerOption {
	return func(p *Producer) { p.stamp = ts }
}

// StartProducer starts producing to topic on brokers at rate records per
// second (partitioned with murmur2, as rackstream's processors route keys).
func StartProducer(t testing.TB, brokers []string, topic string, keys []string, rate float64, opts ...ProducerOption) *Producer {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("cluster: producer: %v", err)
	}
	p := &Producer{topic: topic, keys: keys, cl: cl, stop: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		o(p)
	}
	go p.loop(rate)
	t.Cleanup(func() { p.Stop(time.Minute); cl.Close() })
	return p
}

func (p *Producer) loop(rate float64) {
	defer close(p.done)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		if i%len(p.keys) == 0 { // a round boundary: the only place to stop
			select {
			case <-p.stop:
				p.mu.Lock()
				p.rounds = i / len(p.keys)
				p.mu.Unlock()
				return
			default:
			}
		}
		<-tick.C
		r := &kgo.Record{Topic: p.topic, Key: []byte(p.keys[i%len(p.keys)]), Value: []byte(strconv.Itoa(i/len(p.keys) + 1))}
		if p.stamp != nil {
			r.Timestamp = p.stamp(i)
		}
		p.sent.Add(1)
		p.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			if err != nil {
				p.mu.Lock()
				if p.err == nil {
					p.err = fmt.Errorf("produce %s seq %s to %s: %w", r.Key, r.Value, p.topic, err)
				}
				p.mu.Unlock()
				return
			}
			p.acked.Add(1)
		})
	}
}

// Sent returns the number of records handed to the client so far.
func (p *Producer) Sent() int64 { return p.sent.Load() }

// Acked returns the number of records the broker has acknowledged so far.
func (p *Producer) Acked() int64 { return p.acked.Load() }

// Stop finishes the current round, waits up to within for every record to
// be acknowledged, and returns the last sequence number of every key.
// Calling it again returns the same.
func (p *Producer) Stop(within time.Duration) (int, error) {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		return 0, fmt.Errorf("cluster: producer flush: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rounds, p.err
}
