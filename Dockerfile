# syntax=docker/dockerfile:1
#
# The rackstream image: a static Go binary on a distroless base, run as a
# non-root user. Build from the repository root:
#
#   docker build -t rackstream:dev .
#
# The image runs `rackstream run` with the properties file the Kubernetes
# manifests mount at /etc/rackstream (deploy/kubernetes); RACKSTREAM_*
# environment variables override it. See deploy/README.md.

# --- build: compile a static binary -----------------------------------------
FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary with Go's own DNS resolver and no libc, so it
# runs on a base image without one. -trimpath drops build paths from the
# binary; -s -w drop the symbol table and DWARF (smaller image; stack traces
# keep function names and lines).
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/rackstream ./cmd/rackstream
# The state directory, owned by the runtime user: an empty volume mounted
# there in Docker inherits the owner.
RUN mkdir -p /out/state

# --- runtime: no shell, no package manager, CA certificates for TLS ----------
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/rackstream /usr/local/bin/rackstream
COPY --from=build --chown=65532:65532 /out/state /var/lib/rackstream
# state.dir's default is <user cache directory>/rackstream: this makes it
# /var/lib/rackstream, the directory above. A state.dir in the properties
# file or the environment still overrides it.
ENV XDG_CACHE_HOME=/var/lib
# nonroot (65532): never root, also where a manifest does not say so.
USER 65532:65532
# http.listen: queries, /metrics, /healthz, /readyz.
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/rackstream", "run", "--config", "/etc/rackstream/rackstream.properties"]
