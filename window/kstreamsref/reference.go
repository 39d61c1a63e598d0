package kstreamsref

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/rackstream/rackstream/internal/jvmref"
)

// ErrNoToolchain reports that Java or Maven is not installed, so the
// reference cannot be built (it is jvmref.ErrNoToolchain). Callers outside
// CI may skip on it.
var ErrNoToolchain = jvmref.ErrNoToolchain

// Build builds the Java reference program in dir (this package's directory)
// with its build.sh, which caches the build by source hash, and returns the
// runnable jar's path.
func Build(ctx context.Context, dir string) (string, error) {
	jar, err := jvmref.Build(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("kstreamsref: %w", err)
	}
	return jar, nil
}

// Reference is one running JVM of the Java reference program: scenarios go
// in as JSON lines on its stdin, results come back one line each on its
// stdout. Its methods are not safe for concurrent use.
type Reference struct {
	jvm *jvmref.Process
}

// Start runs the reference jar. Cancelling ctx kills the JVM. The drivers'
// state directories go to /dev/shm where it is writable: Kafka Streams syncs its
// checkpoint files to disk, which makes a run on disk about three times
// slower.
func Start(ctx context.Context, jar string) (*Reference, error) {
	args := []string{"-XX:+UseSerialGC"}
	if probe, err := os.MkdirTemp("/dev/shm", "kstreamsref"); err == nil {
		os.Remove(probe)
		args = append(args, "-Djava.io.tmpdir=/dev/shm")
	}
	jvm, err := jvmref.Start(ctx, jar, args...)
	if err != nil {
		return nil, fmt.Errorf("kstreamsref: %w", err)
	}
	return &Reference{jvm: jvm}, nil
}

// Run sends one scenario and waits for Kafka Streams' result. A scenario
// the program rejects is an error naming it; the JVM goes on with the next.
func (r *Reference) Run(s Scenario) (*Result, error) {
	res, err := exchange[Result](r, s.Name, s)
	if err == nil && len(res.Partitions) != int(s.Partitions) {
		return nil, fmt.Errorf("kstreamsref: result for %q with %d partitions, want %d", s.Name, len(res.Partitions), s.Partitions)
	}
	return res, err
}

// reply is what every answer of the reference program carries: the
// scenario's name, or an error naming why it was rejected.
type reply interface{ reply() (name, err string) }

func (r *Result) reply() (string, string)        { return r.Name, r.Error }
func (r *GroupByResult) reply() (string, string) { return r.Name, r.Error }
func (r *JoinResult) reply() (string, string)    { return r.Name, r.Error }

// exchange sends scenario, named name, to the JVM and decodes its answer
// as a T, refusing an answer that is an error or names another scenario.
func exchange[T any, PT interface {
	*T
	reply
}](r *Reference, name string, scenario any) (*T, error) {
	line, err := json.Marshal(scenario)
	if err != nil {
		return nil, fmt.Errorf("kstreamsref: encode scenario %s: %w", name, err)
	}
	answer, err := r.jvm.Exchange(line)
	if err != nil {
		return nil, fmt.Errorf("kstreamsref: scenario %s: %w", name, err)
	}
	res := new(T)
	if err := json.Unmarshal(answer, res); err != nil {
		return nil, fmt.Errorf("kstreamsref: decode result of %s %.200q: %w", name, answer, err)
	}
	got, rejected := PT(res).reply()
	if rejected != "" {
		return nil, fmt.Errorf("kstreamsref: scenario %s: %s", name, rejected)
	}
	if got != name {
		return nil, fmt.Errorf("kstreamsref: result for %q, want %q", got, name)
	}
	return res, nil
}

// Close ends the JVM's input and waits for it to exit.
func (r *Reference) Close() error {
	if err := r.jvm.Close(); err != nil {
		return fmt.Errorf("kstreamsref: %w", err)
	}
	return nil
}
