package client

import (
	"context"
	"encoding/json"
	"time"
)

// JoinRecord is one record a stream-stream join keeps in its store, from
// either side, while its window is open.
type JoinRecord struct {
	Key []byte
	// Side is "left" or "right".
	Side string
	// Timestamp is the record's timestamp; Offset its input offset.
	Timestamp time.Time
	Offset    int64
	// Raw is the record's value as JSON, rendered by its side's codec.
	Raw json.RawMessage
	// Task is the record's task; set in a JoinRecordPage only.
	Task int32
}

// Decode unmarshals the record's JSON value into dst.
func (r *JoinRecord) Decode(dst any) error { return json.Unmarshal(r.Raw, dst) }

// KeyJoinRecords is a key's join records as one replica answered them, by
// timestamp, then side (left first), then offset, with who answered as
// Value says it.
type KeyJoinRecords struct {
	Key     []byte
	Records []JoinRecord
	Task    int32
	// ServedBy, Role, Lag, Position and Generation are Value's.
	ServedBy   string
	Role       string
	Lag        int64
	Position   int64
	Generation int32
}

type joinRecordJSON struct {
	Key          *string         `json:"key"`
	KeyBase64URL string          `json:"key_base64url"`
	Side         string          `json:"side"`
	Timestamp    int64           `json:"timestamp"`
	Offset       int64           `json:"offset"`
	Value        json.RawMessage `json:"value"`
	Task         int32           `json:"task"`
}

func (r joinRecordJSON) record(key []byte) JoinRecord {
	return JoinRecord{Key: key, Side: r.Side, Timestamp: time.UnixMilli(r.Timestamp), Offset: r.Offset, Raw: r.Value, Task: r.Task}
}

type joinRecordsAnswer struct {
	Records []joinRecordJSON `json:"records"`
	answerMeta
}

func (a *joinRecordsAnswer) meta() *answerMeta { return &a.answerMeta }

// JoinRecords reads key's records in store, a stream-stream join's store,
// with timestamps in [from, to] (zero: unbounded), both sides. It asks as
// Get does, with the same options; a key without records has none (no
// error).
func (c *Client) JoinRecords(ctx context.Context, store string, key []byte, from, to time.Time, opts ...ReadOpt) (*KeyJoinRecords, error) {
	var a joinRecordsAnswer
	if err := c.lookup(ctx, store, "windows", key, timeRange(from, to), opts, &a); err != nil {
		return nil, err
	}
	kr := &KeyJoinRecords{Key: key, Records: make([]JoinRecord, len(a.Records)), Task: a.Task, ServedBy: a.ServedBy, Role: a.Role,
		Lag: a.Lag, Position: a.Position, Generation: a.Generation}
	for i, r := range a.Records {
		kr.Records[i] = r.record(key)
	}
	return kr, nil
}

// JoinRecordPage is one page of every key's join records, by timestamp,
// then side, then offset, then key.
type JoinRecordPage struct {
	Records []JoinRecord
	// NextCursor continues the read; "" on the last page.
	NextCursor string
	Generation int32
	// ServedBy maps each instance that answered to its tasks.
	ServedBy map[string][]int32
}

type joinRecordPageJSON struct {
	Records    []joinRecordJSON   `json:"records"`
	NextCursor string             `json:"next_cursor"`
	Generation int32              `json:"generation"`
	ServedBy   map[string][]int32 `json:"served_by"`
}

// AllJoinRecords reads one page of every key's records in store, a
// stream-stream join's store, in req's time range, as AllWindows reads
// windows.
func (c *Client) AllJoinRecords(ctx context.Context, store string, req WindowsRequest, opts ...ReadOpt) (*JoinRecordPage, error) {
	var page *JoinRecordPage
	err := c.timePage(ctx, store, req, opts, func(body []byte) (int32, error) {
		var a joinRecordPageJSON
		if err := json.Unmarshal(body, &a); err != nil {
			return 0, err
		}
		page = &JoinRecordPage{Records: make([]JoinRecord, len(a.Records)), NextCursor: a.NextCursor, Generation: a.Generation, ServedBy: a.ServedBy}
		for i, r := range a.Records {
			k, err := itemKey(i, r.Key, r.KeyBase64URL)
			if err != nil {
				return 0, err
			}
			page.Records[i] = r.record(k)
		}
		return page.Generation, nil
	})
	return page, err
}
