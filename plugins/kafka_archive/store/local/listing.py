"""Listing a local store: walk the root for the objects under a key prefix.

Contract: :func:`list_objects` returns every object whose key starts with the (validated)
prefix, in key order (S3's UTF-8 byte order), skipping the store's reserved files and
directories, non-regular files and files deleted while listing; it only descends into
directories that can hold a matching key. No SHA-256 or metadata is read (sidecars are not
opened), like S3's ListObjectsV2.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kafka_archive.store.base import RESERVED_SEGMENT_PREFIX, StoredObject
from kafka_archive.store.local.errors import os_error
from kafka_archive.store.local.files import etag, mtime
from kafka_archive.store.local.paths import object_path

__all__ = ["list_objects"]


def list_objects(root: Path, prefix: str, *, uri: str) -> list[StoredObject]:
    """The objects under ``prefix`` in the store rooted at ``root`` (whose URI is ``uri``)."""
    base = prefix.rpartition("/")[0]
    start = object_path(root, base) if base else root
    found: list[StoredObject] = []
    for dirpath, dirnames, filenames in os.walk(start):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        lead = rel_dir + "/" if rel_dir else ""
        # Prune reserved directories and those that cannot contain a matching key.
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(RESERVED_SEGMENT_PREFIX)
            and ((lead + d + "/").startswith(prefix) or prefix.startswith(lead + d + "/"))
        )
        for name in filenames:
            if name.startswith(RESERVED_SEGMENT_PREFIX):
                continue
            key = lead + name
            if not key.startswith(prefix):
                continue
            try:
                st = os.stat(os.path.join(dirpath, name))
            except FileNotFoundError:  # deleted while listing
                continue
            except OSError as exc:
                raise os_error(exc, "list", key, uri=uri) from exc
            if not stat.S_ISREG(st.st_mode):
                continue
            found.append(
                StoredObject(key=key, size=st.st_size, etag=etag(st), last_modified=mtime(st))
            )
    # S3 lists in UTF-8 byte order; UTF-8 preserves code point order, so str order matches.
    found.sort(key=lambda o: o.key)
    return found
