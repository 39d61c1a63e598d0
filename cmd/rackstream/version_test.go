package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// `rackstream version` and `--version` print the same build description.
// go test does not stamp VCS information into test binaries, so this
// checks the shape; deploy's TestReleaseQuick checks a real build's
// revision against git.
func TestVersion(t *testing.T) {
	var outs []string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		if code := dispatch(context.Background(), args, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("rackstream %v = %d, stderr %s", args, code, stderr.String())
		}
		for _, w := range []string{"rackstream ", "revision:", "time:", "modified:", "go:       go1."} {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("rackstream %v lacks %q:\n%s", args, w, stdout.String())
			}
		}
		outs = append(outs, stdout.String())
	}
	if outs[0] != outs[1] {
		t.Errorf("version and --version differ:\n%s\n%s", outs[0], outs[1])
	}
	var stderr bytes.Buffer
	if code := dispatch(context.Background(), []string{"version", "x"}, nil, new(bytes.Buffer), &stderr); code != 2 {
		t.Errorf("rackstream version x = %d, want 2", code)
	}
}
