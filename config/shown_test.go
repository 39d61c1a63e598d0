package config

import (
	"errors"
	"strings"
	"testing"
)

func TestATagValueWithAControlCharacterIsRefusedNamingTheKey(t *testing.T) {
	for name, v := range map[string]string{
		"OSC title and clear": "eu\x1b]0;pwned\x07\x1b[2J",
		"line break":          "eu-central-1a\nforged",
		"C1 CSI":              "eu\u009b31m",
		"bidi override":       "eu\u202e1a",
	} {
		t.Run(name, func(t *testing.T) {
			for _, src := range []Sources{
				{Set: append(required[:2:2], "client.tag.zone="+v)},
				{Env: []string{"RACKSTREAM_APPLICATION_ID=app", "RACKSTREAM_BOOTSTRAP_SERVERS=127.0.0.1:9092", "RACKSTREAM_CLIENT_TAG_ZONE=" + v}},
			} {
				_, err := Load(src)
				var es Errors
				if !errors.As(err, &es) {
					t.Fatalf("Load accepts client.tag.zone=%q: %v", v, err)
				}
				if len(es) != 1 || es[0].Key != "client.tag.zone" || !strings.Contains(es[0].Msg, "client.tag.zone") {
					t.Fatalf("the error does not name client.tag.zone: %v", err)
				}
			}
		})
	}
	// The same holds for a tag key: it is announced with the value.
	_, err := Load(Sources{Set: append(required[:2:2], "client.tag.z\x1b[2J=eu")})
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || es[0].Key != "client.tag.z\x1b[2J" {
		t.Errorf("a tag key with an ESC is not refused by name: %v", err)
	}
	// Printable text of any script stays a valid tag value.
	c := mustLoad(t, Sources{Set: append(required[:2:2], "client.tag.zone=zürich-1 €")})
	if got := c.ClientTags.Value("zone"); got != "zürich-1 €" {
		t.Errorf("zone = %q", got)
	}
}

// hasControl reports whether s holds a character a terminal acts on, other
// than the line breaks that separate messages.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e)
	})
}

func TestErrorsAndWarningsEscapeAndShortenWhatTheyEcho(t *testing.T) {
	huge := strings.Repeat("x", 100<<10)
	for name, set := range map[string]string{
		"CR LF in a value":          "application.server=a:1\r\nflag --set: forged line",
		"ESC in a value":            "application.server=\x1b[2J",
		"ESC in a tag value":        "client.tag.zone=eu\x1b]0;t\x07",
		"100 KB value":              "application.server=" + huge,
		"100 KB bad number":         "commit.interval.ms=" + huge,
		"100 KB server list":        "bootstrap.servers=" + huge,
		"100 KB unknown key":        huge + "=1",
		"ESC in an unknown key":     "zone\x1b[2J=1",
		"100 KB malformed --set":    "client.tag.zone" + huge,
		"ESC in a malformed --set":  "client.tag.zone\x1b[2J",
		"100 KB tag value":          "client.tag.zone=" + huge,
		"100 KB rack.aware entries": "rack.aware.assignment.tags=" + huge,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(Sources{Set: append(required[:2:2], set)})
			if err == nil {
				t.Fatalf("Load accepts %.40q", set)
			}
			msg := err.Error()
			if hasControl(msg) {
				t.Errorf("the error echoes a control character: %.300q", msg)
			}
			if lines := strings.Count(msg, "\n") + 1; lines != len(err.(Errors)) {
				t.Errorf("%d errors take %d lines:\n%.600s", len(err.(Errors)), lines, msg)
			}
			if len(msg) > 2<<10 {
				t.Errorf("the error is %d bytes: %.300s", len(msg), msg)
			}
		})
	}
	// A key the file sets twice and a near-miss variable are warned about
	// with what they echo escaped.
	c, err := Load(Sources{File: writeFile(t, "application.id=app", "bootstrap.servers=127.0.0.1:9092", "producer.linger.ms=1", "producer.linger.ms=2"),
		Env: []string{"RACKSTREAM_COMMIT_INTERVAL_M\x1b=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings()) != 3 {
		t.Errorf("want the ignored key, the key set twice and the variable warned about: %q", c.Warnings())
	}
	for _, w := range c.Warnings() {
		if hasControl(w) {
			t.Errorf("the warning echoes a control character: %q", w)
		}
	}
}
