#!/usr/bin/env bash
# Resolve Apache Kafka's own broker and tools jars (org.apache.kafka:kafka_2.13 and kafka-tools,
# their runtime dependencies and a log4j2 binding) from Maven Central with Maven, from the pom in
# scripts/kafka/, into a cache; print the directory that holds the jars (a JVM classpath of
# "<dir>/*"). Usage: ensure-kafka.sh [VERSION]   (default: KAFKA_ARCHIVE_KAFKA_VERSION or 4.4.0)
#
# Cache: ${KAFKA_ARCHIVE_CACHE:-$HOME/.cache/kafka-archive}/kafka-<VERSION>/libs, written to a
# temporary folder and renamed when complete, so an interrupted run never leaves a partial
# classpath behind. Needs `java` (17+) and `mvn` on PATH; exits 1 with a hint otherwise.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${1:-${KAFKA_ARCHIVE_KAFKA_VERSION:-4.4.0}}"
cache="${KAFKA_ARCHIVE_CACHE:-$HOME/.cache/kafka-archive}"
dest="$cache/kafka-$version/libs"

if [ -f "$dest/.complete" ]; then
  echo "$dest"; exit 0
fi
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "ensure-kafka: '$tool' not found; install Java 17+ and Maven (apt-get install" \
         "openjdk-17-jdk-headless maven) to run the real Kafka cluster" >&2
    exit 1
  fi
done
mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.kafka-$version.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "ensure-kafka: resolving Apache Kafka $version from Maven Central" >&2
mvn -q -B -f "$here/kafka/pom.xml" -Dkafka.version="$version" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >&2
ls "$tmp/libs"/kafka_2.13-"$version".jar >/dev/null
touch "$tmp/libs/.complete"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/libs" "$dest"
echo "$dest"
