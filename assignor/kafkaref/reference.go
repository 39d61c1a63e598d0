package kafkaref

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rackstream/rackstream/internal/jvmref"
)

// ErrNoToolchain reports that Java or Maven is not installed, so the
// reference cannot be built (it is jvmref.ErrNoToolchain). Callers outside
// CI may skip on it.
var ErrNoToolchain = jvmref.ErrNoToolchain

// Build builds the Java program in dir (this package's directory, or
// another reference's) with its build.sh, which caches the build by source
// hash, and returns the runnable jar's path.
func Build(ctx context.Context, dir string) (string, error) {
	jar, err := jvmref.Build(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("kafkaref: %w", err)
	}
	return jar, nil
}

// Reference is one running JVM of the Java reference program: scenarios go
// in as JSON lines on its stdin, plans come back one line each on its stdout.
// Its methods are not safe for concurrent use.
type Reference struct {
	jvm *jvmref.Process
}

// Start runs the reference jar. Cancelling ctx kills the JVM.
func Start(ctx context.Context, jar string) (*Reference, error) {
	jvm, err := jvmref.Start(ctx, jar, "-XX:+UseSerialGC")
	if err != nil {
		return nil, fmt.Errorf("kafkaref: %w", err)
	}
	return &Reference{jvm: jvm}, nil
}

// Plan is the reference's answer to one scenario: the plan in the assignor's
// output shape (without quality), or Error.
type Plan struct {
	Name  string `json:"name"`
	Error string `json:"error"`
	Tasks []struct {
		Task    int      `json:"task"`
		Active  string   `json:"active"`
		Standby []string `json:"standby"`
	} `json:"tasks"`
	// ElapsedNanos is the JVM's time for building Kafka's view of the
	// scenario and assigning standbys, without JSON.
	ElapsedNanos int64 `json:"elapsed_ns"`
	// CPUNanos is the CPU time of the same, on the JVM's one working thread:
	// on a shared machine it is the steadier figure.
	CPUNanos int64 `json:"cpu_ns"`
	// ProcessCPUNanos is the CPU time of the whole JVM meanwhile, GC and
	// JIT compiler threads included.
	ProcessCPUNanos int64 `json:"process_cpu_ns"`
	// Raw is the whole line, for decoding into the assignor's own plan type.
	Raw json.RawMessage `json:"-"`
}

// Run sends one scenario (a single JSON line) and waits for its plan.
func (r *Reference) Run(scenario []byte) (*Plan, error) {
	line, err := r.jvm.Exchange(scenario)
	if err != nil {
		return nil, fmt.Errorf("kafkaref: %w", err)
	}
	var p Plan
	if err := json.Unmarshal(line, &p); err != nil {
		return nil, fmt.Errorf("kafkaref: decode plan %.200q: %w", line, err)
	}
	if p.Error != "" {
		return nil, fmt.Errorf("kafkaref: scenario %s: %s", p.Name, p.Error)
	}
	p.Raw = line
	return &p, nil
}

// Close ends the JVM's input and waits for it to exit.
func (r *Reference) Close() error {
	if err := r.jvm.Close(); err != nil {
		return fmt.Errorf("kafkaref: %w", err)
	}
	return nil
}
