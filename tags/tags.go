package tags

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"unicode/utf8"
)

// Kafka Streams' limits on client tags (StreamsConfig), and the names of the
// configuration that carries them.
const (
	MaxTags     = 5  // client.tag.* entries per client
	MaxKeyLen   = 20 // characters in a tag key
	MaxValueLen = 30 // characters in a tag value
	MaxKeys     = 5  // entries in rack.aware.assignment.tags

	// Prefix starts every client tag's configuration key: client.tag.zone.
	Prefix = "client.tag."
	// RackAwareConfig is the configuration key of the ordered tag key list.
	RackAwareConfig = "rack.aware.assignment.tags"
)

// Tag is one client tag.
type Tag struct {
	Key   string
	Value string
}

// String returns key=value.
func (t Tag) String() string { return t.Key + "=" + t.Value }

// Set is a client's tags, sorted by key, every one within the limits. The
// zero Set is valid and empty. A Set is immutable: share it freely.
type Set struct {
	tags []Tag // sorted by Key, unique keys
}

// NewSet returns the set of the given tags, in any order. It fails on a
// duplicate key or on any violation of the limits, listing every one.
func NewSet(ts ...Tag) (Set, error) {
	if errs := Check(ts, nil); len(errs) > 0 {
		return Set{}, errs
	}
	sorted := slices.Clone(ts)
	slices.SortFunc(sorted, func(a, b Tag) int { return strings.Compare(a.Key, b.Key) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Key == sorted[i-1].Key {
			return Set{}, fmt.Errorf("duplicate client tag key %q", sorted[i].Key)
		}
	}
	if len(sorted) == 0 {
		sorted = nil
	}
	return Set{tags: sorted}, nil
}

// FromMap returns the set of the tags in m (key to value).
func FromMap(m map[string]string) (Set, error) {
	ts := make([]Tag, 0, len(m))
	for k, v := range m {
		ts = append(ts, Tag{k, v})
	}
	// Sorted first so that Check's errors come out in a stable order.
	slices.SortFunc(ts, func(a, b Tag) int { return strings.Compare(a.Key, b.Key) })
	return NewSet(ts...)
}

// MustSet returns the set of the key, value pairs in kv and panics on invalid
// input. It is meant for tests and literals:
//
//	tags.MustSet("zone", "eu-central-1a", "cluster", "k8s-cluster1")
func MustSet(kv ...string) Set {
	if len(kv)%2 != 0 {
		panic("tags.MustSet: odd number of arguments")
	}
	ts := make([]Tag, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		ts = append(ts, Tag{kv[i], kv[i+1]})
	}
	s, err := NewSet(ts...)
	if err != nil {
		panic("tags.MustSet: " + err.Error())
	}
	return s
}

// Len returns the number of tags.
func (s Set) Len() int { return len(s.tags) }

// Get returns the value of key and whether the set has it.
func (s Set) Get(key string) (string, bool) {
	i, ok := slices.BinarySearchFunc(s.tags, key, func(t Tag, k string) int { return strings.Compare(t.Key, k) })
	if !ok {
		return "", false
	}
	return s.tags[i].Value, true
}

// Value returns the value of key, or "" when the set has no such key.
func (s Set) Value(key string) string {
	v, _ := s.Get(key)
	return v
}

// All yields the tags in key order.
func (s Set) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, t := range s.tags {
			if !yield(t.Key, t.Value) {
				return
			}
		}
	}
}

// Tags returns a copy of the tags in key order.
func (s Set) Tags() []Tag { return slices.Clone(s.tags) }

// Keys returns the tag keys in sorted order.
func (s Set) Keys() []string {
	ks := make([]string, len(s.tags))
	for i, t := range s.tags {
		ks[i] = t.Key
	}
	return ks
}

// Map returns the tags as a new map.
func (s Set) Map() map[string]string {
	m := make(map[string]string, len(s.tags))
	for _, t := range s.tags {
		m[t.Key] = t.Value
	}
	return m
}

// Equal reports whether s and o hold the same tags.
func (s Set) Equal(o Set) bool { return slices.Equal(s.tags, o.tags) }

// String returns the tags as key=value pairs in key order, separated by
// commas: "cluster=k8s-cluster1,zone=eu-central-1a".
func (s Set) String() string {
	var b strings.Builder
	for i, t := range s.tags {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t.Key)
		b.WriteByte('=')
		b.WriteString(t.Value)
	}
	return b.String()
}

// Keys is the ordered key list of rack.aware.assignment.tags: the tag
// dimensions standby placement spreads over, highest priority first.
type Keys []string

// ParseKeys splits a comma-separated list as Kafka reads a LIST
// configuration: entries are trimmed of surrounding whitespace, and an empty
// or blank string is the empty list. Empty entries are kept so that [Check]
// can report them.
func ParseKeys(s string) Keys {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	ks := make(Keys, len(parts))
	for i, p := range parts {
		ks[i] = strings.TrimSpace(p)
	}
	return ks
}

// Index returns the priority of key (0 is the highest), or -1 when the list
// does not name it.
func (ks Keys) Index(key string) int { return slices.Index(ks, key) }

// String returns the list as rack.aware.assignment.tags spells it: "zone,cluster".
func (ks Keys) String() string { return strings.Join(ks, ",") }

// Error is one violation of a limit. Config is the configuration key at
// fault: "client.tag.<key>" for a tag, [RackAwareConfig] for the key list.
// Msg is Kafka Streams' message where Kafka has one.
type Error struct {
	Config string
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Errors is every violation [Check] found, in the order it checks.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Msg
	}
	return strings.Join(msgs, "\n")
}

// Unwrap returns the individual errors, for errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Check validates client tags, in configuration order, and the rack-awareness
// key list against Kafka Streams' limits and returns every violation (nil
// when there is none), in the order Kafka checks:
//
//  1. at most MaxTags client tags (blamed on the first tag beyond the limit);
//  2. every rack.aware.assignment.tags entry a configured tag key;
//  3. each key at most MaxKeyLen characters, each value at most MaxValueLen;
//  4. at most MaxKeys entries in rack.aware.assignment.tags.
//
// Rackstream's own rules (non-empty, valid UTF-8, no repeated entry) are
// checked alongside the Kafka rule they refine. Check does not look for
// duplicate tag keys: a configuration cannot hold one key twice.
//
// A message about one tag (3.) keeps Kafka's sentence, which names only the
// prefix ("for configuration client.tag."), behind the full configuration
// key: "client.tag.zone: Invalid value ... Tag value exceeds maximum length
// of 30.". Messages quote the offending value as Kafka does, unescaped: a
// caller printing values from an untrusted source escapes them.
//
// [CheckTags] and [CheckKeys] are its two halves, for inputs that carry tags
// and keys apart (a placement scenario's clients and its settings).
func Check(clientTags []Tag, keys Keys) Errors {
	c := &checker{}
	c.count(clientTags)
	c.entries(keys, clientTags, true)
	c.lengths(clientTags)
	c.listSize(keys)
	return c.result()
}

// CheckTags validates one client's tags as [Check] does, without a key
// list: their number and each key's and value's length, with the same
// messages.
func CheckTags(clientTags []Tag) Errors {
	c := &checker{}
	c.count(clientTags)
	c.lengths(clientTags)
	return c.result()
}

// CheckKeys validates a rack.aware.assignment.tags list as [Check] does,
// except whether each entry is some client's tag key: no empty or repeated
// entry, at most MaxKeys entries, with the same messages.
func CheckKeys(keys Keys) Errors {
	c := &checker{}
	c.entries(keys, nil, false)
	c.listSize(keys)
	return c.result()
}

// checker collects violations in the order its steps run.
type checker struct{ errs Errors }

func (c *checker) add(config, format string, args ...any) {
	c.errs = append(c.errs, &Error{Config: config, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) result() Errors {
	if len(c.errs) == 0 {
		return nil
	}
	return c.errs
}

func (c *checker) count(clientTags []Tag) {
	if len(clientTags) > MaxTags {
		c.add(Prefix+clientTags[MaxTags].Key, "At most %d client tags can be specified using %s prefix.", MaxTags, Prefix)
	}
}

// entries checks each key-list entry; withTags also checks that each names
// one of clientTags.
func (c *checker) entries(keys Keys, clientTags []Tag, withTags bool) {
	have := make(map[string]bool, len(clientTags))
	for _, t := range clientTags {
		have[t.Key] = true
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		switch {
		case k == "":
			c.add(RackAwareConfig, "Invalid value %s for configuration %s: Contains an empty entry.", javaList(keys), RackAwareConfig)
		case seen[k]:
			c.add(RackAwareConfig, "Invalid value %s for configuration %s: Contains duplicate value [%s].", javaList(keys), RackAwareConfig, k)
		case withTags && !have[k]:
			c.add(RackAwareConfig, "Invalid value %s for configuration %s: Contains invalid value [%s] which doesn't have corresponding tag set via [%s] prefix.", javaList(keys), RackAwareConfig, k, Prefix)
		}
		seen[k] = true
	}
}

func (c *checker) lengths(clientTags []Tag) {
	// part checks a tag's key or value (what) against its length limit;
	// nothing is allocated unless it fails.
	part := func(key, what, s string, maxLen int) {
		var msg string
		switch {
		case s == "":
			msg = fmt.Sprintf("Invalid value \"\" for configuration %s: Tag %s must not be empty.", Prefix, what)
		case !utf8.ValidString(s):
			msg = fmt.Sprintf("Invalid value %q for configuration %s: Tag %s is not valid UTF-8.", s, Prefix, what)
		case utf8.RuneCountInString(s) > maxLen:
			msg = fmt.Sprintf("Invalid value %s for configuration %s: Tag %s exceeds maximum length of %d.", s, Prefix, what, maxLen)
		default:
			return
		}
		at := Prefix + key
		if !utf8.ValidString(key) {
			at = fmt.Sprintf("%s%q", Prefix, key)
		}
		c.add(Prefix+key, "%s: %s", at, msg)
	}
	for _, t := range clientTags {
		part(t.Key, "key", t.Key, MaxKeyLen)
		part(t.Key, "value", t.Value, MaxValueLen)
	}
}

func (c *checker) listSize(keys Keys) {
	if len(keys) > MaxKeys {
		c.add(RackAwareConfig, "Invalid value %s for configuration %s: exceeds maximum list size of [%d].", javaList(keys), RackAwareConfig, MaxKeys)
	}
}

// javaList formats a list as Java's List.toString does: [zone, cluster].
func javaList(ks Keys) string { return "[" + strings.Join(ks, ", ") + "]" }

// MarshalJSON encodes the set as a JSON object in key order:
// {"cluster":"k8s-cluster1","zone":"eu-central-1a"}, the form the
// assignor's scenarios and the HTTP metadata use for tags.
func (s Set) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, t := range s.tags {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(t.Key) // strings always marshal
		v, _ := json.Marshal(t.Value)
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON decodes a JSON object of string values (or null, the empty
// set) and validates it as [FromMap] does.
func (s *Set) UnmarshalJSON(data []byte) error {
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("client tags: %w", err)
	}
	set, err := FromMap(m)
	if err != nil {
		return fmt.Errorf("client tags: %w", err)
	}
	*s = set
	return nil
}
