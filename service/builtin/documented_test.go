package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/config"
)

// documentedProcessor loads the properties block that follows marker in
// page and builds the built-in processor it describes.
func documentedProcessor(t *testing.T, page, marker string) *Processor {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), marker)
	_, rest, ok2 := strings.Cut(rest, "```properties\n")
	props, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("%s has no properties block after its marker", page)
	}
	file := filepath.Join(t.TempDir(), "example.properties")
	if err := os.WriteFile(file, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Sources{File: file})
	if err != nil {
		t.Fatalf("the example of %s does not load:\n%v", page, err)
	}
	b, err := New(cfg.ApplicationID, cfg.Processor)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
