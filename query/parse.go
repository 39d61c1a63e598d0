package query

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Key encodings (key_encoding).
const (
	encodingString    = "string"
	encodingBase64URL = "base64url"
)

// keyRequest is a parsed GET /v1/stores/{store}/keys/{key}.
type keyRequest struct {
	store string
	key   []byte
	// base64 is set by key_encoding=base64url: the key in the path is
	// base64url, and so is the key in the response.
	base64 bool
	// maxLag is max_lag, -1 when absent: standbys may not answer.
	maxLag int64
	// minPosition is min_position, -1 when absent.
	minPosition int64
	// isolation is the isolation parameter, "" when absent.
	isolation Isolation
	// windows marks a read of the key's windows in [timeFrom, timeTo]
	// (GET /v1/stores/{store}/windows/{key}).
	windows          bool
	timeFrom, timeTo int64
}

// route is the request's route, as a metric label.
func (r *keyRequest) route() string {
	if r.windows {
		return routeWindows
	}
	return routeKeys
}

// parseKeyRequest parses the key segment and query of a key lookup. maxKey
// bounds the decoded key's length in bytes.
func parseKeyRequest(store, escapedKey, rawQuery string, maxKey int) (keyRequest, error) {
	q, err := parseQuery(rawQuery, keyParams...)
	if err != nil {
		return keyRequest{}, err
	}
	return parseKeyQuery(store, escapedKey, q, maxKey)
}

// keyParams are a key lookup's query parameters.
var keyParams = []string{"key_encoding", "max_lag", "min_position", "isolation"}

// parseKeyQuery parses the key segment and the parsed query q of a key
// lookup.
func parseKeyQuery(store, escapedKey string, q map[string]string, maxKey int) (keyRequest, error) {
	req := keyRequest{store: store, maxLag: -1, minPosition: -1}
	var err error
	if req.base64, req.maxLag, req.isolation, err = parseReadOptions(q); err != nil {
		return req, err
	}
	if req.minPosition, err = parseCount(q, "min_position"); err != nil {
		return req, err
	}
	if len(escapedKey) > 3*maxKey+8 { // before decoding: bound the work
		return req, fmt.Errorf("key is longer than the limit of %d bytes", maxKey)
	}
	text, err := url.PathUnescape(escapedKey)
	if err != nil {
		return req, fmt.Errorf("key in path: %w", err)
	}
	if req.key, err = decodeKey(text, req.base64, "key"); err != nil {
		return req, err
	}
	if len(req.key) == 0 {
		return req, errors.New("empty key")
	}
	if len(req.key) > maxKey {
		return req, fmt.Errorf("key is %d bytes; the limit is %d", len(req.key), maxKey)
	}
	return req, nil
}

// scanRequest is a parsed GET /v1/stores/{store}/scan.
type scanRequest struct {
	store              string
	prefix, from, to   []byte
	hasFrom, hasTo     bool
	limit              int
	base64             bool
	maxLag             int64
	isolation          Isolation // "" when absent
	isolationGiven     bool      // the client gave isolation
	tasks              []int32   // nil: every task
	after              []byte    // from the cursor: keys > after
	hasAfter           bool
	start, end         []byte // the effective range [start, end), nil = open
	startSet, endEmpty bool   // endEmpty: the range is empty
	// floor is the start that from and the prefix set, without the
	// cursor: at most MaxKeyBytes long, where the cursor's key may be as
	// long as a stored key.
	floor    []byte
	floorSet bool
	// windows marks a read of every key's windows in [timeFrom, timeTo]
	// (GET /v1/stores/{store}/windows): its items' raw keys are windowKeys,
	// or with join, a join's store's records, joinItemKeys.
	windows          bool
	join             bool
	timeFrom, timeTo int64
}

const defaultScanLimit = 100

// parseScanRequest parses a scan's query. maxKey bounds each key-valued
// parameter, maxLimit the page size.
func parseScanRequest(store, rawQuery string, maxKey, maxLimit int) (scanRequest, error) {
	req := scanRequest{store: store, limit: min(defaultScanLimit, maxLimit), maxLag: -1}
	q, err := parseQuery(rawQuery, "prefix", "from", "to", "limit", "cursor", "key_encoding", "max_lag", "tasks", "isolation")
	if err != nil {
		return req, err
	}
	if req.base64, req.maxLag, req.isolation, err = parseReadOptions(q); err != nil {
		return req, err
	}
	for _, p := range []struct {
		name string
		dst  *[]byte
		has  *bool
	}{{"prefix", &req.prefix, nil}, {"from", &req.from, &req.hasFrom}, {"to", &req.to, &req.hasTo}} {
		v, ok := q[p.name]
		if !ok {
			continue
		}
		if len(v) > 3*maxKey+8 {
			return req, fmt.Errorf("%s is longer than the limit of %d bytes", p.name, maxKey)
		}
		b, err := decodeKey(v, req.base64, p.name)
		if err != nil {
			return req, err
		}
		if len(b) > maxKey {
			return req, fmt.Errorf("%s is %d bytes; the limit is %d", p.name, len(b), maxKey)
		}
		*p.dst = b
		if p.has != nil {
			*p.has = true
		}
	}
	if req.hasFrom && req.hasTo && bytes.Compare(req.from, req.to) > 0 {
		return req, fmt.Errorf("from %s is after to %s", strconv.Quote(truncate(q["from"])), strconv.Quote(truncate(q["to"])))
	}
	if err := req.parsePaging(q, maxLimit); err != nil {
		return req, err
	}
	req.bounds()
	return req, nil
}

// parsePaging parses what every paged read takes: limit, tasks and the
// cursor, which must belong to a read of the same identity.
func (r *scanRequest) parsePaging(q map[string]string, maxLimit int) error {
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return fmt.Errorf("limit %s: want a whole number from 1 to %d", strconv.Quote(truncate(v)), maxLimit)
		}
		r.limit = n
	}
	if v, ok := q["tasks"]; ok {
		var err error
		if r.tasks, err = parseTasks(v); err != nil {
			return err
		}
	}
	if v, ok := q["cursor"]; ok {
		var err error
		if r.after, err = decodeCursor(v, r.identity()); err != nil {
			return err
		}
		r.hasAfter = true
	}
	return nil
}

// bounds computes the effective range: from, the prefix and the cursor
// raise the start; to and the prefix lower the end.
func (r *scanRequest) bounds() {
	raise := func(b []byte) {
		if !r.startSet || bytes.Compare(b, r.start) > 0 {
			r.start, r.startSet = b, true
		}
	}
	if r.hasFrom {
		raise(r.from)
	}
	if len(r.prefix) > 0 {
		raise(r.prefix)
	}
	r.floor, r.floorSet = r.start, r.startSet
	if r.hasAfter {
		raise(append(slices.Clip(r.after), 0)) // the smallest key after it
	}
	var end []byte
	endSet := false
	lower := func(b []byte) {
		if !endSet || bytes.Compare(b, end) < 0 {
			end, endSet = b, true
		}
	}
	if r.hasTo {
		lower(r.to)
	}
	if len(r.prefix) > 0 {
		if pe := prefixEnd(r.prefix); pe != nil {
			lower(pe)
		}
	}
	r.end = end
	r.endEmpty = endSet && r.startSet && bytes.Compare(r.start, end) >= 0 || endSet && len(end) == 0
}

// identity hashes what defines the scan's key set, so that a cursor is
// refused by a different scan.
func (r *scanRequest) identity() uint32 {
	h := fnv.New32a()
	var n [binary.MaxVarintLen64]byte
	put := func(b []byte, present bool) {
		if !present {
			h.Write([]byte{0})
			return
		}
		h.Write([]byte{1})
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
		h.Write(b)
	}
	put([]byte(r.store), true)
	put(r.prefix, true)
	put(r.from, r.hasFrom)
	put(r.to, r.hasTo)
	for _, t := range r.tasks {
		h.Write(n[:binary.PutUvarint(n[:], uint64(t))])
	}
	if r.windows {
		h.Write([]byte("windows"))
		h.Write(n[:binary.PutUvarint(n[:], uint64(r.timeFrom))])
		h.Write(n[:binary.PutUvarint(n[:], uint64(r.timeTo))])
	}
	return h.Sum32()
}

// prefixEnd returns the smallest key greater than every key with prefix p,
// nil when there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := slices.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

const cursorVersion = 1

// encodeCursor returns the opaque cursor of a page that ended at last.
func encodeCursor(identity uint32, last []byte) string {
	b := make([]byte, 5, 5+len(last))
	b[0] = cursorVersion
	binary.BigEndian.PutUint32(b[1:], identity)
	return base64.RawURLEncoding.EncodeToString(append(b, last...))
}

// decodeCursor returns the last key of the page a cursor continues from.
func decodeCursor(s string, identity uint32) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 5 || b[0] != cursorVersion {
		return nil, fmt.Errorf("invalid cursor %s: pass next_cursor from a previous page unchanged", strconv.Quote(truncate(s)))
	}
	if binary.BigEndian.Uint32(b[1:5]) != identity {
		return nil, errors.New("cursor belongs to a different scan: keep store, prefix, from, to and tasks as they were for the first page")
	}
	return b[5:], nil
}

// parseQuery parses a raw query, refusing unknown and repeated
// parameters: a typo such as max-lag must not pass silently.
func parseQuery(raw string, known ...string) (map[string]string, error) {
	vs, err := url.ParseQuery(raw)
	if err != nil {
		return nil, fmt.Errorf("query string: %w", err)
	}
	out := make(map[string]string, len(vs))
	for name, v := range vs {
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("unknown query parameter %s: valid are %s", strconv.Quote(truncate(name)), strings.Join(known, ", "))
		}
		if len(v) > 1 {
			return nil, fmt.Errorf("query parameter %s given %d times", name, len(v))
		}
		out[name] = v[0]
	}
	return out, nil
}

// parseReadOptions parses what lookups and scans share: key_encoding,
// max_lag (-1 when absent) and isolation ("" when absent).
func parseReadOptions(q map[string]string) (b64 bool, maxLag int64, iso Isolation, err error) {
	if b64, err = parseEncoding(q); err != nil {
		return false, -1, "", err
	}
	if maxLag, err = parseCount(q, "max_lag"); err != nil {
		return false, -1, "", err
	}
	switch v, ok := q["isolation"]; {
	case !ok:
	case v == string(IsolationLatest), v == string(IsolationCommitted):
		iso = Isolation(v)
	default:
		return false, -1, "", fmt.Errorf("isolation %s: want %s or %s", strconv.Quote(truncate(v)), IsolationLatest, IsolationCommitted)
	}
	return b64, maxLag, iso, nil
}

func parseEncoding(q map[string]string) (bool, error) {
	switch v := q["key_encoding"]; v {
	case "", encodingString:
		return false, nil
	case encodingBase64URL:
		return true, nil
	default:
		return false, fmt.Errorf("key_encoding %s: want %s (the default) or %s", strconv.Quote(truncate(v)), encodingString, encodingBase64URL)
	}
}

// parseCount parses a non-negative whole number, -1 when absent.
func parseCount(q map[string]string, name string) (int64, error) {
	v, ok := q[name]
	if !ok {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return -1, fmt.Errorf("%s %s: want a whole number, 0 or more", name, strconv.Quote(truncate(v)))
	}
	return n, nil
}

// parseTasks parses a set of task ids, returned sorted and deduplicated:
// a comma-separated list ("1,4,7"), or "~" and a base64url bitmap (bit i%8
// of byte i/8 is task i), the compact form instances use between them so
// that an owner of thousands of tasks still fits a request line.
func parseTasks(v string) ([]int32, error) {
	if v == "" {
		return nil, errors.New("tasks is empty: want task ids separated by commas")
	}
	if bm, ok := strings.CutPrefix(v, "~"); ok {
		b, err := base64.RawURLEncoding.DecodeString(bm)
		if err != nil {
			return nil, fmt.Errorf("tasks bitmap %s is not base64url: %w", strconv.Quote(truncate(bm)), err)
		}
		var out []int32
		for i, c := range b {
			for bit := range 8 {
				if c&(1<<bit) != 0 {
					out = append(out, int32(i*8+bit))
				}
			}
		}
		if len(out) == 0 {
			return nil, errors.New("tasks bitmap names no task")
		}
		return out, nil
	}
	var out []int32
	for s := range strings.SplitSeq(v, ",") {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("tasks: %s is not a task id", strconv.Quote(truncate(s)))
		}
		out = append(out, int32(n))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// decodeKey decodes a key-valued parameter: as it is, or base64url (RFC
// 4648 §5, padding optional).
func decodeKey(v string, b64 bool, what string) ([]byte, error) {
	if !b64 {
		return []byte(v), nil
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(v, "="))
	if err != nil {
		return nil, fmt.Errorf("%s %s is not base64url (RFC 4648 §5: A-Z a-z 0-9 - _): %w", what, strconv.Quote(truncate(v)), err)
	}
	return b, nil
}

// renderKey is the inverse of decodeKey for responses. A key that is not
// valid UTF-8 cannot be a JSON string: it is returned as base64url with
// ok false.
func renderKey(k []byte, b64 bool) (s string, asText bool) {
	if b64 || !utf8.Valid(k) {
		return base64.RawURLEncoding.EncodeToString(k), false
	}
	return string(k), true
}

// truncate shortens what an error message quotes from the request.
func truncate(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// formatTasks writes a sorted task set in parseTasks' shorter form.
func formatTasks(tasks []int32) string {
	if len(tasks) <= 16 {
		b := make([]byte, 0, 6*len(tasks))
		for i, t := range tasks {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(t), 10)
		}
		return string(b)
	}
	bm := make([]byte, tasks[len(tasks)-1]/8+1)
	for _, t := range tasks {
		bm[t/8] |= 1 << (t % 8)
	}
	return "~" + base64.RawURLEncoding.EncodeToString(bm)
}
