package main

import (
	"strings"
	"testing"
)

// TestAMissedTargetSaysByHowMuchAndWhatIsInTheWay: the targets table is
// followed by a line for each missed target, with what was wanted, what
// was measured and what the profiles show is in the way; a met target and
// one not measured get none.
func TestAMissedTargetSaysByHowMuchAndWhatIsInTheWay(t *testing.T) {
	out := targetTable([]target{
		{name: "restore >= 90% of the slower ceiling, kafka", want: ">= 0.90", measured: "0.79", met: metVerdict(0.79, 0.90, true), inTheWay: "the fetch."},
		{name: "lookups", want: "<= 3", measured: "1.25", met: metVerdict(1.25, 3, false), inTheWay: "never printed"},
		{name: "kill -9", want: "<= 11.00 s", measured: "-", met: "-", inTheWay: "never printed either"},
		{name: "new", want: ">= 1", measured: "0.50", met: metVerdict(0.5, 1, true)},
	})
	for _, want := range []string{
		"| restore >= 90% of the slower ceiling, kafka | aimed for | >= 0.90 | 0.79 | **no** |",
		"- **restore >= 90% of the slower ceiling, kafka**: wanted >= 0.90, measured 0.79. the fetch.",
		"- **new**: wanted >= 1, measured 0.50. not profiled yet.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the targets table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "never printed") {
		t.Errorf("a target met or not measured got an in-the-way line:\n%s", out)
	}
}
