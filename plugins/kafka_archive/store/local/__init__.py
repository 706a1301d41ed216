"""A directory on a local (or mounted) filesystem as an :class:`ObjectStore`.

Layout under the root directory::

    <root>/<dir>/<name>                  the object (key "<dir>/<name>")
    <root>/<dir>/.ka-meta-<name>.json    its sidecar: sha256, user metadata, stat fingerprint
    <root>/<dir>/.ka-tmp-*               in-flight writes (invisible to list/head/get)

Names starting with ``.ka-`` are reserved (rejected in keys), so bookkeeping files can never
collide with objects.

Writes are atomic and durable: the bytes go to a temp file in the destination directory, are
fsynced, re-read and re-hashed (so a bad copy is never published), then ``os.replace``-d over
the key and the directory is fsynced. A reader therefore sees either the old object, the new
one, or nothing - never a partial file.

The sidecar is written *before* the rename and records the temp file's (inode, size, mtime_ns),
which the rename preserves. A sidecar is only trusted when that fingerprint matches the object
it describes, so a crash between the two steps, or a file changed behind the store's back,
yields "SHA-256 unknown" (``None``), never a wrong SHA-256. Bit rot that keeps size and mtime
is caught by verified reads (``get_bytes``/``open_stream``).

Limitations: a key cannot be both an object and a "directory" of other keys (``a`` and
``a/b``), which S3 allows; such a write fails with :class:`StoreError`. Objects are created
with mode 0644.

Zero-copy reads: :meth:`LocalStore.get_range_view` maps the object's file read-only (``mmap``)
instead of copying it out of the page cache. Reading a mapped file that is truncated
underneath raises SIGBUS, which kills the process; that cannot happen to an object of this
store: a write never changes an existing file but renames a new, complete one over the key
(the mapping keeps the old inode and its bytes alive, as an open file would), and ``delete``
unlinks, which does not truncate. Only someone truncating the files behind the store's back
could, and that breaks every reader of the store anyway.

Modules (one responsibility each):

* :mod:`~kafka_archive.store.local.paths` - the root from a URI; where a key's files live;
* :mod:`~kafka_archive.store.local.files` - durable-write primitives (fsync, exclusive link);
* :mod:`~kafka_archive.store.local.sidecar` - each object's SHA-256 and metadata;
* :mod:`~kafka_archive.store.local.errors` - filesystem failures -> the store's errors;
* :mod:`~kafka_archive.store.local.ranges` - ranged reads (pread, mmap);
* :mod:`~kafka_archive.store.local.listing` - walking the root for a prefix;
* :mod:`~kafka_archive.store.local.store` - :class:`LocalStore`, the operations.

This package's public API is :class:`LocalStore` and :func:`local_root_from_uri`.
"""

from __future__ import annotations

from kafka_archive.store.local.paths import local_root_from_uri
from kafka_archive.store.local.store import LocalStore

__all__ = ["LocalStore", "local_root_from_uri"]
