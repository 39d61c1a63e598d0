package service

import (
	"strings"
	"testing"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
)

// TestEveryGuaranteeValidateAcceptsRunRuns: `validate` and `run` agree on
// processing.guarantee: a value the configuration accepts builds an
// instance (nothing is refused at deploy time), and one it refuses is
// refused by the processor too.
func TestEveryGuaranteeValidateAcceptsRunRuns(t *testing.T) {
	for _, v := range []string{"at_least_once", "exactly_once_v2", "at_most_once", "exactly_once", "exactly_once_beta", "AT_LEAST_ONCE"} {
		t.Run(v, func(t *testing.T) {
			base := []string{"application.id=app", "bootstrap.servers=127.0.0.1:1", "http.listen=127.0.0.1:0", "state.dir=" + t.TempDir(),
				"processor.type=count", "processor.input.topic=in", "processing.guarantee=" + v}
			cfg, cerr := config.Load(config.Sources{Set: base})
			_, perr := processor.ParseGuarantee(v)
			if (cerr == nil) != (perr == nil) {
				t.Fatalf("the configuration says %v, the processor %v", cerr, perr)
			}
			if cerr != nil {
				return
			}
			in, err := New(Options{Config: cfg, Logger: quiet})
			if err != nil {
				t.Fatalf("validate accepts %s, run refuses it: %v", v, err)
			}
			in.ln.Close()
		})
	}
}

// TestExactlyOnceCommitIntervalStaysBelowTheTransactionTimeout: a library
// user's Options under ExactlyOnceV2 with at-least-once's 30 s commit
// interval is refused, naming both.
func TestExactlyOnceCommitIntervalStaysBelowTheTransactionTimeout(t *testing.T) {
	topo := processor.New("app")
	processor.NewInput(topo, "in", codec.Bytes(), codec.Bytes(), func(*processor.Context, []byte, []byte) error { return nil })
	o := processor.DefaultOptions()
	o.Brokers, o.StateDir, o.Guarantee = []string{"127.0.0.1:1"}, t.TempDir(), processor.ExactlyOnceV2
	if _, err := processor.NewRuntime(topo, o); err == nil || !strings.Contains(err.Error(), "must be below the transaction timeout") {
		t.Fatalf("NewRuntime = %v; want the 30 s commit interval refused under exactly-once", err)
	}
	o.CommitInterval = processor.DefaultCommitIntervalExactlyOnce
	if _, err := processor.NewRuntime(topo, o); err != nil {
		t.Fatal(err)
	}
}
