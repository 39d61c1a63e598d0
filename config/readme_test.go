package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite README.md's configuration reference from the code")

const (
	readmePath  = "../README.md"
	beginMarker = "<!-- BEGIN CONFIG REFERENCE"
	endMarker   = "<!-- END CONFIG REFERENCE -->"
)

// TestREADME fails when README.md's configuration reference differs from
// what Reference generates; `go test ./config -run TestREADME -update`
// rewrites that section (and nothing else of the file).
func TestREADME(t *testing.T) {
	data, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	start, end, err := referenceSection(readme)
	if err != nil {
		t.Fatal(err)
	}
	want := "\n" + Reference()
	if readme[start:end] == want {
		return
	}
	if !*update {
		t.Fatalf("README.md's configuration reference is out of date with config's key table; run\n\tgo test ./config -run TestREADME -update\n(got %d bytes, want %d)", end-start, len(want))
	}
	updated := readme[:start] + want + readme[end:]
	if err := os.WriteFile(readmePath, []byte(updated), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote the configuration reference in %s", readmePath)
}

// referenceSection returns the byte range between the end of the begin
// marker's line and the start of the end marker.
func referenceSection(readme string) (start, end int, err error) {
	b := strings.Index(readme, beginMarker)
	if b < 0 {
		return 0, 0, errMarker(beginMarker)
	}
	nl := strings.Index(readme[b:], "-->")
	if nl < 0 {
		return 0, 0, errMarker(beginMarker + " ... -->")
	}
	start = b + nl + len("-->")
	e := strings.Index(readme[start:], endMarker)
	if e < 0 {
		return 0, 0, errMarker(endMarker)
	}
	return start, start + e, nil
}

type errMarker string

func (m errMarker) Error() string { return "README.md has no marker " + string(m) }

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

// TestREADMEKafkaStreamsExample loads the properties file of README.md's
// "Coming from Kafka Streams" section and checks that the warning the
// section shows is the one validate prints.
func TestREADMEKafkaStreamsExample(t *testing.T) {
	data, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	const marker = "<!-- kafka-streams-example"
	i := strings.Index(readme, marker)
	if i < 0 {
		t.Fatal("README.md has no " + marker + " marker")
	}
	rest := readme[i:]
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
		t.Fatalf("the README's Kafka Streams example does not load:\n%v", err)
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
		t.Errorf("README.md does not show the warning validate prints:\n%s", want)
	}
}
