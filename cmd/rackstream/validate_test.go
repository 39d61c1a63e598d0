package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rackstream/rackstream/config"
)

// doneWhenFile is the issue's example configuration.
var doneWhenFile = []string{
	"application.id=orders",
	"bootstrap.servers=127.0.0.1:9092",
	"client.tag.zone=eu-central-1a",
	"client.tag.cluster=k8s-cluster1",
	"rack.aware.assignment.tags=zone,cluster",
	"num.standby.replicas=2",
}

func writeValidateConfig(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rackstream.properties")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func validateDispatch(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = dispatch(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// validateRow finds the printed row of key and returns its value and source.
func validateRow(t *testing.T, out, key string) (value, source string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `\s+(\S+)\s+(.+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no row for %s in:\n%s", key, out)
	}
	return m[1], strings.TrimSpace(m[2])
}

func TestValidateAcceptsTheIssueExampleAndPrintsIt(t *testing.T) {
	file := writeValidateConfig(t, doneWhenFile...)
	code, out, errOut := validateDispatch(t, "validate", "--config", file)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for key, want := range map[string][2]string{
		"client.tag.zone":            {"eu-central-1a", file + ":3"},
		"client.tag.cluster":         {"k8s-cluster1", file + ":4"},
		"rack.aware.assignment.tags": {"zone,cluster", file + ":5"},
		"num.standby.replicas":       {"2", file + ":6"},
		"commit.interval.ms":         {"30000", "default"},
	} {
		if v, src := validateRow(t, out, key); v != want[0] || src != want[1] {
			t.Errorf("%s printed as %q from %q, want %q from %q", key, v, src, want[0], want[1])
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	keys := make([]string, 0, len(lines))
	for _, l := range lines[1:] {
		keys = append(keys, strings.Fields(l)[0])
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Errorf("keys not sorted: %s before %s", keys[i-1], keys[i])
		}
	}
	if len(keys) < 40 {
		t.Errorf("only %d keys printed; every key must be", len(keys))
	}
}

func TestValidateEnvironmentOverridesTheFileAndFlagsOverrideBoth(t *testing.T) {
	file := writeValidateConfig(t, doneWhenFile...)
	t.Setenv("RACKSTREAM_CLIENT_TAG_ZONE", "eu-central-1c")
	t.Setenv("RACKSTREAM_NUM_STANDBY_REPLICAS", "1")
	code, out, errOut := validateDispatch(t, "validate", "--config", file, "--set", "num.standby.replicas=0")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if v, src := validateRow(t, out, "client.tag.zone"); v != "eu-central-1c" || src != "env RACKSTREAM_CLIENT_TAG_ZONE" {
		t.Errorf("client.tag.zone = %q from %q", v, src)
	}
	if v, src := validateRow(t, out, "num.standby.replicas"); v != "0" || src != "flag --set" {
		t.Errorf("num.standby.replicas = %q from %q", v, src)
	}
}

func TestValidateRejectsWithExit2NamingKeyAndLine(t *testing.T) {
	tests := []struct {
		name  string
		extra string // line 7 of the file
		want  string // after "FILE:7: "
	}{
		{"a misspelt key", "num.standby.replica=2", `unknown configuration key "num.standby.replica"; did you mean "num.standby.replicas"?`},
		{"a negative standby count", "num.standby.replicas=-1", "Invalid value -1 for configuration num.standby.replicas: Value must be at least 0"},
		{"a rack-aware key without its tag", "rack.aware.assignment.tags=zone,rack", "Invalid value [zone, rack] for configuration rack.aware.assignment.tags: Contains invalid value [rack] which doesn't have corresponding tag set via [client.tag.] prefix."},
		{"an over-long tag value", "client.tag.zone=" + strings.Repeat("z", 31), "client.tag.zone: Invalid value " + strings.Repeat("z", 31) + " for configuration client.tag.: Tag value exceeds maximum length of 30."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeValidateConfig(t, append(append([]string{}, doneWhenFile...), tt.extra)...)
			code, out, errOut := validateDispatch(t, "validate", "--config", file)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if out != "" {
				t.Errorf("printed a configuration despite errors:\n%s", out)
			}
			if want := file + ":7: " + tt.want; !strings.Contains(errOut, want) {
				t.Errorf("stderr:\n%s\nlacks %q", errOut, want)
			}
		})
	}
	t.Run("a sixth client tag", func(t *testing.T) {
		lines := append(append([]string{}, doneWhenFile...), "client.tag.a=1", "client.tag.b=2", "client.tag.c=3", "client.tag.d=4")
		file := writeValidateConfig(t, lines...)
		code, _, errOut := validateDispatch(t, "validate", "--config", file)
		if want := file + ":10: At most 5 client tags can be specified using client.tag. prefix."; code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr:\n%s\nwant %q", code, errOut, want)
		}
	})
}

func TestValidateReportsEveryErrorTogether(t *testing.T) {
	file := writeValidateConfig(t, "num.standby.replica=2", "max.warmup.replicas=0", "security.protocol=TLS")
	code, _, errOut := validateDispatch(t, "validate", "--config", file, "--set", "log.level=loud")
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	for _, want := range []string{
		"rackstream validate: 6 configuration errors:",
		file + `:1: unknown configuration key "num.standby.replica"`,
		file + ":2: Invalid value 0 for configuration max.warmup.replicas",
		file + ":3: Invalid value TLS for configuration security.protocol",
		"flag --set: Invalid value loud for configuration log.level",
		`Missing required configuration "application.id"`,
		`Missing required configuration "bootstrap.servers"`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestValidateMasksSecrets(t *testing.T) {
	file := writeValidateConfig(t, append(append([]string{}, doneWhenFile...),
		"security.protocol=SASL_SSL", "sasl.username=alice", "sasl.password=hunter2")...)
	t.Setenv("RACKSTREAM_HTTP_AUTH_TOKEN", "t0ken-value")
	code, out, errOut := validateDispatch(t, "validate", "--config", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out+errOut, "hunter2") || strings.Contains(out+errOut, "t0ken-value") {
		t.Errorf("a secret was printed:\n%s", out)
	}
	if v, src := validateRow(t, out, "sasl.password"); v != "[hidden]" || src != file+":9" {
		t.Errorf("sasl.password printed as %q from %q", v, src)
	}
	if v, _ := validateRow(t, out, "http.auth.token"); v != "[hidden]" {
		t.Errorf("http.auth.token printed as %q", v)
	}
}

func TestValidateUsage(t *testing.T) {
	code, out, errOut := validateDispatch(t, "validate", "--help")
	if code != 0 || !strings.Contains(out+errOut, "Usage: rackstream validate") || !strings.Contains(out+errOut, "-set key=value") {
		t.Errorf("--help: exit %d, output:\n%s%s", code, out, errOut)
	}
	code, _, errOut = validateDispatch(t, "validate", "--bogus")
	if code != 2 || !strings.Contains(errOut, "flag provided but not defined: -bogus") {
		t.Errorf("unknown flag: exit %d, stderr:\n%s", code, errOut)
	}
	code, _, errOut = validateDispatch(t, "validate", "--set", "state.dir")
	if code != 2 || !strings.Contains(errOut, `flag --set: --set "state.dir": want key=value`) {
		t.Errorf("--set without '=': exit %d, stderr:\n%s", code, errOut)
	}
	code, _, errOut = validateDispatch(t, "validate", "extra.properties")
	if code != 2 || !strings.Contains(errOut, `1 unexpected argument(s) after the flags, not shown (the file goes after --config`) {
		t.Errorf("positional argument: exit %d, stderr:\n%s", code, errOut)
	}
	code, out, _ = validateDispatch(t, "--help")
	if code != 0 || !strings.Contains(out, "validate") {
		t.Errorf("top-level help lacks validate:\n%s", out)
	}
}

func TestValidateWarnsAboutNearMissEnvironment(t *testing.T) {
	file := writeValidateConfig(t, doneWhenFile...)
	code, _, errOut := runValidateWithEnv(t, []string{"RACKSTREAM_NUM_STANDBY_REPLICA=3"}, "--config", file)
	if code != 0 || !strings.Contains(errOut, "warning: env RACKSTREAM_NUM_STANDBY_REPLICA: not a configuration variable; did you mean RACKSTREAM_NUM_STANDBY_REPLICAS?") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

func runValidateWithEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := validateCommand(func() []string { return env })
	code := cmd.run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestValidateNeverEchoesASecretFromAMalformedCommandLine sets every secret
// key of the table (the keys validate prints as secret) with the usual
// command-line mistakes; the value appears nowhere in the output.
func TestValidateNeverEchoesASecretFromAMalformedCommandLine(t *testing.T) {
	const value = "Zq9-cmd-s3cr3t"
	cfg, err := config.Load(config.Sources{Set: []string{"application.id=a", "bootstrap.servers=127.0.0.1:9092"}})
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, e := range cfg.Entries() {
		if e.Secret {
			secrets = append(secrets, e.Key)
		}
	}
	if len(secrets) == 0 {
		t.Fatal("no key is secret")
	}
	file := writeValidateConfig(t, doneWhenFile...)
	for _, key := range secrets {
		for _, args := range [][]string{
			{"--set", key + ":" + value},
			{"--set", key + " " + value},
			{"--set", key + value},
			{"--set", key, value},
			{"--set=" + key, value},
			{"--set", key + "=" + value, "--set", "num.standby.replicas=-1"},
		} {
			var out, errOut bytes.Buffer
			cmd := validateCommand(func() []string { return []string{config.EnvName(key) + "=" + value + "\\uZZZZ"} })
			code := cmd.run(context.Background(), append([]string{"--config", file}, args...), strings.NewReader(""), &out, &errOut)
			if code != 2 {
				t.Errorf("validate %q: exit %d, want 2", args, code)
			}
			if strings.Contains(out.String()+errOut.String(), value) {
				t.Errorf("validate %q: the secret leaked:\n%s%s", args, out.String(), errOut.String())
			}
		}
	}
}

// TestValidateBoundsAndInterruptsTheRead: --config /dev/zero fails at once
// naming the limit; a silent FIFO is given up when the command's context
// ends (main cancels it on SIGINT and SIGTERM).
func TestValidateBoundsAndInterruptsTheRead(t *testing.T) {
	code, _, errOut := validateDispatch(t, "validate", "--config", "/dev/zero")
	if code != 2 || !strings.Contains(errOut, "/dev/zero is larger than the limit of 1 MiB (1048576 bytes)") {
		t.Errorf("--config /dev/zero: exit %d, stderr:\n%s", code, errOut)
	}
	fifo := filepath.Join(t.TempDir(), "silent.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	var errBuf bytes.Buffer
	go func() {
		done <- dispatch(ctx, []string{"validate", "--config", fifo}, strings.NewReader(""), io.Discard, &errBuf)
	}()
	cancel()
	select {
	case code := <-done:
		if code != 2 || !strings.Contains(errBuf.String(), "interrupted") {
			t.Errorf("a cancelled read: exit %d, stderr:\n%s", code, errBuf.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("validate did not give up a silent FIFO when its context ended")
	}
}
