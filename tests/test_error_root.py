"""One error root: every exception class of the platform is a ``KafkaArchiveError``, and the
boundaries (CLI, on-call API) map errors by the root's attributes, not class names."""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable
from pathlib import Path

import kafka_archive
import pytest
from kafka_archive.errors import InternalSignal, KafkaArchiveError

PACKAGE = Path(kafka_archive.__file__).parent


def _modules_defining_classes() -> list[str]:
    """Every module of ``kafka_archive`` with a top-level class (read from the source, so that
    modules only Alembic runs, such as ``catalog/migrations/env.py``, need not be imported:
    they define no classes)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(isinstance(node, ast.ClassDef) for node in tree.body):
            continue
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append(".".join(parts))
    return out


def _exception_classes() -> list[type[BaseException]]:
    found = []
    for name in _modules_defining_classes():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and obj.__module__ == name and issubclass(obj, BaseException):
                found.append(obj)
    return found


def test_every_exception_class_of_the_platform_derives_from_the_root() -> None:
    classes = _exception_classes()
    # the walk does find them (a walk that imports nothing would pass vacuously)
    assert len(classes) > 40
    assert not [
        f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, KafkaArchiveError)
    ]


def test_builtin_bases_that_callers_catch_are_kept() -> None:
    from kafka_archive.catalog.query_errors import CatalogQueryError
    from kafka_archive.extras import MissingExtra
    from kafka_archive.replay.errors import ReplayConfigError
    from kafka_archive.settings import SettingsError
    from kafka_archive.store.errors import StoreConfigError
    from kafka_archive.timeparse import TimeParseError

    assert issubclass(SettingsError, ValueError) and issubclass(TimeParseError, ValueError)
    assert issubclass(ReplayConfigError, ValueError) and issubclass(StoreConfigError, ValueError)
    assert issubclass(CatalogQueryError, LookupError)
    missing = MissingExtra("catalog build", "spark", "pyspark")
    assert isinstance(missing, ImportError) and missing.name == "pyspark"
    assert "pip install kafka-archive[spark]" in str(missing)


def _settings_error() -> KafkaArchiveError:
    from kafka_archive.settings import SettingsError

    return SettingsError("bad value", "fix it")


def _query_error() -> KafkaArchiveError:
    from kafka_archive.catalog.query_errors import CatalogQueryError

    return CatalogQueryError("no topic 't'", hint="list topics")


def _store_error() -> KafkaArchiveError:
    from kafka_archive.store.errors import ObjectNotFound

    return ObjectNotFound("gone", uri="file:///s", key="k")


def _replay_error() -> KafkaArchiveError:
    from kafka_archive.replay.errors import EmptyRangeError

    return EmptyRangeError("nothing to replay")


@pytest.mark.parametrize(
    ("make", "message", "hint"),
    [
        (_settings_error, "bad value", "fix it"),
        (_query_error, "no topic 't'", "list topics"),
        (_store_error, "gone", "Check the key"),
        (_replay_error, "nothing to replay", "Check --from/--to"),
    ],
)
def test_the_root_gives_message_hint_and_to_dict(
    make: Callable[[], KafkaArchiveError], message: str, hint: str
) -> None:
    exc = make()
    assert exc.message == message and exc.hint is not None and exc.hint.startswith(hint)
    described = exc.to_dict()
    assert described["error"] == type(exc).__name__
    assert described["message"] == message and described["hint"] == exc.hint


def test_internal_signals_are_not_user_facing() -> None:
    """Control flow that escapes is a bug: the CLI's last-resort handler reports it as an
    internal error and the API answers 500, never as a user's mistake."""
    from kafka_archive.cli.errors import is_user_error
    from kafka_archive.replay.execution.kafka_errors import ProducerFailed, TxnAbort
    from kafka_archive.ui.errors import platform_error

    for cls in (TxnAbort, ProducerFailed):
        assert issubclass(cls, InternalSignal)
        assert not is_user_error(cls())
        with pytest.raises(cls):
            platform_error(cls())


def test_the_api_maps_by_the_classes_own_status() -> None:
    """The UI's one mapping reads ``http_status``/``api_error`` of the error's class (what the
    old table of class names said, for each kind)."""
    from kafka_archive.catalog.db import CatalogUnavailable
    from kafka_archive.catalog.query_errors import CatalogQueryError
    from kafka_archive.replay.errors import (
        ReplayDataError,
        ReplayFencedError,
        UnknownTopicError,
    )
    from kafka_archive.services.resources import MissingSetting
    from kafka_archive.store.errors import StoreUnavailable
    from kafka_archive.timeparse import TimeParseError
    from kafka_archive.ui.errors import platform_error
    from kafka_archive.ui.launcher import LaunchError

    cases: list[tuple[Exception, int, str]] = [
        (TimeParseError("x"), 400, "bad_time"),
        (CatalogQueryError("x"), 404, "not_found"),
        (MissingSetting("db"), 503, "not_configured"),
        (CatalogUnavailable("x"), 503, "catalog_unavailable"),
        (UnknownTopicError("x"), 400, "bad_replay_request"),
        (ReplayFencedError("x"), 502, "target_unavailable"),
        (ReplayDataError("x"), 409, "replay_refused"),
        (StoreUnavailable("x"), 502, "store_unavailable"),
        (LaunchError("x"), 409, "launch_refused"),
    ]
    for exc, status, error in cases:
        got = platform_error(exc)
        assert (got.status, got.error) == (status, error), type(exc).__name__
