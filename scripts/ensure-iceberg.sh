#!/usr/bin/env bash
# Resolve Apache Iceberg's own Spark runtime (iceberg-spark-runtime-<spark>_2.13, the
# iceberg-aws-bundle for s3:// warehouses, and the SQLite and PostgreSQL JDBC drivers of the
# JDBC catalog) from Maven Central with Maven, from the pom in scripts/iceberg/, into a cache;
# print the directory that holds the jars (give it to `kafka-archive export --format iceberg`
# as KAFKA_ARCHIVE_ICEBERG_JARS, or to spark-submit as --jars "<dir>/*.jar").
# Usage: ensure-iceberg.sh [ICEBERG_VERSION [SPARK_MINOR]]
#   defaults: KAFKA_ARCHIVE_ICEBERG_VERSION or 1.12.0; the Spark line of the installed PySpark
#   (python3 -c 'import pyspark'), or KAFKA_ARCHIVE_ICEBERG_SPARK. Iceberg publishes a runtime
#   per Spark minor line (1.12.0: up to Spark 4.1): a PySpark of a newer line is refused with a
#   hint rather than given a runtime that fails at the first query.
#
# Cache: ${KAFKA_ARCHIVE_CACHE:-$HOME/.cache/kafka-archive}/iceberg-<V>-spark-<S>/libs, written
# to a temporary folder and renamed when complete (never a partial classpath). Needs java, mvn.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${1:-${KAFKA_ARCHIVE_ICEBERG_VERSION:-1.12.0}}"
py="${PYTHON:-$here/../.venv/bin/python}"
[ -x "$py" ] || py=python3
spark="${2:-${KAFKA_ARCHIVE_ICEBERG_SPARK:-$("$py" -c 'import pyspark; print(".".join(pyspark.__version__.split(".")[:2]))' 2>/dev/null || echo 4.1)}}"
cache="${KAFKA_ARCHIVE_CACHE:-$HOME/.cache/kafka-archive}"
dest="$cache/iceberg-$version-spark-$spark/libs"

if [ -f "$dest/.complete" ]; then
  echo "$dest"; exit 0
fi
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "ensure-iceberg: '$tool' not found; install Java 17+ and Maven (apt-get install" \
         "openjdk-17-jdk-headless maven) to export Iceberg tables" >&2
    exit 1
  fi
done
mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.iceberg-$version.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "ensure-iceberg: resolving Apache Iceberg $version for Spark $spark from Maven Central" >&2
if ! mvn -q -B -f "$here/iceberg/pom.xml" -Diceberg.version="$version" -Diceberg.spark="$spark" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >&2; then
  echo "ensure-iceberg: Maven Central has no iceberg-spark-runtime-${spark}_2.13:$version;" \
       "install a pyspark of a Spark line Iceberg $version publishes a runtime for" \
       "(the project pins pyspark<4.2)" >&2
  exit 1
fi
ls "$tmp/libs"/iceberg-spark-runtime-"$spark"_2.13-"$version".jar >/dev/null
touch "$tmp/libs/.complete"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/libs" "$dest"
echo "$dest"
