package config

import (
	"math"
	"strconv"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/state"
)

// The libraries' defaults, which the key table shows and applies: each
// number is written once, in the library that uses it
// (processor.DefaultOptions, which carries the balancer's and state's, and
// state.DefaultOptions). Keys that only configuration knows (state.dir,
// http.listen, log.*, security) keep theirs in the table.
var (
	procDefaults  = processor.DefaultOptions()
	stateDefaults = state.DefaultOptions()
)

// ms is a duration as a *.ms value.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// num is an integer as a value.
func num[T ~int | ~int16 | ~int32 | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }

// minProbingMs is probing.rebalance.interval.ms's lower bound, as the
// balancer enforces it.
var minProbingMs = balancer.MinProbingInterval.Milliseconds()

// session.timeout.ms's bounds, as the group client (franz-go) enforces them
// when run starts: at least 100 ms and at least the balancer's heartbeat
// interval, at most the protocol's int32 milliseconds.
var (
	minSessionMs = max(100*time.Millisecond, balancer.DefaultHeartbeatInterval).Milliseconds()
	maxSessionMs = int64(math.MaxInt32)
)

// The balancer's bounds on what every member announces: num.stream.threads
// (its capacity) and application.server (its endpoint, in bytes). A test
// checks them against the balancer's own check.
const (
	maxCapacity      = 1 << 16
	maxEndpointBytes = 1024
)

// commit.interval.ms's default under exactly_once_v2, the dead-letter
// topic's name, and the exactly-once transaction timeout (which a commit
// interval must stay below), as the processor has them.
var (
	commitIntervalExactlyOnce = processor.DefaultCommitIntervalExactlyOnce
	deadLetterTopic           = processor.DeadLetterTopic
	transactionTimeout        = processor.TransactionTimeout
)
