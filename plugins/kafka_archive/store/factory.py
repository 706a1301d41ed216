"""``open_store``: one entry point from a URI to an :class:`ObjectStore`.

* ``file:///abs/dir`` or a plain path (relative paths are made absolute) -> :class:`LocalStore`
  (options: ``fsync``).
* ``s3://bucket[/prefix]`` -> :class:`S3Store` (options: the fields of :class:`S3Options`, plus
  ``session`` to pass a ready ``boto3.session.Session``).

Unknown schemes or options raise :class:`StoreConfigError`.
"""

from __future__ import annotations

import re
from typing import Any

from kafka_archive.store.base import ObjectStore
from kafka_archive.store.errors import StoreConfigError
from kafka_archive.store.local import LocalStore, local_root_from_uri

__all__ = ["open_store"]

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def open_store(uri: str, **options: Any) -> ObjectStore:
    """Open the store named by ``uri`` (see the module docstring)."""
    if not isinstance(uri, str):
        raise StoreConfigError(f"store URI must be a str, got {type(uri).__name__}")
    scheme_match = _SCHEME.match(uri)
    scheme = scheme_match.group(1).lower() if scheme_match else None
    if scheme == "s3":
        # imported here: boto3 is loaded only when an s3:// store is opened
        from kafka_archive.store.s3 import S3Options, S3Store, parse_s3_uri

        bucket, prefix = parse_s3_uri(uri)
        session = options.pop("session", None)
        try:
            s3_options = S3Options(**options)
        except TypeError as exc:
            raise StoreConfigError(f"unknown option for an s3:// store: {exc}", uri=uri) from exc
        return S3Store(bucket, prefix, s3_options, session=session)
    if scheme is None or scheme == "file" or uri.startswith("file:"):
        root = local_root_from_uri(uri)
        try:
            return LocalStore(root, **options)
        except TypeError as exc:
            raise StoreConfigError(f"unknown option for a local store: {exc}", uri=uri) from exc
    hint = "Use s3://bucket/prefix (s3a:// and s3n:// are Hadoop names for the same thing)"
    raise StoreConfigError(
        f"unsupported store URI scheme {scheme!r}",
        uri=uri,
        hint=hint if scheme in ("s3a", "s3n") else "Use file:///abs/dir, a path, or s3://bucket",
    )
