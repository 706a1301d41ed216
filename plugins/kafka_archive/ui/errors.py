"""Every failure of the on-call API as JSON ``{error, message, hint, field}`` with its status.

``field`` is the request field at fault (the query parameter or body key the page sent, e.g.
``at``, ``target``; null: the request as a whole), for the page to show the message next to
it. Messages and hints are in the page's words (:mod:`kafka_archive.ui.wording`: the
platform's errors name CLI options, which the CLI keeps).

Bad input is a 4xx (400 a value that cannot be read, 404 nothing of that name in the catalog,
409 a state that refuses the request, 422 a request the schema refuses), never a 500; a
catalog or store that cannot be reached is a 502/503 naming what to fix. Messages and hints go
through :func:`kafka_archive.redact.redact_text`, so no secret reaches the browser.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from kafka_archive.errors import KafkaArchiveError

__all__ = [
    "ApiError",
    "api_call",
    "error_response",
    "install_error_handlers",
    "platform_error",
]

T = TypeVar("T")


class ApiError(KafkaArchiveError):
    """A refusal with its HTTP status, a machine-readable ``error``, a hint, and ``field``: the
    request field that caused it (the page shows the message next to it; None: the request
    as a whole)."""

    def __init__(
        self,
        status: int,
        error: str,
        message: str,
        hint: str | None = None,
        *,
        field: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.error = error
        self.field = field


def error_response(
    status: int,
    error: str,
    message: str,
    hint: str | None = None,
    *,
    field: str | None = None,
) -> JSONResponse:
    """``{error, message, hint, field}`` (``field``: the request field at fault, or null)."""
    from kafka_archive.redact import redact_text

    body = {
        "error": error,
        "message": redact_text(message),
        "hint": redact_text(hint) if hint else None,
        "field": field,
    }
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, headers=headers)


def _classify(exc: Exception) -> ApiError | None:
    """The API error for one of the platform's typed errors (None: not one of them).

    The one mapping of the platform's errors: a :class:`KafkaArchiveError` answers with its
    class's own ``http_status`` and ``api_error`` (none: not an answer of the API, a 500);
    segment_lib's errors (which know nothing of the platform) are damaged archived bytes."""
    from segment_lib.errors import SegmentError

    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, KafkaArchiveError) and exc.http_status is not None and not exc.internal:
        from kafka_archive.ui.wording import page_words

        message, hint, field = page_words(str(exc), exc.hint, exc.field)
        return ApiError(exc.http_status, exc.api_error, message, hint, field=field)
    if isinstance(exc, SegmentError):
        hint = "the archived bytes are damaged; the gaps view lists known problems"
        return ApiError(502, "archive_damaged", str(exc), hint)
    return None


def _is_kafka_exception(exc: Exception) -> bool:
    """Whether ``exc`` is a Kafka client failure (without importing the client: when it was
    never imported, nothing can have raised one)."""
    kafka = sys.modules.get("confluent_kafka")
    return kafka is not None and isinstance(exc, kafka.KafkaException)


def platform_error(exc: Exception) -> ApiError:
    """:func:`_classify`; a 422 for Params a DAG's JSON Schema refuses; a 502 for a Kafka
    client failure no replay step translated. Anything else is re-raised (a bug: a 500)."""
    import jsonschema

    found = _classify(exc)
    if found is not None:
        return found
    if isinstance(exc, jsonschema.ValidationError):
        from kafka_archive.ui.wording import LABELS

        path = [str(p) for p in exc.absolute_path]
        field = path[0] if path else None
        label = LABELS.get(field or "", field or "the request")
        return ApiError(422, "invalid_params", f"{label}: {exc.message}", field=field)
    if _is_kafka_exception(exc):
        return ApiError(502, "target_unavailable", str(exc), "check the target cluster")
    raise exc


def api_call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, the platform's typed errors raised as API errors
    (:func:`platform_error`); anything else propagates (a bug: a 500)."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        raise platform_error(exc) from None


def install_error_handlers(app: FastAPI) -> None:
    """Answer every failure with the JSON shape of the module docstring."""

    async def api_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return error_response(exc.status, exc.error, exc.message, exc.hint, field=exc.field)

    async def validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        from kafka_archive.ui.wording import validation_words

        message, hint, field = validation_words(list(exc.errors()))
        return error_response(422, "invalid_request", message, hint, field=field)

    async def http_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        names = {404: "not_found", 405: "method_not_allowed"}
        return error_response(
            exc.status_code, names.get(exc.status_code, "http_error"), str(exc.detail)
        )

    async def internal(_request: Request, exc: Exception) -> JSONResponse:
        # a bug, not bad input: the API server's log has the traceback, the browser does not
        return error_response(
            500,
            "internal",
            f"internal error ({type(exc).__name__})",
            "see the Airflow API server's log, and report it",
        )

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(Exception, internal)
    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(StarletteHTTPException, http_error)
