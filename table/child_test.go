package table_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/table"
)

// The tests run a Mirror in a separate process, as another program would:
// the test binary re-executed with envChild set runs childMain instead of
// the tests. It opens a Mirror on envTopic and answers one command per
// line of stdin with one JSON line on stdout:
//
//	sync        WaitCaughtUp, then {"lag": Lag()}
//	get <key>   {"found": ..., "value": ...}
//	scan        {"keys": [...], "values": [...]} in key order
//	quit        Close and exit
const (
	envChild   = "RACKSTREAM_TABLE_TEST_CHILD"
	envTopic   = "RACKSTREAM_TABLE_TEST_TOPIC"
	envBrokers = "RACKSTREAM_TABLE_TEST_BROKERS"
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

type answer struct {
	Ready  bool     `json:"ready,omitempty"`
	Err    string   `json:"err,omitempty"`
	Lag    int64    `json:"lag"`
	Found  bool     `json:"found,omitempty"`
	Value  string   `json:"value,omitempty"`
	Keys   []string `json:"keys,omitempty"`
	Values []string `json:"values,omitempty"`
}

func childMain() int {
	out := json.NewEncoder(os.Stdout)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := table.Open(ctx, os.Getenv(envTopic), table.Options{
		Brokers: strings.Split(os.Getenv(envBrokers), ","),
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		out.Encode(answer{Err: err.Error()})
		return 1
	}
	defer r.Close(context.Background())
	out.Encode(answer{Ready: true, Lag: r.Lag()})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		var a answer
		switch cmd {
		case "sync":
			if err := r.WaitCaughtUp(ctx); err != nil {
				a.Err = err.Error()
			}
			a.Lag = r.Lag()
		case "get":
			v, found, err := r.Get([]byte(arg))
			if err != nil {
				a.Err = err.Error()
			}
			a.Found, a.Value = found, string(v)
		case "scan":
			a.Keys, a.Values = []string{}, []string{}
			if err := r.Scan(nil, nil, func(k, v []byte) bool {
				a.Keys, a.Values = append(a.Keys, string(k)), append(a.Values, string(v))
				return true
			}); err != nil {
				a.Err = err.Error()
			}
		case "quit":
			if err := r.Close(ctx); err != nil {
				out.Encode(answer{Err: err.Error()})
				return 1
			}
			return 0
		default:
			a.Err = "unknown command " + cmd
		}
		out.Encode(a)
	}
	return 0
}

// child is a Mirror running in another process.
type child struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser
	answers chan answer
}

// startChild starts a Mirror process on topic and waits until it has
// restored the topic (its first answer).
func startChild(t *testing.T, c *kafkatest.Cluster, topic string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=1", envTopic+"="+topic, envBrokers+"="+strings.Join(c.Brokers, ","))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start reader process: %v", err)
	}
	ch := &child{t: t, cmd: cmd, in: in, answers: make(chan answer)}
	go func() {
		defer close(ch.answers)
		sc := bufio.NewScanner(outPipe)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var a answer
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				a.Err = fmt.Sprintf("reader process wrote %q: %v", sc.Text(), err)
			}
			ch.answers <- a
		}
	}()
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	if a := ch.next("open"); !a.Ready || a.Err != "" {
		t.Fatalf("reader process on %s did not open: %+v", topic, a)
	}
	return ch
}

func (ch *child) next(what string) answer {
	ch.t.Helper()
	select {
	case a, ok := <-ch.answers:
		if !ok {
			ch.t.Fatalf("reader process exited before answering %s", what)
		}
		return a
	case <-time.After(2 * time.Minute):
		ch.t.Fatalf("reader process did not answer %s within 2 minutes", what)
	}
	return answer{}
}

// ask sends one command and returns its answer, failing the test on an
// error answer.
func (ch *child) ask(cmd string) answer {
	ch.t.Helper()
	if _, err := io.WriteString(ch.in, cmd+"\n"); err != nil {
		ch.t.Fatalf("write %q to the reader process: %v", cmd, err)
	}
	a := ch.next(cmd)
	if a.Err != "" {
		ch.t.Fatalf("reader process: %s: %s", cmd, a.Err)
	}
	return a
}

// quit asks the process to close its Mirror and waits for a clean exit.
func (ch *child) quit() {
	ch.t.Helper()
	if _, err := io.WriteString(ch.in, "quit\n"); err != nil {
		ch.t.Fatalf("write quit: %v", err)
	}
	if err := ch.cmd.Wait(); err != nil {
		ch.t.Errorf("reader process exit: %v", err)
	}
}
