package config

import (
	"bytes"
	"encoding/hex"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// propertiesCases pin how java.util.Properties reads a file.
// TestParsePropertiesMatchesJava checks every one against Java itself.
var propertiesCases = []struct {
	name string
	in   string
	want []Property
	err  string // a SyntaxError containing this; "" for none
}{
	{"equals separates key and value", "a=b\n", []Property{{"a", "b", 1}}, ""},
	{"colon separates key and value", "a:b", []Property{{"a", "b", 1}}, ""},
	{"whitespace separates key and value", "a  b", []Property{{"a", "b", 1}}, ""},
	{"whitespace around the separator is dropped", "a \t = \f b", []Property{{"a", "b", 1}}, ""},
	{"only one separator is consumed", "a==b\nc=:d\ne :=f", []Property{{"a", "=b", 1}, {"c", ":d", 2}, {"e", "=f", 3}}, ""},
	{"whitespace then separator then whitespace", "a = = b", []Property{{"a", "= b", 1}}, ""},
	{"a bare key has the empty value", "key\nkey2=\nkey3 ", []Property{{"key", "", 1}, {"key2", "", 2}, {"key3", "", 3}}, ""},
	{"trailing whitespace of a value is kept", "a=b  ", []Property{{"a", "b  ", 1}}, ""},
	{"leading whitespace of a line is skipped", "   \t a=b", []Property{{"a", "b", 1}}, ""},
	{"hash and bang start comments", "# c\n! c\n  # indented\na=b # not a comment", []Property{{"a", "b # not a comment", 4}}, ""},
	{"blank lines are skipped and counted", "\n\n  \na=b\n", []Property{{"a", "b", 4}}, ""},
	{"backslash continues a line without its leading whitespace", "a=one \\\n     two\nb=c", []Property{{"a", "one two", 1}, {"b", "c", 3}}, ""},
	{"continuations chain", "a=1\\\n2\\\n  3", []Property{{"a", "123", 1}}, ""},
	{"a continued line is not a comment", "a=x\\\n#y", []Property{{"a", "x#y", 1}}, ""},
	{"a comment is not continued", "# c\\\na=b", []Property{{"a", "b", 2}}, ""},
	{"an even run of backslashes does not continue", "a=x\\\\\nb=y", []Property{{"a", `x\`, 1}, {"b", "y", 2}}, ""},
	{"a continuation into an empty line ends the value", "a=x\\\n\nb=y", []Property{{"a", "x", 1}, {"b", "y", 3}}, ""},
	{"a continuation at the end of input is dropped", "a=x\\", []Property{{"a", "x", 1}}, ""},
	{"CR and CRLF end lines", "a=1\rb=2\r\nc=3\\\r\n  4", []Property{{"a", "1", 1}, {"b", "2", 2}, {"c", "34", 3}}, ""},
	{"escaped separators belong to the key", `a\=b\:c\ d=e`, []Property{{"a=b:c d", "e", 1}}, ""},
	{"control escapes", `k=\t\n\r\f`, []Property{{"k", "\t\n\r\f", 1}}, ""},
	{"unicode escapes", `\u007a\u006fne=\u00e4\u20AC`, []Property{{"zone", "ä€", 1}}, ""},
	{"surrogate pairs combine", `k=\uD83D\uDE42`, []Property{{"k", "🙂", 1}}, ""},
	{"other escaped characters stand for themselves", `k=\a\b\#\!\\\ä`, []Property{{"k", `ab#!\ä`, 1}}, ""},
	{"UTF-8 passes through", "zone=eu-zentral-ä\n", []Property{{"zone", "eu-zentral-ä", 1}}, ""},
	{"an empty key", "=v", []Property{{"", "v", 1}}, ""},
	{"repeated keys are all returned", "a=1\na=2", []Property{{"a", "1", 1}, {"a", "2", 2}}, ""},
	{"a malformed unicode escape is an error on its line", "a=1\nb=\\u12G4\nc=3", []Property{{"a", "1", 1}, {"c", "3", 3}}, `line 2: b: malformed \uxxxx encoding at character 1 of the value: want four hex digits`},
	{"a short unicode escape is an error", "k=\\u12", nil, "line 1: k: malformed"},
	{"a bad escape is located, not quoted", "k=abc\\uZZZZ", nil, "line 1: k: malformed \\uxxxx encoding at character 4 of the value"},
	{"a bad escape in a key is located", "k\\u1=v", nil, "line 1: malformed \\uxxxx encoding at character 2 of the key"},
}

func TestParsePropertiesReadsAsJavaDoes(t *testing.T) {
	for _, tt := range propertiesCases {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := ParseProperties([]byte(tt.in))
			if !slices.Equal(got, tt.want) {
				t.Errorf("ParseProperties(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
			switch {
			case tt.err == "" && len(errs) > 0:
				t.Errorf("unexpected errors %v", errs)
			case tt.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.err)):
				t.Errorf("errors %v, want one containing %q", errs, tt.err)
			}
		})
	}
}

func TestParsePropertiesRejectsInvalidUTF8(t *testing.T) {
	_, errs := ParseProperties([]byte("a=1\nb=\xff\n"))
	if len(errs) != 1 || errs[0].Line != 2 || !strings.Contains(errs[0].Msg, "UTF-8") {
		t.Errorf("errors = %v, want one on line 2 about UTF-8", errs)
	}
}

// TestParsePropertiesMatchesJava runs java.util.Properties itself on every
// case (when a JDK is installed; CI has one for the real broker) and
// compares: last value per key, or an error.
func TestParsePropertiesMatchesJava(t *testing.T) {
	java, err := exec.LookPath("java")
	if err != nil {
		kafkatest.SkipOrFail(t, "no java on PATH: the cases are checked against Go's expectations only")
	}
	dir := t.TempDir()
	var paths []string
	for i, tt := range propertiesCases {
		p := filepath.Join(dir, strings.Repeat("c", 1)+string(rune('a'+i/26))+string(rune('a'+i%26)))
		if err := os.WriteFile(p, []byte(tt.in), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command(java, append([]string{"testdata/PropertiesDump.java"}, paths...)...).Output()
	if err != nil {
		t.Fatalf("java: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(propertiesCases) {
		t.Fatalf("java printed %d lines for %d cases:\n%s", len(lines), len(propertiesCases), out)
	}
	for i, tt := range propertiesCases {
		_, javaSays, _ := strings.Cut(lines[i], "\t")
		props, errs := ParseProperties([]byte(tt.in))
		if javaSays == "ERROR" {
			if len(errs) == 0 {
				t.Errorf("%s: Java rejects %q, we accept it", tt.name, tt.in)
			}
			continue
		}
		want := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(javaSays, ";"), ";") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			kb, _ := hex.DecodeString(k)
			vb, _ := hex.DecodeString(v)
			want[string(kb)] = string(vb)
		}
		got := map[string]string{}
		for _, p := range props {
			got[p.Key] = p.Value
		}
		if len(errs) > 0 || !maps.Equal(got, want) {
			t.Errorf("%s: for %q Java reads %q, we read %q (errors %v)", tt.name, tt.in, want, got, errs)
		}
	}
}

func TestFormatPropertyRoundTrips(t *testing.T) {
	for _, kv := range [][2]string{
		{"a", "b"},
		{"", ""},
		{" key with spaces ", " value with spaces "},
		{"k=:#!", "=:#! also in the value"},
		{`back\slash`, `c:\dir\`},
		{"ctl", "\t\n\r\f\x00\x7f"},
		{"#comment", "!bang"},
		{"ä", "🙂"},
	} {
		line := FormatProperty(kv[0], kv[1])
		got, errs := ParseProperties([]byte(line))
		if len(errs) > 0 || len(got) != 1 || got[0].Key != kv[0] || got[0].Value != kv[1] {
			t.Errorf("FormatProperty(%q, %q) = %q, which reads back as %+v, %v", kv[0], kv[1], line, got, errs)
		}
	}
	if got := FormatProperty("bootstrap.servers", "host:9092"); got != "bootstrap.servers=host:9092" {
		t.Errorf("values keep separators unescaped: got %q", got)
	}
}

// FuzzParseProperties: the parser never panics, reports lines within the
// input, and FormatProperty's output reads back as what it was given.
func FuzzParseProperties(f *testing.F) {
	for _, tt := range propertiesCases {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		props, errs := ParseProperties(data)
		lines := 1 + bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r"))
		for _, p := range props {
			if p.Line < 1 || p.Line > lines {
				t.Fatalf("property %q on line %d of a %d-line input", p.Key, p.Line, lines)
			}
			if !utf8.ValidString(p.Key) || !utf8.ValidString(p.Value) {
				t.Fatalf("invalid UTF-8 in %q=%q", p.Key, p.Value)
			}
			// What we read, written back, reads the same.
			again, errs := ParseProperties([]byte(FormatProperty(p.Key, p.Value)))
			if len(errs) > 0 || len(again) != 1 || again[0].Key != p.Key || again[0].Value != p.Value {
				t.Fatalf("%q=%q written as %q reads back as %+v, %v", p.Key, p.Value, FormatProperty(p.Key, p.Value), again, errs)
			}
		}
		for _, e := range errs {
			if e.Line < 1 || e.Line > lines {
				t.Fatalf("error on line %d of a %d-line input: %v", e.Line, lines, e)
			}
		}
	})
}
