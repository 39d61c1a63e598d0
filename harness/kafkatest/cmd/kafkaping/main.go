// Command kafkaping checks that a Kafka broker answers: it sends a metadata
// request to the PLAINTEXT address and, when asked, authenticates with
// SCRAM on the SASL address and sends one there too. It exits 0 when every
// check passed and 1 otherwise, printing one line per check.
//
// deploy/local/kafka.sh runs it in a loop to decide when the broker it
// started is ready:
//
//	kafkaping -brokers 127.0.0.1:19092 -sasl-brokers 127.0.0.1:19094 -timeout 3s
//
// The SASL user and password come from RACKSTREAM_TEST_SASL_USER and
// RACKSTREAM_TEST_SASL_PASSWORD (never from flags, so they stay out of ps).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:19092", "PLAINTEXT seed brokers, comma separated")
	saslBrokers := flag.String("sasl-brokers", "", "SASL_PLAINTEXT seed brokers (SCRAM-SHA-512), comma separated; empty skips the SASL check")
	timeout := flag.Duration("timeout", 5*time.Second, "deadline for all checks")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	ok := true
	line, err := ping(ctx, split(*brokers), nil)
	if err != nil {
		fmt.Printf("kafkaping: %s: %v\n", *brokers, err)
		ok = false
	} else {
		fmt.Printf("kafkaping: PLAINTEXT %s: %s\n", *brokers, line)
	}
	if *saslBrokers != "" {
		user, pass := os.Getenv("RACKSTREAM_TEST_SASL_USER"), os.Getenv("RACKSTREAM_TEST_SASL_PASSWORD")
		mech := scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		line, err := ping(ctx, split(*saslBrokers), []kgo.Opt{kgo.SASL(mech)})
		if err != nil {
			fmt.Printf("kafkaping: SASL_PLAINTEXT %s as %q: %v\n", *saslBrokers, user, err)
			ok = false
		} else {
			fmt.Printf("kafkaping: SASL_PLAINTEXT %s (SCRAM-SHA-512 as %q): %s\n", *saslBrokers, user, line)
		}
	}
	if !ok {
		os.Exit(1)
	}
}

// ping asks the brokers for metadata and API versions and describes what
// answered.
func ping(ctx context.Context, brokers []string, opts []kgo.Opt) (string, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		// Fail fast: the caller polls, one dial attempt per call is enough.
		kgo.RequestRetries(0),
		kgo.RetryTimeout(time.Second),
	}, opts...)...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return "", fmt.Errorf("metadata: %w", err)
	}
	if len(md.Brokers) == 0 {
		return "", errors.New("metadata: no brokers")
	}
	guess := "?"
	if vs, err := adm.ApiVersions(ctx); err == nil {
		for _, v := range vs {
			if v.Err == nil {
				guess = kversion.FromApiVersionsResponse(v.Raw()).VersionGuess()
				break
			}
		}
	}
	return fmt.Sprintf("metadata from %d broker(s), cluster %s, controller %d; API versions %s",
		len(md.Brokers), md.Cluster, md.Controller, guess), nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
