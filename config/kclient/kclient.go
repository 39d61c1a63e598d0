// Package kclient turns a Rackstream configuration into the franz-go options
// of every Kafka client an instance makes, so that security, rack and
// durability settings cannot differ between them.
//
// An instance talks to Kafka through several clients: the group member that
// consumes inputs and produces changelog records and outputs, the restore and
// standby consumers, the balancer's placement clients and the admin client.
// Each is built from the same [Clients]:
//
//	kc, err := kclient.New(cfg, logger)
//	if err != nil { ... }                       // unreadable CA file, bad key pair
//	if err := kclient.Check(ctx, kc.Opts(kclient.PurposeAdmin)); err != nil {
//		return err                              // names the broker and SASL mechanism
//	}
//	cl, err := kgo.NewClient(kc.Opts(kclient.PurposeGroup, kgo.ConsumerGroup(id))...)
//
// Components that take one option list for all the clients they make
// (processor.Options.ClientOpts, state.Options.ClientOpts,
// balancer.Settings.ClientOpts) get kc.Opts with the purpose of their main
// client; every list carries the same connection settings, so only the
// client id differs.
//
// Every option list holds:
//   - the seed brokers (bootstrap.servers);
//   - SASL PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 under security.protocol
//     SASL_PLAINTEXT or SASL_SSL (sasl.mechanism, sasl.username,
//     sasl.password), or OAUTHBEARER with access tokens from the
//     client-credentials flow (sasl.oauthbearer.token.endpoint.url, client
//     id and secret, scope; oauth.go);
//   - TLS under SSL or SASL_SSL, verifying brokers with ssl.ca.location (the
//     system's roots when empty) and presenting ssl.certificate.location and
//     ssl.key.location when set. Verification is never skipped;
//   - the client rack (KIP-392): the value of the client tag named by
//     client.rack.tag (default zone), so that a broker with a rack-aware
//     replica selector serves fetches from a replica in the instance's own
//     zone;
//   - a client id, <application.id>[-<instance>]-<purpose>, which names the
//     client in broker logs, quotas and request metrics;
//   - acks=all for anything the client produces (replication.factor only
//     says how many copies exist; acks=all makes a write wait for them);
//   - a logger that forwards franz-go's messages to log/slog.
//
// The password reaches only the SASL mechanism: it is not in the logger's
// output, in the client id, or in any error this package returns.
//
// kfake, the in-process cluster of tests and `rackstream dev`, accepts the
// rack and ignores it (every kfake broker is in rack "krack", and it does
// not implement fetch from follower), and a one-node broker has a single
// rack: tests can check that every client is built with the rack, not that
// fetches stay in a zone.
package kclient

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/rackstream/rackstream/config"
)

// Purpose is what a client is for; it ends the client id.
type Purpose string

const (
	// PurposeGroup is the group member: it consumes the inputs and produces
	// changelog records, outputs and dead letters.
	PurposeGroup Purpose = "group"
	// PurposeRestore consumes changelogs to restore stores and tail standbys.
	PurposeRestore Purpose = "restore"
	// PurposeProducer is a client that only produces.
	PurposeProducer Purpose = "producer"
	// PurposePlacement publishes and reads the placement topic.
	PurposePlacement Purpose = "placement"
	// PurposeAdmin creates and describes topics and checks the cluster.
	PurposeAdmin Purpose = "admin"
)

// Purposes lists every purpose, in the order above.
var Purposes = []Purpose{PurposeGroup, PurposeRestore, PurposeProducer, PurposePlacement, PurposeAdmin}

// Clients holds the options every Kafka client of one instance shares.
// It is immutable and safe for concurrent use.
type Clients struct {
	appID     string
	instance  string
	brokers   []string
	rack      string
	mechanism config.SASLMechanism // "" without SASL
	user      string
	tls       *tls.Config // nil without TLS
	logger    *slog.Logger
	auth      sasl.Mechanism // nil without SASL
}

// New reads the security, rack and broker settings of cfg, loading the TLS
// files now so that a bad path or key fails at start-up with the key and the
// file named. A nil logger discards franz-go's messages.
func New(cfg *config.Config, logger *slog.Logger) (*Clients, error) {
	if cfg == nil {
		return nil, errors.New("kclient: nil configuration")
	}
	if len(cfg.BootstrapServers) == 0 {
		return nil, errors.New("kclient: bootstrap.servers is empty")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sec := cfg.Security
	c := &Clients{
		appID:   cfg.ApplicationID,
		brokers: slices.Clone(cfg.BootstrapServers),
		rack:    cfg.ClientRack(),
		logger:  logger,
	}
	if sec.UsesSASL() && sec.SASLMechanism == config.OAuthBearer {
		// The client-credentials flow (oauth.go); config.Load has checked
		// that its keys are set.
		id, secret, _ := sec.OAuthClientCredentials()
		if sec.OAuthTokenEndpointURL == "" || id == "" || secret == "" {
			return nil, errors.New("kclient: sasl.mechanism=OAUTHBEARER requires sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.client.credentials.client.id and sasl.oauthbearer.client.credentials.client.secret (or clientId and clientSecret in sasl.jaas.config)")
		}
		c.auth, c.mechanism, c.user = newTokenSource(sec).mechanism(), config.OAuthBearer, id
	}
	if sec.UsesSASL() && c.auth == nil {
		user, pass := sec.SASLCredentials() // sasl.username/password or sasl.jaas.config
		if user == "" || pass == "" {
			return nil, fmt.Errorf("kclient: security.protocol=%s requires sasl.username and sasl.password (or sasl.jaas.config)", sec.Protocol)
		}
		auth, err := mechanism(sec.SASLMechanism, user, pass.Reveal())
		if err != nil {
			return nil, err
		}
		c.auth, c.mechanism, c.user = auth, sec.SASLMechanism, user
	}
	if sec.UsesTLS() {
		t, err := tlsConfig(sec)
		if err != nil {
			return nil, err
		}
		c.tls = t
	} else if sec.SSLCALocation != "" || sec.SSLCertificateLocation != "" || sec.SSLTruststoreLocation != "" || sec.SSLKeystoreLocation != "" {
		// Not an error (a file may set TLS paths for a later switch), but
		// worth a line: the operator may believe the connection is encrypted.
		logger.Warn("ssl.* settings are ignored: security.protocol does not use TLS", "security.protocol", string(sec.Protocol))
	}
	return c, nil
}

// WithInstance returns a copy of c whose client ids carry the instance id
// (the process id persisted in state.dir), so that a broker's logs tell the
// instances of one application apart.
func (c *Clients) WithInstance(id string) *Clients {
	cp := *c
	cp.instance = id
	return &cp
}

// PreferredReplicaRecheck is how long a consumer fetches a partition from
// the replica in its rack its leader named (KIP-392) before it asks the
// leader again. It bounds how long a fetch keeps retrying that replica
// while its broker is down (franz-go's default is 30 minutes); the leader
// names only a live replica.
const PreferredReplicaRecheck = 10 * time.Second

// Opts returns the options of a client with the given purpose, followed by
// extra (which may override any of them).
func (c *Clients) Opts(purpose Purpose, extra ...kgo.Opt) []kgo.Opt {
	opts := make([]kgo.Opt, 0, 8+len(extra))
	opts = append(opts,
		kgo.SeedBrokers(c.brokers...),
		kgo.ClientID(c.ClientID(purpose)),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.WithLogger(newLogger(c.logger.With("kafka_client", string(purpose)))),
	)
	if c.rack != "" {
		opts = append(opts, kgo.Rack(c.rack), kgo.RecheckPreferredReplicaInterval(PreferredReplicaRecheck))
	}
	if c.auth != nil {
		opts = append(opts, kgo.SASL(c.auth))
	}
	if c.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(c.tls))
	}
	return append(opts, extra...)
}

// ClientID returns the client id of a client with the given purpose.
func (c *Clients) ClientID(purpose Purpose) string {
	id := c.appID
	if id == "" {
		id = "rackstream"
	}
	if c.instance != "" {
		id += "-" + c.instance
	}
	return id + "-" + string(purpose)
}

// Rack returns the client rack every client is built with; "" for none
// (the tag named by client.rack.tag is not configured, or the key is empty).
func (c *Clients) Rack() string { return c.rack }

// Brokers returns the seed brokers.
func (c *Clients) Brokers() []string { return slices.Clone(c.brokers) }

// Mechanism returns the SASL mechanism, "" without SASL.
func (c *Clients) Mechanism() config.SASLMechanism { return c.mechanism }

// LogValue describes the clients' settings for a start-up log line; the
// password is not among them.
func (c *Clients) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.Any("brokers", c.brokers),
		slog.String("rack", c.rack),
		slog.Bool("tls", c.tls != nil),
	}
	if c.auth != nil {
		attrs = append(attrs, slog.String("sasl", string(c.mechanism)), slog.String("user", c.user))
	}
	return slog.GroupValue(attrs...)
}

// mechanism returns the franz-go SASL mechanism for sasl.mechanism.
func mechanism(m config.SASLMechanism, user, pass string) (sasl.Mechanism, error) {
	switch m {
	case config.Plain, "":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case config.ScramSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case config.ScramSHA512:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("kclient: sasl.mechanism=%s: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", m)
}

// tlsConfig builds the TLS configuration of security.protocol SSL and
// SASL_SSL (stores.go reads the material). ServerName is left empty:
// franz-go sets it to the host of each broker it dials, so every broker's
// certificate is verified against its own name, unless
// ssl.endpoint.identification.algorithm is empty, which verifies the chain
// only.
func tlsConfig(sec config.Security) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	roots, err := rootCAs(sec)
	if err != nil {
		return nil, err
	}
	t.RootCAs = roots
	cert, err := clientCertificate(sec)
	if err != nil {
		return nil, err
	}
	if cert != nil {
		t.Certificates = []tls.Certificate{*cert}
	}
	if !sec.VerifyHostname() {
		t.InsecureSkipVerify = true // replaced by the chain check below, never skipped
		t.VerifyConnection = verifyWithoutHostname(roots)
	}
	return t, nil
}
