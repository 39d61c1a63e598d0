package kclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/rackstream/rackstream/config"
)

// OAUTHBEARER with the client-credentials grant (RFC 6749 §4.4), as Kafka's
// Java clients do it with sasl.oauthbearer.token.endpoint.url: POST
// grant_type=client_credentials (and scope) to the token endpoint with the
// client id and secret as HTTP Basic authentication, and log in with the
// access_token of the answer. One tokenSource serves every client and
// connection of an instance: a token is reused until 80% of its lifetime
// has passed (Kafka's sasl.login.refresh.window.factor), so connections and
// re-authentications do not each call the identity provider.

// tokenRefreshFactor is the share of a token's lifetime after which a new
// one is fetched.
const tokenRefreshFactor = 0.8

// maxTokenResponse bounds the token endpoint's answer.
const maxTokenResponse = 1 << 20

// TokenError is a failure to get an access token from the OAuth token
// endpoint: the endpoint is unreachable, refused the client (wrong client
// id or secret: HTTP 400 or 401 with "invalid_client"), or answered without
// a token. It names the endpoint and the client id, never the secret.
type TokenError struct {
	Endpoint string // sasl.oauthbearer.token.endpoint.url
	ClientID string
	Status   int    // the HTTP status; 0 when there was no answer
	Reason   string // the endpoint's error and error_description, bounded
	Err      error  // the transport or decoding error, if any
}

func (e *TokenError) Error() string {
	var what string
	switch {
	case e.Err != nil:
		what = e.Err.Error()
	case e.Reason != "":
		what = fmt.Sprintf("HTTP %d: %s", e.Status, e.Reason)
	default:
		what = fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("OAuth token endpoint %s refused client %q or failed: %s (check sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.client.credentials.client.id and .client.secret, sasl.oauthbearer.scope)",
		e.Endpoint, e.ClientID, what)
}

func (e *TokenError) Unwrap() error { return e.Err }

// tokenSource fetches and caches access tokens.
type tokenSource struct {
	endpoint string
	clientID string
	secret   string
	scope    string
	client   *http.Client
	now      func() time.Time

	mu      sync.Mutex // guards token and refresh; held across a fetch so that concurrent logins share it
	token   string
	refresh time.Time // when token should be replaced
}

func newTokenSource(sec config.Security) *tokenSource {
	id, secret, scope := sec.OAuthClientCredentials() // the keys, or sasl.jaas.config's options
	return &tokenSource{
		endpoint: sec.OAuthTokenEndpointURL,
		clientID: id,
		secret:   secret.Reveal(),
		scope:    scope,
		client:   &http.Client{Timeout: 30 * time.Second},
		now:      time.Now,
	}
}

// mechanism is the franz-go SASL mechanism that logs in with the source's
// tokens.
func (s *tokenSource) mechanism() sasl.Mechanism {
	return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
		tok, err := s.Token(ctx)
		return oauth.Auth{Token: tok}, err
	})
}

// Token returns a valid access token, fetching one when the cached token is
// missing or due for refresh.
func (s *tokenSource) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && s.now().Before(s.refresh) {
		return s.token, nil
	}
	tok, lifetime, err := s.fetch(ctx)
	if err != nil {
		return "", err
	}
	s.token, s.refresh = tok, s.now().Add(time.Duration(float64(lifetime)*tokenRefreshFactor))
	return tok, nil
}

func (s *tokenSource) fetch(ctx context.Context) (string, time.Duration, error) {
	fail := func(status int, reason string, err error) (string, time.Duration, error) {
		return "", 0, &TokenError{Endpoint: s.endpoint, ClientID: s.clientID, Status: status, Reason: reason, Err: err}
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	if s.scope != "" {
		form.Set("scope", s.scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fail(0, "", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(s.clientID, s.secret)
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the message already
		}
		return fail(0, "", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return fail(resp.StatusCode, "", fmt.Errorf("reading the answer: %w", err))
	}
	var ans struct {
		AccessToken string  `json:"access_token"`
		ExpiresIn   float64 `json:"expires_in"`
		Error       string  `json:"error"`
		Description string  `json:"error_description"`
	}
	jsonErr := json.Unmarshal(body, &ans)
	if resp.StatusCode != http.StatusOK {
		reason := strings.TrimSpace(ans.Error + ": " + ans.Description)
		reason = strings.Trim(reason, ": ")
		return fail(resp.StatusCode, bounded(reason), nil)
	}
	if jsonErr != nil {
		return fail(resp.StatusCode, "", fmt.Errorf("the answer is not a JSON token response: %w", jsonErr))
	}
	if ans.AccessToken == "" {
		return fail(resp.StatusCode, "the answer has no access_token", nil)
	}
	return ans.AccessToken, time.Duration(ans.ExpiresIn * float64(time.Second)), nil
}

// bounded cuts an endpoint's text to a line's length and to printable
// characters, since it is untrusted and goes into logs.
func bounded(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
