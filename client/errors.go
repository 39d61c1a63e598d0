package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// ErrNotFound is matched (errors.Is) by the error of a Get whose key is
// absent: an *Error with Status 404 and a known store.
var ErrNotFound = errors.New("key not found")

// Error is a failed request to one instance: it could not be sent, or the
// instance answered with an error status.
type Error struct {
	// Instance is the process id of the instance asked, "" when the
	// request went to a seed endpoint not yet known by id.
	Instance string
	// Endpoint is the host:port asked.
	Endpoint string
	// Request is the method and path (with query) of the request.
	Request string
	// Status is the HTTP status, 0 when no answer came (Err says why).
	Status int
	// Code is the server's error code, when its answer has one.
	Code string
	// Message is the server's error message.
	Message string
	// AnsweredBy is the process id of the instance that answered, when
	// its answer names it (it may have forwarded the request).
	AnsweredBy string
	// Err is the transport error when no answer came.
	Err error
}

func (e *Error) Error() string {
	who := e.Endpoint
	if e.Instance != "" {
		who = fmt.Sprintf("instance %s (%s)", e.Instance, e.Endpoint)
	}
	if e.Status == 0 {
		return fmt.Sprintf("rackstream client: %s to %s: %v", e.Request, who, e.Err)
	}
	msg := fmt.Sprintf("rackstream client: %s to %s: %d %s", e.Request, who, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		msg += " [" + e.Code + "]"
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.AnsweredBy != "" && e.AnsweredBy != e.Instance {
		msg += " (answered by instance " + e.AnsweredBy + ")"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotFound) true for an absent key.
func (e *Error) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound && e.notFoundKey()
}

// notFoundKey tells an absent key (404 with the key named) from an
// unknown store or path (404 too): by the code where the server sends one
// (key_not_found), else by the message.
func (e *Error) notFoundKey() bool {
	switch e.Code {
	case "key_not_found":
		return true
	case "", "not_found":
		return strings.Contains(e.Message, "not found in store")
	}
	return false
}

// retryable reports whether another replica may answer where this one
// could not: no answer at all, unavailable (503), behind min_position
// (409), or a failure of that instance (5xx).
func (e *Error) retryable() bool {
	return e.Status == 0 || e.Status == http.StatusConflict || e.Status >= 500
}

// decodeError reads the server's error body tolerantly: {"error": "msg"},
// {"error": "msg", "code": "c"}, {"code": "c", "message": "msg"} and
// {"error": {"code": "c", "message": "msg"}} are all understood (the shape
// has changed between versions); anything else becomes the message,
// truncated.
func decodeError(body []byte) (code, msg, instance string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return "", truncate(string(body)), ""
	}
	str := func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	code, msg, instance = str(m["code"]), str(m["message"]), str(m["instance"])
	if e, ok := m["error"]; ok {
		if s := str(e); s != "" {
			msg = s
		} else {
			var inner map[string]json.RawMessage
			if json.Unmarshal(e, &inner) == nil {
				if c := str(inner["code"]); c != "" {
					code = c
				}
				if s := str(inner["message"]); s != "" {
					msg = s
				}
			}
		}
	}
	if code == "" && msg == "" {
		msg = truncate(string(body))
	}
	return code, truncate(msg), instance
}

func truncate(s string) string {
	const max = 256
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
