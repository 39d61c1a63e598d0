// Package e2e holds end-to-end tests of the rackstream binary: TestMain
// builds it, and the tests run it as real processes (`rackstream dev`,
// several `rackstream run`) against kfake, or against the real broker
// named by RACKSTREAM_TEST_BROKERS, talking to them over HTTP on loopback
// and killing them with signals (SIGKILL for a crash).
package e2e
