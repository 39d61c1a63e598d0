package query

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strconv"
	"time"
)

// A forwarded hop is authenticated without ever sending the token: the
// forwarding instance signs the request with HMAC-SHA256 under a key derived
// from http.auth.token, and the receiver checks the signature. A peer (or
// anyone on the path, without TLS) that sees one forwarded request learns a
// signature valid for that request to that instance only, for at most
// hopWindow: the key stays secret, and a replayed request is a read-only GET
// that returns what the original did.
//
// Every request that carries HeaderForwardedBy, signed or not, is answered
// from the receiver's own replicas, never forwarded again: the marker only
// narrows what a request may do, so at most one hop holds under any
// authentication, even with stale placements. Only a hop whose signature
// verifies gets a peer's privilege: keys as long as stored keys are
// (forwardedMaxKey). A request that merely carries the marker is otherwise
// a client's, whatever it claims. Without a token there is no key, so no
// hop is authenticated and every request is a client's.

// Headers of a signed hop, besides HeaderForwardedBy and HeaderGeneration.
const (
	// HeaderForwardTime is the hop's signing time, in Unix seconds.
	HeaderForwardTime = "Rackstream-Forward-Time"
	// HeaderForwardSignature is the hop's HMAC-SHA256, base64url without
	// padding.
	HeaderForwardSignature = "Rackstream-Forward-Signature"
)

// hopWindow is how far a hop's signing time may be from the receiver's
// clock, either way: it bounds replay and tolerates clock skew between
// instances (keep their clocks in sync, e.g. with NTP).
const hopWindow = 30 * time.Second

// hopKeyLabel derives the hop key from the token, and versions the scheme.
const hopKeyLabel = "rackstream-forward-v1"

// hopKey derives the key that signs hops from the token: HMAC-SHA256(token,
// hopKeyLabel). Nil without a token.
func hopKey(token string) []byte {
	if token == "" {
		return nil
	}
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(hopKeyLabel))
	return m.Sum(nil)
}

// hop is what a hop's signature covers.
type hop struct {
	method     string
	path       string // escaped, as on the request line
	rawQuery   string
	generation string
	unix       string // signing time, decimal Unix seconds
	from       string // the forwarding instance's process id
	to         string // the receiving instance's: a hop replayed to another instance does not verify
}

// mac returns the hop's HMAC under key. Each field is length-prefixed, so
// that no two different hops sign the same bytes.
func (h hop) mac(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	var n [4]byte
	for _, f := range []string{hopKeyLabel, h.method, h.path, h.rawQuery, h.generation, h.unix, h.from, h.to} {
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return m.Sum(nil)
}

// signHop marks req as a hop forwarded by from to the instance to at
// generation gen and, with a key, signs it at now. req's URL must be final.
func signHop(req *http.Request, key []byte, from, to string, gen int32, now time.Time) {
	h := hop{method: req.Method, path: req.URL.EscapedPath(), rawQuery: req.URL.RawQuery,
		generation: strconv.FormatInt(int64(gen), 10), unix: strconv.FormatInt(now.Unix(), 10), from: from, to: to}
	req.Header.Set(HeaderForwardedBy, h.from)
	req.Header.Set(HeaderGeneration, h.generation)
	if key == nil {
		return
	}
	req.Header.Set(HeaderForwardTime, h.unix)
	req.Header.Set(HeaderForwardSignature, base64.RawURLEncoding.EncodeToString(h.mac(key)))
}

// hopCheck is the outcome of checking a request's hop signature.
type hopCheck int

const (
	hopNone    hopCheck = iota // no signature, or no key to check it with: a client
	hopValid                   // an authenticated peer
	hopBadMAC                  // a signature that does not verify
	hopExpired                 // a signature outside hopWindow
)

// checkHop checks r's hop signature with key, as received by the instance
// self at now. The comparison is in constant time (hmac.Equal); the time is
// checked after the MAC, so that a forged request learns nothing from which
// check failed.
func checkHop(r *http.Request, key []byte, self string, now time.Time) hopCheck {
	sig := r.Header.Get(HeaderForwardSignature)
	if key == nil || sig == "" {
		return hopNone
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return hopBadMAC
	}
	h := hop{method: r.Method, path: r.URL.EscapedPath(), rawQuery: r.URL.RawQuery,
		generation: r.Header.Get(HeaderGeneration), unix: r.Header.Get(HeaderForwardTime), from: r.Header.Get(HeaderForwardedBy), to: self}
	if !hmac.Equal(got, h.mac(key)) {
		return hopBadMAC
	}
	t, err := strconv.ParseInt(h.unix, 10, 64)
	if err != nil {
		return hopBadMAC
	}
	if d := now.Sub(time.Unix(t, 0)); d > hopWindow || d < -hopWindow {
		return hopExpired
	}
	return hopValid
}
