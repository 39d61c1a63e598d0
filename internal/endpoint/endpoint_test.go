package endpoint

import "testing"

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"127.0.0.1:8080", true},
		{"localhost:1", true},
		{"rackstream-0.rackstream.ns.svc.cluster.local:8080", true},
		{"[::1]:65535", true},
		{"", false},
		{"host", false},
		{":8080", false},
		{"host:0", false},
		{"host:65536", false},
		{"host:08080", false},
		{"host:+80", false},
		{"host:port", false},
		{"host:8080/any/path?x=", false},
		{"user@host:8080", false},
		{"host:8080#frag", false},
		{"host/x:8080", false},
		{"ho st:8080", false},
		{"[::1%eth0]:80", false},
		{"[zz::1]:80", false},
		{"h\x1b[31m:80", false},
	} {
		err := Validate(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("Validate(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func FuzzValidate(f *testing.F) {
	f.Add("127.0.0.1:8080")
	f.Add("h:1/p?q")
	f.Fuzz(func(t *testing.T, s string) {
		if Validate(s) != nil {
			return
		}
		for _, c := range s {
			switch c {
			case '/', '?', '#', '@', '%', ' ', '\\':
				t.Fatalf("Validate(%q) accepted %q", s, c)
			}
		}
	})
}
