package page

import (
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
)

// static holds the page: index.html, names.js, loss.js, app.js, style.css,
// favicon.svg.
//
//go:embed static
var static embed.FS

// ContentSecurityPolicy is sent with every page response: scripts, styles,
// images and requests from the page's own origin only; no inline script or
// style (the page has none, and injected markup could not run any); no
// plugins, no framing, no form posts elsewhere.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Options configure Handler. Query is required.
type Options struct {
	// Query is the query server (or any handler answering /v1/metadata as
	// it does): the requests that aren't the page's go to it, and the
	// what-if reads the metadata through it.
	Query http.Handler
	// MaxMetadataBytes bounds the /v1/metadata document the what-if reads
	// [64 MiB].
	MaxMetadataBytes int
	// Logger receives the handler's logs [slog.Default()].
	Logger *slog.Logger
}

// Handler serves the page and /v1/whatif, and passes every other request
// to Options.Query.
type Handler struct {
	query   http.Handler
	mux     *http.ServeMux
	maxMeta int
	log     *slog.Logger
}

// New returns the handler. It panics without Options.Query: that is a
// wiring mistake, not a runtime condition.
func New(opts Options) *Handler {
	if opts.Query == nil {
		panic("page: Options.Query is required")
	}
	if opts.MaxMetadataBytes <= 0 {
		opts.MaxMetadataBytes = 64 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &Handler{query: opts.Query, mux: http.NewServeMux(), maxMeta: opts.MaxMetadataBytes, log: opts.Logger}
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	fileServer := http.StripPrefix("/ui/", http.FileServerFS(files))
	h.mux.Handle("GET /{$}", pageHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, files, "index.html")
	})))
	h.mux.Handle("GET /ui/{$}", pageHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, files, "index.html")
	})))
	h.mux.Handle("GET /ui/", pageHeaders(fileServer))
	h.mux.Handle("GET /v1/whatif", pageHeaders(http.HandlerFunc(h.whatIf)))
	h.mux.Handle("/", pageHeaders(http.HandlerFunc(methodNotAllowed)))
	return h
}

// ServeHTTP answers the page's routes and hands the rest to the query
// server as they came: the dispatch is by exact path, not through the
// ServeMux, because a ServeMux would clean and redirect paths (a key such
// as "a//b" in /v1/stores/s/keys/a//b must reach the query server as is).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if ours(r.URL.Path) {
		h.mux.ServeHTTP(w, r)
		return
	}
	h.query.ServeHTTP(w, r)
}

// ours reports whether path is one of the page's routes.
func ours(path string) bool {
	return path == "/" || path == "/ui" || strings.HasPrefix(path, "/ui/") || path == "/v1/whatif"
}

// pageHeaders sets the headers every page response carries.
func pageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		// The files are in the binary: an upgrade changes them, so
		// browsers revalidate rather than cache them for long.
		hd.Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", "GET, HEAD")
	writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed: the page and /v1/whatif are read-only (GET)")
}
