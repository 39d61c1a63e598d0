package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
)

const sixNodes = "../../assignor/testdata/six-nodes.json"

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), append([]string{"assign"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestAssignPrintsThePlanAsJSON(t *testing.T) {
	scenario := `{"num_standby_replicas": 1, "rack_aware_assignment_tags": ["zone"], "tasks": 4,
	  "clients": [{"id": "b", "tags": {"zone": "z2"}}, {"id": "a", "tags": {"zone": "z1"}, "previous_active": [2]}]}`
	code, out, errs := runCLI(t, scenario)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var p assignor.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("output is not a plan: %v\n%s", err, out)
	}
	if len(p.Tasks) != 4 || p.Tasks[2].Active != "a" {
		t.Fatalf("plan = %+v", p.Tasks)
	}
	for i, tp := range p.Tasks {
		if tp.Task != i || len(tp.Standby) != 1 || tp.Standby[0] == tp.Active {
			t.Fatalf("tasks[%d] = %+v", i, tp)
		}
	}
	if p.Clients[0].ID != "a" || p.Clients[1].ID != "b" {
		t.Fatalf("clients not in id order: %+v", p.Clients)
	}
	for _, field := range []string{`"probing_rebalance_needed"`, `"tasks_repeating"`, `"standby_shortfall"`, `"exposure"`, `"tasks_without_replica"`} {
		if !strings.Contains(out, field) {
			t.Errorf("output lacks %s", field)
		}
	}
	// "-" is stdin too.
	if code, out2, _ := runCLI(t, scenario, "-"); code != 0 || out2 != out {
		t.Fatalf("assign - differs from assign with no file (exit %d)", code)
	}
}

func TestAssignTableShowsReplicasWithTags(t *testing.T) {
	code, out, errs := runCLI(t, "", "--format", "table", sixNodes)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"TASK", "ACTIVE", "STANDBYS", "n1 (zone=eu-central-1a,cluster=k8s-cluster1)",
		"spread  zone: 3 values, 0 tasks repeating a value", "standby shortfall: 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Flags after the file name work as well.
	if code, out2, _ := runCLI(t, "", sixNodes, "--format", "table"); code != 0 || out2 != out {
		t.Fatalf("flag after file: exit %d, output differs", code)
	}
}

func TestAssignLoseShowsTasksWithoutReplicaAndThePlanAfter(t *testing.T) {
	tests := []struct {
		name         string
		lose         []string
		wantLost     []string
		wantOrphaned bool // some task left without any replica
	}{
		{"losing one zone leaves every task a replica", []string{"zone=eu-central-1b"}, []string{"n2", "n5"}, false},
		{"losing a zone and a cluster together leaves tasks bare", []string{"zone=eu-central-1a", "cluster=k8s-cluster1"}, []string{"n1", "n2", "n3", "n4"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{}
			for _, l := range tt.lose {
				args = append(args, "--lose", l)
			}
			code, out, errs := runCLI(t, "", append(args, sixNodes)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var rep lossReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("output: %v\n%s", err, out)
			}
			if !slices.Equal(rep.Loss.ClientsLost, tt.wantLost) {
				t.Fatalf("clients_lost = %v, want %v", rep.Loss.ClientsLost, tt.wantLost)
			}
			// Cross-check tasks_without_replica against the plan itself.
			gone := map[string]bool{}
			for _, id := range tt.wantLost {
				gone[id] = true
			}
			var want []int
			for _, tp := range rep.Plan.Tasks {
				bare := gone[tp.Active]
				for _, s := range tp.Standby {
					bare = bare && gone[s]
				}
				if bare {
					want = append(want, tp.Task)
				}
			}
			if !slices.Equal(rep.Loss.TasksWithoutReplica, want) && !(len(want) == 0 && len(rep.Loss.TasksWithoutReplica) == 0) {
				t.Fatalf("tasks_without_replica = %v, want %v", rep.Loss.TasksWithoutReplica, want)
			}
			if (len(want) > 0) != tt.wantOrphaned {
				t.Fatalf("tasks without replica %v, expected some: %v", want, tt.wantOrphaned)
			}
			after := rep.Loss.PlanAfter
			if after == nil || len(after.Clients) != 6-len(tt.wantLost) || len(after.Tasks) != 6 {
				t.Fatalf("plan_after = %+v", after)
			}
			// Every task is taken over by a surviving replica of it, if any.
			for i, tp := range rep.Plan.Tasks {
				act := after.Tasks[i].Active
				if gone[act] {
					t.Fatalf("task %d active on lost client %s", i, act)
				}
				var survivors []string
				for _, id := range append([]string{tp.Active}, tp.Standby...) {
					if !gone[id] {
						survivors = append(survivors, id)
					}
				}
				if len(survivors) > 0 && !slices.Contains(survivors, act) {
					t.Fatalf("task %d went to %s, not to a surviving replica %v", i, act, survivors)
				}
			}
		})
	}

	code, out, _ := runCLI(t, "", "--format", "table", "--lose", "zone=eu-central-1b", sixNodes)
	if code != 0 || !strings.Contains(out, "Losing zone=eu-central-1b: clients n2, n5") ||
		!strings.Contains(out, "Tasks left without any replica: none") || !strings.Contains(out, "Plan after the loss:") {
		t.Fatalf("table --lose: exit %d\n%s", code, out)
	}
}

func TestAssignRejectsBadInputWithExit2NamingTheField(t *testing.T) {
	tests := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"duplicate ids", `{"tasks": 1, "clients": [{"id": "a", "tags": {}}, {"id": "a", "tags": {}}]}`, nil, "clients[1].id"},
		{"tag key missing from a client", `{"tasks": 1, "rack_aware_assignment_tags": ["zone"], "clients": [{"id": "a", "tags": {"rack": "r"}}]}`, nil, "clients[0].tags"},
		{"lag for a task that does not exist", `{"tasks": 1, "clients": [{"id": "a", "tags": {}, "lags": {"5": 1}}]}`, nil, `clients[0].lags["5"]`},
		{"negative count", `{"tasks": 2, "num_standby_replicas": -1, "clients": [{"id": "a", "tags": {}}]}`, nil, "num.standby.replicas"},
		{"unknown field", `{"tasks": 2, "num_standbys": 1, "clients": [{"id": "a", "tags": {}}]}`, nil, `unknown field "num_standbys"`},
		{"missing tasks", `{"clients": [{"id": "a", "tags": {}}]}`, nil, "tasks: required"},
		{"client without tags", `{"tasks": 1, "clients": [{"id": "a"}]}`, nil, "clients[0].tags"},
		{"not JSON", `{"tasks": 1,`, nil, "decode scenario"},
		{"metadata naming an unknown client", `{"tasks": [{"task": 0, "active": "ghost"}], "clients": [{"id": "a", "tags": {}}]}`, nil, "tasks[0].active"},
		{"--lose with no such client", `{"tasks": 1, "clients": [{"id": "a", "tags": {"zone": "z"}}]}`, []string{"--lose", "zone=elsewhere"}, "zone=elsewhere"},
		{"--lose with an empty key", `{"tasks": 1, "clients": [{"id": "a", "tags": {}}]}`, []string{"--lose", "=b"}, "KEY=VALUE"},
		{"--lose with no such client id", `{"tasks": 1, "clients": [{"id": "a", "tags": {}}]}`, []string{"--lose", "zone"}, "--lose zone: no client has this id"},
		{"unknown format", `{"tasks": 1, "clients": [{"id": "a", "tags": {}}]}`, []string{"--format", "yaml"}, "--format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tt.stdin, tt.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stdout %q, stderr %q)", code, out, errs)
			}
			if !strings.Contains(errs, tt.want) {
				t.Fatalf("stderr %q does not name %q", errs, tt.want)
			}
		})
	}
	if code, _, errs := runCLI(t, "", "/nonexistent/scenario.json"); code != 1 || !strings.Contains(errs, "/nonexistent/scenario.json") {
		t.Fatalf("missing file: exit %d, %q", code, errs)
	}
}

// liveDoc is a /v1/metadata document. n3 is a caught-up warmup of task 0
// and n1 is overloaded, so a replay moves task 0 to n3 and keeps everything
// else.
const liveDoc = `{"generation": 12, "self": "n1",
	  "clients": [
	    {"id": "n1", "endpoint": "10.0.0.1:8080", "tags": {"zone": "a"}, "active": [0, 1], "standby": [2], "warmup": []},
	    {"id": "n2", "endpoint": "10.0.0.2:8080", "tags": {"zone": "b"}, "active": [2], "standby": [0, 1], "warmup": []},
	    {"id": "n3", "endpoint": "10.0.0.3:8080", "tags": {"zone": "c"}, "active": [], "standby": [], "warmup": [0]}],
	  "tasks": [
	    {"task": 0, "active": "n1", "standby": ["n2"], "warmup": ["n3"]},
	    {"task": 1, "active": "n1", "standby": ["n2"], "warmup": []},
	    {"task": 2, "active": "n2", "standby": ["n1"], "warmup": []}],
	  "probing_rebalance_needed": true,
	  "quality": {"dimensions": [{"tag": "zone", "values": 3, "tasks_repeating": 0}], "standby_shortfall": 0,
	              "active_load": {"min": 0, "max": 2}, "replica_load": {"min": 0, "max": 3}, "exposure": []},
	  "status": {"as_of": "2026-12-02T10:00:00Z", "clients": [{"id": "n1", "ready": true}],
	             "lags": [{"task": 0, "client": "n3", "role": "warmup", "lag": 0},
	                      {"task": 0, "client": "n1", "role": "active", "lag": 0},
	                      {"task": 1, "client": "n2", "role": "standby", "lag": 40}]}}`

func TestAssignReplaysAMetadataDocument(t *testing.T) {
	// A /v1/metadata document: its placement is the previous plan.
	code, out, errs := runCLI(t, liveDoc)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var p assignor.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	got := []string{p.Tasks[0].Active, p.Tasks[1].Active, p.Tasks[2].Active}
	if !slices.Equal(got, []string{"n3", "n1", "n2"}) {
		t.Fatalf("actives = %v, want [n3 n1 n2]", got)
	}
	if len(p.Tasks[0].Standby) != 1 || p.Quality.StandbyShortfall != 0 {
		t.Fatalf("num_standby_replicas not inferred from the document: %+v", p.Tasks)
	}
	if len(p.Quality.Dimensions) != 1 || p.Quality.Dimensions[0].Tag != "zone" {
		t.Fatalf("rack-aware tags not taken from quality.dimensions: %+v", p.Quality.Dimensions)
	}
}

func TestAssignHelp(t *testing.T) {
	code, _, errs := runCLI(t, "", "--help")
	if code != 0 || !strings.Contains(errs, "--lose") {
		t.Fatalf("exit %d, usage %q", code, errs)
	}
}

// TestPlacementDocExamplesAreRealOutput runs every `$ rackstream assign`
// example of docs/placement.md's placement section and compares its output.
func TestPlacementDocExamplesAreRealOutput(t *testing.T) {
	const page = "../../docs/placement.md"
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin, end := strings.Index(doc, "<!-- BEGIN PLACEMENT"), strings.Index(doc, "<!-- END PLACEMENT -->")
	if begin < 0 || end < begin {
		t.Fatalf("%s has no placement section", page)
	}
	examples := 0
	for _, block := range strings.Split(doc[begin:end], "```console\n")[1:] {
		block = block[:strings.Index(block, "```")]
		cmdLine, want, _ := strings.Cut(block, "\n")
		args, ok := strings.CutPrefix(cmdLine, "$ rackstream assign ")
		if !ok {
			continue
		}
		fields := strings.Fields(args)
		for i, f := range fields {
			if strings.HasPrefix(f, "assignor/testdata/") {
				fields[i] = "../../" + f
			}
		}
		code, out, errs := runCLI(t, "", fields...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", cmdLine, code, errs)
		}
		if out != want {
			t.Errorf("%s: example %q is stale:\n--- %s\n%s--- actual\n%s", page, cmdLine, page, want, out)
		}
		examples++
	}
	if examples == 0 {
		t.Fatalf("no `$ rackstream assign` example found in %s's placement section", page)
	}
}

// zeros is an endless input, like /dev/zero on stdin.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestAssignBoundsItsInput(t *testing.T) {
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"assign"}, zeros{}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "stdin is larger than the limit of 64 MiB") {
		t.Fatalf("endless stdin: exit %d, stderr %q", code, errb.String())
	}
	if code, _, errs := runCLI(t, "", "/dev/zero"); code != 1 || !strings.Contains(errs, "/dev/zero is larger than the limit of 64 MiB") {
		t.Fatalf("/dev/zero: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runCLI(t, "", t.TempDir()); code != 1 || !strings.Contains(errs, "not a regular file (a directory)") {
		t.Fatalf("a directory: exit %d, stderr %q", code, errs)
	}
}

// TestAssignReadingASilentPipeEndsOnSIGTERM runs `rackstream assign` in a
// child process (this test binary, re-executed) whose stdin is a pipe that
// nobody writes to or closes, and sends it SIGTERM.
func TestAssignReadingASilentPipeEndsOnSIGTERM(t *testing.T) {
	if os.Getenv("RACKSTREAM_TEST_ASSIGN_CHILD") == "1" {
		// The child: main's signal set-up, then the command.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		fmt.Fprintln(os.Stderr, "ready")
		os.Exit(dispatch(ctx, []string{"assign"}, os.Stdin, os.Stdout, os.Stderr))
	}
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pw.Close() // kept open and silent while the child runs
			cmd := exec.Command(os.Args[0], "-test.run=^TestAssignReadingASilentPipeEndsOnSIGTERM$")
			cmd.Env = append(os.Environ(), "RACKSTREAM_TEST_ASSIGN_CHILD=1")
			cmd.Stdin = pr
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pr.Close()
			r := bufio.NewReader(stderr)
			if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
				cmd.Process.Kill()
				t.Fatalf("child did not start: %q, %v", line, err)
			}
			start := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var rest []byte
			waitc := make(chan error, 1)
			go func() {
				rest, _ = io.ReadAll(r) // until the child exits
				waitc <- cmd.Wait()
			}()
			select {
			case <-waitc:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatalf("the child still reads a silent pipe a minute after %v", sig)
			}
			t.Logf("exited %v after %v", cmd.ProcessState, time.Since(start))
			if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(rest), "read stdin: interrupted") {
				t.Fatalf("exit %d, stderr %q; want 1 and an interruption", cmd.ProcessState.ExitCode(), rest)
			}
		})
	}
}

// TestAssignAndValidateAcceptTheSameTags: a tag or key list that `validate`
// rejects, `assign` rejects with the same message, and what one accepts the
// other accepts.
func TestAssignAndValidateAcceptTheSameTags(t *testing.T) {
	z30, z31 := strings.Repeat("z", 30), strings.Repeat("z", 31)
	k20, k21 := "abcdefghijklmnopqrst", "abcdefghijklmnopqrstu"
	tests := []struct {
		name string
		tags map[string]string
		keys []string
		want string // "" = both accept
	}{
		{"a 30-character value", map[string]string{"zone": z30}, nil, ""},
		{"a 20-character key", map[string]string{k20: "a"}, nil, ""},
		{"five tags, five keys", map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}, []string{"a", "b", "c", "d", "e"}, ""},
		{"a 31-character value", map[string]string{"zone": z31}, nil,
			"client.tag.zone: Invalid value " + z31 + " for configuration client.tag.: Tag value exceeds maximum length of 30."},
		{"a 21-character key", map[string]string{k21: "a"}, nil,
			"client.tag." + k21 + ": Invalid value " + k21 + " for configuration client.tag.: Tag key exceeds maximum length of 20."},
		{"an empty value", map[string]string{"zone": ""}, nil,
			`client.tag.zone: Invalid value "" for configuration client.tag.: Tag value must not be empty.`},
		{"six tags", map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6"}, nil,
			"At most 5 client tags can be specified using client.tag. prefix."},
		{"a key named twice", map[string]string{"zone": "a"}, []string{"zone", "zone"},
			"Invalid value [zone, zone] for configuration rack.aware.assignment.tags: Contains duplicate value [zone]."},
		{"six keys", map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}, []string{"a", "b", "c", "d", "e", "a"},
			"Invalid value [a, b, c, d, e, a] for configuration rack.aware.assignment.tags: exceeds maximum list size of [5]."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := []string{"application.id=same-tags", "bootstrap.servers=127.0.0.1:9092"}
			for _, k := range slices.Sorted(maps.Keys(tt.tags)) {
				lines = append(lines, "client.tag."+k+"="+tt.tags[k])
			}
			if tt.keys != nil {
				lines = append(lines, "rack.aware.assignment.tags="+strings.Join(tt.keys, ","))
			}
			file := filepath.Join(t.TempDir(), "tags.properties")
			if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var vout, verr bytes.Buffer
			vcode := dispatch(context.Background(), []string{"validate", "--config", file}, strings.NewReader(""), &vout, &verr)

			scenario, _ := json.Marshal(map[string]any{"tasks": 1, "rack_aware_assignment_tags": tt.keys,
				"clients": []map[string]any{{"id": "a", "tags": tt.tags}}})
			acode, _, aerr := runCLI(t, string(scenario))

			if tt.want == "" {
				if vcode != 0 || acode != 0 {
					t.Fatalf("validate exit %d (%s), assign exit %d (%s); want both to accept", vcode, verr.String(), acode, aerr)
				}
				return
			}
			if vcode != 2 || !strings.Contains(verr.String(), tt.want) {
				t.Errorf("validate: exit %d, stderr %q; want 2 and %q", vcode, verr.String(), tt.want)
			}
			if acode != 2 || !strings.Contains(aerr, tt.want) {
				t.Errorf("assign: exit %d, stderr %q; want 2 and %q", acode, aerr, tt.want)
			}
		})
	}
}

// TestAssignPrintsNoTerminalEscapes: ids, tag keys and values and selectors
// from the scenario reach the table, the JSON and the errors escaped.
func TestAssignPrintsNoTerminalEscapes(t *testing.T) {
	const (
		esc   = "\x1b[2J\x1b]8;;http://evil/\x07"
		c1CSI = "\u009b31m"
	)
	scenario, _ := json.Marshal(map[string]any{"tasks": 2, "num_standby_replicas": 1,
		"rack_aware_assignment_tags": []string{"zone"},
		"clients": []map[string]any{
			{"id": "n1" + esc, "tags": map[string]string{"zone": "a" + c1CSI}},
			{"id": "n2\u202e", "tags": map[string]string{"zone": "b\x1b[0m", "x\x7f": "y"}},
		}})
	raw := func(s string) bool { return strings.ContainsAny(s, "\x1b\x07\x7f\u009b\u202e") }
	for _, args := range [][]string{
		{"--format", "table"},
		{"--format", "table", "--lose", "zone=a" + c1CSI},
		{"--format", "table", "--lose", "n1" + esc},
		{},
		{"--lose", "zone=b\x1b[0m"},
	} {
		code, out, errs := runCLI(t, string(scenario), args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errs)
		}
		if raw(out) {
			t.Errorf("%q: output carries a raw control character:\n%q", args, out)
		}
		if !strings.Contains(out, `\x1b[2J`) && !strings.Contains(out, `\u001b[2J`) {
			t.Errorf("%q: the escaped id is missing:\n%s", args, out)
		}
		if len(args) == 0 || args[0] != "--format" {
			var v any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Errorf("%q: escaped JSON does not parse: %v", args, err)
			}
		}
	}
	// Errors quote the scenario's values escaped too.
	bad, _ := json.Marshal(map[string]any{"tasks": 1, "clients": []map[string]any{
		{"id": "a", "tags": map[string]string{"zone": strings.Repeat("\x1b[1m", 10)}}}})
	for _, tc := range []struct {
		stdin string
		args  []string
	}{
		{string(bad), nil},
		{string(scenario), []string{"--lose", "zone=nowhere\x1b[1m"}},
		{`{"tasks": 1, "clients": [{"id": "a` + `\u001b[1m", "tags": {}}, {"id": "a\u001b[1m", "tags": {}}]}`, nil},
	} {
		code, _, errs := runCLI(t, tc.stdin, tc.args...)
		if code != 2 || raw(errs) || !strings.Contains(errs, `\x1b[1m`) {
			t.Errorf("exit %d, stderr %q: want 2 and the value escaped", code, errs)
		}
	}
}

// TestAssignLoseOnAMetadataDocumentIsTheLivePlacementsWhatIf: with --lose,
// a metadata document's own placement is analysed (as /v1/whatif does), not
// its replay: losing n1 fails over task 0 too, which the replay would have
// moved to n3 already.
func TestAssignLoseOnAMetadataDocumentIsTheLivePlacementsWhatIf(t *testing.T) {
	code, out, errs := runCLI(t, liveDoc, "--lose", "n1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep lossReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Plan.Tasks[0].Active != "n1" {
		t.Fatalf("plan printed is not the document's placement: task 0 on %s", rep.Plan.Tasks[0].Active)
	}
	in, live, err := assignor.DecodeDocument([]byte(liveDoc))
	if err != nil {
		t.Fatal(err)
	}
	want, err := assignor.WhatIf(in, live, []assignor.Selector{{Client: "n1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Loss, want) {
		t.Fatalf("assign --lose differs from assignor.WhatIf of the live placement:\n%+v\n%+v", rep.Loss, want)
	}
	// Task 0 goes to n3, its caught-up warmup, with no restore.
	if len(want.Failover) != 2 || want.Failover[0].Task != 0 || want.Failover[0].To != "n3" || want.Failover[0].Restore {
		t.Fatalf("failover = %+v; want tasks 0 and 1 off n1, task 0 onto its caught-up warmup n3", want.Failover)
	}
}
