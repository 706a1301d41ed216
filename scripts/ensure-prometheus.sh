#!/usr/bin/env bash
# Make sure Prometheus (the server and promtool) is on this machine, for the monitoring tests:
# `promtool check rules` / `promtool test rules` on the chart's rendered PrometheusRule, and a
# real Prometheus server (free port, temp dir) scraping the project's own exporters.
# Prints the directory holding `prometheus` and `promtool`. Installs Debian's `prometheus`
# package when none is found and we may (root, apt-get present); otherwise exits 1 with a hint.
set -euo pipefail

find_bindir() {
  if [ -n "${KAFKA_ARCHIVE_PROMETHEUS_BIN:-}" ] && [ -x "$KAFKA_ARCHIVE_PROMETHEUS_BIN/promtool" ] \
     && [ -x "$KAFKA_ARCHIVE_PROMETHEUS_BIN/prometheus" ]; then
    echo "$KAFKA_ARCHIVE_PROMETHEUS_BIN"; return 0
  fi
  if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
    dirname "$(command -v promtool)"; return 0
  fi
  return 1
}

if find_bindir; then
  exit 0
fi

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-prometheus: installing Debian's prometheus package" >&2
  export DEBIAN_FRONTEND=noninteractive
  # no recommends: the package's own node exporter and web assets are not needed
  apt-get install -y -qq --no-install-recommends prometheus >&2 \
    || { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends prometheus >&2; }
  # the package starts a server of its own (port 9090); the tests start theirs on a free port
  if command -v systemctl >/dev/null 2>&1; then systemctl stop prometheus >/dev/null 2>&1 || true; fi
  if command -v service >/dev/null 2>&1; then service prometheus stop >/dev/null 2>&1 || true; fi
  find_bindir && exit 0
fi

echo "ensure-prometheus: no Prometheus found; install Debian's 'prometheus' package" \
     "(apt-get install prometheus) or set KAFKA_ARCHIVE_PROMETHEUS_BIN to a directory with" \
     "prometheus and promtool" >&2
exit 1
