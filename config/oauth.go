package config

import (
	"net"
	"net/url"
)

// checkTokenEndpoint allows an https:// URL, or http:// to a loopback
// address (a test's endpoint): the client secret travels in the request, so
// it never crosses a network in clear.
func checkTokenEndpoint(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return "Value must be an absolute https:// URL"
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return ""
		}
		return "Value must be an https:// URL (http:// only to a loopback address: the client secret is sent to it)"
	}
	return "Value must be an absolute https:// URL"
}

// checkOAuth is crossCheck's part for sasl.mechanism=OAUTHBEARER: the
// client-credentials flow needs its endpoint, client id and secret, and the
// user name and password keys of the other mechanisms mean nothing there.
func (c *Config) checkOAuth(fail func(key, format string, args ...any)) {
	sec := c.Security
	if !sec.UsesSASL() || sec.SASLMechanism != OAuthBearer {
		return
	}
	c.checkJAASModule(fail)
	id, secret, _ := sec.OAuthClientCredentials()
	var missing []string
	for _, kv := range [][2]string{
		{"sasl.oauthbearer.token.endpoint.url", sec.OAuthTokenEndpointURL},
		{"sasl.oauthbearer.client.credentials.client.id", id},
		{"sasl.oauthbearer.client.credentials.client.secret", string(secret)},
	} {
		if kv[1] == "" {
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		fail("sasl.mechanism", "sasl.mechanism=OAUTHBEARER requires %s", joinAnd(missing))
	}
	if sec.SASLUsername != "" || sec.SASLPassword != "" {
		fail("sasl.mechanism", "sasl.mechanism=OAUTHBEARER logs in with an access token: sasl.username and sasl.password are not used; remove them")
	}
}

// OAuthClientCredentials returns the client id, secret and scope of the
// client-credentials flow: the sasl.oauthbearer.* keys (Kafka 4.1's names),
// and for any of them left empty the option of an OAuthBearerLoginModule
// in sasl.jaas.config (clientId, clientSecret, scope), where Kafka's Java
// clients took them before 4.1.
func (s Security) OAuthClientCredentials() (id string, secret Secret, scope string) {
	id, secret, scope = s.OAuthClientID, s.OAuthClientSecret, s.OAuthScope
	if s.SASLJAASConfig == "" {
		return id, secret, scope
	}
	j, err := ParseJAAS(s.SASLJAASConfig.Reveal())
	if err != nil || j.Module != OAuthBearerLoginModule {
		return id, secret, scope
	}
	if id == "" {
		id = j.Options["clientId"]
	}
	if secret == "" {
		secret = Secret(j.Options["clientSecret"])
	}
	if scope == "" {
		scope = j.Options["scope"]
	}
	return id, secret, scope
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(l []string) string {
	switch len(l) {
	case 0:
		return ""
	case 1:
		return l[0]
	}
	out := l[0]
	for _, s := range l[1 : len(l)-1] {
		out += ", " + s
	}
	return out + " and " + l[len(l)-1]
}
