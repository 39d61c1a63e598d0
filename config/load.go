package config

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rackstream/rackstream/internal/boundedread"
	"github.com/rackstream/rackstream/internal/textsafe"
	"github.com/rackstream/rackstream/tags"
)

// EnvPrefix starts every environment variable that sets a key.
const EnvPrefix = "RACKSTREAM_"

// envTagPrefix starts the variables that set client tags.
const envTagPrefix = EnvPrefix + "CLIENT_TAG_"

// EnvName returns the environment variable that sets key: RACKSTREAM_, then
// the key upper-cased with dots and dashes as underscores
// (commit.interval.ms: RACKSTREAM_COMMIT_INTERVAL_MS; client.tag.zone:
// RACKSTREAM_CLIENT_TAG_ZONE).
func EnvName(key string) string {
	return EnvPrefix + strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(key))
}

// KeyForEnv returns the key an environment variable sets, and false when
// the variable sets none. RACKSTREAM_CLIENT_TAG_<KEY> sets client.tag.<key>
// with <KEY> lower-cased (so a tag key with upper-case letters or dots can
// be set only in the file or with --set); any other variable sets the key
// whose EnvName it is.
func KeyForEnv(name string) (string, bool) {
	if tag, ok := strings.CutPrefix(name, envTagPrefix); ok {
		return tags.Prefix + strings.ToLower(tag), true
	}
	if !strings.HasPrefix(name, EnvPrefix) {
		return "", false
	}
	for _, d := range keys {
		if EnvName(d.name) == name {
			return d.name, true
		}
	}
	return "", false
}

// Sources are the layers of a configuration, each overriding the one before:
// the defaults, a properties file, the environment, and --set flags.
type Sources struct {
	// File is the path of a Java properties file (UTF-8); "" for none.
	File string
	// Env is the environment as os.Environ returns it: "NAME=value"
	// strings. Only RACKSTREAM_ variables are read: see EnvName and
	// KeyForEnv. Pass os.Environ() in a program and a literal in tests.
	Env []string
	// Set holds "key=value" pairs from --set flags, in command-line order;
	// a later pair wins.
	Set []string
}

// setting is one key's value from one source.
type setting struct {
	key, value string
	src        Source
}

// Load reads the sources, validates the result and returns the effective
// configuration. On failure it returns every problem found as [Errors]:
// unreadable lines, unknown keys (with the nearest known key), bad values
// (with the value and what is allowed), missing required keys and
// inconsistent combinations, each with the file and line, variable or flag
// it came from.
//
// Unknown RACKSTREAM_ variables are not errors (scripts and tests use the
// prefix for their own settings), but one that is a near miss of a real
// variable is reported by [Config.Warnings], as is a key the file sets twice.
func Load(src Sources) (*Config, error) {
	return LoadContext(context.Background(), src)
}

// MaxFileSize bounds the properties file: a configuration is a few KiB,
// and a file past the bound (a device, an endless pipe, a wrong path) fails
// with an error naming the limit instead of filling memory.
const MaxFileSize = boundedread.PropertiesFile

// LoadContext is [Load] with a context that bounds the read of the file:
// when ctx ends (SIGINT or SIGTERM in a command), a read that waits on a
// silent pipe or FIFO returns at once with an error. The file is read up to
// [MaxFileSize]; a directory is refused, and anything else (a regular file,
// a FIFO such as a shell's <(...), /dev/stdin) is read under the same bound.
func LoadContext(ctx context.Context, src Sources) (*Config, error) {
	var data []byte
	if src.File != "" {
		var err error
		if data, err = boundedread.ReadFile(ctx, src.File, MaxFileSize); err != nil {
			return nil, Errors{{Msg: fmt.Sprintf("read configuration: %v", err)}}
		}
	}
	return load(src, data)
}

// load is Load with the file's contents already read.
func load(src Sources, data []byte) (*Config, error) {
	var (
		settings []setting
		errs     Errors
		warnings []string
	)
	if src.File != "" {
		props, syntax := ParseProperties(data)
		for _, e := range syntax {
			errs = append(errs, &Error{Source: Source{Kind: FromFile, File: src.File, Line: e.Line}, Msg: e.Msg})
		}
		firstLine := make(map[string]int, len(props))
		for _, p := range props {
			if l, dup := firstLine[p.Key]; dup {
				warnings = append(warnings, fmt.Sprintf("%s: %s is also set on line %d; the later line wins", Source{Kind: FromFile, File: src.File, Line: p.Line}, textsafe.Short(p.Key), l))
			} else {
				firstLine[p.Key] = p.Line
			}
			settings = append(settings, setting{p.Key, p.Value, Source{Kind: FromFile, File: src.File, Line: p.Line}})
		}
	}

	env := environment(src.Env)
	for _, name := range sortedKeys(env) {
		key, ok := KeyForEnv(name)
		if !ok {
			if near := nearestEnv(name); near != "" {
				warnings = append(warnings, fmt.Sprintf("%s: not a configuration variable; did you mean %s?", Source{Kind: FromEnv, Env: name}, near))
			}
			continue
		}
		settings = append(settings, setting{key, env[name], Source{Kind: FromEnv, Env: name}})
	}

	for i, kv := range src.Set {
		key, value, ok := strings.Cut(kv, "=")
		if !ok {
			errs = append(errs, &Error{Source: Source{Kind: FromFlag}, Msg: badSet(i, kv)})
			continue
		}
		settings = append(settings, setting{strings.TrimSpace(key), value, Source{Kind: FromFlag}})
	}

	c, more := build(settings)
	errs = append(errs, more...)
	if len(errs) > 0 {
		// In the order a reader meets them: file lines top to bottom, then
		// the environment, the flags, and keys that were not set.
		rank := [...]int{FromFile: 0, FromEnv: 1, FromFlag: 2, FromDefault: 3}
		slices.SortStableFunc(errs, func(a, b *Error) int {
			if r := rank[a.Source.Kind] - rank[b.Source.Kind]; r != 0 {
				return r
			}
			return a.Source.Line - b.Source.Line
		})
		return nil, errs
	}
	c.warnings = append(warnings, c.warnings...)
	return c, nil
}

// build applies settings in order over the defaults and validates the result.
func build(settings []setting) (*Config, Errors) {
	c := &Config{sources: make(map[string]Source)}
	var errs Errors
	fail := func(key string, src Source, format string, args ...any) {
		errs = append(errs, &Error{Key: key, Source: src, Msg: fmt.Sprintf(format, args...)})
	}

	// The last setting of each key wins; client tags keep the order in which
	// they first appear, which decides which one is "the sixth".
	last := make(map[string]int, len(settings))
	var tagKeys []string
	ignored := map[string]int{} // Kafka's keys that mean nothing here: the last setting of each
	for i, s := range settings {
		switch {
		case strings.HasPrefix(s.key, tags.Prefix):
			if _, seen := last[s.key]; !seen {
				tagKeys = append(tagKeys, s.key)
			}
		case lookup(s.key) == nil:
			if known, _ := kafkaLookup(s.key); known {
				ignored[s.key] = i
			} else {
				fail(s.key, s.src, "%s", unknownKey(s.key))
			}
			continue
		}
		last[s.key] = i
	}
	if len(ignored) > 0 {
		idx := slices.Sorted(maps.Values(ignored))
		ign := make([]setting, len(idx))
		for i, j := range idx {
			ign[i] = settings[j]
		}
		c.warnings = append(c.warnings, ignoredWarning(ign))
	}

	for i, s := range settings {
		if last[s.key] != i || strings.HasPrefix(s.key, tags.Prefix) {
			continue
		}
		d := lookup(s.key)
		if d == nil {
			continue
		}
		c.sources[d.name] = s.src
		if why := d.set(c, s.value); why != "" {
			fail(d.name, s.src, "Invalid value %s for configuration %s: %s", showValue(d.name, s.value), d.name, why)
		}
	}

	// Defaults: the static ones first, then those derived from other keys.
	for _, d := range keys {
		if _, ok := c.sources[d.name]; ok {
			continue
		}
		if d.required {
			fail(d.name, Source{}, "Missing required configuration %q which has no default value.", d.name)
			continue
		}
		if d.derived == nil {
			if why := d.set(c, d.def); why != "" {
				panic(fmt.Sprintf("config: default %q of %s: %s", d.def, d.name, why))
			}
		}
	}
	for _, d := range keys {
		if _, ok := c.sources[d.name]; ok || d.derived == nil {
			continue
		}
		v, note := d.derived(c)
		if why := d.set(c, v); why != "" {
			panic(fmt.Sprintf("config: derived default %q of %s: %s", v, d.name, why))
		}
		if note != "" {
			c.sources[d.name] = Source{Note: note}
		}
	}

	// Client tags, checked with rack.aware.assignment.tags against Kafka's limits.
	// A tag is announced to the whole group and printed on its operators'
	// terminals: a control character in its key or value is refused here,
	// where it enters, rather than escaped on every screen.
	ts := make([]tags.Tag, 0, len(tagKeys))
	for _, k := range tagKeys {
		s := settings[last[k]]
		c.sources[k] = s.src
		v := strings.TrimSpace(s.value)
		switch {
		case !textsafe.Printable(k):
			fail(k, s.src, "Invalid client tag key %s: it must not contain control, format or invalid UTF-8 characters (a tag is announced to the group and shown on terminals)", quoted(k))
			continue
		case !textsafe.Printable(v):
			fail(k, s.src, "Invalid value %s for configuration %s: Value must not contain control, format or invalid UTF-8 characters (a tag is announced to the group and shown on terminals)", showValue(k, v), textsafe.Short(k))
			continue
		}
		ts = append(ts, tags.Tag{Key: strings.TrimPrefix(k, tags.Prefix), Value: v})
	}
	// Kafka's limits are checked once every tag is clean: a refused one
	// would also be reported as missing from rack.aware.assignment.tags.
	if len(ts) < len(tagKeys) {
		return c, append(errs, c.crossCheck()...)
	}
	if terrs := tags.Check(ts, c.Placement.RackAwareAssignmentTags); terrs != nil {
		for _, e := range terrs {
			msg := e.Msg
			if v := strings.TrimSpace(settings[last[e.Config]].value); v != "" {
				msg = strings.ReplaceAll(msg, v, showValue(e.Config, v)) // Kafka's messages quote the value
			}
			fail(e.Config, c.Source(e.Config), "%s", msg)
		}
	} else if set, err := tags.NewSet(ts...); err != nil {
		fail(tags.Prefix, Source{}, "%v", err) // not reachable: keys are unique
	} else {
		c.ClientTags = set
	}

	errs = append(errs, c.crossCheck()...)
	return c, errs
}

// crossCheck validates combinations of keys.
func (c *Config) crossCheck() Errors {
	var errs Errors
	fail := func(key, format string, args ...any) {
		errs = append(errs, &Error{Key: key, Source: c.Source(key), Msg: fmt.Sprintf(format, args...)})
	}
	sec := c.Security
	if sec.UsesSASL() && sec.SASLMechanism != OAuthBearer {
		var missing []string
		if sec.SASLUsername == "" {
			missing = append(missing, "sasl.username")
		}
		if sec.SASLPassword == "" {
			missing = append(missing, "sasl.password")
		}
		switch {
		case sec.SASLJAASConfig != "" && len(missing) < 2:
			fail("sasl.jaas.config", "sasl.jaas.config and sasl.username or sasl.password are both set: set one or the other")
		case sec.SASLJAASConfig != "":
			c.checkJAASModule(fail)
		case len(missing) > 0:
			fail("security.protocol", "security.protocol=%s requires %s (or sasl.jaas.config)", sec.Protocol, strings.Join(missing, " and "))
		}
	}
	c.checkStores(fail)
	pair := func(a, b, va, vb string) {
		switch {
		case va != "" && vb == "":
			fail(a, "%s is set but %s is not: both or neither", a, b)
		case va == "" && vb != "":
			fail(b, "%s is set but %s is not: both or neither", b, a)
		}
	}
	pair("ssl.certificate.location", "ssl.key.location", c.Security.SSLCertificateLocation, c.Security.SSLKeyLocation)
	pair("http.tls.cert", "http.tls.key", c.HTTP.TLSCert, c.HTTP.TLSKey)
	switch {
	case c.HTTP.TLSClientAuth != "none" && c.HTTP.TLSCert == "":
		fail("http.tls.client.auth", "http.tls.client.auth=%s requires http.tls.cert and http.tls.key (client certificates are verified over HTTPS only)", c.HTTP.TLSClientAuth)
	case c.HTTP.TLSClientAuth != "none" && c.HTTP.TLSClientCA == "":
		fail("http.tls.client.auth", "http.tls.client.auth=%s requires http.tls.client.ca", c.HTTP.TLSClientAuth)
	case c.HTTP.TLSClientAuth == "none" && c.HTTP.TLSClientCA != "":
		fail("http.tls.client.ca", "http.tls.client.ca is set but http.tls.client.auth is none: set it to request or require")
	}
	if c.HTTP.Auth == HTTPAuthNone && c.HTTP.AuthToken != "" {
		fail("http.auth", "http.auth=none but http.auth.token is set: remove the token to serve without authentication, or remove http.auth=none (the default is http.auth=token) to require it")
	}
	if c.Processor.Type != "" && c.Processor.InputTopic == "" {
		fail("processor.type", "processor.type=%s requires processor.input.topic", c.Processor.Type)
	}
	if c.Processor.Type == ProcessorJoin {
		c.checkJoin(fail)
	}
	c.checkWindow(fail)
	c.checkGroupBy(fail)
	if c.ExactlyOnce() && c.CommitInterval >= transactionTimeout {
		fail("commit.interval.ms", "commit.interval.ms=%s under processing.guarantee=exactly_once_v2 must be below the transaction timeout (%s ms): each commit interval is one transaction, which the broker would abort first",
			ms(c.CommitInterval), ms(transactionTimeout))
	}
	c.checkOAuth(fail)
	return errs
}

// Warnings returns what Load noticed but did not reject: a key set twice in
// the file (the later line wins, as in Java), and environment variables that
// look like misspelt configuration variables.
func (c *Config) Warnings() []string { return slices.Clone(c.warnings) }

// environment turns "NAME=value" strings into a map of the RACKSTREAM_
// variables; a later duplicate wins, as in os/exec.
func environment(kvs []string) map[string]string {
	m := make(map[string]string)
	for _, kv := range kvs {
		name, value, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(name, EnvPrefix) {
			m[name] = value
		}
	}
	return m
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// showValue renders a value for a message: escaped and shortened
// (textsafe.Short), quoted when empty or padded, masked when secret.
func showValue(key, v string) string {
	if IsSecret(key) {
		return masked
	}
	if v == "" || strings.TrimSpace(v) != v {
		return quoted(v)
	}
	return textsafe.Short(v)
}

// quoted renders a value or key for a message between double quotes,
// escaped and shortened.
func quoted(s string) string { return `"` + textsafe.Short(s) + `"` }

// badSet explains the i-th (from 0) --set argument kv, which has no '='.
// Such an argument is often a key and its value with the wrong separator
// (http.auth.token:VALUE, "sasl.password VALUE"), so it is shown only when
// it starts with a key whose values are not secret; after a secret key, or
// when no key is recognised, the rest is not shown.
func badSet(i int, kv string) string {
	const want = "want key=value"
	key := kv
	if j := strings.IndexAny(kv, ": \t"); j >= 0 {
		key = kv[:j]
	}
	switch d := lookup(key); {
	case d != nil && !d.secret, d == nil && strings.HasPrefix(key, tags.Prefix) && !looksSecret(key):
		return fmt.Sprintf("--set %s: %s", quoted(kv), want)
	case d != nil && key == kv:
		return fmt.Sprintf("--set %s: %s", quoted(key), want)
	case d != nil:
		return fmt.Sprintf("--set %s followed by a value not shown (a secret): %s", quoted(key), want)
	}
	return fmt.Sprintf("--set argument %d (not shown: it may hold a secret): %s", i+1, want)
}

// unknownKey explains an unknown key, suggesting the nearest known one.
func unknownKey(key string) string {
	if slices.Contains(draftNames, key) {
		return fmt.Sprintf("unknown configuration key %s: it is a draft name from KIP-708 that Kafka never shipped; use rack.aware.assignment.tags (the comma-separated client.tag. keys to spread standbys over)", quoted(key))
	}
	if near := nearestKey(key); near != "" {
		return fmt.Sprintf("unknown configuration key %s; did you mean %q?", quoted(key), near)
	}
	return fmt.Sprintf("unknown configuration key %s", quoted(key))
}

// nearestKey returns the known key closest to key in edit distance, or ""
// when none is close enough to be a plausible typo. A misspelt client.tag.
// prefix is suggested with the tag key kept. A key longer than
// textsafe.MaxShown is no typo and gets no suggestion.
func nearestKey(key string) string {
	if len(key) > textsafe.MaxShown {
		return ""
	}
	best, bestD := "", maxTypo(key)+1
	for _, d := range keys {
		if dist := levenshtein(key, d.name); dist < bestD {
			best, bestD = d.name, dist
		}
	}
	// Then Kafka's own keys (ours win a tie): a misspelt Kafka key is
	// better named than reported as nobody's.
	for _, k := range slices.Sorted(maps.Keys(kafkaKeys())) {
		if known, _ := kafkaLookup(k); !known {
			continue
		}
		if dist := levenshtein(key, k); dist < bestD {
			best, bestD = k, dist
		}
	}
	// A truncated or extended key: num.standbys, num.standby.replicas.count.
	if best == "" {
		bestP := len(key) * 3 / 5
		for _, d := range keys {
			if p := commonPrefix(key, d.name); p > bestP {
				best, bestP = d.name, p
			}
		}
	}
	// client.tags.zone, clienttag.zone, client_tag.zone ...
	for i := 1; i < len(key); i++ {
		if key[i-1] != '.' {
			continue
		}
		if dist := levenshtein(key[:i], tags.Prefix); dist < bestD && dist <= 2 {
			best, bestD = tags.Prefix+key[i:], dist
		}
	}
	return best
}

// nearestEnv returns the configuration variable closest to name, if name is
// a plausible misspelling of one.
func nearestEnv(name string) string {
	best, bestD := "", 3
	for _, d := range keys {
		if dist := levenshtein(name, EnvName(d.name)); dist < bestD {
			best, bestD = EnvName(d.name), dist
		}
	}
	return best
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// maxTypo is how many edits a misspelling of a key this long may have.
func maxTypo(key string) int { return max(2, len(key)/4) }

// levenshtein returns the edit distance of a and b, in bytes.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
