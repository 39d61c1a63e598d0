package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// Window is one window of a window or session store: its key, its bounds
// (End exclusive for tumbling and hopping windows, inclusive for sliding
// windows and sessions) and its aggregate.
type Window struct {
	Key        []byte
	Start, End time.Time
	// Raw is the aggregate as JSON, rendered by the store's codec.
	Raw json.RawMessage
	// Task is the window's task; set in a WindowPage only.
	Task int32
}

// Decode unmarshals the window's JSON aggregate into dst.
func (w *Window) Decode(dst any) error { return json.Unmarshal(w.Raw, dst) }

// KeyWindows is a key's windows as one replica answered them, oldest
// first, with who answered as Value says it.
type KeyWindows struct {
	Key     []byte
	Windows []Window
	Task    int32
	// ServedBy, Role, Lag, Position and Generation are Value's.
	ServedBy   string
	Role       string
	Lag        int64
	Position   int64
	Generation int32
}

type windowJSON struct {
	Key          *string         `json:"key"`
	KeyBase64URL string          `json:"key_base64url"`
	Start        int64           `json:"start"`
	End          int64           `json:"end"`
	Value        json.RawMessage `json:"value"`
	Task         int32           `json:"task"`
}

func (w windowJSON) window(key []byte) Window {
	return Window{Key: key, Start: time.UnixMilli(w.Start), End: time.UnixMilli(w.End), Raw: w.Value, Task: w.Task}
}

type windowsAnswer struct {
	Windows []windowJSON `json:"windows"`
	answerMeta
}

func (a *windowsAnswer) meta() *answerMeta { return &a.answerMeta }

// timeRange is the query of a time range: zero times are unset (from the
// epoch, to no bound).
func timeRange(from, to time.Time) url.Values {
	q := url.Values{}
	if !from.IsZero() {
		q.Set("time_from", strconv.FormatInt(from.UnixMilli(), 10))
	}
	if !to.IsZero() {
		q.Set("time_to", strconv.FormatInt(to.UnixMilli(), 10))
	}
	return q
}

// Windows reads key's windows in store, a window or session store, in the
// time range [from, to] (zero: unbounded): the windows starting in it, or
// the sessions that end at or after from and start at or before to. It
// asks as Get does, with the same options; a key without windows has none
// (no error).
func (c *Client) Windows(ctx context.Context, store string, key []byte, from, to time.Time, opts ...ReadOpt) (*KeyWindows, error) {
	var a windowsAnswer
	if err := c.lookup(ctx, store, "windows", key, timeRange(from, to), opts, &a); err != nil {
		return nil, err
	}
	kw := &KeyWindows{Key: key, Windows: make([]Window, len(a.Windows)), Task: a.Task, ServedBy: a.ServedBy, Role: a.Role,
		Lag: a.Lag, Position: a.Position, Generation: a.Generation}
	for i, w := range a.Windows {
		kw.Windows[i] = w.window(key)
	}
	return kw, nil
}

// WindowsRequest selects the windows of AllWindows.
type WindowsRequest struct {
	// From and To bound the time range [From, To]; zero is unbounded.
	From, To time.Time
	// Limit is the page size [the server's default, 100].
	Limit int
	// Tasks restricts the read to these tasks [all].
	Tasks []int32
	// Cursor continues after a previous page (WindowPage.NextCursor); keep
	// the rest of the request as it was.
	Cursor string
}

// WindowPage is one page of every key's windows, by start, then end,
// then key.
type WindowPage struct {
	Windows []Window
	// NextCursor continues the read; "" on the last page.
	NextCursor string
	Generation int32
	// ServedBy maps each instance that answered to its tasks.
	ServedBy map[string][]int32
}

type windowPageJSON struct {
	Windows    []windowJSON       `json:"windows"`
	NextCursor string             `json:"next_cursor"`
	Generation int32              `json:"generation"`
	ServedBy   map[string][]int32 `json:"served_by"`
}

// AllWindows reads one page of every key's windows in store, a window or
// session store, in req's time range. One instance answers, gathering the
// tasks' pages from their owners (or, with MaxLag, standbys), as Scan.
func (c *Client) AllWindows(ctx context.Context, store string, req WindowsRequest, opts ...ReadOpt) (*WindowPage, error) {
	var page *WindowPage
	err := c.timePage(ctx, store, req, opts, func(body []byte) (int32, error) {
		var a windowPageJSON
		if err := json.Unmarshal(body, &a); err != nil {
			return 0, err
		}
		page = &WindowPage{Windows: make([]Window, len(a.Windows)), NextCursor: a.NextCursor, Generation: a.Generation, ServedBy: a.ServedBy}
		for i, w := range a.Windows {
			k, err := itemKey(i, w.Key, w.KeyBase64URL)
			if err != nil {
				return 0, err
			}
			page.Windows[i] = w.window(k)
		}
		return page.Generation, nil
	})
	return page, err
}

// timePage reads one page of a store's time-range route
// (/v1/stores/{store}/windows) for req, handing its body to decode.
func (c *Client) timePage(ctx context.Context, store string, req WindowsRequest, opts []ReadOpt, decode func(body []byte) (int32, error)) error {
	q := timeRange(req.From, req.To)
	q.Set("key_encoding", "base64url")
	pagingQuery(q, req.Limit, req.Tasks, req.Cursor, c.readConfig(opts))
	return c.paged(ctx, "/v1/stores/"+url.PathEscape(store)+"/windows", q, decode)
}
