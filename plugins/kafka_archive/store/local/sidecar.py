"""Sidecars of the local store: each object's SHA-256 and user metadata, in a JSON file beside it.

Contract: a sidecar records the (inode, size, mtime_ns) fingerprint of the file it describes
and is trusted only while that fingerprint matches (:func:`read_sidecar` answers
``(None, {})`` otherwise, or when it is missing or unreadable), so a crash between writing
the sidecar and publishing the object, or a file changed behind the store's back, yields
"SHA-256 unknown", never a wrong SHA-256. :func:`write_sidecar` replaces a sidecar atomically
(temp file, fsync unless told not to, rename).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafka_archive.store.local.files import fingerprint, write_all
from kafka_archive.store.local.paths import TMP_PREFIX

__all__ = ["SIDECAR_VERSION", "read_sidecar", "write_sidecar"]

SIDECAR_VERSION = 1


def read_sidecar(path: Path, st: os.stat_result) -> tuple[str | None, dict[str, str]]:
    """(sha256, metadata) if the sidecar describes exactly this file, else (None, {})."""
    try:
        with open(path, "rb") as f:
            doc: Any = json.load(f)
    except (OSError, ValueError):
        return None, {}
    if (
        not isinstance(doc, dict)
        or doc.get("v") != SIDECAR_VERSION
        or doc.get("object") != fingerprint(st)
    ):
        return None, {}
    sha = doc.get("sha256")
    meta = doc.get("metadata")
    if not isinstance(sha, str) or not isinstance(meta, dict):
        return None, {}
    return sha, {str(k): str(v) for k, v in meta.items()}


def write_sidecar(
    path: Path, st: os.stat_result, sha256: str, metadata: Mapping[str, str], *, fsync: bool
) -> None:
    """Record ``sha256`` and ``metadata`` for the file whose stat is ``st``, at ``path``."""
    doc = {
        "v": SIDECAR_VERSION,
        "sha256": sha256,
        "metadata": dict(metadata),
        "object": fingerprint(st),
    }
    payload = json.dumps(doc, sort_keys=True).encode("utf-8")
    target = path
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, dir=target.parent)
    try:
        write_all(fd, payload)
        if fsync:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, target)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
