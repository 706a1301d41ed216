"""The on-call page: one HTML file with its script inline (``static/oncall.html``)."""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["page_html"]


@cache
def page_html() -> str:
    """The page's HTML (read once)."""
    return resources.files("kafka_archive.ui").joinpath("static/oncall.html").read_text("utf-8")
