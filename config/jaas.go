package config

import (
	"fmt"
	"strings"
)

// JAAS is the one login module of a sasl.jaas.config value, as Kafka's Java
// clients read it:
//
//	org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="...";
//
// a login module class, a control flag, options name=value (a value quoted
// with double quotes, with Java's backslash escapes, or a bare word), and a
// semicolon; comments (// and /* */) are skipped. A repeated option keeps
// its last value. TestParseJAASMatchesKafka compares it with Kafka's own
// parser.
type JAAS struct {
	Module  string            // the login module class
	Flag    string            // required, requisite, sufficient or optional
	Options map[string]string // name -> value; values may be secrets
}

// The login modules Rackstream maps onto its SASL mechanisms.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// moduleFits reports whether a login module goes with a SASL mechanism.
func moduleFits(module string, m SASLMechanism) bool {
	switch module {
	case PlainLoginModule:
		return m == Plain
	case ScramLoginModule:
		return m == ScramSHA256 || m == ScramSHA512
	case OAuthBearerLoginModule:
		return m == OAuthBearer
	}
	return false
}

// otherLoginModules are login modules of Kafka and the JDK that Rackstream
// does not support; errors name them.
var otherLoginModules = []string{
	"com.sun.security.auth.module.Krb5LoginModule",
}

// ParseJAAS parses a sasl.jaas.config value. Its errors say what was
// expected and at which character (from 1), and never quote the text: the
// value holds a password.
func ParseJAAS(s string) (JAAS, error) {
	p := jaasParser{s: s}
	j := JAAS{Options: map[string]string{}}
	var ok bool
	if j.Module, ok = p.word(); !ok {
		return JAAS{}, p.fail("a login module class")
	}
	if j.Flag, ok = p.word(); !ok {
		return JAAS{}, p.fail("a control flag after the login module (required, requisite, sufficient or optional)")
	}
	switch strings.ToLower(j.Flag) {
	case "required", "requisite", "sufficient", "optional":
		j.Flag = strings.ToLower(j.Flag)
	default:
		return JAAS{}, fmt.Errorf("the control flag after the login module must be required, requisite, sufficient or optional (at character %d)", p.start+1)
	}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ';' {
			p.i++
			break
		}
		name, ok := p.word()
		if !ok {
			return JAAS{}, p.fail("an option name=\"value\" or the final ';'")
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '=' {
			return JAAS{}, p.fail("'=' after an option name") // the "name" may be a stray secret
		}
		p.i++
		p.space()
		var value string
		if p.i < len(p.s) && p.s[p.i] == '"' {
			if value, ok = p.quoted(); !ok {
				return JAAS{}, fmt.Errorf("the value of option %s has no closing quote (it starts at character %d)", name, p.start+1)
			}
		} else if value, ok = p.word(); !ok {
			return JAAS{}, p.fail("a value for option " + name)
		}
		j.Options[name] = value // a repeated option: the last wins, as in Java
	}
	p.space()
	if p.i < len(p.s) {
		return JAAS{}, fmt.Errorf("sasl.jaas.config holds one login module: text follows the ';' at character %d", p.i+1)
	}
	return j, nil
}

// jaasParser reads a sasl.jaas.config value left to right.
type jaasParser struct {
	s     string
	i     int // the next character
	start int // where the last token started
}

// space skips whitespace and comments (// to the end of the line, and
// /* ... */), as Kafka's JaasConfig does.
func (p *jaasParser) space() {
	for p.i < len(p.s) {
		switch rest := p.s[p.i:]; {
		case strings.IndexByte(" \t\r\n\f", rest[0]) >= 0:
			p.i++
		case strings.HasPrefix(rest, "//"):
			if nl := strings.IndexAny(rest, "\r\n"); nl >= 0 {
				p.i += nl
			} else {
				p.i = len(p.s)
			}
		case strings.HasPrefix(rest, "/*"):
			if end := strings.Index(rest[2:], "*/"); end >= 0 {
				p.i += 2 + end + 2
			} else {
				p.i = len(p.s)
			}
		default:
			return
		}
	}
}

// word reads a bare word: anything up to whitespace, '=', ';', '"' or a
// comment. (Java's tokenizer allows fewer characters in a bare word, and
// reads one that starts with a digit as a number, which JaasConfig rejects:
// such values are accepted here as written.)
func (p *jaasParser) word() (string, bool) {
	p.space()
	p.start = p.i
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n\f=;\"", p.s[p.i]) < 0 &&
		!strings.HasPrefix(p.s[p.i:], "//") && !strings.HasPrefix(p.s[p.i:], "/*") {
		p.i++
	}
	return p.s[p.start:p.i], p.i > p.start
}

// quoted reads a double-quoted value with the escapes of Java's
// StreamTokenizer, which Kafka's JaasConfig reads it with: \a \b \f \n \r
// \t \v, up to three octal digits, and a backslash before any other
// character stands for that character.
func (p *jaasParser) quoted() (string, bool) {
	p.start = p.i
	p.i++ // the opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		if c == '"' {
			return b.String(), true
		}
		if c != '\\' || p.i == len(p.s) {
			b.WriteByte(c)
			continue
		}
		c = p.s[p.i]
		p.i++
		if e := strings.IndexByte("abfnrtv", c); e >= 0 {
			b.WriteByte("\a\b\f\n\r\t\v"[e])
			continue
		}
		if '0' <= c && c <= '7' {
			n, max := int(c-'0'), 2 // a first digit of 0-3 allows two more, as in Java
			if c > '3' {
				max = 1
			}
			for ; max > 0 && p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '7'; max-- {
				n = n*8 + int(p.s[p.i]-'0')
				p.i++
			}
			b.WriteRune(rune(n))
			continue
		}
		b.WriteByte(c)
	}
	return "", false
}

func (p *jaasParser) fail(want string) error {
	p.space()
	if p.i >= len(p.s) {
		return fmt.Errorf("expected %s, found the end (a sasl.jaas.config value ends with ';')", want)
	}
	return fmt.Errorf("expected %s at character %d", want, p.i+1)
}

// checkJAAS is sasl.jaas.config's check: a value that parses, with a login
// module Rackstream supports, and for PLAIN and SCRAM a username and
// password (OAUTHBEARER's options clientId, clientSecret and scope are
// optional: the sasl.oauthbearer.* keys may give them).
func checkJAAS(v string) string {
	j, err := ParseJAAS(v)
	if err != nil {
		return err.Error()
	}
	switch j.Module {
	case PlainLoginModule, ScramLoginModule:
	case OAuthBearerLoginModule:
		return ""
	default:
		// Named only when it is a known class: the first word of a
		// mistyped value may be the secret itself.
		what := "this login module"
		for _, known := range otherLoginModules {
			if j.Module == known {
				what = known
			}
		}
		return fmt.Sprintf("%s is not supported: use %s (sasl.mechanism=PLAIN), %s (SCRAM-SHA-256, SCRAM-SHA-512) or %s (OAUTHBEARER)", what, PlainLoginModule, ScramLoginModule, OAuthBearerLoginModule)
	}
	if j.Options["username"] == "" || j.Options["password"] == "" {
		return "the login module needs the options username and password"
	}
	return ""
}

// checkJAASModule fails when sasl.jaas.config's login module does not go
// with sasl.mechanism (a SCRAM line under PLAIN, ...).
func (c *Config) checkJAASModule(fail func(key, format string, args ...any)) {
	sec := c.Security
	if sec.SASLJAASConfig == "" {
		return
	}
	if j, err := ParseJAAS(sec.SASLJAASConfig.Reveal()); err == nil && !moduleFits(j.Module, sec.SASLMechanism) {
		fail("sasl.jaas.config", "sasl.jaas.config's login module does not match sasl.mechanism=%s: %s goes with PLAIN, %s with SCRAM-SHA-256 and SCRAM-SHA-512, %s with OAUTHBEARER",
			sec.SASLMechanism, PlainLoginModule, ScramLoginModule, OAuthBearerLoginModule)
	}
}
