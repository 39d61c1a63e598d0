package jvmref

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// needToolchain skips the test when java or mvn is missing, except under
// CI, where that fails it.
func needToolchain(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			kafkatest.SkipOrFail(t, "jvmref's tests need Java and Maven: %s not found", tool)
		}
	}
}

// withBuildScript returns a directory whose build.sh is script.
func withBuildScript(t *testing.T, script string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "build.sh"), []byte("#!/usr/bin/env bash\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBuildReportsWhatBuildShSays(t *testing.T) {
	needToolchain(t)
	tests := []struct {
		name      string
		script    string
		jar       string
		toolchain bool   // the error wraps ErrNoToolchain
		errHas    string // the error names this
	}{
		{name: "the path printed is the jar's, trimmed", script: `echo "  /cache/x/ref.jar  "`, jar: "/cache/x/ref.jar"},
		{name: "exit status 3 is a missing toolchain, with the script's reason", script: `echo "ref: mvn not found on PATH" >&2; exit 3`,
			toolchain: true, errHas: "mvn not found on PATH"},
		{name: "a failed build carries its stderr", script: `echo "Main.java:3: error: ';' expected" >&2; exit 1`,
			errHas: "Main.java:3: error"},
		{name: "no path printed is an error naming the script", script: `exit 0`, errHas: "build.sh printed no jar path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jar, err := Build(context.Background(), withBuildScript(t, tt.script))
			if tt.errHas == "" {
				if err != nil || jar != tt.jar {
					t.Fatalf("Build = %q, %v; want %q", jar, err, tt.jar)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.errHas) || errors.Is(err, ErrNoToolchain) != tt.toolchain {
				t.Fatalf("Build error %v; want one naming %q, ErrNoToolchain %v", err, tt.errHas, tt.toolchain)
			}
		})
	}
}

// The shared Maven build (deploy/local/mvnjar.sh) builds a program once per
// source hash, and the JVM it runs answers line for line; a JVM that fails
// explains itself with its stderr.
func TestBuildOnceAndSpeakInLines(t *testing.T) {
	needToolchain(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mvnjar, err := filepath.Abs("../../deploy/local/mvnjar.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/echo")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "build.sh"),
		[]byte("#!/usr/bin/env bash\nexec "+mvnjar+` "$(dirname "$0")" jvmecho`+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	t.Setenv("RACKSTREAM_CACHE", cache)

	jar, err := Build(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(jar, filepath.Join(cache, "jvmecho")+"/") || filepath.Base(jar) != "jvmecho.jar" {
		t.Fatalf("jar %s, want jvmecho.jar in the cache %s", jar, cache)
	}

	t.Run("the same sources build from the cache, without Maven", func(t *testing.T) {
		stubs := t.TempDir()
		if err := os.WriteFile(filepath.Join(stubs, "mvn"), []byte("#!/bin/sh\necho stub mvn was run >&2\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", stubs+string(os.PathListSeparator)+os.Getenv("PATH"))
		again, err := Build(ctx, dir)
		if err != nil || again != jar {
			t.Fatalf("second Build = %s, %v; want the cached %s", again, err, jar)
		}
		// A changed source is a new hash: Maven runs (the stub, which fails).
		main := filepath.Join(dir, "src/main/java/dev/rackstream/jvmecho/Main.java")
		f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("// changed\n")
		f.Close()
		if _, err := Build(ctx, dir); err == nil || !strings.Contains(err.Error(), "stub mvn was run") {
			t.Fatalf("Build after a source change: %v; want Maven run", err)
		}
	})

	t.Run("one answer line per request line; a clean exit at the end of input", func(t *testing.T) {
		p, err := Start(ctx, jar, "-XX:+UseSerialGC")
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range []string{"hello", `{"name":"s1"}`, ""} {
			got, err := p.Exchange([]byte(req))
			if err != nil || string(got) != "echo "+req {
				t.Fatalf("Exchange(%q) = %q, %v; want %q", req, got, err, "echo "+req)
			}
		}
		if _, err := p.Exchange([]byte("two\nlines")); err == nil {
			t.Fatal("a request of two lines was sent")
		}
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	})

	t.Run("a JVM that dies is explained by its stderr", func(t *testing.T) {
		p, err := Start(ctx, jar)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Exchange([]byte("fail"))
		if err == nil || !strings.Contains(err.Error(), "jvmecho: asked to fail") || !strings.Contains(err.Error(), "jvmecho.jar") {
			t.Fatalf("Exchange error %v; want one naming the jar and carrying the JVM's stderr", err)
		}
		if err := p.Close(); err == nil || !strings.Contains(err.Error(), "exit status 1") {
			t.Fatalf("Close: %v; want the exit status", err)
		}
	})
}

func TestStderrKeepsItsBeginning(t *testing.T) {
	var b limitedBuffer
	first := strings.Repeat("a", maxStderr-1)
	for _, s := range []string{first, "bc", "d"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", len(s), n, err)
		}
	}
	if got := b.String(); got != first+"b" {
		t.Fatalf("kept %d bytes ending %q, want the first %d", len(got), got[len(got)-3:], maxStderr)
	}
}
