package processor_test

import (
	"fmt"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// The stream-stream join of docs/time-and-windows.md: the function's body
// is the page's snippet, and the example below runs it.

func clicksWithImpressions(topo *processor.Topology) *processor.Output[string, processor.Joined[string, string]] {
	join := processor.NewStreamJoin(topo, "impressions-clicks", window.LeftJoin,
		window.JoinTimeDifference(60_000).WithGrace(10_000), // a click within a minute of its impression
		codec.String(), codec.String(), codec.String())
	out := processor.NewJoinedOutput[string, string, string](topo, "impressions-clicked", codec.String())
	processor.NewInput(topo, "impressions", codec.String(), codec.String(), join.Left(out))
	processor.NewInput(topo, "clicks", codec.String(), codec.String(), join.Right(out))
	return out
}

// A left join of impressions with clicks: an impression clicked within a
// minute is emitted with its click; one that was not is emitted alone, once
// its minute and the grace have passed.
func ExampleNewStreamJoin() {
	topo := processor.New("ads")
	out := clicksWithImpressions(topo)
	d := newDriver(topo)
	clickAt(d, "impressions", "ann", "ad-1", 0, 0)
	clickAt(d, "impressions", "bob", "ad-2", 0, 10)
	clickAt(d, "clicks", "ann", "ad-1", 0, 40)
	clickAt(d, "impressions", "cat", "ad-3", 1, 15) // bob's window closes at 00:10 + 1 min + 10 s
	clickAt(d, "impressions", "dan", "ad-4", 1, 25) // closes it
	for _, r := range d.Emitted(out.Topic()) {
		j, err := codec.JSON[processor.Joined[string, string]]().Decode(r.Value)
		if err != nil {
			fmt.Println(err)
			return
		}
		click := "no click"
		if j.Right != nil {
			click = "clicked"
		}
		fmt.Println(string(r.Key), *j.Left, click, r.Timestamp.UTC().Format("15:04:05"))
	}
	// Output:
	// ann ad-1 clicked 00:00:40
	// bob ad-2 no click 00:00:10
}
