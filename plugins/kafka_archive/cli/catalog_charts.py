"""Charts of ``kafka-archive catalog stats``: in the terminal (plotext) and as a PNG
(matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka_archive.cli.output import console
from kafka_archive.timeparse import format_ms

__all__ = ["draw_png", "draw_terminal"]


def draw_terminal(buckets: list[Any], title: str) -> None:
    """A bar chart of records per bucket in the terminal (plotext)."""
    import plotext as plt

    if not buckets:
        return
    fig = plt.figure
    fig.clear()
    fig.plot_size(max(40, min(console.width, 120)), 16)
    fig.theme("clear")
    fig.title(f"{title} from {format_ms(buckets[0].start_ms)} (x: bucket number)")
    fig.draw(fig.bar(list(range(len(buckets))), [b.records for b in buckets]))
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
