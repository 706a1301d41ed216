"""The one error of the catalog's read side: :class:`CatalogQueryError`.

Raised by every query (:mod:`kafka_archive.catalog.queries`, :mod:`kafka_archive.catalog.gaps`,
:mod:`kafka_archive.catalog.holdings`) when the catalog cannot answer; the CLI prints its
message and ``hint``. A module of its own so that those modules import it at top level without
importing each other.
"""

from __future__ import annotations

from kafka_archive.errors import KafkaArchiveError

__all__ = ["CatalogQueryError"]


class CatalogQueryError(KafkaArchiveError, LookupError):
    """The catalog cannot answer (unknown topic/partition, offset outside the archive...).

    ``hint`` says what to try instead. A ``LookupError`` too (callers tell "no such thing"
    apart from other failures by it)."""

    http_status = 404
    api_error = "not_found"
