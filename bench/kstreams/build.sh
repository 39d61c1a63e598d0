#!/usr/bin/env bash
# Builds the Kafka Streams peer of the processing benchmark (kstreams) and prints the absolute path of
# its runnable jar: `java -jar "$(bench/kstreams/build.sh)" BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR`.
# deploy/local/mvnjar.sh does the work: the build is cached by source hash under
# ${RACKSTREAM_CACHE:-$HOME/.cache/rackstream}/kstreams-count/; exit status 3 means java or mvn is
# not installed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../../deploy/local/mvnjar.sh" "$here" kstreams-count
