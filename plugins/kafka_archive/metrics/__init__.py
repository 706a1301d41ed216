"""Metrics of the platform, in Prometheus's exposition format (``prometheus_client``).

The design (docs/operations.md, "Metrics"): the archive, the catalog build and the prune are
short batch tasks that already record every outcome durably in the catalog (segment rows with
``archived_at_ms``, ``build_runs``, ``pruned_ranges``, ``integrity_problems``, follower
positions, replay progress). So the metrics are **computed from the catalog at scrape time**
(:mod:`.collector`), optionally joined with what the live cluster answers (high watermarks,
``__consumer_offsets`` ends: :mod:`.cluster`), by whichever long-running process is scraped:
``kafka-archive metrics serve``, the on-call API server (``/metrics``), or the offsets follower
(``catalog follow-offsets --metrics-port``), which adds its own in-process counters. A task that
never ran is then as visible as one that failed, and no textfile or push gateway can go stale.

Modules: :mod:`.definitions` (every metric's name, type, help and labels: the one registry of
names the dashboard and the rules are checked against), :mod:`.snapshot` (the health facts read
from the catalog in a handful of aggregate queries), :mod:`.cluster` (the broker's answers),
:mod:`.collector` (facts -> metric families), :mod:`.exposition` (the HTTP endpoint and the
textfile writer), :mod:`.process` (in-process counters of long-running processes).
"""
