package balancer

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/tags"
)

// The golden encodings pin both formats byte for byte: a change to any of
// them is a wire-format change and needs a new version.
const (
	goldenSubV1 = "01" + "02" + "027031" + "03683a31" + "01047a6f6e650161" + "02" + "0e" +
		"020002" + "0101" + "00" + "01" + "02" + "01ac02" + "0105"
	goldenSubV2 = "02" + "02" + "027031" + "03683a31" + "01047a6f6e650161" + "02" + "0e" +
		"020002" + "0101" + "00" + "01" + "02" + "01ac02" + "0105" + "0162"
	goldenQuality = "7a7b2264696d656e73696f6e73223a6e756c6c2c227374616e6462795f73686f727466616c6c223a312c226163746976655f6c6f6164223a7b226d696e223a302c226d6178223a307d2c227265706c6963615f6c6f6164223a7b226d696e223a302c226d6178223a307d2c226578706f73757265223a6e756c6c7d"
	goldenAsgV1   = "01" + "01" + "10" + "01" + "0100" + "0101" + "00" + "00" + "d00f" +
		"02" + "027031" + "03683a31" + "01047a6f6e650161" + "01" +
		"027032" + "03683a32" + "01047a6f6e650162" + "01" +
		"02" + "01" + "0101" + "00" + "00" + "00" + "0101" + goldenQuality
	goldenAsgV2 = "02" + "02" + "10" + "01" + "0100" + "0101" + "00" + "00" + "d00f" +
		"02" + "027031" + "03683a31" + "01047a6f6e650161" + "01" + "0162" +
		"027032" + "03683a32" + "01047a6f6e650162" + "01" + "00" +
		"02" + "01" + "0101" + "00" + "00" + "00" + "0101" + goldenQuality
	goldenSubV3 = "03" + "03" + "027031" + "03683a31" + "01047a6f6e650161" + "02" + "0e" +
		"020002" + "0101" + "00" + "01" + "02" + "01ac02" + "0105" + "0162"
	// p2's view: standby 0, warmup 1, both probe triggers (gaps 0, 0).
	goldenAsgV3 = "03" + "03" + "10" + "01" + "00" + "00" + "0100" + "0101" + "d00f" + "020000" +
		"02" + "027031" + "03683a31" + "01047a6f6e650161" + "01" + "0162" +
		"027032" + "03683a32" + "01047a6f6e650162" + "01" + "00" +
		"02" + "01" + "0101" + "00" + "00" + "00" + "0101" + goldenQuality
	goldenSubV4 = "04" + "04" + "027031" + "03683a31" + "01047a6f6e650161" + "02" + "0e" +
		"020002" + "0101" + "00" + "01" + "02" + "01ac02" + "0105" + "0162"
	// Version 3's, then the leader's settings: 1 standby, lag 10000
	// (uvarint 904e), 2 warmups, tags [zone].
	goldenAsgV4 = "04" + "04" + "10" + "01" + "00" + "00" + "0100" + "0101" + "d00f" + "020000" +
		"02" + "027031" + "03683a31" + "01047a6f6e650161" + "01" + "0162" +
		"027032" + "03683a32" + "01047a6f6e650162" + "01" + "00" +
		"02" + "01" + "0101" + "00" + "00" + "00" + "0101" + goldenQuality +
		"01" + "904e" + "02" + "01" + "047a6f6e65"
	// Version 4's, then the rates of tasks 1 (100, 20, 0) and 3 (300, 0, 7).
	goldenSubV5 = "05" + "05" + "027031" + "03683a31" + "01047a6f6e650161" + "02" + "0e" +
		"020002" + "0101" + "00" + "01" + "02" + "01ac02" + "0105" + "0162" +
		"02" + "01641400" + "01ac020007"
)

// goldenAsgV5 is version 4's, then an empty cross-zone field.
var goldenAsgV5 = "05" + "05" + goldenAsgV4[4:] + "00"

func TestGoldenBytesPinTheFormats(t *testing.T) {
	for _, tc := range []struct {
		name   string
		golden string
		encode func() []byte
	}{
		{"subscription v1", goldenSubV1, func() []byte { s := goldenSubscription(Version1); return s.AppendTo(nil) }},
		{"subscription v2", goldenSubV2, func() []byte { s := goldenSubscription(Version2); return s.AppendTo(nil) }},
		{"assignment v1", goldenAsgV1, func() []byte { a := goldenAssignment(Version1); return a.AppendTo(nil) }},
		{"assignment v2", goldenAsgV2, func() []byte { a := goldenAssignment(Version2); return a.AppendTo(nil) }},
		{"subscription v3", goldenSubV3, func() []byte { s := goldenSubscription(Version3); return s.AppendTo(nil) }},
		{"assignment v3", goldenAsgV3, func() []byte { a := goldenAssignmentV3(); return a.AppendTo(nil) }},
		{"subscription v4", goldenSubV4, func() []byte { s := goldenSubscription(Version4); return s.AppendTo(nil) }},
		{"assignment v4", goldenAsgV4, func() []byte { a := goldenAssignmentV4(); return a.AppendTo(nil) }},
		{"subscription v5", goldenSubV5, func() []byte { s := goldenSubscription(Version5); return s.AppendTo(nil) }},
		{"assignment v5", goldenAsgV5, func() []byte { a := goldenAssignmentV5(); return a.AppendTo(nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hex.EncodeToString(tc.encode()); got != tc.golden {
				t.Fatalf("encoding changed:\n got %s\nwant %s", got, tc.golden)
			}
		})
	}
}

func TestGoldenBytesDecodeToTheirValues(t *testing.T) {
	for _, v := range []uint8{Version1, Version2, Version3, Version4, Version5} {
		want := goldenSubscription(v)
		if v == Version1 {
			want.Build = "" // version 1 has no build
		}
		raw, _ := hex.DecodeString(map[uint8]string{1: goldenSubV1, 2: goldenSubV2, 3: goldenSubV3, 4: goldenSubV4, 5: goldenSubV5}[v])
		got, err := DecodeSubscription(raw, LatestVersion)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("v%d subscription:\n got %+v\nwant %+v", v, got, want)
		}

		wantA, pid := goldenAssignment(v), "p1"
		switch v {
		case Version3:
			wantA, pid = goldenAssignmentV3(), "p2"
		case Version4:
			wantA, pid = goldenAssignmentV4(), "p2"
		case Version5:
			wantA, pid = goldenAssignmentV5(), "p2"
		}
		if v == Version1 {
			wantA.Placement.Members[0].Build = ""
		}
		wantA.Placement.ProbingDeadline = unixMilli(wantA.ProbingDeadline)
		raw, _ = hex.DecodeString(map[uint8]string{1: goldenAsgV1, 2: goldenAsgV2, 3: goldenAsgV3, 4: goldenAsgV4, 5: goldenAsgV5}[v])
		gotA, err := DecodeAssignment(raw, LatestVersion, pid)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if !reflect.DeepEqual(gotA, wantA) {
			t.Fatalf("v%d assignment:\n got %+v\nwant %+v", v, gotA, wantA)
		}
	}
}

func TestSubscriptionRoundTripsEveryField(t *testing.T) {
	s := Subscription{
		Version: Version2, LatestSupported: Version2, ProcessID: "7f1c-☃", Endpoint: "[::1]:8080",
		Tags:     tags.MustSet("zone", "eu-central-1a", "cluster", "k8s-cluster1", "rack", "r9"),
		Capacity: maxCapacity, PlanGeneration: 1<<31 - 1,
		PlanActive: []int32{0, 1, 2, 999_999}, PlanStandby: []int32{5}, PlanWarmup: []int32{7, 8},
		ProbeSeq: 1 << 60, Checkpoints: []Checkpoint{{0, 0}, {1, 1 << 62}, {999_999, 3}},
		Build: strings.Repeat("x", maxBuildBytes),
	}
	got, err := DecodeSubscription(s.AppendTo(nil), LatestVersion)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
	}
}

func TestDecodeSubscriptionRejects(t *testing.T) {
	valid := func() Subscription { return goldenSubscription(Version2) }
	enc := func(mut func(*Subscription)) []byte { s := valid(); mut(&s); return s.AppendTo(nil) }
	for _, tc := range []struct {
		name    string
		in      []byte
		field   string
		isNewer bool
	}{
		{"empty input", nil, "version", false},
		{"version zero", []byte{0, 2}, "oldest supported", false},
		{"latest below version", []byte{2, 1}, "latest_supported", false},
		{"newer version reads only the header", []byte{9, 9, 0xff, 0xff}, "newer", true},
		{"a version byte no release will reach is garbage, not the future", []byte("not ours"), "not a rackstream subscription", false},
		{"truncated after the header", []byte{1, 1}, "process_id", false},
		{"empty process id", enc(func(s *Subscription) { s.ProcessID = "" }), "process_id", false},
		{"process id too long", enc(func(s *Subscription) { s.ProcessID = strings.Repeat("p", 256) }), "process_id", false},
		{"endpoint not UTF-8", enc(func(s *Subscription) { s.Endpoint = "\xff" }), "endpoint", false},
		{"capacity zero", enc(func(s *Subscription) { s.Capacity = 0 }), "capacity", false},
		{"capacity absurd", enc(func(s *Subscription) { s.Capacity = 1 << 40 }), "capacity", false},
		{"plan generation below -1", enc(func(s *Subscription) { s.PlanGeneration = -2 }), "plan_generation", false},
		{"task id beyond the limit", enc(func(s *Subscription) { s.PlanActive = []int32{maxTask} }), "plan_active", false},
		{"absurd task count", append(hexBytes("010102703100000101"), 0xff, 0xff, 0xff, 0xff, 0x0f), "plan_active", false},
		{"checkpoint offset out of range", append(hexBytes("01010270310000010100000000"+"0100"), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "checkpoints", false},
		{"trailing bytes", append(enc(func(*Subscription) {}), 0), "trailing", false},
		{"truncated build", enc(func(*Subscription) {})[:len(enc(func(*Subscription) {}))-1], "build", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSubscription(tc.in, LatestVersion)
			if err == nil {
				t.Fatal("decoded without error")
			}
			if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q should wrap ErrDecode and name %q", err, tc.field)
			}
			if errors.Is(err, ErrNewerVersion) != tc.isNewer {
				t.Fatalf("errors.Is(ErrNewerVersion) = %v, want %v", !tc.isNewer, tc.isNewer)
			}
		})
	}
}

func TestDecodeAssignmentRejects(t *testing.T) {
	enc := func(mut func(*AssignmentData)) []byte {
		a := goldenAssignment(Version2)
		mut(&a)
		return a.AppendTo(nil)
	}
	for _, tc := range []struct {
		name  string
		in    []byte
		field string
	}{
		{"empty input", nil, "version"},
		{"newer version", []byte{LatestVersion + 1, LatestVersion + 1}, "newer"},
		{"negative generation", enc(func(a *AssignmentData) { a.Generation = -1 }), "generation"},
		{"unknown flag", func() []byte { b := enc(func(*AssignmentData) {}); b[3] |= 0x80; return b }(), "flags"},
		{"task in two roles", enc(func(a *AssignmentData) { a.Standby = []int32{0} }), "both"},
		{"own actives disagree with the placement", enc(func(a *AssignmentData) { a.Active = nil }), "differ"},
		{"pending task that has an active", enc(func(a *AssignmentData) { a.Placement.Tasks[1] = Replicas{Active: 1} }), "pending"},
		{"member index out of range", enc(func(a *AssignmentData) { a.Placement.Tasks[0].Standbys = []int{5} }), "member index"},
		{"member twice in one task", enc(func(a *AssignmentData) { a.Placement.Tasks[1].Warmups = []int{1, 1} }), "twice"},
		{"active also a standby", enc(func(a *AssignmentData) { a.Placement.Tasks[0].Standbys = []int{0} }), "twice"},
		{"members out of order", enc(func(a *AssignmentData) {
			a.Placement.Members[0], a.Placement.Members[1] = a.Placement.Members[1], a.Placement.Members[0]
		}), "sort"},
		{"tasks for a process the placement lacks", enc(func(a *AssignmentData) { a.Placement.Members[0].ProcessID = "p0" }), "does not list"},
		{"quality not JSON", func() []byte {
			b := enc(func(*AssignmentData) {})
			return append(b[:len(b)-123], append([]byte{3}, "{{{"...)...)
		}(), "quality"},
		{"trailing bytes", append(enc(func(*AssignmentData) {}), 1), "trailing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeAssignment(tc.in, LatestVersion, "p1")
			if err == nil {
				t.Fatal("decoded without error")
			}
			if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q should wrap ErrDecode and name %q", err, tc.field)
			}
		})
	}
}

func TestDecodeAssignmentRejectsBadProbeTriggers(t *testing.T) {
	enc := func(mut func(*AssignmentData)) []byte {
		a := goldenAssignmentV3()
		mut(&a)
		return a.AppendTo(nil)
	}
	for _, tc := range []struct {
		name  string
		in    []byte
		field string
	}{
		{"trigger that is not a replica task of the member", enc(func(a *AssignmentData) { a.ProbeTriggers = []int32{0, 1, 2} }), "probe trigger 2"},
		{"trigger on an active task", func() []byte {
			a := goldenAssignment(Version3)
			a.ProbeTriggers = []int32{0}
			return a.AppendTo(nil)
		}(), "probe trigger 0"},
		{"triggers without a probing deadline", enc(func(a *AssignmentData) { a.ProbingDeadline = 0; a.Placement.ProbingDeadline = time.Time{} }), "probing deadline"},
		{"truncated triggers", enc(func(*AssignmentData) {})[:13], "probe_triggers"},
		{"trigger beyond the task limit", enc(func(a *AssignmentData) { a.ProbeTriggers = []int32{maxTask} }), "probe_triggers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid := "p2"
			if strings.Contains(tc.name, "active") {
				pid = "p1"
			}
			_, err := DecodeAssignment(tc.in, LatestVersion, pid)
			if err == nil {
				t.Fatal("decoded without error")
			}
			if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q should wrap ErrDecode and name %q", err, tc.field)
			}
		})
	}
}

func TestPlacementRecordRoundTripsAndChecksGenerationAndCRC(t *testing.T) {
	a := goldenAssignment(Version2)
	p := a.Placement
	v, crc := encodePlacementRecord(p, Version2)
	got, err := decodePlacementRecord(v, LatestVersion, p.Generation, crc, maxPlacementBytes)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, p)
	}
	if _, err := decodePlacementRecord(v, LatestVersion, p.Generation+1, crc, maxPlacementBytes); err == nil || !strings.Contains(err.Error(), "generation") {
		t.Fatalf("wrong generation accepted: %v", err)
	}
	if _, err := decodePlacementRecord(v, LatestVersion, p.Generation, crc+1, maxPlacementBytes); err == nil || !strings.Contains(err.Error(), "crc") {
		t.Fatalf("wrong crc accepted: %v", err)
	}
	bad := bytes.Clone(v)
	bad[len(bad)-3] ^= 0xff
	if _, err := decodePlacementRecord(bad, LatestVersion, p.Generation, crc, maxPlacementBytes); err == nil {
		t.Fatal("corrupted body accepted")
	}
	if _, err := decodePlacementRecord(v, LatestVersion, p.Generation, crc, 10); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("body over the limit accepted: %v", err)
	}
}

func FuzzDecodeSubscription(f *testing.F) {
	for _, h := range []string{goldenSubV1, goldenSubV2, goldenSubV3, goldenSubV4, goldenSubV5} {
		f.Add(hexBytes(h))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSubscription(b, LatestVersion)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same bytes: one encoding per value.
		if again := s.AppendTo(nil); !bytes.Equal(again, b) {
			t.Fatalf("decoded %x re-encodes as %x", b, again)
		}
	})
}

func FuzzDecodeAssignment(f *testing.F) {
	for _, h := range []string{goldenAsgV1, goldenAsgV2, goldenAsgV3, goldenAsgV4, goldenAsgV5} {
		f.Add(hexBytes(h))
	}
	ref := AssignmentData{Version: 2, CommonVersion: 2, Generation: 3, Ref: &PlacementRef{Topic: "app-placement", Offset: 9, CRC: 0xdeadbeef}}
	f.Add(ref.AppendTo(nil))
	ref3 := AssignmentData{Version: 3, CommonVersion: 3, Generation: 3, Standby: []int32{4}, ProbingDeadline: 1, ProbeTriggers: []int32{4},
		Ref: &PlacementRef{Topic: "app-placement", Offset: 9, CRC: 0xdeadbeef}}
	f.Add(ref3.AppendTo(nil))
	cz := goldenAssignmentCrossZone()
	f.Add(cz.AppendTo(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, pid := range []string{"p1", "p2"} { // the goldens' members
			a, err := DecodeAssignment(b, LatestVersion, pid)
			if err != nil {
				continue
			}
			if a.Placement != nil {
				for _, r := range a.Placement.Tasks {
					if r.Active >= len(a.Placement.Members) {
						t.Fatalf("active index %d out of %d members", r.Active, len(a.Placement.Members))
					}
				}
			}
			for _, task := range a.ProbeTriggers {
				if !slices.Contains(a.Standby, task) && !slices.Contains(a.Warmup, task) {
					t.Fatalf("probe trigger %d is neither a standby %v nor a warmup %v", task, a.Standby, a.Warmup)
				}
			}
			if len(a.ProbeTriggers) > 0 && (a.Version < Version3 || a.ProbingDeadline == 0) {
				t.Fatalf("probe triggers %v in version %d with deadline %d", a.ProbeTriggers, a.Version, a.ProbingDeadline)
			}
			_ = a.AppendTo(nil)
		}
	})
}

func hexBytes(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

var _ = assignor.Quality{}
