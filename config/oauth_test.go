package config

import (
	"slices"
	"strings"
	"testing"
)

func TestOAuthBearerClientCredentials(t *testing.T) {
	oauth := append(slices.Clone(required), "security.protocol=SASL_SSL", "sasl.mechanism=oauthbearer",
		"sasl.oauthbearer.token.endpoint.url=https://idp.example.com/oauth2/token",
		"sasl.oauthbearer.client.credentials.client.id=rackstream",
		"sasl.oauthbearer.client.credentials.client.secret=s3cret-value",
		"sasl.oauthbearer.scope=kafka")
	c := mustLoad(t, Sources{Set: oauth})
	sec := c.Security
	if sec.SASLMechanism != OAuthBearer || sec.OAuthClientID != "rackstream" || sec.OAuthClientSecret.Reveal() != "s3cret-value" || sec.OAuthScope != "kafka" {
		t.Errorf("security = %#v", sec)
	}
	if strings.Contains(c.String(), "s3cret-value") {
		t.Error("the client secret is shown by String")
	}

	for _, tc := range []struct {
		name string
		sets []string
		want string
	}{
		{"no endpoint, id or secret", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=OAUTHBEARER"},
			"sasl.mechanism=OAUTHBEARER requires sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.client.credentials.client.id and sasl.oauthbearer.client.credentials.client.secret"},
		{"a password besides", append(oauth[2:], "sasl.username=u", "sasl.password=p"), "sasl.username and sasl.password are not used"},
		{"clear text to another host", []string{"sasl.oauthbearer.token.endpoint.url=http://idp.example.com/token"}, "http:// only to a loopback address"},
		{"not a URL", []string{"sasl.oauthbearer.token.endpoint.url=idp/token"}, "absolute https:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Sources{Set: append(slices.Clone(required), tc.sets...)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret-value") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
	mustLoad(t, Sources{Set: append(slices.Clone(required), "sasl.oauthbearer.token.endpoint.url=http://127.0.0.1:8443/token")})
}
