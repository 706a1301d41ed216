"""The one error of the catalog's read side: :class:`CatalogQueryError`.

Raised by every query (:mod:`kafka_archive.catalog.queries`, :mod:`kafka_archive.catalog.gaps`,
:mod:`kafka_archive.catalog.holdings`) when the catalog cannot answer; the CLI prints its
message and ``hint``; :class:`CatalogRequestError` marks a question that is wrong in itself
(the API's 400) rather than one the catalog has no answer to (404). A module of its own so that
those modules import it at top level without importing each other.
"""

from __future__ import annotations

from kafka_archive.errors import KafkaArchiveError

__all__ = ["CatalogQueryError", "CatalogRequestError"]


class CatalogQueryError(KafkaArchiveError, LookupError):
    """The catalog cannot answer (unknown topic/partition, offset outside the archive...).

    ``hint`` says what to try instead. A ``LookupError`` too (callers tell "no such thing"
    apart from other failures by it)."""

    http_status = 404
    api_error = "not_found"


class CatalogRequestError(CatalogQueryError, ValueError):
    """The question itself is wrong (a range too large or inverted, a bucket that is not a
    whole number of minutes), not something missing from the catalog: the on-call API answers
    it 400, not 404. A :class:`CatalogQueryError` for every existing handler."""

    http_status = 400
    api_error = "bad_request"
