#!/usr/bin/env bash
# Make sure a PostgreSQL server build (initdb, pg_ctl, postgres) is on this machine, for the
# catalog tests and benchmarks, which start their own throw-away server in a temp directory.
# Prints the directory holding the server binaries. Installs Debian's `postgresql` package
# when none is found and we may (root, apt-get present); otherwise exits 1 with a hint.
set -euo pipefail

find_bindir() {
  if [ -n "${KAFKA_ARCHIVE_PG_BIN:-}" ] && [ -x "$KAFKA_ARCHIVE_PG_BIN/initdb" ]; then
    echo "$KAFKA_ARCHIVE_PG_BIN"; return 0
  fi
  local d
  # newest Debian/Ubuntu cluster version first
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then
      echo "$d"; return 0
    fi
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"; return 0
  fi
  return 1
}

if find_bindir; then
  exit 0
fi

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-postgres: installing Debian's postgresql package" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends postgresql >&2
  # the package starts a cluster of its own; the tests do not use it
  if command -v pg_ctlcluster >/dev/null 2>&1; then
    for v in $(ls /etc/postgresql 2>/dev/null); do pg_ctlcluster "$v" main stop >&2 || true; done
  fi
  find_bindir && exit 0
fi

echo "ensure-postgres: no PostgreSQL server found; install Debian's 'postgresql' package" \
     "(apt-get install postgresql) or set KAFKA_ARCHIVE_PG_BIN to a directory with initdb" >&2
exit 1
