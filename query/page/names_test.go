package page_test

import (
	"encoding/json"
	"maps"
	"testing"
)

// TestDisplayNamesInTheBrowsersRule runs the page's names.js under Node:
// the names the page shows must follow the rule of `rackstream assign`
// (cmd/rackstream/names.go, whose test has the same cases).
func TestDisplayNamesInTheBrowsersRule(t *testing.T) {
	const (
		u1 = "704b5293-1c8e-4f7a-9a43-2d0c51e0a001"
		u2 = "704b5293-77aa-4f7a-9a43-2d0c51e0a002"
		u3 = "9f1c0d2e-5b6a-47c8-8e0f-3a2b1c0d9e03"
	)
	type client struct {
		ID       string `json:"id"`
		Endpoint string `json:"endpoint"`
	}
	cases := []struct {
		name    string
		clients []client
		want    map[string]string
	}{
		{"pods of one service read as their host's first label",
			[]client{{u1, "rackstream-0.rackstream.prod.svc.cluster.local:8080"}, {u2, "rackstream-1.rackstream.prod.svc.cluster.local:8080"}},
			map[string]string{u1: "rackstream-0", u2: "rackstream-1"}},
		{"one pod alone reads as its host's first label",
			[]client{{u1, "rackstream-0.rackstream.prod.svc:8080"}},
			map[string]string{u1: "rackstream-0"}},
		{"hosts in different domains keep what tells them apart",
			[]client{{u1, "a.eu.example.com:8080"}, {u2, "a.us.example.com:8080"}},
			map[string]string{u1: "a.eu", u2: "a.us"}},
		{"ports that differ are kept",
			[]client{{u1, "127.0.0.1:8080"}, {u2, "127.0.0.1:8081"}},
			map[string]string{u1: "127.0.0.1:8080", u2: "127.0.0.1:8081"}},
		{"addresses are kept whole",
			[]client{{u1, "10.0.0.1:8080"}, {u2, "10.0.0.2:8080"}},
			map[string]string{u1: "10.0.0.1", u2: "10.0.0.2"}},
		{"IPv6 addresses are kept whole",
			[]client{{u1, "[fd00::1]:8080"}, {u2, "[fd00::2]:8080"}},
			map[string]string{u1: "fd00::1", u2: "fd00::2"}},
		{"a shared endpoint names no one: ids, cut to a unique prefix",
			[]client{{u1, "lb:8080"}, {u2, "lb:8080"}, {u3, ""}},
			map[string]string{u1: "704b5293-1…", u2: "704b5293-7…", u3: "9f1c0d2e…"}},
		{"short ids stay whole",
			[]client{{"n1", ""}, {"n2", ""}},
			map[string]string{"n1": "n1", "n2": "n2"}},
		{"one member without an endpoint beside named ones",
			[]client{{u1, "web-1.svc:8080"}, {u2, "web-2.svc:8080"}, {u3, ""}},
			map[string]string{u1: "web-1", u2: "web-2", u3: "9f1c0d2e…"}},
		{"no members", []client{}, map[string]string{}},
	}
	in := make([][]client, len(cases))
	for i, c := range cases {
		in[i] = c.clients
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := runNode(t, `
const { displayNames } = require(process.argv[1]);
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(cases.map((c) => Object.fromEntries(displayNames(c)))));
`, "./static/names.js", stdin)
	var got []map[string]string
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("node answered %s (%v)", out, err)
	}
	for i, c := range cases {
		if !maps.Equal(got[i], c.want) {
			t.Errorf("%s: names %v, want %v", c.name, got[i], c.want)
		}
	}
}
