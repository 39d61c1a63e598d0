#!/usr/bin/env bash
# mvnjar.sh DIR NAME: builds the Maven project in DIR, whose build makes
# target/NAME.jar (and its dependencies in target/lib, named by the jar's
# manifest), and prints the absolute path of a cached copy of that jar.
# The Java reference programs' build.sh scripts call it with their own
# directory: `java -jar "$(window/kstreamsref/build.sh)"`.
#
# Builds are cached by a hash of DIR's pom.xml and src/ under
# ${RACKSTREAM_CACHE:-$HOME/.cache/rackstream}/NAME/<hash>/, so a fresh clone
# rebuilds only when the sources change. Concurrent callers build once.
# Maven runs offline first and online (Maven Central) only when the offline
# build fails.
#
# Exit status: 0 with the path on stdout; 3 when java or mvn is not installed
# (callers may skip); 1 when the build fails; 2 on a usage error.
set -euo pipefail

if [[ $# -ne 2 || ! -f "$1/pom.xml" ]]; then
	echo "usage: mvnjar.sh DIR NAME (DIR holds pom.xml and src/; its build makes target/NAME.jar)" >&2
	exit 2
fi
dir="$(cd "$1" && pwd)"
name="$2"
cache_root="${RACKSTREAM_CACHE:-${HOME:-/tmp}/.cache/rackstream}/$name"

for tool in java mvn; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "$name: $tool not found on PATH (need Java 17+ and Maven)" >&2
		exit 3
	fi
done

hash="$(cd "$dir" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)"
out="$cache_root/$hash"
if [[ -f "$out/$name.jar" ]]; then
	echo "$out/$name.jar"
	exit 0
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
flock 9
if [[ ! -f "$out/$name.jar" ]]; then
	log="$(mktemp)"
	trap 'rm -f "$log"' EXIT
	if ! (cd "$dir" && mvn -q -o -B clean package >"$log" 2>&1); then
		echo "$name: offline build failed, fetching from Maven Central" >&2
		if ! (cd "$dir" && mvn -q -B clean package >"$log" 2>&1); then
			cat "$log" >&2
			echo "$name: mvn package failed in $dir" >&2
			exit 1
		fi
	fi
	if [[ ! -f "$dir/target/$name.jar" ]]; then
		echo "$name: the build in $dir made no target/$name.jar (the pom's finalName must be $name)" >&2
		exit 1
	fi
	tmp="$(mktemp -d "$cache_root/.build.XXXXXX")"
	cp "$dir/target/$name.jar" "$tmp/"
	if [[ -d "$dir/target/lib" ]]; then
		cp -r "$dir/target/lib" "$tmp/lib"
	fi
	rm -rf "$out"
	mv "$tmp" "$out"
fi
echo "$out/$name.jar"
