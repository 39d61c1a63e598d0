package main

import (
	"strings"
	"testing"
)

// terminalControl reports whether s holds a character a terminal acts on,
// other than the line breaks between lines of output.
func terminalControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e)
	})
}

func TestValidatePrintsValuesEscapedAndShortened(t *testing.T) {
	huge := strings.Repeat("u", 100<<10)
	code, out, errOut := validateDispatch(t, "validate", "--set", "application.id=a", "--set", "bootstrap.servers=127.0.0.1:9092",
		"--set", "http.listen=127.0.0.1:0",
		"--set", "sasl.username=ops\x1b]0;pwned\x07\x1b[2J", "--set", "ssl.ca.location=/etc/ca\r\nforged.key  x  flag --set",
		"--set", "sasl.oauthbearer.scope="+huge)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if terminalControl(out) || terminalControl(errOut) {
		t.Errorf("validate prints a control character raw:\n%q", out)
	}
	if strings.Contains(out, "\nforged.key") {
		t.Errorf("a CR/LF in a value forges a line:\n%s", out)
	}
	if len(out) > 32<<10 {
		t.Errorf("validate prints %d bytes: a 100 KB value is shown whole", len(out))
	}
	if v, _ := validateRow(t, out, "sasl.username"); v != `ops\x1b]0;pwned\a\x1b[2J` {
		t.Errorf("sasl.username shows as %q", v)
	}
}

func TestConfigurationErrorsCannotForgeALine(t *testing.T) {
	for _, cmd := range []string{"validate", "run"} {
		code, _, errOut := validateDispatch(t, cmd, "--set", "application.id=a", "--set", "bootstrap.servers=127.0.0.1:9092",
			"--set", "application.server=a:1\r\nrackstream "+cmd+": all good", "--set", "processor.type=count", "--set", "processor.input.topic=in")
		if code != 2 {
			t.Fatalf("%s: exit %d, stderr:\n%s", cmd, code, errOut)
		}
		if terminalControl(errOut) || strings.Count(errOut, "\n") != 2 {
			t.Errorf("%s: one error takes more than its line:\n%q", cmd, errOut)
		}
	}
}
