// Package deploy holds no code: it is the home of Rackstream's deployment
// files (Kubernetes manifests, Prometheus rules, a Grafana dashboard, the
// Dockerfile at the repository root, the release script and image in
// release/) and of the tests that keep them consistent with each other and
// with the code. See README.md here.
//
// The tests check properties, not images or clusters: no Docker engine or
// Kubernetes API runs where they do. They read the manifests with the tools
// Kubernetes uses (k8s_test.go): strict decoding into the k8s.io/api types,
// kustomize's Go API for the variants, BuildKit's parser for the
// Dockerfiles. They load the ConfigMap's properties with package config exactly as `rackstream run`
// would, run the init container's script against a fake API server, and
// compare every metric name the alerts and the dashboard use with what live
// instances export on /metrics.
package deploy
