package query

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof" // its init also registers on http.DefaultServeMux, which nothing here serves
	"net/url"
	"path"
	"strings"
)

// Routes, as metric labels.
const (
	routeMetadata    = "metadata"
	routeStatus      = "status"
	routeKeys        = "keys"
	routeScan        = "scan"
	routeWindows     = "windows"
	routeWindowsScan = "windows_scan"
	routeMetrics     = "metrics"
	routeHealthz     = "healthz"
	routeReadyz      = "readyz"
	routeProfile     = "pprof"
	routeUnknown     = "unknown"
)

// routes declares the API on an http.ServeMux. Each path has a GET route
// (GET also matches HEAD) and a route for any other method that answers
// 405 in the one error shape, before authentication; "/" answers 404 in
// that shape after it. /healthz and /readyz need no token.
func (s *Server) routes() {
	s.mux = http.NewServeMux()
	for _, rt := range []struct {
		path, name string
		open       bool
		h          func(w *statusWriter, r *http.Request, o origin)
	}{
		{"/healthz", routeHealthz, true, func(w *statusWriter, _ *http.Request, _ origin) {
			writeJSON(w, http.StatusOK, map[string]any{"alive": true})
		}},
		{"/readyz", routeReadyz, true, func(w *statusWriter, _ *http.Request, _ origin) { s.readyz(w) }},
		{"/metrics", routeMetrics, false, func(w *statusWriter, r *http.Request, _ origin) { s.metricsH.ServeHTTP(w, r) }},
		{"/v1/metadata", routeMetadata, false, func(w *statusWriter, r *http.Request, _ origin) { s.metadata(w, r) }},
		{"/v1/status", routeStatus, false, func(w *statusWriter, _ *http.Request, _ origin) {
			writeJSON(w, http.StatusOK, s.localStatus())
		}},
		{"/v1/stores/{store}/keys/{key...}", routeKeys, false, s.key},
		{"/v1/stores/{store}/scan", routeScan, false, s.scan},
		{"/v1/stores/{store}/windows/{key...}", routeWindows, false, s.windows},
		{"/v1/stores/{store}/windows", routeWindowsScan, false, s.allWindows},
	} {
		s.mux.HandleFunc("GET "+rt.path, s.handler(rt.name, rt.open, rt.h))
		s.mux.HandleFunc(rt.path, s.refuseMethods(rt.name))
	}
	if s.opts.Profiling {
		s.profileRoutes()
	}
	s.mux.HandleFunc("/", s.handler(routeUnknown, false, func(w *statusWriter, r *http.Request, _ origin) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.methodNotAllowed(w, r) // answered after authentication: the path exists for no method
			return
		}
		msg := "no route for path " + truncate(w.path)
		if strings.HasPrefix(w.path, "/v1/stores/") {
			msg += ": want /v1/stores/{store}/keys/{key}, /v1/stores/{store}/scan, /v1/stores/{store}/windows/{key} or /v1/stores/{store}/windows"
		}
		s.failCode(w, http.StatusNotFound, codeNoRoute, msg)
	}))
}

// profileRoutes serves net/http/pprof's handlers under /debug/pprof/
// (Options.Profiling), authenticated like the API: the index and every
// named runtime profile (heap, allocs, goroutine, block, mutex,
// threadcreate), the CPU profile (profile?seconds=N) and the execution
// trace (trace?seconds=N), each bounded by the server's WriteTimeout. Not
// the command line, which may hold a secret (Options.Profiling), nor
// symbol, whose POST form the read-only API refuses: profiles carry their
// symbols.
func (s *Server) profileRoutes() {
	serve := func(h http.HandlerFunc) func(w *statusWriter, r *http.Request, _ origin) {
		return func(w *statusWriter, r *http.Request, _ origin) { h(w, r) }
	}
	s.mux.HandleFunc("GET /debug/pprof/profile", s.handler(routeProfile, false, serve(pprof.Profile)))
	s.mux.HandleFunc("GET /debug/pprof/trace", s.handler(routeProfile, false, serve(pprof.Trace)))
	s.mux.HandleFunc("GET /debug/pprof/cmdline", s.handler(routeProfile, false, func(w *statusWriter, _ *http.Request, _ origin) {
		s.failCode(w, http.StatusNotFound, codeNoRoute, "the command line is not served: it may hold a secret")
	}))
	s.mux.HandleFunc("GET /debug/pprof/", s.handler(routeProfile, false, serve(pprof.Index)))
	s.mux.HandleFunc("/debug/pprof/", s.refuseMethods(routeProfile))
}

// refuseMethods answers a route's methods other than GET and HEAD with 405,
// before authentication, counted under the route's name.
func (s *Server) refuseMethods(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sw := w.(*statusWriter)
		sw.route = name
		s.methodNotAllowed(sw, r)
	}
}

// handler wraps a route's handler: it names the route for the metrics and,
// unless the route is open, authenticates the request first.
func (s *Server) handler(name string, open bool, h func(w *statusWriter, r *http.Request, o origin)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sw := w.(*statusWriter)
		sw.route = name
		var o origin
		if !open {
			var ok bool
			if o, ok = s.authenticate(sw, r); !ok {
				return
			}
		}
		h(sw, r, o)
	}
}

func (s *Server) methodNotAllowed(w *statusWriter, r *http.Request) {
	w.Header().Set("Allow", "GET, HEAD")
	s.fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: the query API is read-only (GET)", truncate(r.Method)))
}

// dispatch hands r to the mux under its routing path (routePath). A path
// that is not clean outside /v1/stores/ routes nowhere: ServeMux would
// redirect it, and the API answers every request itself.
func (s *Server) dispatch(w *statusWriter, r *http.Request) {
	rp := routePath(w.path)
	if cleanPath(rp) != rp {
		rp = "/"
	}
	if rp != w.path {
		u := *r.URL
		u.Path, u.RawPath = rp, rp
		if p, err := url.PathUnescape(rp); err == nil {
			u.Path = p
		}
		r2 := *r
		r2.URL = &u
		r = &r2
	}
	s.mux.ServeHTTP(w, r)
}

// routePath is the path the mux routes a request by. ServeMux redirects a
// path that is not clean (a//b, a/./b, a/../b) to its cleaned form, but a
// key may be any bytes and a store name may contain '.': under /v1/stores/
// the store segment and the key (everything after keys/ or windows/) are
// routed as single segments with '/' and '.' escaped, so that the path's
// shape alone chooses the route. The handlers read the store and key from the
// path as received (parseStorePath), never from the routing path.
func routePath(escaped string) string {
	rest, ok := strings.CutPrefix(escaped, "/v1/stores/")
	if !ok {
		return escaped
	}
	store, sub, ok := strings.Cut(rest, "/")
	if !ok {
		return "/v1/stores/" + segment(rest)
	}
	for _, kind := range []string{"keys/", "windows/"} {
		if key, ok := strings.CutPrefix(sub, kind); ok {
			return "/v1/stores/" + segment(store) + "/" + kind + segment(key)
		}
	}
	return "/v1/stores/" + segment(store) + "/" + segment(sub)
}

// segment makes s one clean path segment: '/' and '.' escaped; an empty
// segment (an empty store name, refused by its handler) becomes "%00".
func segment(s string) string {
	if s == "" {
		return "%00"
	}
	return strings.NewReplacer("/", "%2F", ".", "%2E").Replace(s)
}

// cleanPath is ServeMux's notion of a clean path: path.Clean, keeping a
// trailing slash.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		return ""
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// parseStorePath returns the store and, under keys/ or windows/, the
// still-escaped key of a /v1/stores/ path as the client sent it. Keys may
// contain '/', escaped (%2F) or not: everything after /keys/ (/windows/) is
// the key.
func parseStorePath(escaped string) (store, escapedKey string, err error) {
	rest, ok := strings.CutPrefix(escaped, "/v1/stores/")
	if !ok {
		return "", "", fmt.Errorf("no route for path %s", truncate(escaped))
	}
	rawStore, sub, _ := strings.Cut(rest, "/")
	if store, err = url.PathUnescape(rawStore); err != nil {
		return "", "", fmt.Errorf("store name in path: %w", err)
	}
	if err := checkStoreName(store); err != nil {
		return "", "", err
	}
	escapedKey, ok = strings.CutPrefix(sub, "keys/")
	if !ok {
		escapedKey, _ = strings.CutPrefix(sub, "windows/")
	}
	return store, escapedKey, nil
}

// checkStoreName applies the topology's rule for store names.
func checkStoreName(name string) error {
	if name == "" {
		return errors.New("empty store name")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("invalid store name %q: a store name is letters, digits, '.', '_' and '-'", truncate(name))
		}
	}
	return nil
}
