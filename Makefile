# Rackstream's build. `make test` is the README's test command and what CI
# (.ci/run) runs: go vet, then all tests on kfake, then all tests again on a
# real Apache Kafka 4.4.0 broker started by deploy/local/kafka.sh (see
# deploy/local/README.md; deploy/local/test.sh does the work).
GO ?= go
GOTEST_TIMEOUT ?= 10m
PKGS ?= ./...

export GO GOTEST_TIMEOUT PKGS

.PHONY: all build vet test test-kfake test-kafka cover-runtime bench bench-go chaos soak kafka-start kafka-stop kafka-status release
all: build

build:
	$(GO) build ./...

vet:
	$(GO) vet $(PKGS)

# vet, the kfake pass, and the real-broker pass (skipped with a reason when
# the broker can't be had, except under CI: CI set to any non-empty value).
test:
	./deploy/local/test.sh

# Only the kfake pass: tests never see a real broker.
test-kfake:
	env -u RACKSTREAM_TEST_BROKERS -u RACKSTREAM_TEST_SASL_BROKERS $(GO) test -timeout $(GOTEST_TIMEOUT) $(PKGS)

# Only the real-broker pass, on the broker `make kafka-start` left running.
test-kafka:
	eval "$$(./deploy/local/kafka.sh env)" && ./deploy/local/kafka.sh status && \
		$(GO) test -timeout $(GOTEST_TIMEOUT) $(PKGS)

# The statement coverage of processor/commit.go, cut.go, acks.go, txn.go,
# rebalance.go and lifecycle_plan.go by their broker-free unit tests alone,
# each against its own bar (90%, or what the file had when it joined); make
# test runs it too.
cover-runtime:
	./deploy/local/cover-runtime.sh

# The fault suite's long form (chaos/): every scenario against a broker of
# its own; make test runs the short form. One line per scenario.
chaos:
	./deploy/local/chaos.sh long

soak:
	./deploy/local/chaos.sh soak $(or $(SOAK),30m)

# bench/driver: every benchmark and peer in its own process, on kfake and on
# the real broker when `make kafka-start` left one running; writes
# bench/results.md (bench/README.md). `bench-go` runs every go benchmark.
bench:
	if ./deploy/local/kafka.sh status >/dev/null 2>&1; then eval "$$(./deploy/local/kafka.sh env)"; fi; \
		$(GO) run ./bench/driver -out bench/results.md

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m $(PKGS)

kafka-start:
	./deploy/local/kafka.sh start

kafka-stop:
	./deploy/local/kafka.sh stop

kafka-status:
	./deploy/local/kafka.sh status

# Static binaries for linux/amd64, linux/arm64 and darwin/arm64 with
# SHA256SUMS and the release image's Dockerfile, in dist/ (DIST); PLATFORMS
# narrows it (deploy/release/release.sh; deploy's TestReleaseQuick runs one).
release:
	./deploy/release/release.sh
