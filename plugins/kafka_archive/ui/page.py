"""The on-call page's bundle: ``static/oncall-app.js``, the React app that Airflow's UI renders
in its own shell (the plugin's ``react_apps`` entry, :func:`kafka_archive.ui.react_app_spec`).

It is built from ``frontend/`` at the repository's root (``npm ci && npm run build`` there) and
committed: an installation needs no Node.js, and ``tests/ui/test_bundle.py`` rebuilds it from
the sources and checks that the committed file is that build. React, React Router, Chakra UI
and Emotion are not in it: Airflow 3.3's UI shares its own on ``globalThis``.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

__all__ = ["BUNDLE_NAME", "BUNDLE_PATH", "bundle_js", "bundle_version"]

#: the bundle's file name under ``static/``
BUNDLE_NAME = "oncall-app.js"
#: where the app (:func:`kafka_archive.ui.api.build_app`) serves it
BUNDLE_PATH = f"/static/{BUNDLE_NAME}"


@cache
def bundle_js() -> bytes:
    """The bundle's bytes (read once)."""
    return resources.files("kafka_archive.ui").joinpath("static", BUNDLE_NAME).read_bytes()


def bundle_version() -> str:
    """The bundle's content hash (12 hex digits): the cache-busting part of its URL."""
    return hashlib.sha256(bundle_js()).hexdigest()[:12]
