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
	// Printable text of any script stays a valid tag value.
	c := mustLoad(t, Sources{Set: append(required[:2:2], "client.tag.zone=zürich-1 €")})
	if got := c.ClientTags.Value("zone"); got != "zürich-1 €" {
		t.Errorf("zone = %q", got)
	}
}
