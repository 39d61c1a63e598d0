package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// ScanRequest selects the keys of a scan. Nil byte slices are unset.
type ScanRequest struct {
	// Prefix keeps keys that start with it.
	Prefix []byte
	// From and To bound the keys to [From, To].
	From, To []byte
	// Limit is the page size [the server's default, 100].
	Limit int
	// Tasks restricts the scan to these tasks [all].
	Tasks []int32
	// Cursor continues after a previous page (Page.NextCursor); keep the
	// rest of the request as it was.
	Cursor string
}

// Page is one page of a scan.
type Page struct {
	Items []Item
	// NextCursor continues the scan; "" on the last page.
	NextCursor string
	Generation int32
	// ServedBy maps each instance that answered to its tasks.
	ServedBy map[string][]int32
}

// Item is one key of a scan page.
type Item struct {
	Key []byte
	// Raw is the value as JSON, rendered by the store's codec.
	Raw  json.RawMessage
	Task int32
}

// Decode unmarshals the item's JSON value into dst.
func (it *Item) Decode(dst any) error { return json.Unmarshal(it.Raw, dst) }

type scanAnswer struct {
	Items []struct {
		Key          *string         `json:"key"`
		KeyBase64URL string          `json:"key_base64url"`
		Value        json.RawMessage `json:"value"`
		Task         int32           `json:"task"`
	} `json:"items"`
	NextCursor string             `json:"next_cursor"`
	Generation int32              `json:"generation"`
	ServedBy   map[string][]int32 `json:"served_by"`
}

// Scan reads one page of store's keys in key order. One instance answers,
// gathering the tasks' pages from their owners (or, with MaxLag, standbys);
// another is asked when it cannot.
func (c *Client) Scan(ctx context.Context, store string, req ScanRequest, opts ...ReadOpt) (*Page, error) {
	rc := c.readConfig(opts)
	var page *Page
	err := c.paged(ctx, "/v1/stores/"+url.PathEscape(store)+"/scan", scanQuery(req, rc), func(body []byte) (int32, error) {
		var err error
		if page, err = parsePage(body); err != nil {
			return 0, err
		}
		return page.Generation, nil
	})
	return page, err
}

// paged asks one instance, then another, for GET path?q, a page of a
// paged read, and hands its 200 answer to parse, which returns the page's
// generation.
func (c *Client) paged(ctx context.Context, path string, q url.Values, parse func(body []byte) (int32, error)) error {
	var errs []error
	for attempt := range 2 {
		p, err := c.placement(ctx, attempt > 0)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		in, body, err := c.tryEach(ctx, p.instances(c.next.Add(1)), path, q, &errs)
		if err != nil {
			return err
		}
		if body == nil {
			continue
		}
		gen, err := parse(body)
		if err != nil {
			return &Error{Instance: in.id, Endpoint: in.endpoint, Request: "GET " + path, Status: http.StatusOK,
				Message: "page does not decode", Err: err}
		}
		if gen != p.generation {
			c.markStale(p)
		}
		return nil
	}
	return errors.Join(errs...)
}

func scanQuery(req ScanRequest, rc readConfig) url.Values {
	q := url.Values{"key_encoding": {"base64url"}}
	enc := base64.RawURLEncoding.EncodeToString
	if req.Prefix != nil {
		q.Set("prefix", enc(req.Prefix))
	}
	if req.From != nil {
		q.Set("from", enc(req.From))
	}
	if req.To != nil {
		q.Set("to", enc(req.To))
	}
	pagingQuery(q, req.Limit, req.Tasks, req.Cursor, rc)
	return q
}

// pagingQuery sets what every paged read takes in q.
func pagingQuery(q url.Values, limit int, tasks []int32, cursor string, rc readConfig) {
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if len(tasks) > 0 {
		ts := make([]string, len(tasks))
		for i, t := range tasks {
			ts[i] = strconv.Itoa(int(t))
		}
		q.Set("tasks", strings.Join(ts, ","))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if rc.maxLag >= 0 {
		q.Set("max_lag", strconv.FormatInt(rc.maxLag, 10))
	}
}

func parsePage(body []byte) (*Page, error) {
	var a scanAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, err
	}
	page := &Page{Items: make([]Item, len(a.Items)), NextCursor: a.NextCursor, Generation: a.Generation, ServedBy: a.ServedBy}
	for i, it := range a.Items {
		k, err := itemKey(i, it.Key, it.KeyBase64URL)
		if err != nil {
			return nil, err
		}
		page.Items[i] = Item{Key: k, Raw: it.Value, Task: it.Task}
	}
	return page, nil
}

// itemKey decodes the i-th item's key, base64url as the client asks.
func itemKey(i int, key *string, keyBase64URL string) ([]byte, error) {
	enc := keyBase64URL
	if key != nil {
		enc = *key // base64url, as asked
	}
	k, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(enc, "="))
	if err != nil {
		return nil, fmt.Errorf("item %d: key %q is not base64url: %w", i, truncate(enc), err)
	}
	return k, nil
}

// Scanner returns every key of the scan, page after page, in key order,
// each once; it stops at the first error, yielding it.
func (c *Client) Scanner(ctx context.Context, store string, req ScanRequest, opts ...ReadOpt) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		for {
			page, err := c.Scan(ctx, store, req, opts...)
			if err != nil {
				yield(Item{}, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			req.Cursor = page.NextCursor
		}
	}
}
