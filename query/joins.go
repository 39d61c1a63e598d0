package query

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
)

// A stream-stream join's store (ServedStore.Join) is read at the window
// routes: GET /v1/stores/{store}/windows/{key} answers the key's buffered
// records of both sides with timestamps in [time_from, time_to], routed
// like a key lookup; GET /v1/stores/{store}/windows every key's, merged
// across tasks and paged. Records come by timestamp, then side (left
// first), then input offset (and, across keys, then key).

// joinRecord is one buffered record of a key's records answer.
type joinRecord struct {
	Side      string          `json:"side"`
	Timestamp int64           `json:"timestamp"`
	Offset    int64           `json:"offset"`
	Value     json.RawMessage `json:"value"`
}

// joinRecordsAnswer is the 200 body of a key's records, none an empty
// list.
type joinRecordsAnswer struct {
	Key          string       `json:"key,omitempty"`
	KeyBase64URL string       `json:"key_base64url,omitempty"`
	Records      []joinRecord `json:"records"`
	answerMeta
}

// joinRecordItem is one record of a page of every key's records.
type joinRecordItem struct {
	Key          *string         `json:"key,omitempty"`
	KeyBase64URL string          `json:"key_base64url,omitempty"`
	Side         string          `json:"side"`
	Timestamp    int64           `json:"timestamp"`
	Offset       int64           `json:"offset"`
	Value        json.RawMessage `json:"value"`
	Task         int32           `json:"task"`
}

// joinRecordsPage is the 200 body of every key's records.
type joinRecordsPage struct {
	Records    []joinRecordItem   `json:"records"`
	NextCursor string             `json:"next_cursor,omitempty"`
	Generation int32              `json:"generation"`
	ServedBy   map[string][]int32 `json:"served_by"`
}

// joinAnswer renders a key's records read from a replica.
func joinAnswer(st ServedStore, key, keyB64 string, recs []StoredWindow, meta answerMeta) (*joinRecordsAnswer, error) {
	ans := &joinRecordsAnswer{Key: key, KeyBase64URL: keyB64, Records: make([]joinRecord, len(recs)), answerMeta: meta}
	for i, r := range recs {
		v, err := renderSide(st, r.Side, r.Value)
		if err != nil {
			return nil, err
		}
		ans.Records[i] = joinRecord{Side: r.Side, Timestamp: r.Start, Offset: r.Offset, Value: v}
	}
	return ans, nil
}

// renderSide renders a join record's value through its side's codec.
func renderSide(st ServedStore, side string, value []byte) (json.RawMessage, error) {
	if st.RenderSide == nil {
		return json.Marshal(value)
	}
	v, err := st.RenderSide(side, value)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// joinItemKey is a join record's raw key in a page: its timestamp (sign
// bit flipped, big-endian), its side (0 left, 1 right), its offset (sign
// bit flipped) and its key, so that byte order is the page's order.
func joinItemKey(ts int64, side string, offset int64, key []byte) []byte {
	b := make([]byte, 17, 17+len(key))
	binary.BigEndian.PutUint64(b, uint64(ts)^1<<63)
	if side != "left" {
		b[8] = 1
	}
	binary.BigEndian.PutUint64(b[9:], uint64(offset)^1<<63)
	return append(b, key...)
}

func splitJoinItemKey(b []byte) (ts int64, side string, offset int64, key []byte, ok bool) {
	if len(b) < 17 || b[8] > 1 {
		return 0, "", 0, nil, false
	}
	side = "left"
	if b[8] == 1 {
		side = "right"
	}
	return int64(binary.BigEndian.Uint64(b) ^ 1<<63), side, int64(binary.BigEndian.Uint64(b[9:]) ^ 1<<63), b[17:], true
}

// storedItemKey is a window's or join record's raw key in a page.
func storedItemKey(st ServedStore, w StoredWindow) []byte {
	if st.Join {
		return joinItemKey(w.Start, w.Side, w.Offset, w.Key)
	}
	return windowKey(w.Start, w.End, w.Key)
}

// peerJoinItems decodes a peer's page of join records into page items.
func (s *Server) peerJoinItems(body []joinRecordItem, c candidate, peer string, tasks []int32) ([]scanItem, *failure) {
	items := make([]scanItem, len(body))
	for i, r := range body {
		key, f := peerItem(c, peer, tasks, r.Key, r.Task)
		if f != nil {
			return nil, f
		}
		if r.Side != "left" && r.Side != "right" {
			return nil, &failure{code: http.StatusBadGateway, msg: fmt.Sprintf("%s %s answered a record of side %q", c.role, peer, truncate(r.Side))}
		}
		items[i] = scanItem{Task: r.Task, raw: joinItemKey(r.Timestamp, r.Side, r.Offset, key), Value: r.Value}
	}
	return items, nil
}

// writeJoinPage renders a page of join records and answers it.
func (s *Server) writeJoinPage(w *statusWriter, st ServedStore, ans *scanAnswer, b64 bool) {
	page := joinRecordsPage{Records: make([]joinRecordItem, len(ans.Items)), NextCursor: ans.NextCursor, Generation: ans.Generation, ServedBy: ans.ServedBy}
	for i, it := range ans.Items {
		ts, side, offset, key, _ := splitJoinItemKey(it.raw)
		rec := joinRecordItem{Side: side, Timestamp: ts, Offset: offset, Value: it.Value, Task: it.Task}
		if it.local {
			v, err := renderSide(st, side, it.rawValue)
			if err != nil {
				s.fail(w, http.StatusInternalServerError, fmt.Sprintf("%s record of key %q in store %s does not decode with its codec: %v", side, truncate(string(key)), st.Name, err))
				return
			}
			rec.Value = v
		}
		if k, text := renderKey(key, b64); text || b64 {
			rec.Key = &k
		} else {
			rec.KeyBase64URL = k
		}
		page.Records[i] = rec
	}
	writeJSON(w, http.StatusOK, page)
}
