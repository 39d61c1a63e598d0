package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// ErrKafkaUnavailable is wrapped by StartBroker's and StartBrokers' errors
// when kafka.sh says Kafka cannot run on this machine (its exit code 2: no
// Java 17, no Maven, or the jars could not be fetched). A test then skips
// outside CI and fails under it (kafkatest.SkipOrFail).
var ErrKafkaUnavailable = errors.New("cluster: Kafka cannot run on this machine")

// kafkaPortVars are kafka.sh's own listeners' port variables, in the order
// their ports are handed out (RACKSTREAM_KAFKA_<name>).
var kafkaPortVars = []string{"PORT", "CONTROLLER_PORT", "SASL_PORT", "SSL_PORT", "MTLS_PORT", "SASL_SSL_PORT", "OAUTH_PORT"}

// kafkaSh runs deploy/local/kafka.sh on one run directory, always with the
// same environment.
type kafkaSh struct {
	dir    string
	script string
	env    []string
}

// newKafkaSh prepares kafka.sh for the run directory dir; empty: a
// directory under the system's temporary directory named after prefix and
// this module's path, so that a cluster left behind by an interrupted run
// of the same tree is found (and stopped) by the next one.
func newKafkaSh(dir, prefix string) (*kafkaSh, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		sum := sha256.Sum256([]byte(root))
		dir = filepath.Join(os.TempDir(), prefix+hex.EncodeToString(sum[:4]))
	}
	return &kafkaSh{
		dir:    dir,
		script: filepath.Join(root, "deploy", "local", "kafka.sh"),
		env:    append(os.Environ(), "RACKSTREAM_KAFKA_DIR="+dir),
	}, nil
}

// claimKafka prepares kafka.sh for the run directory dir (see newKafkaSh),
// stops what an interrupted run left running there (it holds its ports),
// reserves n ports at or above from (19300 when 0), and gives kafka.sh's
// own listeners the first of them. Call release when the cluster is closed.
func claimKafka(dir, prefix string, from, n int) (sh *kafkaSh, base int, release func(), err error) {
	sh, err = newKafkaSh(dir, prefix)
	if err != nil {
		return nil, 0, nil, err
	}
	if _, err := sh.run("stop"); err != nil {
		return nil, 0, nil, fmt.Errorf("cluster: stopping what an earlier run left: %w", err)
	}
	if from == 0 {
		from = 19300
	}
	base, release, err = reservePorts(from, n)
	if err != nil {
		return nil, 0, nil, err
	}
	sh.setPorts(base)
	return sh, base, release, nil
}

// setPorts gives kafka.sh's own listeners the ports base, base+1, ...
func (k *kafkaSh) setPorts(base int) {
	for i, v := range kafkaPortVars {
		k.setenv(v, strconv.Itoa(base+i))
	}
}

// setenv sets RACKSTREAM_KAFKA_<name>.
func (k *kafkaSh) setenv(name, value string) {
	k.env = append(k.env, "RACKSTREAM_KAFKA_"+name+"="+value)
}

// run runs kafka.sh with args and returns its output. An exit code of 2
// wraps ErrKafkaUnavailable.
func (k *kafkaSh) run(args ...string) (string, error) {
	c := exec.Command(k.script, args...)
	c.Env = k.env
	out, err := c.CombinedOutput()
	if err == nil {
		return string(out), nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 {
		err = fmt.Errorf("%w: %v", ErrKafkaUnavailable, err)
	}
	return string(out), fmt.Errorf("cluster: kafka.sh %v in %s: %w\n%s", args, k.dir, err, out)
}

// removeRunDir removes a run directory and kafka.sh's lock file beside it.
func removeRunDir(dir string) {
	os.RemoveAll(dir)
	os.Remove(dir + ".lock")
}
