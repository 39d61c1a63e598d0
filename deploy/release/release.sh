#!/usr/bin/env bash
# release.sh is `make release`: static rackstream binaries for every release
# platform, their SHA256SUMS, and the container image definition that packs
# them, all in one directory ready to upload or to `docker buildx build`.
#
#   make release                                  # all platforms into dist/
#   make release PLATFORMS=linux/amd64 DIST=/tmp/d  # the quick form CI runs
#
# The binaries carry their version, commit, commit time and dirty flag from
# the go command's VCS stamping (`rackstream version` prints them): build
# from a clean checkout of the tag you release. CGO_ENABLED=0 makes them
# static (Go's own DNS resolver, no libc), so one binary runs on any Linux
# and on the distroless base image.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GO=${GO:-go}
DIST=${DIST:-$ROOT/dist}
read -r -a PLATFORMS <<<"${PLATFORMS:-linux/amd64 linux/arm64 darwin/arm64}"

cd "$ROOT"
mkdir -p "$DIST"
DIST=$(cd "$DIST" && pwd)
rm -f "$DIST"/rackstream-* "$DIST/SHA256SUMS"
names=()
for p in "${PLATFORMS[@]}"; do
	os=${p%/*} arch=${p#*/}
	[[ -n $os && -n $arch && $p == */* ]] || { echo "release.sh: platform $p: want GOOS/GOARCH" >&2; exit 2; }
	name=rackstream-$os-$arch
	printf 'release.sh: %s\n' "$name"
	# -buildvcs=auto: stamp the commit when building in a checkout, whatever
	# GOFLAGS says (a -buildvcs=false there would make the binary anonymous).
	# -trimpath: no build paths in the binary; -s -w: no symbol table or
	# DWARF (stack traces keep function names and lines).
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -buildvcs=auto -trimpath -ldflags="-s -w" -o "$DIST/$name" ./cmd/rackstream
	names+=("$name")
done
(cd "$DIST" && sha256sum "${names[@]}" >SHA256SUMS)
# The image definition and its build context: the Dockerfile, the binaries
# and an empty state directory (the runtime image has no shell to make one).
cp "$ROOT/deploy/release/Dockerfile" "$DIST/Dockerfile"
mkdir -p "$DIST/state"
printf 'release.sh: %s: %s, SHA256SUMS, Dockerfile\n' "$DIST" "${names[*]}"
