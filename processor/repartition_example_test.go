package processor_test

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// The re-keying snippets of docs/time-and-windows.md: each function's body
// is a snippet of that page, and the examples below run it.

// order is an order as its topic carries it in JSON, keyed by order id.
type order struct {
	Country string `json:"country"`
	Cents   int64  `json:"cents"`
}

func ordersPerCountry(topo *processor.Topology) *processor.Store[string, int64] {
	perCountry := processor.NewStore(topo, "orders-per-country", codec.String(), codec.Int64())
	byCountry := processor.NewRepartition(topo, "by-country", codec.String(), codec.JSON[order](),
		func(ctx *processor.Context, country string, _ order) error { // in the task that owns country
			n, _, err := perCountry.Get(ctx, country)
			if err != nil {
				return err
			}
			return perCountry.Put(ctx, country, n+1)
		})
	processor.NewInput(topo, "orders", codec.String(), codec.JSON[order](), // keyed by order id
		processor.GroupBy(byCountry, func(_ string, o order) string { return o.Country }))
	return perCountry
}

func revenuePerCountryAndMinute(topo *processor.Topology) *processor.Output[string, processor.WindowValue[int64]] {
	revenue := processor.NewWindowedAggregation(topo, "revenue-per-minute", window.Tumbling(60_000),
		codec.String(), codec.Int64(), processor.Aggregator[string, order, int64]{
			Init: func() int64 { return 0 },
			Add:  func(_ string, o order, total int64) int64 { return total + o.Cents },
		})
	out := processor.NewWindowedOutput[string, int64](topo, "revenue-per-minute", codec.String())
	byCountry := processor.NewRepartition(topo, "by-country", codec.String(), codec.JSON[order](), revenue.Handler(out))
	processor.NewInput(topo, "orders", codec.String(), codec.JSON[order](),
		processor.GroupBy(byCountry, func(_ string, o order) string { return o.Country }))
	return out
}

// pipeOrder pipes order id to the orders topic at minute:second past
// midnight UTC, January 1st 2026.
func pipeOrder(d *processor.TestDriver, id string, o order, minute, second int) {
	v, _ := codec.JSON[order]().Encode(o)
	ts := time.Date(2026, 1, 1, 0, minute, second, 0, time.UTC)
	if err := d.PipeRecord(&kgo.Record{Topic: "orders", Partition: -1, Key: []byte(id), Value: v, Timestamp: ts}); err != nil {
		fmt.Println(err)
	}
}

// Orders keyed by their id are counted per country: each goes through the
// repartition topic to the task that owns its country.
func ExampleGroupBy() {
	topo := processor.New("shop")
	perCountry := ordersPerCountry(topo)
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, c := range []string{"FR", "DE", "FR", "NL", "FR", "DE"} {
		pipeOrder(d, fmt.Sprintf("order-%d", i), order{Country: c, Cents: 100}, 0, i)
	}
	counts, _ := processor.StoreValues(d, perCountry)
	for _, c := range slices.Sorted(maps.Keys(counts)) {
		fmt.Println(c, counts[c])
	}
	// Output:
	// DE 2
	// FR 3
	// NL 1
}

// A windowed aggregation by a new key: revenue per country and minute.
func ExampleNewRepartition() {
	topo := processor.New("shop")
	out := revenuePerCountryAndMinute(topo)
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	pipeOrder(d, "a", order{Country: "FR", Cents: 250}, 0, 10)
	pipeOrder(d, "b", order{Country: "FR", Cents: 100}, 0, 50)
	pipeOrder(d, "c", order{Country: "FR", Cents: 700}, 1, 5)
	printWindows(d, out)
	// Output:
	// FR 00:00:00.000-00:01:00.000 250
	// FR 00:00:00.000-00:01:00.000 350
	// FR 00:01:00.000-00:02:00.000 700
}
