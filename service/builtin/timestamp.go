package builtin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/processor"
)

// fieldTimestamp returns the extractor of processor.timestamp.field: the
// record's time is the top-level JSON field of its value, epoch
// milliseconds (a number or a string of digits) or an RFC 3339 string. A
// record without it fails, and so follows the error policy.
func fieldTimestamp(field string) processor.TimestampExtractor {
	return func(r *kgo.Record) (time.Time, error) {
		if r.Value == nil {
			// A tombstone carries no time; the handlers skip it.
			return r.Timestamp, nil
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r.Value, &obj); err != nil || obj == nil {
			return time.Time{}, fmt.Errorf("value is not a JSON object (processor.timestamp.field=%s): %s", field, quote(string(r.Value)))
		}
		raw, ok := obj[field]
		if !ok {
			return time.Time{}, fmt.Errorf("JSON value has no field %q (processor.timestamp.field)", field)
		}
		raw = bytes.TrimSpace(raw)
		s := string(raw)
		if len(raw) > 0 && raw[0] == '"' {
			if err := json.Unmarshal(raw, &s); err != nil {
				return time.Time{}, fmt.Errorf("field %q: %w", field, err)
			}
		}
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.UnixMilli(ms), nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("field %q: %s is neither epoch milliseconds nor an RFC 3339 time", field, quote(s))
		}
		return t, nil
	}
}
