package builtin

import (
	"encoding/json"
	"fmt"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
)

// The join processor (processor.type=join) enriches each record of the
// input with the value its key has in a table, processor.table.topic, and
// emits it to processor.output.topic, under the record's key, as the JSON
// object {"value": <the record's value>, "table": <the table's value>}
// (each rendered as Value renders; "table" is null when a left join finds
// nothing). processor.join=left (the default) emits every record;
// processor.join=inner drops those whose key the table does not have.
// Records without a value (tombstones) are skipped, as joins do.
//
// The table is co-partitioned by default (same partition count and
// partitioner as the input; each task holds its partition, queryable at
// /v1/stores/<table topic>/keys/<key>), or, with
// processor.table.global=true, a global table held whole on every
// instance: then processor.join.key.field may name the top-level JSON
// field of the record's value that holds the table key (a string or a
// number), for a stream keyed otherwise.
type join struct {
	kind  config.JoinType
	out   *processor.Output[[]byte, joined]
	table processor.Keyed[[]byte, Value]
}

// joined is the join's output value.
type joined struct {
	Value Value  `json:"value"`
	Table *Value `json:"table"` // nil (no row) renders as null
}

type joinedCodec struct{}

func (joinedCodec) Encode(j joined) ([]byte, error) { return json.Marshal(j) }
func (joinedCodec) Decode(b []byte) (j joined, err error) {
	var raw struct {
		Value, Table json.RawMessage
	}
	if err = json.Unmarshal(b, &raw); err != nil {
		return j, err
	}
	j.Value = Value(raw.Value)
	if string(raw.Table) != "null" {
		row := Value(raw.Table)
		j.Table = &row
	}
	return j, nil
}

// joinInput is an input record's value and the table key it names (nil:
// the record's key).
type joinInput struct {
	value    Value
	tableKey []byte
}

// joinInputCodec decodes an input value, taking the table key from the
// JSON field when there is one: a value without it is undecodable (the
// error policy's).
type joinInputCodec struct{ field string }

func (c joinInputCodec) Encode(in joinInput) ([]byte, error) { return in.value, nil }

func (c joinInputCodec) Decode(b []byte) (joinInput, error) {
	in := joinInput{value: Value(b)}
	if c.field == "" {
		return in, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return in, fmt.Errorf("value is not a JSON object with field %q: %w", c.field, err)
	}
	raw, ok := obj[c.field]
	if !ok {
		return in, fmt.Errorf("value has no field %q", c.field)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		in.tableKey = []byte(s)
		return in, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return in, fmt.Errorf("field %q is neither a string nor a number", c.field)
	}
	in.tableKey = []byte(n)
	return in, nil
}

// newJoin declares the join's table, output and input on topo.
func (b *Processor) newJoin(topo *processor.Topology, p config.Processor, inOpts []processor.InputOption) {
	j := &join{kind: p.Join, out: processor.NewOutput(topo, p.OutputTopic, codec.Bytes(), joinedCodec{})}
	if p.TableGlobal {
		j.table = processor.NewGlobalTable(topo, p.TableTopic, codec.Bytes(), valueCodec{})
		b.store = ""
	} else {
		j.table = processor.NewTable(topo, p.TableTopic, codec.Bytes(), valueCodec{})
		b.store = p.TableTopic
	}
	tableKey := func(key []byte, in joinInput) []byte {
		if in.tableKey != nil {
			return in.tableKey
		}
		return key
	}
	var h processor.Handler[[]byte, joinInput]
	if p.Join == config.JoinInner {
		h = processor.InnerJoinBy(j.table, tableKey, func(ctx *processor.Context, key []byte, in joinInput, row Value) error {
			return j.out.Emit(ctx, key, joined{Value: in.value, Table: &row})
		})
	} else {
		h = processor.LeftJoinBy(j.table, tableKey, func(ctx *processor.Context, key []byte, in joinInput, row Value, found bool) error {
			jv := joined{Value: in.value}
			if found {
				jv.Table = &row
			}
			return j.out.Emit(ctx, key, jv)
		})
	}
	b.joinIn = processor.NewInput(topo, p.InputTopic, codec.Bytes(), joinInputCodec{field: p.JoinKeyField}, h, inOpts...)
	b.join = j
}
