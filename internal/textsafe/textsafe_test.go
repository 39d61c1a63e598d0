package textsafe

import (
	"encoding/json"
	"strings"
	"testing"
)

// hostile are values a group member or a scenario may carry.
var hostile = map[string]string{
	"CSI recolour":       "n1\x1b[31mred",
	"clear screen":       "\x1b[2J\x1b[H",
	"OSC 8 link":         "\x1b]8;;http://evil/\x07click\x1b]8;;\x07",
	"C1 CSI":             "a\u009b31mb",
	"bidi override":      "abc\u202edcba",
	"DEL and BEL":        "a\x7fb\x07",
	"newline and return": "line1\nline2\rX",
	"invalid UTF-8":      "a\xff\xfeb",
	"zero width joiner":  "a\u200db",
}

func TestEscapeLeavesNoControlCharacter(t *testing.T) {
	for name, s := range hostile {
		got := Escape(s)
		for _, r := range got {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e || r == 0x200d || r == 0xfffd {
				t.Errorf("%s: Escape(%q) = %q keeps %U", name, s, got, r)
			}
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"n1\x1b[31mred", `n1\x1b[31mred`},
		{"a\u009bb", `a\u009bb`},
		{"a\xffb", `a\xffb`},
		{"line1\nline2", `line1\nline2`},
		{"zone=eu-central-1a, k8s €", "zone=eu-central-1a, k8s €"}, // printable text is kept
		{`back\slash "q"`, `back\slash "q"`},
	} {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLinesKeepsLineBreaksOnly(t *testing.T) {
	if got := Lines("a\x1b[1m\nb\x1b[0m"); got != "a\\x1b[1m\nb\\x1b[0m" {
		t.Errorf("Lines = %q", got)
	}
}

func TestBounded(t *testing.T) {
	if got := Bounded("short\x1b", 64); got != `short\x1b` {
		t.Errorf("Bounded short = %q", got)
	}
	got := Bounded(strings.Repeat("x", 100), 10)
	if got != "xxxxxxxxxx... (90 more bytes)" {
		t.Errorf("Bounded long = %q", got)
	}
}

func TestJSONStaysTheSameValueWithNoRawControl(t *testing.T) {
	for name, s := range hostile {
		in := map[string]any{"id": s, "tags": map[string]string{s: s}, "n": []int{1, 2}}
		raw, err := json.MarshalIndent(in, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got := JSON(raw)
		for _, r := range string(got) {
			if r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e || r == 0x200d) {
				t.Errorf("%s: JSON keeps %U:\n%s", name, r, got)
			}
		}
		var a, b any
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &b); err != nil {
			t.Fatalf("%s: escaped JSON does not parse: %v\n%s", name, err, got)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s: value changed:\n%s\n%s", name, ja, jb)
		}
	}
	plain := []byte("{\n  \"a\": 1\n}")
	if got := JSON(plain); string(got) != string(plain) {
		t.Errorf("plain JSON changed: %s", got)
	}
}

func TestShortEscapesAndCutsAtARuneBoundary(t *testing.T) {
	if got := Short("a\r\nb"); got != `a\r\nb` {
		t.Errorf("Short = %q", got)
	}
	long := strings.Repeat("€", MaxShown) // 3 bytes a rune
	got := Short(long)
	if strings.Contains(got, `\x`) {
		t.Errorf("Short splits a rune: %q", got[len(got)-40:])
	}
	if len(got) > MaxShown+32 {
		t.Errorf("Short keeps %d bytes of %d", len(got), len(long))
	}
	if !strings.HasSuffix(got, " more bytes)") {
		t.Errorf("Short does not say how much it left out: %q", got[len(got)-40:])
	}
}

func TestPrintable(t *testing.T) {
	for name, s := range hostile {
		if Printable(s) {
			t.Errorf("%s: Printable(%q) = true", name, s)
		}
	}
	for _, s := range []string{"", "eu-central-1a", "k8s €", `back\slash "q"`} {
		if !Printable(s) {
			t.Errorf("Printable(%q) = false", s)
		}
	}
}
