package tags

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCheckReportsKafkasMessagesInKafkasOrder(t *testing.T) {
	six := []Tag{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}, {"e", "5"}, {"f", "6"}}
	tests := []struct {
		name string
		tags []Tag
		keys Keys
		want []Error
	}{
		{
			name: "valid tags and keys pass",
			tags: []Tag{{"zone", "eu-central-1a"}, {"cluster", "k8s-cluster1"}},
			keys: Keys{"zone", "cluster"},
		},
		{
			name: "no tags and no keys pass",
		},
		{
			name: "tags need not all be listed in the keys",
			tags: []Tag{{"zone", "a"}, {"cluster", "b"}},
			keys: Keys{"zone"},
		},
		{
			name: "a sixth client tag is blamed on the sixth key",
			tags: six,
			want: []Error{{"client.tag.f", "At most 5 client tags can be specified using client.tag. prefix."}},
		},
		{
			name: "a rack-aware key without a client tag",
			tags: []Tag{{"zone", "a"}},
			keys: Keys{"zone", "x"},
			want: []Error{{"rack.aware.assignment.tags", "Invalid value [zone, x] for configuration rack.aware.assignment.tags: Contains invalid value [x] which doesn't have corresponding tag set via [client.tag.] prefix."}},
		},
		{
			name: "a key of 21 characters is too long",
			tags: []Tag{{"abcdefghijklmnopqrstu", "a"}},
			want: []Error{{"client.tag.abcdefghijklmnopqrstu", "client.tag.abcdefghijklmnopqrstu: Invalid value abcdefghijklmnopqrstu for configuration client.tag.: Tag key exceeds maximum length of 20."}},
		},
		{
			name: "a key of 20 characters fits",
			tags: []Tag{{"abcdefghijklmnopqrst", "a"}},
		},
		{
			name: "a value of 31 characters is too long",
			tags: []Tag{{"zone", strings.Repeat("v", 31)}},
			want: []Error{{"client.tag.zone", "client.tag.zone: Invalid value " + strings.Repeat("v", 31) + " for configuration client.tag.: Tag value exceeds maximum length of 30."}},
		},
		{
			name: "lengths count characters, not bytes",
			tags: []Tag{{strings.Repeat("ä", 20), strings.Repeat("€", 30)}},
		},
		{
			name: "a value of 31 multibyte characters is too long",
			tags: []Tag{{"zone", strings.Repeat("€", 31)}},
			want: []Error{{"client.tag.zone", "client.tag.zone: Invalid value " + strings.Repeat("€", 31) + " for configuration client.tag.: Tag value exceeds maximum length of 30."}},
		},
		{
			name: "six rack-aware keys exceed the list size",
			tags: six[:5],
			keys: Keys{"a", "b", "c", "d", "e", "a"},
			want: []Error{
				{"rack.aware.assignment.tags", "Invalid value [a, b, c, d, e, a] for configuration rack.aware.assignment.tags: Contains duplicate value [a]."},
				{"rack.aware.assignment.tags", "Invalid value [a, b, c, d, e, a] for configuration rack.aware.assignment.tags: exceeds maximum list size of [5]."},
			},
		},
		{
			name: "empty key and empty value are rejected",
			tags: []Tag{{"", "a"}, {"zone", ""}},
			want: []Error{
				{"client.tag.", `client.tag.: Invalid value "" for configuration client.tag.: Tag key must not be empty.`},
				{"client.tag.zone", `client.tag.zone: Invalid value "" for configuration client.tag.: Tag value must not be empty.`},
			},
		},
		{
			name: "an empty rack-aware entry is rejected",
			tags: []Tag{{"zone", "a"}},
			keys: Keys{"zone", ""},
			want: []Error{{"rack.aware.assignment.tags", "Invalid value [zone, ] for configuration rack.aware.assignment.tags: Contains an empty entry."}},
		},
		{
			name: "invalid UTF-8 is rejected",
			tags: []Tag{{"zone\xff", "a\xfe"}},
			want: []Error{
				{"client.tag.zone\xff", `client.tag."zone\xff": Invalid value "zone\xff" for configuration client.tag.: Tag key is not valid UTF-8.`},
				{"client.tag.zone\xff", `client.tag."zone\xff": Invalid value "a\xfe" for configuration client.tag.: Tag value is not valid UTF-8.`},
			},
		},
		{
			name: "every violation is reported, in Kafka's order",
			tags: append(slices.Clone(six[:5]), Tag{"abcdefghijklmnopqrstuvw", strings.Repeat("x", 31)}),
			keys: Keys{"a", "b", "c", "d", "e", "zone"},
			want: []Error{
				{"client.tag.abcdefghijklmnopqrstuvw", "At most 5 client tags can be specified using client.tag. prefix."},
				{"rack.aware.assignment.tags", "Invalid value [a, b, c, d, e, zone] for configuration rack.aware.assignment.tags: Contains invalid value [zone] which doesn't have corresponding tag set via [client.tag.] prefix."},
				{"client.tag.abcdefghijklmnopqrstuvw", "client.tag.abcdefghijklmnopqrstuvw: Invalid value abcdefghijklmnopqrstuvw for configuration client.tag.: Tag key exceeds maximum length of 20."},
				{"client.tag.abcdefghijklmnopqrstuvw", "client.tag.abcdefghijklmnopqrstuvw: Invalid value " + strings.Repeat("x", 31) + " for configuration client.tag.: Tag value exceeds maximum length of 30."},
				{"rack.aware.assignment.tags", "Invalid value [a, b, c, d, e, zone] for configuration rack.aware.assignment.tags: exceeds maximum list size of [5]."},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Check(tt.tags, tt.keys)
			var got []Error
			for _, e := range errs {
				got = append(got, *e)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Check:\n got %q\nwant %q", got, tt.want)
			}
			if (errs == nil) != (len(tt.want) == 0) {
				t.Errorf("Check returned %#v, want nil exactly when there are no errors", errs)
			}
		})
	}
}

func TestNewSetSortsByKeyAndRejectsDuplicates(t *testing.T) {
	s, err := NewSet(Tag{"zone", "a"}, Tag{"cluster", "k1"}, Tag{"az", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Keys(), []string{"az", "cluster", "zone"}; !slices.Equal(got, want) {
		t.Errorf("Keys() = %q, want %q", got, want)
	}
	if got, want := s.String(), "az=x,cluster=k1,zone=a"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if v, ok := s.Get("cluster"); !ok || v != "k1" {
		t.Errorf("Get(cluster) = %q, %v", v, ok)
	}
	if v, ok := s.Get("rack"); ok || v != "" {
		t.Errorf("Get(rack) = %q, %v, want absent", v, ok)
	}
	if s.Value("zone") != "a" || s.Value("nope") != "" {
		t.Errorf("Value: zone=%q nope=%q", s.Value("zone"), s.Value("nope"))
	}
	if s.Len() != 3 {
		t.Errorf("Len() = %d", s.Len())
	}
	var walked []string
	for k, v := range s.All() {
		walked = append(walked, k+"="+v)
		if k == "cluster" {
			break
		}
	}
	if want := []string{"az=x", "cluster=k1"}; !slices.Equal(walked, want) {
		t.Errorf("All() with break yielded %q, want %q", walked, want)
	}

	if _, err := NewSet(Tag{"zone", "a"}, Tag{"zone", "b"}); err == nil || !strings.Contains(err.Error(), `duplicate client tag key "zone"`) {
		t.Errorf("NewSet with a duplicate key: err = %v", err)
	}
	_, err = NewSet(Tag{"zone", strings.Repeat("v", 31)})
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || es[0].Config != "client.tag.zone" {
		t.Errorf("NewSet with a long value: err = %#v, want Errors blaming client.tag.zone", err)
	}
	var one *Error
	if !errors.As(err, &one) {
		t.Errorf("errors.As(*Error) failed on %v", err)
	}
}

func TestFromMapAndMapRoundTrip(t *testing.T) {
	m := map[string]string{"zone": "a", "cluster": "k1"}
	s, err := FromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Equal(MustSet("cluster", "k1", "zone", "a")) {
		t.Errorf("FromMap = %v", s)
	}
	got := s.Map()
	if len(got) != 2 || got["zone"] != "a" || got["cluster"] != "k1" {
		t.Errorf("Map() = %v", got)
	}
	empty, err := FromMap(nil)
	if err != nil || empty.Len() != 0 || !empty.Equal(Set{}) {
		t.Errorf("FromMap(nil) = %v, %v; want the zero set", empty, err)
	}
}

func TestSetIsImmutable(t *testing.T) {
	in := []Tag{{"zone", "a"}}
	s, _ := NewSet(in...)
	in[0].Value = "changed"
	out := s.Tags()
	out[0].Value = "changed too"
	if s.Value("zone") != "a" {
		t.Errorf("the set changed with its input or output slice: %v", s)
	}
}

func TestMustSetPanicsOnInvalidInput(t *testing.T) {
	for _, kv := range [][]string{{"zone"}, {"zone", ""}, {"a", "1", "a", "2"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MustSet(%q) did not panic", kv)
				}
			}()
			MustSet(kv...)
		}()
	}
}

func TestParseKeysReadsAKafkaList(t *testing.T) {
	tests := []struct {
		in   string
		want Keys
	}{
		{"", nil},
		{"   ", nil},
		{"zone", Keys{"zone"}},
		{"zone,cluster", Keys{"zone", "cluster"}},
		{" zone , cluster ", Keys{"zone", "cluster"}},
		{"zone,,cluster", Keys{"zone", "", "cluster"}},
	}
	for _, tt := range tests {
		got := ParseKeys(tt.in)
		if !slices.Equal(got, tt.want) {
			t.Errorf("ParseKeys(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	ks := Keys{"zone", "cluster"}
	if ks.Index("cluster") != 1 || ks.Index("zone") != 0 || ks.Index("rack") != -1 {
		t.Errorf("Index: %d %d %d", ks.Index("cluster"), ks.Index("zone"), ks.Index("rack"))
	}
	if ks.String() != "zone,cluster" {
		t.Errorf("String() = %q", ks.String())
	}
}

func TestSetJSONIsAnObjectInKeyOrder(t *testing.T) {
	s := MustSet("zone", "eu-central-1a", "cluster", "k8s-cluster1")
	b, err := json.Marshal(struct{ Tags Set }{s})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"Tags":{"cluster":"k8s-cluster1","zone":"eu-central-1a"}}`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
	var back struct{ Tags Set }
	if err := json.Unmarshal(b, &back); err != nil || !back.Tags.Equal(s) {
		t.Errorf("round trip: %v, %v", back.Tags, err)
	}
	if b, _ := json.Marshal(Set{}); string(b) != "{}" {
		t.Errorf("empty set = %s", b)
	}
	q := MustSet("k\"ey", "v\\al\u00e4\x7f\x00<")
	b, _ = json.Marshal(q)
	var q2 Set
	if err := json.Unmarshal(b, &q2); err != nil || !q2.Equal(q) {
		t.Errorf("escaping round trip of %s: %v %v", b, q2, err)
	}
	var n Set
	if err := json.Unmarshal([]byte("null"), &n); err != nil || n.Len() != 0 {
		t.Errorf("null: %v %v", n, err)
	}
	for in, want := range map[string]string{
		`{"zone":""}`: "Tag value must not be empty",
		`{"zone":1}`:  "client tags: json: cannot unmarshal",
		`["zone"]`:    "client tags: json: cannot unmarshal",
		`{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6"}`: "At most 5 client tags",
	} {
		var s Set
		if err := json.Unmarshal([]byte(in), &s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Unmarshal(%s) error = %v, want %q", in, err, want)
		}
	}
}

// TestCheckTagsAndCheckKeysAreHalvesOfCheck: each reports, with the same
// messages, what Check reports about its half, and nothing about the other.
func TestCheckTagsAndCheckKeysAreHalvesOfCheck(t *testing.T) {
	long := strings.Repeat("v", 31)
	tests := []struct {
		name     string
		tags     []Tag
		keys     Keys
		wantTags int // violations CheckTags finds
		wantKeys int // violations CheckKeys finds
	}{
		{"valid", []Tag{{"zone", "a"}}, Keys{"zone"}, 0, 0},
		{"a long value", []Tag{{"zone", long}}, nil, 1, 0},
		{"six tags and an empty value", []Tag{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}, {"e", ""}, {"f", "6"}}, nil, 2, 0},
		{"duplicate and surplus keys", nil, Keys{"a", "b", "c", "d", "e", "a"}, 0, 2},
		{"an empty key entry", nil, Keys{"zone", ""}, 0, 1},
	}
	msgs := func(es Errors) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Msg)
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := msgs(Check(tt.tags, tt.keys))
			gotTags, gotKeys := msgs(CheckTags(tt.tags)), msgs(CheckKeys(tt.keys))
			if len(gotTags) != tt.wantTags || len(gotKeys) != tt.wantKeys {
				t.Fatalf("CheckTags %q, CheckKeys %q; want %d and %d violations", gotTags, gotKeys, tt.wantTags, tt.wantKeys)
			}
			for _, m := range append(gotTags, gotKeys...) {
				if !slices.Contains(all, m) {
					t.Errorf("%q is not one of Check's messages %q", m, all)
				}
			}
		})
	}
}
