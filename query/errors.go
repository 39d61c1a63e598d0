package query

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// What clients see of errors (docs/design.md §10): one JSON shape, words a person
// reads and a code a program switches on, naming the instance that
// answered. Peer URLs, dial errors and storage errors are logged where
// they happen and never reach this shape.

// fail answers a JSON error with the status's generic code; 503s carry
// Retry-After.
func (s *Server) fail(w *statusWriter, status int, msg string) {
	s.failCode(w, status, "", msg)
}

// failCode answers a JSON error with a code ("" for the status's generic
// one). Past authentication the answer names this instance, the one that
// served it.
func (s *Server) failCode(w *statusWriter, status int, code, msg string) {
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", s.retryAfter)
	}
	if code == "" {
		code = statusCode(status)
	}
	body := errorBody{Error: msg, Code: code}
	if status != http.StatusUnauthorized && status != http.StatusMethodNotAllowed {
		body.Instance = s.rt.Self()
	}
	b, err := json.Marshal(body)
	if err != nil {
		s.log.Error("render an error answer", "err", err)
		b = []byte(`{"error":"the answer could not be rendered","code":"internal"}`)
		status = http.StatusInternalServerError
	}
	writeRaw(w, status, append(b, '\n'))
}

// errorBody is every error answer: what went wrong in words, a code a
// program can switch on, and the instance that answered.
type errorBody struct {
	Error    string `json:"error"`
	Code     string `json:"code"`
	Instance string `json:"instance,omitempty"`
}

// Error codes beyond the generic one of each status (statusCode).
const (
	codeMissingToken  = "missing_token"
	codeWrongToken    = "wrong_token"
	codeHopSignature  = "hop_signature_invalid"
	codeHopExpired    = "hop_expired"
	codeUnknownStore  = "unknown_store"
	codeKeyNotFound   = "key_not_found"
	codeNoRoute       = "no_route"
	codeBehindMinimum = "behind_min_position"
)

// statusCode is the generic error code of an HTTP status.
func statusCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "bad_request"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusConflict:
		return "conflict"
	case http.StatusBadGateway:
		return "bad_gateway"
	case http.StatusServiceUnavailable:
		return "unavailable"
	}
	return "internal"
}

// writeJSON answers v as JSON. A value that does not marshal (a bug)
// answers 500 with no detail.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":"the answer could not be rendered","code":"internal"}`)
	}
	writeRaw(w, code, append(b, '\n'))
}

func writeRaw(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(body)
}
