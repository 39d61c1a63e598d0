package cluster

import (
	"fmt"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// Record is a key and value read back from a topic, in partition then
// offset order (the order one key's records were written in), with where
// it was and its timestamp (for the evidence of a failed check and for
// windows; CheckSequences reads only Key and Value).
type Record struct {
	Key, Value string
	Partition  int32
	Offset     int64
	Timestamp  time.Time
}

// Sequences is what a topic holds of per-key sequence numbers 1..N.
type Sequences struct {
	// Lost is the number of (key, sequence number) pairs in 1..N never
	// seen: counted from the missing numbers themselves, never inferred
	// from counts, where a duplicate could hide a loss.
	Lost int
	// Duplicated is the number of extra copies of pairs seen more than
	// once (at-least-once replays).
	Duplicated int
	// OutOfOrder counts records whose sequence number is not one more than
	// the key's previous record's (a replay shows as one).
	OutOfOrder int
	// Garbage counts records with an unknown key or a value that is not a
	// sequence number in 1..N.
	Garbage int
	// Last is each key's last sequence number in the topic.
	Last map[string]int
	// Missing lists up to 10 missing pairs, as key@seq, for the log.
	Missing []string
}

// CheckSequences checks records against keys each carrying 1..n. Under
// at-least-once only Lost must be 0; under exactly-once Duplicated and
// OutOfOrder must be 0 too (every number exactly once, in order).
func CheckSequences(records []Record, keys []string, n int) Sequences {
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	seen := make(map[string][]int, len(keys)) // per key, count per seq (index seq)
	s := Sequences{Last: map[string]int{}}
	for _, r := range records {
		seq, err := strconv.Atoi(r.Value)
		if !want[r.Key] || err != nil || seq < 1 || seq > n {
			s.Garbage++
			continue
		}
		if seen[r.Key] == nil {
			seen[r.Key] = make([]int, n+1)
		}
		seen[r.Key][seq]++
		if seq != s.Last[r.Key]+1 {
			s.OutOfOrder++
		}
		s.Last[r.Key] = seq
	}
	for _, k := range keys {
		counts := seen[k]
		for seq := 1; seq <= n; seq++ {
			c := 0
			if counts != nil {
				c = counts[seq]
			}
			switch {
			case c == 0:
				s.Lost++
				if len(s.Missing) < 10 {
					s.Missing = append(s.Missing, fmt.Sprintf("%s@%d", k, seq))
				}
			case c > 1:
				s.Duplicated += c - 1
			}
		}
	}
	return s
}

// ReadTopic reads topic on brokers from its start to its end offsets of
// now, with the consumer options opts (kgo.FetchIsolationLevel: read
// committed under exactly-once).
func ReadTopic(t testing.TB, brokers []string, topic string, opts ...kgo.Opt) []Record {
	t.Helper()
	recs := kafkatest.At(t, brokers...).ConsumeAll(topic, opts...)
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = Record{Key: string(r.Key), Value: string(r.Value), Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp}
	}
	return out
}

// StoreLags returns the keys whose value in store, read from an active
// through any running instance, is not want (as a decimal number), at most
// limit of them, with what was read: the value ("7"), or "HTTP " and the
// status of a failed read ("HTTP 503", "HTTP 404"), or the error.
func (g *Group) StoreLags(store string, keys []string, want, limit int) map[string]string {
	lags := map[string]string{}
	up := g.Up()
	for i, k := range keys {
		if len(lags) >= limit {
			break
		}
		if len(up) == 0 {
			lags[k] = "no instance"
			continue
		}
		var ans KeyAnswer
		code, err := GetJSON(up[i%len(up)].URL()+"/v1/stores/"+url.PathEscape(store)+"/keys/"+url.PathEscape(k), &ans)
		switch {
		case err != nil:
			lags[k] = err.Error()
		case code != 200:
			lags[k] = "HTTP " + strconv.Itoa(code)
		case string(ans.Value) != strconv.Itoa(want):
			lags[k] = string(ans.Value)
		}
	}
	return lags
}

// WaitStore waits until every key of store reads want on the running
// instances.
func (g *Group) WaitStore(store string, keys []string, want int, deadline time.Duration) {
	t := g.t
	t.Helper()
	var last map[string]string
	start := time.Now()
	for {
		last = g.StoreLags(store, keys, want, 5)
		if len(last) == 0 {
			t.Logf("every key of %s at %d: took %v", store, want, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > deadline {
			t.Fatalf("store %s: keys not at %d after %v: %v", store, want, deadline, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
