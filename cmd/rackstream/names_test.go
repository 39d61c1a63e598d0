package main

import (
	"maps"
	"testing"
)

func TestDisplayNames(t *testing.T) {
	const (
		u1 = "704b5293-1c8e-4f7a-9a43-2d0c51e0a001"
		u2 = "704b5293-77aa-4f7a-9a43-2d0c51e0a002"
		u3 = "9f1c0d2e-5b6a-47c8-8e0f-3a2b1c0d9e03"
	)
	for _, tc := range []struct {
		name    string
		members []instance
		want    map[string]string
	}{
		{"pods of one service read as their host's first label",
			[]instance{{u1, "rackstream-0.rackstream.prod.svc.cluster.local:8080"}, {u2, "rackstream-1.rackstream.prod.svc.cluster.local:8080"}},
			map[string]string{u1: "rackstream-0", u2: "rackstream-1"}},
		{"one pod alone reads as its host's first label",
			[]instance{{u1, "rackstream-0.rackstream.prod.svc:8080"}},
			map[string]string{u1: "rackstream-0"}},
		{"hosts in different domains keep what tells them apart",
			[]instance{{u1, "a.eu.example.com:8080"}, {u2, "a.us.example.com:8080"}},
			map[string]string{u1: "a.eu", u2: "a.us"}},
		{"ports that differ are kept",
			[]instance{{u1, "127.0.0.1:8080"}, {u2, "127.0.0.1:8081"}},
			map[string]string{u1: "127.0.0.1:8080", u2: "127.0.0.1:8081"}},
		{"addresses are kept whole",
			[]instance{{u1, "10.0.0.1:8080"}, {u2, "10.0.0.2:8080"}},
			map[string]string{u1: "10.0.0.1", u2: "10.0.0.2"}},
		{"IPv6 addresses are kept whole",
			[]instance{{u1, "[fd00::1]:8080"}, {u2, "[fd00::2]:8080"}},
			map[string]string{u1: "fd00::1", u2: "fd00::2"}},
		{"a shared endpoint names no one: ids, cut to a unique prefix",
			[]instance{{u1, "lb:8080"}, {u2, "lb:8080"}, {u3, ""}},
			map[string]string{u1: "704b5293-1…", u2: "704b5293-7…", u3: "9f1c0d2e…"}},
		{"short ids stay whole",
			[]instance{{"n1", ""}, {"n2", ""}},
			map[string]string{"n1": "n1", "n2": "n2"}},
		{"one member without an endpoint beside named ones",
			[]instance{{u1, "web-1.svc:8080"}, {u2, "web-2.svc:8080"}, {u3, ""}},
			map[string]string{u1: "web-1", u2: "web-2", u3: "9f1c0d2e…"}},
		{"no members", nil, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := displayNames(tc.members); !maps.Equal(got, tc.want) {
				t.Errorf("displayNames = %v, want %v", got, tc.want)
			}
		})
	}
}
