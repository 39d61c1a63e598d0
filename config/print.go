package config

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rackstream/rackstream/internal/textsafe"
	"github.com/rackstream/rackstream/tags"
)

// Entry is one key of the effective configuration as it is shown: the value
// in its textual form, "[hidden]" for a secret that is set.
type Entry struct {
	Key    string
	Value  string
	Source Source
	Secret bool
}

// Entries returns every key of the configuration, client tags included,
// sorted by key, with secrets masked.
func (c *Config) Entries() []Entry {
	out := make([]Entry, 0, len(keys)+c.ClientTags.Len())
	for _, d := range keys {
		e := Entry{Key: d.name, Value: d.format(c), Source: c.Source(d.name), Secret: IsSecret(d.name)}
		if e.Secret && e.Value != "" {
			e.Value = masked
		}
		out = append(out, e)
	}
	for k, v := range c.ClientTags.All() {
		key := tags.Prefix + k
		e := Entry{Key: key, Value: v, Source: c.Source(key), Secret: IsSecret(key)}
		if e.Secret {
			e.Value = masked
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// WriteEffective writes the effective configuration as a table of key,
// value and source, one key a line, sorted, secrets masked. Values are
// escaped and shortened (textsafe.Short); an empty or padded value shows
// between double quotes.
func (c *Config) WriteEffective(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, e := range c.Entries() {
		v := textsafe.Short(e.Value)
		if v == "" || strings.TrimSpace(v) != v {
			v = `"` + v + `"`
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", textsafe.Short(e.Key), v, e.Source)
	}
	return tw.Flush()
}

// String returns the configuration as key=value lines in properties syntax,
// sorted, secrets masked.
func (c Config) String() string {
	var b strings.Builder
	for _, e := range c.Entries() {
		b.WriteString(FormatProperty(e.Key, e.Value))
		b.WriteByte('\n')
	}
	return b.String()
}

// GoString masks secrets under %#v too.
func (c Config) GoString() string { return "config.Config{\n" + c.String() + "}" }

// LogValue makes a Config log as a group of its keys, secrets masked.
func (c Config) LogValue() slog.Value {
	es := c.Entries()
	attrs := make([]slog.Attr, len(es))
	for i, e := range es {
		attrs[i] = slog.String(e.Key, e.Value)
	}
	return slog.GroupValue(attrs...)
}

// Reference returns the configuration reference in Markdown: how the
// sources combine, then one table row per key with its default and meaning.
// docs/configuration.md's reference is this text (a test keeps it so).
func Reference() string {
	var b strings.Builder
	b.WriteString(`Rackstream reads its configuration from a Java properties file (` + "`--config FILE`" + `), then the
environment, then ` + "`--set key=value`" + ` flags (repeatable); each layer overrides the one before, and a
later ` + "`--set`" + ` of the same key wins. ` + "`rackstream validate --config FILE`" + ` prints every effective value
with where it came from (secrets masked) and lists every error with its file and line.

- **File**: at most 1 MiB (a longer file, or an endless device, is an error naming the limit; a
  directory is refused; a FIFO such as a shell's ` + "`<(...)`" + ` is read under the same bound, and
  SIGINT/SIGTERM end a read that waits on one). java.util.Properties syntax (UTF-8): ` + "`#`" + ` or ` + "`!`" + ` comments; ` + "`=`" + `, ` + "`:`" + ` or whitespace
  between key and value; a bare key has the empty value; a trailing backslash continues the line;
  ` + "`\\uXXXX`" + ` and ` + "`\\t`" + `, ` + "`\\n`" + `, ` + "`\\r`" + `, ` + "`\\f`" + ` escapes. Values are trimmed of surrounding whitespace.
- **Environment**: ` + "`RACKSTREAM_`" + ` followed by the key upper-cased, dots and dashes as underscores:
  ` + "`RACKSTREAM_COMMIT_INTERVAL_MS=100`" + ` sets ` + "`commit.interval.ms`" + `. ` + "`RACKSTREAM_CLIENT_TAG_<KEY>`" + ` sets
  ` + "`client.tag.<key>`" + ` with ` + "`<KEY>`" + ` lower-cased: ` + "`RACKSTREAM_CLIENT_TAG_ZONE=eu-central-1c`" + ` sets
  ` + "`client.tag.zone`" + `. Other ` + "`RACKSTREAM_`" + ` variables are ignored (a near miss of a real one is warned about).
- **Errors**: an unknown key is an error that suggests the nearest known key; a bad value names the
  key, the value and what is allowed. Limits on client tags are Kafka Streams' (KIP-708).
- **Kafka's keys**: every other key of Kafka 4.4's StreamsConfig, ProducerConfig, ConsumerConfig and
  AdminClientConfig, bare or with Kafka Streams' prefixes (` + "`producer.`" + `, ` + "`consumer.`" + `, ` + "`main.consumer.`" + `,
  ` + "`restore.consumer.`" + `, ` + "`global.consumer.`" + `, ` + "`admin.`" + `), and TopicConfig's with ` + "`topic.`" + `, is accepted and
  ignored: one warning lists them, so a Kafka Streams properties file loads as it is.
- **Secrets**: the keys marked *Secret* below are never printed or logged, nor quoted in an error,
  whichever source set them (a malformed ` + "`--set`" + ` argument or a bad escape in the file included);
  Kafka's own password keys, and unknown keys and client tags whose names look secret (` + "`password`" + `, ` + "`secret`" + `, ` + "`token`" + `,
  ` + "`credential`" + `, ` + "`jaas`" + `, a final ` + "`.key`" + `) are masked too.

| Key | Default | Meaning |
|---|---|---|
`)
	rows := make([][3]string, 0, len(keys)+1)
	for _, d := range keys {
		def := "`" + d.def + "`"
		switch {
		case d.required:
			def = "required"
		case d.derived != nil:
			def = d.def
		case d.def == "":
			def = "empty"
		}
		doc := d.doc
		if r := d.rangeDoc(); r != "" {
			doc += " " + r
		}
		if d.secret {
			doc += " Secret: never shown."
		}
		rows = append(rows, [3]string{"`" + d.name + "`", def, doc})
	}
	rows = append(rows, [3]string{"`client.tag.<key>`", "none", clientTagDoc})
	slices.SortFunc(rows, func(a, b [3]string) int { return strings.Compare(a[0], b[0]) })
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], r[1], strings.ReplaceAll(r[2], "|", `\|`))
	}
	return b.String()
}
