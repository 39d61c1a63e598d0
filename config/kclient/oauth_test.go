package kclient

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// tokenEndpoint is an OAuth token endpoint for tests: it answers the
// client-credentials grant of one client with RS256 JWTs signed by key (the
// real broker's OAuth listener checks them against the JWKS kafka.sh wrote),
// or with a placeholder token when key is nil.
type tokenEndpoint struct {
	*httptest.Server
	requests atomic.Int32
	audience atomic.Value // string: the aud claim of the tokens issued
}

const (
	oauthClientID = "rackstream-app"
	oauthSecret   = "oauth-client-secret-0"
	oauthIssuer   = "rackstream-test-issuer" // kafka.sh's sasl.oauthbearer.expected.issuer
	oauthAudience = "rackstream-test"        // its expected audience
	oauthKeyID    = "rackstream-test"        // kafkacerts' KeyID
)

func newTokenEndpoint(t *testing.T, key *rsa.PrivateKey, lifetime time.Duration) *tokenEndpoint {
	te := &tokenEndpoint{}
	te.audience.Store(oauthAudience)
	te.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		te.requests.Add(1)
		id, secret, ok := r.BasicAuth()
		if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		if !ok || id != oauthClientID || secret != oauthSecret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"client authentication failed"}`))
			return
		}
		now := time.Now()
		claims := map[string]any{"iss": oauthIssuer, "aud": te.audience.Load(), "sub": id,
			"scope": r.PostForm.Get("scope"), "iat": now.Unix(), "exp": now.Add(lifetime).Unix()}
		tok := "placeholder-token-for-" + r.PostForm.Get("scope")
		if key != nil {
			tok = signJWT(t, key, claims)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": lifetime.Seconds()})
	}))
	t.Cleanup(te.Close)
	return te
}

// signJWT makes an RS256 JSON Web Token.
func signJWT(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(map[string]string{"alg": "RS256", "typ": "JWT", "kid": oauthKeyID}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func oauthSets(endpoint, secret string) []string {
	return []string{"security.protocol=SASL_SSL", "sasl.mechanism=OAUTHBEARER",
		"sasl.oauthbearer.token.endpoint.url=" + endpoint,
		"sasl.oauthbearer.client.credentials.client.id=" + oauthClientID,
		"sasl.oauthbearer.client.credentials.client.secret=" + secret,
		"sasl.oauthbearer.scope=kafka"}
}

// TestOAuthBearer: the client-credentials flow against a token endpoint the
// test serves (a token is fetched once and reused until 80% of its life,
// a refused client is a TokenError naming endpoint and client id, never the
// secret), and, on the real broker (kfake has no OAUTHBEARER), a login on
// Kafka 4.4's OAUTHBEARER listener with those tokens, and its refusal of a
// token for another audience.
func TestOAuthBearer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("tokens are fetched with the client's credentials and reused", func(t *testing.T) {
		te := newTokenEndpoint(t, nil, time.Hour)
		cfg := load(t, []string{"127.0.0.1:1"}, oauthSets(te.URL, oauthSecret)...)
		src := newTokenSource(cfg.Security)
		now := time.Now()
		src.now = func() time.Time { return now }
		for range 3 {
			tok, err := src.Token(ctx)
			if err != nil || tok != "placeholder-token-for-kafka" {
				t.Fatalf("Token = %q, %v", tok, err)
			}
		}
		if n := te.requests.Load(); n != 1 {
			t.Errorf("%d token requests for 3 logins within a token's life, want 1", n)
		}
		now = now.Add(47 * time.Minute) // 78% of the hour: still fresh
		_, _ = src.Token(ctx)
		now = now.Add(2 * time.Minute) // 82%: due for refresh
		_, _ = src.Token(ctx)
		if n := te.requests.Load(); n != 2 {
			t.Errorf("%d token requests after 49 of 60 minutes, want 2 (one refresh past 80%%)", n)
		}
	})
	t.Run("a refused client is a TokenError without the secret", func(t *testing.T) {
		te := newTokenEndpoint(t, nil, time.Hour)
		const wrong = "not-the-client-secret"
		kc := newClients(t, load(t, []string{"127.0.0.1:1"}, oauthSets(te.URL, wrong)...), nil)
		_, err := newTokenSource(load(t, []string{"127.0.0.1:1"}, oauthSets(te.URL, wrong)...).Security).Token(ctx)
		var tokErr *TokenError
		if !errors.As(err, &tokErr) || tokErr.Status != http.StatusUnauthorized {
			t.Fatalf("Token with a wrong secret = %v, want a TokenError with HTTP 401", err)
		}
		for _, want := range []string{te.URL, oauthClientID, "invalid_client", "client.secret"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
		if strings.Contains(err.Error(), wrong) {
			t.Errorf("the error shows the secret: %v", err)
		}
		if kc.Mechanism() != "OAUTHBEARER" {
			t.Errorf("Mechanism = %q", kc.Mechanism())
		}
	})
	t.Run("an unreachable endpoint is a TokenError naming it", func(t *testing.T) {
		te := newTokenEndpoint(t, nil, time.Hour)
		te.Close()
		_, err := newTokenSource(load(t, []string{"127.0.0.1:1"}, oauthSets(te.URL, oauthSecret)...).Security).Token(ctx)
		var tokErr *TokenError
		if !errors.As(err, &tokErr) || tokErr.Status != 0 || !strings.Contains(err.Error(), te.URL) {
			t.Fatalf("Token from a closed endpoint = %v, want a TokenError naming %s", err, te.URL)
		}
	})

	brokers, dir := realOAuthListener(t)
	if brokers == nil {
		t.Log("kfake has no OAUTHBEARER: the login on a broker runs in the real-broker pass")
		return
	}
	key := readRSAKey(t, filepath.Join(dir, "oauth-key.pem"))
	te := newTokenEndpoint(t, key, time.Hour)
	sets := append(oauthSets(te.URL, oauthSecret), "ssl.ca.location="+filepath.Join(dir, "ca.pem"))

	t.Run("Kafka's OAUTHBEARER listener accepts the tokens", func(t *testing.T) {
		kc := newClients(t, load(t, brokers, sets...), nil)
		if err := Check(ctx, kc.Opts(PurposeAdmin)); err != nil {
			t.Fatalf("Check: %v", err)
		}
		roundTrip(ctx, t, kc, uniqueTopic("kclient-oauth"))
		if te.requests.Load() == 0 {
			t.Error("no token was requested")
		}
	})
	t.Run("a token for another audience is refused naming the broker", func(t *testing.T) {
		te.audience.Store("another-cluster")
		defer te.audience.Store(oauthAudience)
		kc := newClients(t, load(t, brokers, sets...), nil)
		err := Check(ctx, kc.Opts(PurposeAdmin))
		assertAuthError(t, err, "OAUTHBEARER", brokers[0])
		if !strings.Contains(err.Error(), "SASL_SSL listener") {
			t.Errorf("error %q does not name the listener", err)
		}
		t.Logf("other audience: %v", err)
	})
	t.Run("a wrong client secret stops Check before the broker", func(t *testing.T) {
		kc := newClients(t, load(t, brokers, append(sets, "sasl.oauthbearer.client.credentials.client.secret=wrong")...), nil)
		err := Check(ctx, kc.Opts(PurposeAdmin))
		var tokErr *TokenError
		if !errors.As(err, &tokErr) {
			t.Fatalf("Check with a wrong client secret = %v (%T), want a TokenError", err, err)
		}
		t.Logf("wrong client secret: %v", err)
	})
}

// realOAuthListener returns the real broker's OAUTHBEARER listener and its
// TLS directory, or nil without a real broker (kfake has no OAUTHBEARER).
// A real broker without the listener skips the test, and fails it under CI.
func realOAuthListener(t *testing.T) (brokers []string, dir string) {
	t.Helper()
	if os.Getenv(kafkatest.EnvBrokers) == "" {
		return nil, ""
	}
	brokers, dir = split(os.Getenv(envOAuthBrokers)), os.Getenv(envTLSDir)
	if len(brokers) == 0 || dir == "" {
		msg := "the real broker has no OAUTHBEARER listener (started by an older kafka.sh?): restart it with deploy/local/kafka.sh restart"
		if kafkatest.CI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return brokers, dir
}

func readRSAKey(t *testing.T, file string) *rsa.PrivateKey {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", file)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		t.Fatalf("%s: %T, want an RSA key", file, k)
	}
	return rk
}
