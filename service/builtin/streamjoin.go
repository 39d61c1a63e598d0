package builtin

import (
	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// In stream mode (processor.join.stream.topic) the join meets each record
// of the input (the left stream) with the records of the second stream
// (the right one) of the same key whose timestamps differ by at most
// processor.join.window.ms, as Kafka Streams' KStream#join, #leftJoin and
// #outerJoin with symmetric JoinWindows and processor.join.grace.ms of
// grace. It emits to processor.output.topic, under the record key, the
// JSON object {"left": <left value>, "right": <right value>}, each
// rendered as Value renders; an unmatched record of a left or outer join
// comes alone, the other side null, once its window has closed. Both
// streams' records wait in the store "join" for the window plus grace.

// joinStoreName is the store of the built-in stream join.
const joinStoreName = "join"

var joinKinds = map[config.JoinType]window.JoinKind{
	config.JoinInner: window.InnerJoin,
	config.JoinLeft:  window.LeftJoin,
	config.JoinOuter: window.OuterJoin,
}

// newStreamJoin declares the stream join p describes on b.
func (b *Processor) newStreamJoin(p config.Processor, inOpts []processor.InputOption) {
	w := window.JoinTimeDifference(p.JoinWindow).WithGrace(p.JoinGrace)
	j := processor.NewStreamJoin(b.topo, joinStoreName, joinKinds[p.Join], w, codec.Bytes(), valueCodec{}, valueCodec{})
	out := processor.NewJoinedOutput[[]byte, Value, Value](b.topo, p.OutputTopic, codec.Bytes())
	b.store = joinStoreName
	b.streamLeft = processor.NewInput(b.topo, p.InputTopic, codec.Bytes(), valueCodec{}, j.Left(out), inOpts...)
	b.streamRight = processor.NewInput(b.topo, p.JoinStream, codec.Bytes(), valueCodec{}, j.Right(out), inOpts...)
}
