#!/usr/bin/env bash
# Builds the Kafka Streams windowed-aggregation reference (kstreamsref) and
# prints the absolute path of its runnable jar:
# `java -jar "$(window/kstreamsref/build.sh)" < scenarios.jsonl`.
# The jar's manifest names its dependencies in lib/ beside it.
#
# Builds are cached by a hash of pom.xml and src/ under
# ${RACKSTREAM_CACHE:-$HOME/.cache/rackstream}/kstreamsref/<hash>/, so a fresh
# clone rebuilds only when the sources change. Maven runs offline first and
# online (Maven Central) only when the offline build fails.
#
# Exit status: 0 with the path on stdout; 3 when java or mvn is not installed
# (callers may skip); 1 when the build fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache_root="${RACKSTREAM_CACHE:-${HOME:-/tmp}/.cache/rackstream}/kstreamsref"

for tool in java mvn; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "kstreamsref: $tool not found on PATH (need Java 17+ and Maven)" >&2
		exit 3
	fi
done

hash="$(cd "$here" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)"
out="$cache_root/$hash"
if [[ -f "$out/kstreamsref.jar" ]]; then
	echo "$out/kstreamsref.jar"
	exit 0
fi

mkdir -p "$cache_root"
# Concurrent callers (go test runs packages in parallel) build once.
exec 9>"$cache_root/.lock"
flock 9
if [[ ! -f "$out/kstreamsref.jar" ]]; then
	log="$(mktemp)"
	trap 'rm -f "$log"' EXIT
	if ! (cd "$here" && mvn -q -o -B package >"$log" 2>&1); then
		echo "kstreamsref: offline build failed, fetching from Maven Central" >&2
		if ! (cd "$here" && mvn -q -B package >"$log" 2>&1); then
			cat "$log" >&2
			echo "kstreamsref: mvn package failed in $here" >&2
			exit 1
		fi
	fi
	tmp="$(mktemp -d "$cache_root/.build.XXXXXX")"
	cp "$here/target/kstreamsref.jar" "$tmp/"
	cp -r "$here/target/lib" "$tmp/lib"
	rm -rf "$out"
	mv "$tmp" "$out"
fi
echo "$out/kstreamsref.jar"
