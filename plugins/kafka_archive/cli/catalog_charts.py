"""Charts of ``kafka-archive catalog stats``: in the terminal (plotext) and as a PNG
(matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka_archive.cli.output import console
from kafka_archive.timeparse import format_ms

__all__ = ["draw_png", "draw_terminal", "time_ticks"]


def time_ticks(buckets: list[Any]) -> tuple[list[int], list[str]]:
    """Tick positions (bucket numbers) and their labels for the chart's x axis: the first,
    middle and last bucket's start time, UTC, to the minute (``2026-11-20 03:00Z``), or to the
    second for buckets shorter than a minute."""
    n = len(buckets)
    positions = sorted({0, (n - 1) // 2, n - 1}) if n else []
    seconds = any(b.width_ms % 60_000 for b in buckets)
    cut = 19 if seconds else 16

    def label(ms: int) -> str:
        return format_ms(ms)[:cut].replace("T", " ") + "Z"

    return positions, [label(buckets[i].start_ms) for i in positions]


def draw_terminal(buckets: list[Any], title: str) -> None:
    """A bar chart of records per bucket in the terminal (plotext), its x axis labelled with
    the buckets' start times (:func:`time_ticks`)."""
    import plotext as plt

    if not buckets:
        return
    fig = plt.figure
    fig.clear()
    fig.plot_size(max(40, min(console.width, 120)), 16)
    fig.theme("clear")
    fig.title(title)
    fig.draw(fig.bar(list(range(len(buckets))), [b.records for b in buckets]))
    fig.ruler("x").ticks(*time_ticks(buckets))
    fig.label("bucket start (UTC)", "x")
    console.print(plt.uncolorize(str(fig.build())), highlight=False, markup=False)


def draw_png(path: Path, buckets: list[Any], title: str) -> None:
    from datetime import UTC, datetime

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = [datetime.fromtimestamp(b.start_ms / 1000, tz=UTC) for b in buckets]
    width = (buckets[0].width_ms / 86_400_000) if buckets else 0.001
    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(10, 6))
    ax1.bar(times, [b.records for b in buckets], width=width, align="edge")
    ax1.set_ylabel("records")
    ax1.set_title(title)
    ax2.bar(times, [b.bytes for b in buckets], width=width, align="edge", color="tab:orange")
    ax2.set_ylabel("bytes")
    ax2.set_xlabel("time (UTC)")
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
