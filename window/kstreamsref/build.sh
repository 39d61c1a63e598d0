#!/usr/bin/env bash
# Builds the Kafka Streams windowed-aggregation reference (kstreamsref) and
# prints the absolute path of its runnable jar:
# `java -jar "$(window/kstreamsref/build.sh)" < scenarios.jsonl`.
# deploy/local/mvnjar.sh does the work: the build is cached by source hash
# under ${RACKSTREAM_CACHE:-$HOME/.cache/rackstream}/kstreamsref/; exit
# status 3 means java or mvn is not installed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../../deploy/local/mvnjar.sh" "$here" kstreamsref
