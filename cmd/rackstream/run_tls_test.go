package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/config/kclient"
	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/harness/kafkatest/certs"
)

// TestRunOverSASLSSL runs the count processor over TLS with SCRAM-SHA-256:
// on the real broker's SASL_SSL listener (deploy/local/kafka.sh's
// certificates) when RACKSTREAM_TEST_BROKERS is set, else on kfake serving
// the same kind of certificate. Every client of the instance verifies the
// broker with ssl.ca.location and logs in; the counts arrive and are
// queryable.
func TestRunOverSASLSSL(t *testing.T) {
	var brokers []string
	var caFile, user, pass string
	if os.Getenv(kafkatest.EnvBrokers) != "" {
		_ = os.Getenv(kafkatest.EnvBrokerRun) // a cache key only
		dir := os.Getenv("RACKSTREAM_TEST_TLS_DIR")
		brokers = strings.FieldsFunc(os.Getenv("RACKSTREAM_TEST_SASL_SSL_BROKERS"), func(r rune) bool { return r == ',' })
		user, pass = os.Getenv(kafkatest.EnvSASLUser), os.Getenv(kafkatest.EnvSASLPassword)
		if dir == "" || len(brokers) == 0 || user == "" {
			msg := "the real broker has no SASL_SSL listener (started by an older kafka.sh?): restart it with deploy/local/kafka.sh restart"
			kafkatest.SkipOrFail(t, "%s", msg)
		}
		caFile = filepath.Join(dir, "ca.pem")
	} else {
		dir := t.TempDir()
		if err := certs.Write(dir, []string{"127.0.0.1"}, time.Hour); err != nil {
			t.Fatal(err)
		}
		srv, err := certs.BrokerTLS(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		user, pass = "run-tls", "run-tls-secret"
		fc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(srv), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", user, pass))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(fc.Close)
		brokers, caFile = fc.ListenAddrs(), filepath.Join(dir, "ca.pem")
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	app := "run-sasl-ssl-" + hex.EncodeToString(suffix)
	topic := app + "-events"
	security := []string{"bootstrap.servers=" + strings.Join(brokers, ","), "security.protocol=SASL_SSL", "ssl.ca.location=" + caFile,
		"sasl.mechanism=SCRAM-SHA-256", "sasl.username=" + user}

	// The test's own client, built the way the instance builds its own.
	cfg, err := config.Load(config.Sources{Set: append([]string{"application.id=" + app, "sasl.password=" + pass}, security...)})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kclient.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kc.Opts(kclient.PurposeAdmin)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	kafkatest.Eventually(t, time.Minute, "4 records produced over SASL_SSL", func() bool {
		var recs []*kgo.Record
		for range 4 {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("k1"), Value: []byte("x")})
		}
		return cl.ProduceSync(ctx, recs...).FirstErr() == nil // a fresh topic may have no leader yet
	})

	file := writeValidateConfig(t, append(security,
		"application.id="+app,
		"processor.type=count",
		"processor.input.topic="+topic,
		"http.listen=127.0.0.1:0",
		"state.dir="+filepath.Join(t.TempDir(), "state"),
		"commit.interval.ms=200",
		"session.timeout.ms=6000",
		"replication.factor=1",
		"log.format=json",
	)...)
	stderr := runUntilCount(ctx, t, file, []string{"RACKSTREAM_SASL_PASSWORD=" + pass}, "k1", "4")
	if strings.Contains(stderr, pass) {
		t.Error("the password appears in the log")
	}
}

// runUntilCount runs `rackstream run --config file` with env until the
// count processor's store answers want for key, then cancels it and checks
// that it exits 0. It returns what run logged.
func runUntilCount(ctx context.Context, t *testing.T, file string, env []string, key, want string) string {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var stderr cluster.Lines
	done := make(chan int, 1)
	go func() { done <- runRun(runCtx, []string{"--config", file}, env, &stderr) }()
	var base string
	kafkatest.Eventually(t, time.Minute, "start-up line", func() bool {
		select {
		case code := <-done:
			t.Fatalf("run exited %d early:\n%s", code, tailLines(stderr.String(), 20))
		default:
		}
		if l := cluster.JSONLogLines(stderr.String(), "rackstream instance started"); len(l) > 0 {
			base = "http://" + l[0]["http"].(string)
			return true
		}
		return false
	})
	kafkatest.Eventually(t, 90*time.Second, "count of "+key+" is "+want, func() bool {
		var body struct {
			Value json.RawMessage `json:"value"`
		}
		code, err := cluster.GetJSON(base+"/v1/stores/count/keys/"+key, &body)
		return err == nil && code == 200 && string(body.Value) == want
	})
	stop()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after cancel:\n%s", code, tailLines(stderr.String(), 20))
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("run did not stop within 40s of cancel:\n%s", tailLines(stderr.String(), 20))
	}
	return stderr.String()
}
