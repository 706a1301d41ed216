"""``--store-option NAME=VALUE``, shared by ``archive`` and ``archive fetch``: the non-secret
options of the object store (``S3Options``: ``sse=aws:kms``, ``multipart_chunksize=...``)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

__all__ = ["STORE_OPTION", "open_archive_store", "parse_store_options"]

#: the option as both commands declare it
STORE_OPTION = Annotated[
    list[str] | None,
    typer.Option(
        "--store-option",
        help="Store option NAME=VALUE, e.g. sse=aws:kms or "
        "multipart_chunksize=67108864 (repeatable).",
    ),
]


def parse_store_options(texts: list[str] | None) -> dict[str, Any]:
    """``NAME=VALUE`` texts as store options: ``true``/``false`` as booleans, numbers as
    numbers, ``-`` in names as ``_``.

    Raises:
        typer.BadParameter: a text that is not ``NAME=VALUE`` (a usage error, exit 2).
    """
    return dict(_parse_option(t) for t in texts or [])


def open_archive_store(service: Any, options: dict[str, Any], as_json: bool) -> Any:
    """The store of ``service`` (an :class:`~kafka_archive.services.archive.ArchiveService`)
    opened with ``options``; no store given, or one that cannot be opened, is a usage error
    (exit 2) with a hint."""
    from kafka_archive.cli.output import fail
    from kafka_archive.store import StoreError

    if not service.settings.store:
        fail(
            "no archive store given",
            hint="pass --store URI or set KAFKA_ARCHIVE_STORE",
            code=2,
            as_json=as_json,
        )
    try:
        return service.open_store(**options)
    except StoreError as exc:
        fail(
            str(exc.message),
            hint=exc.hint,
            code=2,
            as_json=as_json,
            details={"error": type(exc).__name__},
        )


def _parse_option(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise typer.BadParameter(f"{text!r} is not NAME=VALUE", param_hint="--store-option")
    lowered = value.lower()
    parsed: Any = value
    if lowered in ("true", "false"):
        parsed = lowered == "true"
    else:
        for conv in (int, float):
            try:
                parsed = conv(value)
                break
            except ValueError:
                continue
    return name.replace("-", "_"), parsed
