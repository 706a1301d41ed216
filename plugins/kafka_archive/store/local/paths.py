"""Where a local store keeps things: its root directory, and each key's object and sidecar.

Contract: :func:`local_root_from_uri` turns ``file:///abs/dir`` or a plain path into the root
(refusing remote hosts, queries and relative ``file:`` URIs with
:class:`~kafka_archive.store.errors.StoreConfigError`); :func:`object_path` and
:func:`sidecar_path` map an already validated key onto files under the root. Names starting
with ``.ka-`` (:data:`~kafka_archive.store.base.RESERVED_SEGMENT_PREFIX`) are the store's own:
sidecars (``.ka-meta-<name>.json``) and in-flight writes (``.ka-tmp-*``).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from kafka_archive.store.base import RESERVED_SEGMENT_PREFIX
from kafka_archive.store.errors import StoreConfigError

__all__ = [
    "SIDECAR_PREFIX",
    "TMP_PREFIX",
    "local_root_from_uri",
    "object_path",
    "sidecar_path",
]

SIDECAR_PREFIX = RESERVED_SEGMENT_PREFIX + "meta-"
TMP_PREFIX = RESERVED_SEGMENT_PREFIX + "tmp-"


def local_root_from_uri(uri: str) -> Path:
    """The directory named by ``file:///abs/dir`` or a plain (possibly relative) path."""
    if uri.startswith("file:"):
        parts = urlsplit(uri)
        if parts.netloc not in ("", "localhost"):
            raise StoreConfigError(
                f"file URI {uri!r} names host {parts.netloc!r}",
                hint="Use file:///absolute/path (three slashes) for a local directory",
            )
        if parts.query or parts.fragment:
            raise StoreConfigError(f"file URI {uri!r} has a query or fragment")
        path = unquote(parts.path)
        if not path.startswith("/"):
            raise StoreConfigError(
                f"file URI {uri!r} is not absolute",
                hint="Use file:///absolute/path (three slashes) for a local directory",
            )
        return Path(path)
    if uri == "":
        raise StoreConfigError("empty store URI")
    return Path(os.path.abspath(uri))


def object_path(root: Path, key: str) -> Path:
    """The file holding the object ``key``."""
    return root.joinpath(*key.split("/"))


def sidecar_path(root: Path, key: str) -> Path:
    """The sidecar describing the object ``key`` (beside it, under a reserved name)."""
    segments = key.split("/")
    return root.joinpath(*segments[:-1], f"{SIDECAR_PREFIX}{segments[-1]}.json")
