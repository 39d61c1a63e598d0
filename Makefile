# Rackstream's build. `make test` is the README's test command and what CI runs.
GO ?= go
GOTEST_TIMEOUT ?= 15m

.PHONY: all build vet test test-unit bench
all: build

build:
	$(GO) build ./...

vet:
	$(GO) vet ./...

# Unit and kfake integration tests.
test-unit:
	$(GO) test -timeout $(GOTEST_TIMEOUT) ./...

test: vet test-unit

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
