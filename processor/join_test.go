package processor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// joinDriver is a topology of orders (key: item, value: order id) joined
// with a co-partitioned price table, inner and left, in a TestDriver.
type joinDriver struct {
	d           *processor.TestDriver
	orders      *processor.Input[string, string]
	inner, left *processor.Output[string, string]
}

func newJoinDriver(t *testing.T) *joinDriver {
	topo := processor.New("shop")
	prices := processor.NewTable(topo, "prices", codec.String(), codec.String())
	j := &joinDriver{
		inner: processor.NewOutput(topo, "inner", codec.String(), codec.String()),
		left:  processor.NewOutput(topo, "left", codec.String(), codec.String()),
	}
	inner := processor.InnerJoin(prices, func(ctx *processor.Context, item, order, price string) error {
		return j.inner.Emit(ctx, order, item+"="+price)
	})
	left := processor.LeftJoin(prices, func(ctx *processor.Context, item, order, price string, found bool) error {
		if !found {
			price = "none"
		}
		return j.left.Emit(ctx, order, item+"="+price)
	})
	j.orders = processor.NewInput(topo, "orders", codec.String(), codec.String(), func(ctx *processor.Context, item, order string) error {
		if err := inner(ctx, item, order); err != nil {
			return err
		}
		return left(ctx, item, order)
	})
	var err error
	if j.d, err = processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	return j
}

func (j *joinDriver) price(t *testing.T, item string, price *string) {
	t.Helper()
	r := &kgo.Record{Topic: "prices", Partition: -1, Key: []byte(item)}
	if price != nil {
		r.Value = []byte(*price)
	}
	if err := j.d.PipeTableRecord(r); err != nil {
		t.Fatal(err)
	}
}

func (j *joinDriver) order(t *testing.T, item, order string) {
	t.Helper()
	if err := processor.Pipe(j.d, j.orders, item, order); err != nil {
		t.Fatal(err)
	}
}

func outputLines(t *testing.T, d *processor.TestDriver, out *processor.Output[string, string]) string {
	t.Helper()
	kvs, err := processor.ReadOutput(d, out)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, kv := range kvs {
		lines = append(lines, kv.Key+":"+kv.Value)
	}
	return strings.Join(lines, " ")
}

// TestStreamTableJoinSemantics: an inner join emits only for keys the table
// has; a left join emits for every record, without a row for keys the
// table does not have yet or no longer has (a tombstone deleted it); an
// update of the table alone emits nothing, and a stream tombstone is
// skipped by both, as in Kafka Streams.
func TestStreamTableJoinSemantics(t *testing.T) {
	j := newJoinDriver(t)
	j.order(t, "apple", "o1") // the table does not have apple yet
	j.price(t, "apple", new("1.00"))
	j.order(t, "apple", "o2")
	j.price(t, "apple", new("1.20"))
	j.order(t, "apple", "o3")
	j.price(t, "apple", nil) // a tombstone deletes the row
	j.order(t, "apple", "o4")
	j.price(t, "pear", new("2.00"))
	j.order(t, "pear", "o5")
	if err := j.d.PipeRecord(&kgo.Record{Topic: "orders", Partition: -1, Key: []byte("pear")}); err != nil {
		t.Fatal(err)
	}
	if got, want := outputLines(t, j.d, j.inner), "o2:apple=1.00 o3:apple=1.20 o5:pear=2.00"; got != want {
		t.Errorf("inner join output %q, want %q", got, want)
	}
	if got, want := outputLines(t, j.d, j.left), "o1:apple=none o2:apple=1.00 o3:apple=1.20 o4:apple=none o5:pear=2.00"; got != want {
		t.Errorf("left join output %q, want %q", got, want)
	}
	if err := j.d.PipeTableRecord(&kgo.Record{Topic: "orders", Key: []byte("x")}); err == nil {
		t.Error("PipeTableRecord to an input topic: no error")
	}
}

// TestJoinByTableKeyOfAGlobalTable: InnerJoinBy and LeftJoinBy read the key
// the record gives, here in a global table.
func TestJoinByTableKeyOfAGlobalTable(t *testing.T) {
	topo := processor.New("enrich")
	users := processor.NewGlobalTable(topo, "users", codec.String(), codec.String())
	out := processor.NewOutput(topo, "out", codec.String(), codec.String())
	byUser := func(_ string, user string) string { return user }
	inner := processor.InnerJoinBy(users, byUser, func(ctx *processor.Context, order, user, name string) error {
		return out.Emit(ctx, order, "inner "+name)
	})
	left := processor.LeftJoinBy(users, byUser, func(ctx *processor.Context, order, user, name string, found bool) error {
		if !found {
			name = "?"
		}
		return out.Emit(ctx, order, "left "+name)
	})
	orders := processor.NewInput(topo, "orders", codec.String(), codec.String(), func(ctx *processor.Context, order, user string) error {
		return errors.Join(inner(ctx, order, user), left(ctx, order, user))
	})
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.PipeGlobalRecord(&kgo.Record{Topic: "users", Key: []byte("u1"), Value: []byte("ann")}); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]string{{"o1", "u1"}, {"o2", "u2"}} {
		if err := processor.Pipe(d, orders, r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := outputLines(t, d, out), "o1:inner ann o1:left ann o2:left ?"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

func TestTableDeclarationErrors(t *testing.T) {
	topo := processor.New("app")
	processor.NewInput(topo, "in", codec.String(), codec.String(), noop[string, string])
	processor.NewTable(topo, "in", codec.String(), codec.String())
	processor.NewTable(topo, "t", codec.String(), codec.String())
	processor.NewTable(topo, "t", codec.String(), codec.String())
	processor.NewStore(topo, "s", codec.String(), codec.String(), processor.WithChangelog("taken"))
	processor.NewTable(topo, "taken", codec.String(), codec.String())
	processor.NewTable[string, string](topo, "u", codec.String(), nil)
	processor.NewTable(topo, "g", codec.String(), codec.String())
	processor.NewGlobalTable(topo, "g", codec.String(), codec.String())
	processor.NewTable(topo, "bad name", codec.String(), codec.String())
	err := topo.Validate()
	for _, want := range []string{`input "in" is store "in"'s changelog`, `table "t" declared twice`, `table "taken": a store already`,
		`table "u": key and value codecs`, `table "g" is also declared global`, `"bad name"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want an error with %s", err, want)
		}
	}
}

// TestCheckTopologyNamesATableWithAnotherPartitionCount: a table must
// exist and have the inputs' partition count; the error names the topics
// and counts, the table as a table.
func TestCheckTopologyNamesATableWithAnotherPartitionCount(t *testing.T) {
	c := kafkatest.New(t)
	in, tbl, missing := c.Name("tc-in"), c.Name("tc-table"), c.Name("tc-missing")
	c.CreateTopic(in, 4, nil)
	c.CreateTopic(tbl, 3, map[string]*string{"cleanup.policy": new("compact")})
	topo := processor.New(c.Name("tc-app"))
	processor.NewInput(topo, in, codec.String(), codec.String(), noop[string, string])
	processor.NewTable(topo, tbl, codec.String(), codec.String())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := processor.CheckTopology(ctx, c.Admin(), topo)
	if err == nil {
		t.Fatal("no error for an input with 4 partitions and a table with 3")
	}
	for _, want := range []string{"inputs " + in + "=4", "tables " + tbl + "=3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	topo2 := processor.New(c.Name("tc-app2"))
	processor.NewInput(topo2, in, codec.String(), codec.String(), noop[string, string])
	processor.NewTable(topo2, missing, codec.String(), codec.String())
	if _, err := processor.CheckTopology(ctx, c.Admin(), topo2); err == nil || !strings.Contains(err.Error(), missing+" (missing)") {
		t.Errorf("CheckTopology with a missing table = %v, want an error naming %s as missing", err, missing)
	}
}
