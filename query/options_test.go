package query

import (
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// TestZeroOptionMeansZero is the table of what a zero in each field of
// Options means: what the field's doc says where zero is a setting, an
// error naming the field where it is not (a limit). No zero means "the
// default": the defaults are DefaultOptions'.
func TestZeroOptionMeansZero(t *testing.T) {
	for _, tc := range []struct {
		field   string
		zero    func(*Options)
		wantErr string               // a part of New's error, or ""
		means   func(*Server) string // what is wrong with an accepted zero, or ""
	}{
		{"Reader", func(o *Options) { o.Reader = nil }, "Options.Reader is required", nil},
		{"ExactlyOnce", func(o *Options) { o.ExactlyOnce = false }, "", func(s *Server) string {
			iso, ok := s.isolation(&statusWriter{ResponseWriter: httptest.NewRecorder()}, "")
			return unless(ok && iso == IsolationLatest, "at-least-once reads do not default to latest")
		}},
		{"Settings", func(o *Options) { o.Settings = nil }, "", func(s *Server) string {
			return unless(s.settings(&balancer.Placement{}) == nil, "no settings of its own, yet /v1/metadata shows some")
		}},
		{"Stores", func(o *Options) { o.Stores = nil }, "", func(s *Server) string {
			return unless(len(s.stores) == 0 && s.storeNames == "", "no stores, yet some are served")
		}},
		{"Partitioner", func(o *Options) { o.Partitioner = nil }, "no Options.Partitioner (partitioner)", nil},
		{"AuthToken", func(o *Options) { o.AuthToken = "" }, "", func(s *Server) string {
			return unless(s.token == nil && s.hopKey == nil && s.authorized(httptest.NewRequest("GET", "/v1/metadata", nil)),
				"no token, yet a request without one is refused")
		}},
		{"TLS", func(o *Options) { o.TLS = nil }, "", func(s *Server) string {
			return unless(s.srv.TLSConfig == nil, "no TLS config, yet the server serves HTTPS")
		}},
		{"PeerTLS", func(o *Options) { o.PeerTLS = nil }, "", func(s *Server) string {
			return unless(s.scheme == "http", "no peer TLS config, yet forwards use "+s.scheme)
		}},
		{"Profiling", func(o *Options) { o.Profiling = false }, "", func(s *Server) string {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/pprof/heap", nil))
			return unless(rec.Code == 404, "profiling off, yet /debug/pprof/heap answers "+strconv.Itoa(rec.Code))
		}},
		{"Registerer", func(o *Options) { o.Registerer = nil }, "", nil}, // metrics kept, not registered
		{"Gatherer", func(o *Options) { o.Gatherer = nil }, "", func(s *Server) string {
			return unless(s.metricsH != nil, "no gatherer and no /metrics handler")
		}},
		{"Logger", func(o *Options) { o.Logger = nil }, "", func(s *Server) string {
			return unless(s.log == slog.Default(), "a nil logger is not slog.Default()")
		}},
		{"ReadHeaderTimeout", func(o *Options) { o.ReadHeaderTimeout = 0 }, "Options.ReadHeaderTimeout 0: must be positive", nil},
		{"ReadTimeout", func(o *Options) { o.ReadTimeout = 0 }, "Options.ReadTimeout 0: must be positive", nil},
		{"WriteTimeout", func(o *Options) { o.WriteTimeout = 0 }, "Options.WriteTimeout 0: must be positive", nil},
		{"IdleTimeout", func(o *Options) { o.IdleTimeout = 0 }, "Options.IdleTimeout 0: must be positive", nil},
		{"MaxHeaderBytes", func(o *Options) { o.MaxHeaderBytes = 0 }, "Options.MaxHeaderBytes 0: must be positive", nil},
		{"MaxKeyBytes", func(o *Options) { o.MaxKeyBytes = 0 }, "Options.MaxKeyBytes 0: must be positive", nil},
		{"MaxScanLimit", func(o *Options) { o.MaxScanLimit = 0 }, "Options.MaxScanLimit 0: must be positive", nil},
		{"MaxForwards", func(o *Options) { o.MaxForwards = 0 }, "Options.MaxForwards 0: must be positive", nil},
		{"ForwardTimeout", func(o *Options) { o.ForwardTimeout = 0 }, "Options.ForwardTimeout 0: must be positive", nil},
		{"StatusTimeout", func(o *Options) { o.StatusTimeout = 0 }, "Options.StatusTimeout 0: must be positive", nil},
		{"HedgeAfter", func(o *Options) { o.HedgeAfter = 0 }, "Options.HedgeAfter 0: must be positive", nil},
		{"PeerFailureMemory", func(o *Options) { o.PeerFailureMemory = 0 }, "Options.PeerFailureMemory 0: must be positive", nil},
		{"MaxForwardBodyBytes", func(o *Options) { o.MaxForwardBodyBytes = 0 }, "Options.MaxForwardBodyBytes 0: must be positive", nil},
		{"RetryAfter", func(o *Options) { o.RetryAfter = 0 }, "Options.RetryAfter 0: must be positive", nil},
	} {
		t.Run(tc.field, func(t *testing.T) {
			o := DefaultOptions()
			o.Reader, o.Logger = &fakeReader{self: "n1"}, discardLogger()
			tc.zero(&o)
			s, err := New(o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("a zero %s: %v; want an error containing %q", tc.field, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("a zero %s: %v", tc.field, err)
			}
			if tc.means != nil {
				if why := tc.means(s); why != "" {
					t.Error(why)
				}
			}
		})
	}
	// Every field of Options is in the table.
	if n := reflect.TypeFor[Options]().NumField(); n != 26 {
		t.Errorf("Options has %d fields; the table covers 26: add the new ones", n)
	}
}

func unless(ok bool, why string) string {
	if ok {
		return ""
	}
	return why
}
