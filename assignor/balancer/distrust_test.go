package balancer

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestClaimedLag(t *testing.T) {
	tests := []struct {
		name            string
		end, checkpoint int64
		lag             int64
		known           bool
	}{
		{"caught up", 1000, 1000, 0, true},
		{"behind", 1000, 400, 600, true},
		{"no state read yet", 1000, 0, 1000, true},
		{"empty changelog, empty store", 0, 0, 0, true},
		{"one past the end", 1000, 1001, 0, false},
		{"far past the end", 1000, 2000, 0, false},
		{"past an empty changelog", 0, 5, 0, false},
	}
	for _, tt := range tests {
		lag, known := claimedLag(tt.end, tt.checkpoint)
		if lag != tt.lag || known != tt.known {
			t.Errorf("%s: claimedLag(end %d, checkpoint %d) = %d, %v; want %d, %v", tt.name, tt.end, tt.checkpoint, lag, known, tt.lag, tt.known)
		}
	}
}

// taskZeroWinner settles a group of six where task 0's changelog ends at
// 1000, p1 is caught up on it (checkpoint 1000) and p0 claims claim, and
// returns task 0's active, the leader's stats and its logs. With equal
// claims, p0 wins the tie (the smaller id), so a p0 that wins only by
// claiming more than the end shows the claim believed.
func taskZeroWinner(t *testing.T, claim int64) (string, Stats, string) {
	o := newOffsets()
	o.setEnd(0, 1000)
	o.set("p1", 0, 1000)
	o.set("p0", 0, claim)
	s := sixMembers(t, 12, o)
	var logs strings.Builder
	s.member("m0").b.log = slog.New(slog.NewTextHandler(&logs, nil))
	s.settle("m0", 4)
	s.round("m0") // one more: the warning is not repeated
	p := checkPlacement(t, s, 12)
	return p.Members[p.Tasks[0].Active].ProcessID, s.member("m0").b.Stats(), logs.String()
}

func TestCheckpointBeyondTheEndDoesNotWinATaskFromACaughtUpMember(t *testing.T) {
	if got, st, _ := taskZeroWinner(t, 1000); got != "p0" || st.CheckpointsBeyondEnd != 0 {
		t.Fatalf("control: two caught-up members, task 0 on %s (stats %+v); want p0, the tie-break, and nothing counted", got, st)
	}
	got, st, logs := taskZeroWinner(t, 1000+1000)
	if got != "p1" {
		t.Fatalf("task 0 went to %s: a claim of end+1000 won over the caught-up p1", got)
	}
	if st.CheckpointsBeyondEnd != 1 {
		t.Fatalf("CheckpointsBeyondEnd = %d over several rounds, want 1 (once per member)", st.CheckpointsBeyondEnd)
	}
	if n := strings.Count(logs, "beyond the changelog end"); n != 1 || !strings.Contains(logs, "process_id=p0") || !strings.Contains(logs, "tasks=[0]") {
		t.Fatalf("want one warning naming p0 and task 0, got %d:\n%s", n, logs)
	}
}

func TestCheckEndpoint(t *testing.T) {
	for _, ok := range []string{"", "h:1", "rs-0.rs.svc:8080", "10.0.0.1:8080", "[::1]:8080"} {
		if ep, err := checkEndpoint(ok); err != nil || ep != ok {
			t.Errorf("checkEndpoint(%q) = %q, %v; want it kept", ok, ep, err)
		}
	}
	for _, bad := range hostileEndpoints {
		if ep, err := checkEndpoint(bad); err == nil || ep != "" {
			t.Errorf("checkEndpoint(%q) = %q, %v; want it dropped with a reason", bad, ep, err)
		}
	}
}

// hostileEndpoints are announcements that would steer a forwarded request
// (path, query, userinfo, fragment, scheme) or cannot be dialled (port).
var hostileEndpoints = []string{
	"evil:8080/any/path?x=",
	"evil:8080?token=",
	"user:pw@evil:8080",
	"evil:8080#frag",
	"http://evil:8080",
	"evil:99999",
	"evil:0",
	"evil",
	"\x1b]8;;http://evil\x07evil:8080",
	strings.Repeat("e", 1000) + ":8080",
}

func TestInvalidEndpointKeepsTheMemberInThePlanWithoutAnEndpoint(t *testing.T) {
	for i, bad := range hostileEndpoints {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
			o := newOffsets()
			s := newSim(t, 12)
			for i := range 6 {
				st := simSettings(fmt.Sprintf("p%d", i), zoneCluster(i), o)
				if i == 5 {
					st.Endpoint = bad
				}
				s.add(fmt.Sprintf("m%d", i), st)
			}
			leader := s.member("m0").b
			var logs strings.Builder
			leader.log = slog.New(slog.NewTextHandler(&logs, nil))
			s.settle("m0", 4)
			s.round("m0")
			p := checkPlacement(t, s, 12) // p5 still holds its share
			i5 := p.MemberIndex("p5")
			if i5 == NoMember || p.Members[i5].Endpoint != "" {
				t.Fatalf("p5 in the placement: %+v; want it there with no endpoint", p.Members)
			}
			held := 0
			for _, r := range p.Tasks {
				if r.Active == i5 {
					held++
				}
			}
			if held == 0 {
				t.Fatal("p5 lost its place in the plan")
			}
			if p.Members[p.MemberIndex("p4")].Endpoint != "p4:8080" {
				t.Fatalf("an honest member's endpoint changed: %+v", p.Members)
			}
			if n := leader.Stats().InvalidEndpoints; n != 1 {
				t.Fatalf("InvalidEndpoints = %d over several rounds, want 1", n)
			}
			if n := strings.Count(logs.String(), "no query is forwarded"); n != 1 {
				t.Fatalf("%d warnings, want one:\n%s", n, logs.String())
			}
			if strings.ContainsRune(logs.String(), '\x1b') || strings.Contains(logs.String(), strings.Repeat("e", 100)) {
				t.Fatalf("the log carries the raw or unbounded value:\n%q", logs.String())
			}
		})
	}
}

func TestQuoteForLog(t *testing.T) {
	if got := quoteForLog("a\x1b[2Jb"); got != `a\x1b[2Jb` {
		t.Errorf("escape not quoted: %s", got)
	}
	long := quoteForLog(strings.Repeat("x", 1000))
	if len(long) > maxLoggedBytes+40 || !strings.HasSuffix(long, "(936 more bytes)") {
		t.Errorf("long value: %s", long)
	}
}
