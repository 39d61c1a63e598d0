package query

import (
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// TestZeroOption is the table of what a zero in each field of Options
// means: what the field's doc says where zero is a setting, DefaultOptions'
// value for the partitioner and every limit (a server without bounds is
// not a setting).
func TestZeroOption(t *testing.T) {
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
		{"Partitioner", func(o *Options) { o.Partitioner = nil }, "", func(s *Server) string {
			return unless(s.opts.Partitioner != nil && s.opts.Partitioner.Name() == DefaultOptions().Partitioner.Name(), "no partitioner is not murmur2")
		}},
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
		{"ReadHeaderTimeout", func(o *Options) { o.ReadHeaderTimeout = 0 }, "", func(s *Server) string {
			return unless(s.opts.ReadHeaderTimeout == DefaultOptions().ReadHeaderTimeout, "a zero ReadHeaderTimeout is not its default")
		}},
		{"ReadTimeout", func(o *Options) { o.ReadTimeout = 0 }, "", func(s *Server) string {
			return unless(s.opts.ReadTimeout == DefaultOptions().ReadTimeout, "a zero ReadTimeout is not its default")
		}},
		{"WriteTimeout", func(o *Options) { o.WriteTimeout = 0 }, "", func(s *Server) string {
			return unless(s.opts.WriteTimeout == DefaultOptions().WriteTimeout, "a zero WriteTimeout is not its default")
		}},
		{"IdleTimeout", func(o *Options) { o.IdleTimeout = 0 }, "", func(s *Server) string {
			return unless(s.opts.IdleTimeout == DefaultOptions().IdleTimeout, "a zero IdleTimeout is not its default")
		}},
		{"MaxHeaderBytes", func(o *Options) { o.MaxHeaderBytes = 0 }, "", func(s *Server) string {
			return unless(s.opts.MaxHeaderBytes == DefaultOptions().MaxHeaderBytes, "a zero MaxHeaderBytes is not its default")
		}},
		{"MaxKeyBytes", func(o *Options) { o.MaxKeyBytes = 0 }, "", func(s *Server) string {
			return unless(s.opts.MaxKeyBytes == DefaultOptions().MaxKeyBytes, "a zero MaxKeyBytes is not its default")
		}},
		{"MaxScanLimit", func(o *Options) { o.MaxScanLimit = 0 }, "", func(s *Server) string {
			return unless(s.opts.MaxScanLimit == DefaultOptions().MaxScanLimit, "a zero MaxScanLimit is not its default")
		}},
		{"MaxForwards", func(o *Options) { o.MaxForwards = 0 }, "", func(s *Server) string {
			return unless(s.opts.MaxForwards == DefaultOptions().MaxForwards, "a zero MaxForwards is not its default")
		}},
		{"ForwardTimeout", func(o *Options) { o.ForwardTimeout = 0 }, "", func(s *Server) string {
			return unless(s.opts.ForwardTimeout == DefaultOptions().ForwardTimeout, "a zero ForwardTimeout is not its default")
		}},
		{"StatusTimeout", func(o *Options) { o.StatusTimeout = 0 }, "", func(s *Server) string {
			return unless(s.opts.StatusTimeout == DefaultOptions().StatusTimeout, "a zero StatusTimeout is not its default")
		}},
		{"HedgeAfter", func(o *Options) { o.HedgeAfter = 0 }, "", func(s *Server) string {
			return unless(s.opts.HedgeAfter == DefaultOptions().HedgeAfter, "a zero HedgeAfter is not its default")
		}},
		{"PeerFailureMemory", func(o *Options) { o.PeerFailureMemory = 0 }, "", func(s *Server) string {
			return unless(s.opts.PeerFailureMemory == DefaultOptions().PeerFailureMemory, "a zero PeerFailureMemory is not its default")
		}},
		{"MaxForwardBodyBytes", func(o *Options) { o.MaxForwardBodyBytes = 0 }, "", func(s *Server) string {
			return unless(s.opts.MaxForwardBodyBytes == DefaultOptions().MaxForwardBodyBytes, "a zero MaxForwardBodyBytes is not its default")
		}},
		{"RetryAfter", func(o *Options) { o.RetryAfter = 0 }, "", func(s *Server) string {
			return unless(s.opts.RetryAfter == DefaultOptions().RetryAfter, "a zero RetryAfter is not its default")
		}},
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

// TestNegativeLimitsAreRefusedTogether: a negative limit is an error
// naming its field; New reports every one at once.
func TestNegativeLimitsAreRefusedTogether(t *testing.T) {
	_, err := New(Options{Reader: &fakeReader{self: "n1"}, Logger: discardLogger(), MaxScanLimit: -1, ReadTimeout: -time.Second})
	for _, want := range []string{"Options.MaxScanLimit -1: must be positive", "Options.ReadTimeout -1s: must be positive"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v; want an error containing %q", err, want)
		}
	}
}

func unless(ok bool, why string) string {
	if ok {
		return ""
	}
	return why
}
