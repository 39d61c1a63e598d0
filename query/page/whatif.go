package page

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/internal/textsafe"
)

// HeaderGeneration carries the placement generation a what-if answer was
// computed for (the same header name the query server uses between peers).
const HeaderGeneration = "Rackstream-Generation"

// maxSelectorBytes bounds one lose= selector: longer than any tag
// (KEY=VALUE, 51 characters at most) or instance id (255 bytes), so that
// an error never echoes more.
const maxSelectorBytes = 512

// whatIf answers GET /v1/whatif?lose=SEL[&lose=SEL...]: assignor.WhatIf on
// this instance's /v1/metadata document, as `rackstream assign --lose`
// computes it from the same document.
func (h *Handler) whatIf(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "query string: "+err.Error())
		return
	}
	for k := range q {
		if k != "lose" {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown parameter \"%s\": /v1/whatif takes lose=KEY=VALUE (a tag value) or lose=ID (an instance), repeatable", textsafe.Short(k)))
			return
		}
	}
	if len(q["lose"]) == 0 {
		writeError(w, http.StatusBadRequest, "missing lose: /v1/whatif?lose=KEY=VALUE (a tag value) or lose=ID (an instance), repeatable")
		return
	}
	lose := make([]assignor.Selector, 0, len(q["lose"]))
	for _, s := range q["lose"] {
		if len(s) > maxSelectorBytes {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("lose \"%s\" is %d bytes; the limit is %d (no tag or instance id is that long)", textsafe.Short(s), len(s), maxSelectorBytes))
			return
		}
		sel, err := assignor.ParseSelector(s)
		if err != nil {
			writeError(w, http.StatusBadRequest, "lose: "+err.Error())
			return
		}
		lose = append(lose, sel)
	}

	// The metadata is asked of the query server as this very request
	// (same headers, TLS state and context), so that the query server
	// alone decides who may read it and how it fails.
	code, hdr, body := h.metadata(r)
	if code != http.StatusOK {
		for _, k := range []string{"Content-Type", "Retry-After", "WWW-Authenticate"} {
			if v := hdr.Get(k); v != "" {
				w.Header().Set(k, v)
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		w.Write(body)
		return
	}
	var gen struct {
		Generation int32 `json:"generation"`
	}
	if err := json.Unmarshal(body, &gen); err != nil {
		h.log.Error("what-if: the metadata document does not decode", "err", err)
		writeError(w, http.StatusInternalServerError, "what-if: this instance's metadata document does not decode")
		return
	}
	// The one computation behind `rackstream assign --lose` too.
	_, _, res, err := assignor.LossOfDocument(body, lose)
	var selErr *assignor.SelectorError
	if errors.As(err, &selErr) {
		// A selector that names no client: the request is at fault.
		writeError(w, http.StatusBadRequest, err.Error())
		return
	} else if err != nil {
		h.log.Error("what-if: this instance's metadata document cannot be analysed", "err", err)
		writeError(w, http.StatusInternalServerError, "what-if: this instance's metadata document cannot be analysed")
		return
	}
	w.Header().Set(HeaderGeneration, strconv.FormatInt(int64(gen.Generation), 10))
	writeJSON(w, http.StatusOK, res)
}

// metadata runs GET /v1/metadata through the query server as r and returns
// its status, headers and body (the body bounded by MaxMetadataBytes). The
// request is a client's: headers between instances (Rackstream-*) are
// dropped, as no peer ever asks for a what-if.
func (h *Handler) metadata(r *http.Request) (int, http.Header, []byte) {
	sub := r.Clone(r.Context())
	for k := range sub.Header {
		if strings.HasPrefix(k, "Rackstream-") {
			sub.Header.Del(k)
		}
	}
	sub.Method = http.MethodGet
	sub.URL.Path, sub.URL.RawPath, sub.URL.RawQuery = "/v1/metadata", "", ""
	sub.RequestURI = sub.URL.RequestURI()
	rec := &recorder{header: http.Header{}, code: http.StatusOK, max: h.maxMeta}
	h.query.ServeHTTP(rec, sub)
	if rec.over {
		h.log.Error("what-if: the metadata document exceeds its bound", "max_bytes", h.maxMeta)
		return http.StatusInternalServerError, http.Header{"Content-Type": {"application/json"}},
			errorJSON(http.StatusInternalServerError, "what-if: this instance's metadata document exceeds "+strconv.Itoa(h.maxMeta)+" bytes")
	}
	return rec.code, rec.header, rec.body.Bytes()
}

// recorder is the http.ResponseWriter of an in-process request: it keeps
// the status, headers and up to max bytes of body.
type recorder struct {
	header      http.Header
	code        int
	wroteHeader bool
	body        bytes.Buffer
	max         int
	over        bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.code, r.wroteHeader = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	if r.body.Len()+len(b) > r.max {
		r.over = true
		return 0, fmt.Errorf("response exceeds %d bytes", r.max)
	}
	return r.body.Write(b)
}

// errorBody is the query server's error shape: the message in words and a
// code a program can test.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func errorJSON(status int, msg string) []byte {
	code := "internal"
	switch status {
	case http.StatusBadRequest:
		code = "bad_request"
	case http.StatusMethodNotAllowed:
		code = "method_not_allowed"
	}
	b, _ := json.Marshal(errorBody{Error: msg, Code: code})
	return append(b, '\n')
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(errorJSON(status, msg))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "render answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
