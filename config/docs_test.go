package config

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md's reference from the code")

const (
	referencePath     = "../docs/configuration.md"
	kafkaStreamsPath  = "../docs/coming-from-kafka-streams.md"
	beginMarker       = "<!-- BEGIN CONFIG REFERENCE"
	endMarker         = "<!-- END CONFIG REFERENCE -->"
	kafkaStreamsBlock = "<!-- kafka-streams-example"
)

// TestReference fails when docs/configuration.md's reference differs from
// what Reference generates; `go test ./config -run TestReference -update`
// rewrites that part (and nothing else of the page).
func TestReference(t *testing.T) {
	data, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	start, end, err := referenceSection(page)
	if err != nil {
		t.Fatal(err)
	}
	want := "\n" + Reference()
	if page[start:end] == want {
		return
	}
	if !*update {
		t.Fatalf("%s is out of date with config's key table; run\n\tgo test ./config -run TestReference -update\n(got %d bytes, want %d)", referencePath, end-start, len(want))
	}
	updated := page[:start] + want + page[end:]
	if err := os.WriteFile(referencePath, []byte(updated), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote the configuration reference in %s", referencePath)
}

// referenceSection returns the byte range between the end of the begin
// marker's line and the start of the end marker.
func referenceSection(page string) (start, end int, err error) {
	b := strings.Index(page, beginMarker)
	if b < 0 {
		return 0, 0, errMarker(beginMarker)
	}
	nl := strings.Index(page[b:], "-->")
	if nl < 0 {
		return 0, 0, errMarker(beginMarker + " ... -->")
	}
	start = b + nl + len("-->")
	e := strings.Index(page[start:], endMarker)
	if e < 0 {
		return 0, 0, errMarker(endMarker)
	}
	return start, start + e, nil
}

type errMarker string

func (m errMarker) Error() string { return referencePath + " has no marker " + string(m) }

func TestReferenceDocumentsEveryKey(t *testing.T) {
	ref := Reference()
	for _, d := range keys {
		if !strings.Contains(ref, "| `"+d.name+"` |") {
			t.Errorf("reference lacks %s", d.name)
		}
	}
	for _, want := range []string{"| `client.tag.<key>` |", "RACKSTREAM_CLIENT_TAG_ZONE", "RACKSTREAM_COMMIT_INTERVAL_MS", "`--set key=value`"} {
		if !strings.Contains(ref, want) {
			t.Errorf("reference lacks %q", want)
		}
	}
}

// TestKafkaStreamsExample loads the properties file of
// docs/coming-from-kafka-streams.md and checks that the warning the page
// shows is the one validate prints.
func TestKafkaStreamsExample(t *testing.T) {
	data, err := os.ReadFile(kafkaStreamsPath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	i := strings.Index(page, kafkaStreamsBlock)
	if i < 0 {
		t.Fatalf("%s has no %s marker", kafkaStreamsPath, kafkaStreamsBlock)
	}
	rest := page[i:]
	start := strings.Index(rest, "```properties\n")
	end := strings.Index(rest[start+1:], "\n```")
	if start < 0 || end < 0 {
		t.Fatal("no properties block after the marker")
	}
	props := rest[start+len("```properties\n") : start+1+end+1]
	file := filepath.Join(t.TempDir(), "streams.properties")
	if err := os.WriteFile(file, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Sources{File: file})
	if err != nil {
		t.Fatalf("the Kafka Streams example does not load:\n%v", err)
	}
	if u, p := c.Security.SASLCredentials(); u != "orders-enricher" || p.Reveal() != "s3cr3t" {
		t.Errorf("credentials from the JAAS line: %q", u)
	}
	ws := c.Warnings()
	if len(ws) != 1 {
		t.Fatalf("warnings %q, want one", ws)
	}
	want := "rackstream validate: warning: " + strings.ReplaceAll(ws[0], file, "streams.properties")
	if !strings.Contains(rest, want+"\n") {
		t.Errorf("%s does not show the warning validate prints:\n%s", kafkaStreamsPath, want)
	}
}

// valuesMarker precedes a Markdown table whose first column lists, in
// backquotes, the allowed values of one configuration key.
var valuesMarker = regexp.MustCompile(`<!-- values of ([a-z0-9.]+)[^>]*-->\n`)

// TestDocsListTheAllowedValues checks every table of allowed values in
// README.md and docs/ against the key's enum in the key table: the same
// values, in the same order (the empty value, where allowed, is not
// listed).
func TestDocsListTheAllowedValues(t *testing.T) {
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range append(pages, "../README.md") {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		page := string(data)
		for _, m := range valuesMarker.FindAllStringSubmatchIndex(page, -1) {
			found++
			name := page[m[2]:m[3]]
			d := keyByName(name)
			if d == nil || len(d.enum) == 0 {
				t.Errorf("%s: %s is not a key with a list of values", p, name)
				continue
			}
			want := slices.DeleteFunc(slices.Clone(d.enum), func(v string) bool { return v == "" })
			if got := firstColumn(page[m[1]:]); !slices.Equal(got, want) {
				t.Errorf("%s: the table of %s lists %q; the key table allows %q", p, name, got, want)
			}
		}
	}
	if found == 0 {
		t.Fatal("no <!-- values of KEY --> marker in README.md or docs/: the scan is broken")
	}
}

func keyByName(name string) *keyDef {
	for _, d := range keys {
		if d.name == name {
			return d
		}
	}
	return nil
}

// firstColumn returns the first backquoted value of each body row of the
// Markdown table at the start of s.
func firstColumn(s string) []string {
	var vals []string
	for i, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i < 2 { // the header and the separator
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		if _, rest, ok := strings.Cut(cell, "`"); ok {
			v, _, _ := strings.Cut(rest, "`")
			vals = append(vals, v)
		}
	}
	return vals
}
