package kclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/rackstream/rackstream/config"
)

// load builds a configuration the way `rackstream run` does, from --set
// pairs over the defaults.
func load(t *testing.T, brokers []string, sets ...string) *config.Config {
	t.Helper()
	all := append([]string{"application.id=kclient-test", "bootstrap.servers=" + strings.Join(brokers, ",")}, sets...)
	cfg, err := config.Load(config.Sources{Set: all})
	if err != nil {
		t.Fatalf("config.Load(%q): %v", all, err)
	}
	return cfg
}

// newClients is New that fails the test on error.
func newClients(t *testing.T, cfg *config.Config, logger *slog.Logger) *Clients {
	t.Helper()
	kc, err := New(cfg, logger)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return kc
}

// client builds a kgo client from opts, closed when the test ends.
func client(t *testing.T, opts []kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// logBuffer is an io.Writer for slog handlers that franz-go's goroutines
// write to while the test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// debugLogger returns a logger at debug level (franz-go's most verbose,
// which includes its SASL steps) writing to a buffer.
func debugLogger() (*slog.Logger, *logBuffer) {
	buf := new(logBuffer)
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// TestEveryRoleIsBuiltWithTheSameConnectionSettings pins that no client of an
// instance can differ in brokers, rack, SASL, TLS or acks: each role's
// options, read back from a built client, carry all of them.
func TestEveryRoleIsBuiltWithTheSameConnectionSettings(t *testing.T) {
	ca := newTestCA(t)
	cfg := load(t, []string{"127.0.0.1:1", "127.0.0.1:2"},
		"client.tag.zone=eu-central-1a", "client.tag.cluster=k8s-cluster1",
		"security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
		"sasl.username=alice", "sasl.password=s3cret-Pa55",
		"ssl.ca.location="+ca.caFile)
	kc := newClients(t, cfg, nil).WithInstance("p7")
	for _, role := range Purposes {
		t.Run(string(role), func(t *testing.T) {
			cl := client(t, kc.Opts(role))
			if got := cl.OptValue(kgo.Rack); got != "eu-central-1a" {
				t.Errorf("rack = %v, want eu-central-1a (client.tag.zone)", got)
			}
			if got := cl.OptValue(kgo.SeedBrokers).([]string); !slices.Equal(got, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
				t.Errorf("seed brokers = %v", got)
			}
			if got, want := cl.OptValue(kgo.ClientID), "kclient-test-p7-"+string(role); got != want {
				t.Errorf("client id = %v, want %s", got, want)
			}
			if got := cl.OptValue(kgo.RequiredAcks); got != kgo.AllISRAcks() {
				t.Errorf("acks = %v, want all", got)
			}
			ms, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
			if len(ms) != 1 || ms[0].Name() != "SCRAM-SHA-512" {
				t.Errorf("sasl = %v, want one SCRAM-SHA-512 mechanism", ms)
			}
			tc, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
			if tc == nil {
				t.Fatal("no TLS config under SASL_SSL")
			}
			if tc.InsecureSkipVerify || tc.RootCAs == nil {
				t.Errorf("TLS config: InsecureSkipVerify=%v, RootCAs set=%v; want verification against ssl.ca.location", tc.InsecureSkipVerify, tc.RootCAs != nil)
			}
		})
	}
}

// TestRackComesFromTheTagNamedByClientRackTag pins KIP-392 wiring: the rack
// is the value of the tag client.rack.tag names, and no rack is set (rather
// than an empty one) when there is none.
func TestRackComesFromTheTagNamedByClientRackTag(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
		want string
	}{
		{"zone tag by default", []string{"client.tag.zone=z1", "client.tag.cluster=c1"}, "z1"},
		{"another tag when configured", []string{"client.tag.zone=z1", "client.tag.cluster=c1", "client.rack.tag=cluster"}, "c1"},
		{"none when the named tag is not set", []string{"client.tag.cluster=c1"}, ""},
		{"none when client.rack.tag is empty", []string{"client.tag.zone=z1", "client.rack.tag="}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := newClients(t, load(t, []string{"127.0.0.1:1"}, tc.sets...), nil)
			if kc.Rack() != tc.want {
				t.Errorf("Rack() = %q, want %q", kc.Rack(), tc.want)
			}
			for _, role := range Purposes {
				cl := client(t, kc.Opts(role))
				if got := cl.OptValue(kgo.Rack); got != tc.want {
					t.Errorf("%s: rack option = %q, want %q", role, got, tc.want)
				}
				// With a rack, a fetch from a replica in it returns to the
				// leader within PreferredReplicaRecheck, not franz-go's 30
				// minutes: a stopped broker in the rack must not stall it.
				if got := cl.OptValue(kgo.RecheckPreferredReplicaInterval); tc.want != "" && got != PreferredReplicaRecheck {
					t.Errorf("%s: preferred replica recheck = %v, want %v", role, got, PreferredReplicaRecheck)
				}
			}
		})
	}
}

// TestExtraOptionsOverrideTheDefaults pins that a caller's options come last.
func TestExtraOptionsOverrideTheDefaults(t *testing.T) {
	kc := newClients(t, load(t, []string{"127.0.0.1:1"}, "client.tag.zone=z1"), nil)
	cl := client(t, kc.Opts(PurposeProducer, kgo.ClientID("mine"), kgo.Rack("elsewhere")))
	if got := cl.OptValue(kgo.ClientID); got != "mine" {
		t.Errorf("client id = %v, want mine", got)
	}
	if got := cl.OptValue(kgo.Rack); got != "elsewhere" {
		t.Errorf("rack = %v, want elsewhere", got)
	}
}

// TestSASLLoginOnKfake runs every mechanism against kfake with SASL on:
// the right password reaches the cluster, a wrong one fails Check with an
// AuthError naming the mechanism and the broker, and the password shows in
// neither the error nor franz-go's debug log.
func TestSASLLoginOnKfake(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			const user, pass = "svc-orders", "right-horse-battery"
			fc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
				kfake.Superuser(mech, "admin", "admin-secret"),
				kfake.User(mech, user, pass))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(fc.Close)
			brokers := fc.ListenAddrs()

			logger, logs := debugLogger()
			good := newClients(t, load(t, brokers, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism="+mech,
				"sasl.username="+user, "sasl.password="+pass, "client.tag.zone=z1"), logger)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := Check(ctx, good.Opts(PurposeAdmin)); err != nil {
				t.Fatalf("Check with the right password: %v", err)
			}
			roundTrip(ctx, t, good, "kclient-sasl-"+strings.ToLower(mech))

			const wrong = "wrong-horse-battery"
			bad := newClients(t, load(t, brokers, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism="+mech,
				"sasl.username="+user, "sasl.password="+wrong), logger)
			err = Check(ctx, bad.Opts(PurposeAdmin))
			assertAuthError(t, err, mech, brokers[0])
			for _, secret := range []string{pass, wrong} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows a password: %v", err)
				}
				if strings.Contains(logs.String(), secret) {
					t.Errorf("log shows a password %q:\n%s", secret, logs)
				}
			}
			if !strings.Contains(logs.String(), mech) {
				t.Errorf("debug log never mentions the SASL mechanism, so the password check above proves nothing:\n%s", logs)
			}
		})
	}
}

func assertAuthError(t *testing.T, err error, mech, broker string) {
	t.Helper()
	var ae *AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("Check with a wrong password = %v (%T), want an *AuthError", err, err)
	}
	if ae.Mechanism != mech || ae.Broker != broker {
		t.Errorf("AuthError{Broker: %q, Mechanism: %q}, want %q, %q", ae.Broker, ae.Mechanism, broker, mech)
	}
	check := "sasl.password"
	if mech == "OAUTHBEARER" {
		check = "audience" // no password: the token's claims are what to check
	}
	for _, want := range []string{mech, broker, check} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestCheckNamesEveryUnreachableBroker pins the message when nothing answers.
func TestCheckNamesEveryUnreachableBroker(t *testing.T) {
	// Ports 1 and 2 on loopback: nothing listens there, so dials are refused at once.
	kc := newClients(t, load(t, []string{"127.0.0.1:1", "127.0.0.1:2"}), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := Check(ctx, kc.Opts(PurposeAdmin))
	if err == nil {
		t.Fatal("Check with no broker listening = nil")
	}
	var ae *AuthError
	if errors.As(err, &ae) {
		t.Errorf("an unreachable broker reported as an authentication failure: %v", err)
	}
	for _, want := range []string{"127.0.0.1:1", "127.0.0.1:2", "bootstrap.servers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestCheckPassesWhenOneSeedAnswers pins that a broker that is down at
// start-up does not stop an instance another seed can serve.
func TestCheckPassesWhenOneSeedAnswers(t *testing.T) {
	fc, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fc.Close)
	kc := newClients(t, load(t, append([]string{"127.0.0.1:1"}, fc.ListenAddrs()...)), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := Check(ctx, kc.Opts(PurposeAdmin)); err != nil {
		t.Fatalf("Check = %v, want nil (the second seed answers)", err)
	}
}

// TestLogValueHidesThePassword pins the start-up log line's content.
func TestLogValueHidesThePassword(t *testing.T) {
	logger, logs := debugLogger()
	cfg := load(t, []string{"127.0.0.1:1"}, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-256",
		"sasl.username=bob", "sasl.password=hunter2-hunter2", "client.tag.zone=z9")
	kc := newClients(t, cfg, logger)
	logger.Info("kafka clients", "kafka", kc, "config", cfg)
	out := logs.String()
	if strings.Contains(out, "hunter2") {
		t.Fatalf("log shows the password:\n%s", out)
	}
	for _, want := range []string{"SCRAM-SHA-256", "user=bob", "rack=z9", "127.0.0.1:1"} {
		if !strings.Contains(out, want) {
			t.Errorf("log line lacks %q:\n%s", want, out)
		}
	}
}

// TestLoggerFollowsTheHandlerLevel pins the level mapping: franz-go builds no
// debug lines for a logger at info, and its INFO lines (connections,
// metadata, group rounds) only at debug; its warnings and errors pass.
func TestLoggerFollowsTheHandlerLevel(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  kgo.LogLevel
	}{
		{slog.LevelDebug, kgo.LogLevelDebug},
		{slog.LevelInfo, kgo.LogLevelWarn},
		{slog.LevelWarn, kgo.LogLevelWarn},
		{slog.LevelError, kgo.LogLevelError},
		{slog.LevelError + 1, kgo.LogLevelNone},
	} {
		l := newLogger(slog.New(slog.NewTextHandler(new(logBuffer), &slog.HandlerOptions{Level: tc.level})))
		if got := l.Level(); got != tc.want {
			t.Errorf("handler at %v: Level() = %v, want %v", tc.level, got, tc.want)
		}
	}
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
		buf := new(logBuffer)
		l := newLogger(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level})))
		l.Log(kgo.LogLevelInfo, "connection opened")
		l.Log(kgo.LogLevelWarn, "metadata refresh failed", "broker", "1", "err", "EOF")
		if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, `msg="metadata refresh failed"`) || !strings.Contains(out, "broker=1") {
			t.Errorf("at %v forwarded line = %q", level, out)
		}
		if strings.Contains(buf.String(), "connection opened") {
			t.Errorf("at %v franz-go's INFO line was logged: %q", level, buf)
		}
	}
	buf := new(logBuffer)
	newLogger(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))).Log(kgo.LogLevelInfo, "connection opened")
	if !strings.Contains(buf.String(), "connection opened") {
		t.Errorf("at debug franz-go's INFO line was dropped: %q", buf)
	}
}

// TestNewRejectsUnusableSettings pins the start-up errors New owns.
func TestNewRejectsUnusableSettings(t *testing.T) {
	if _, err := New(nil, nil); err == nil {
		t.Error("New(nil) = nil error")
	}
	empty := &config.Config{ApplicationID: "x"}
	if _, err := New(empty, nil); err == nil || !strings.Contains(err.Error(), "bootstrap.servers") {
		t.Errorf("New without brokers = %v, want an error naming bootstrap.servers", err)
	}
	noPass := &config.Config{ApplicationID: "x", BootstrapServers: []string{"127.0.0.1:1"},
		Security: config.Security{Protocol: config.SASLPlaintext, SASLMechanism: config.Plain, SASLUsername: "u"}}
	if _, err := New(noPass, nil); err == nil || !strings.Contains(err.Error(), "sasl.password") {
		t.Errorf("New under SASL without a password = %v, want an error naming sasl.password", err)
	}
}
