// Package deploy holds no code: it is the home of Rackstream's deployment
// files (Kubernetes manifests, Prometheus rules, a Grafana dashboard, the
// Dockerfile at the repository root) and of the tests that keep them
// consistent with each other and with the code. See README.md here.
//
// The tests check properties, not images or clusters: no Docker engine or
// Kubernetes API runs where they do. They read the manifests with a parser of
// the YAML subset the files are written in (yaml_test.go), load the
// ConfigMap's properties with package config exactly as `rackstream run`
// would, run the init container's script against a fake API server, and
// compare every metric name the alerts and the dashboard use with what live
// instances export on /metrics.
package deploy
