"""The on-call page: ``static/oncall.html`` (markup and style) with ``static/oncall.js`` (its
script) put inline where the HTML says ``/* oncall.js */``: one document, no second request, no
build step, no CDN. Two files only so that each stays readable."""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["page_html"]

#: where oncall.html takes its script
SCRIPT_SLOT = "/* oncall.js */"


@cache
def page_html() -> str:
    """The page's HTML with its script inline (read once)."""
    static = resources.files("kafka_archive.ui").joinpath("static")
    html = static.joinpath("oncall.html").read_text("utf-8")
    script = static.joinpath("oncall.js").read_text("utf-8")
    if html.count(SCRIPT_SLOT) != 1:
        raise RuntimeError(f"static/oncall.html must hold {SCRIPT_SLOT!r} exactly once")
    return html.replace(SCRIPT_SLOT, script)
