"""Optional parts of the install (``pip install kafka-archive[spark]``, ``[airflow]``).

The core install (formats, store, catalog and its queries, the CLI, in-process replay) imports
none of them. Code that needs one imports it through :func:`require`, so that a missing extra
is a :class:`MissingExtra` naming the command and the ``pip install`` line that fixes it,
never a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from kafka_archive.errors import KafkaArchiveError

__all__ = ["MissingExtra", "require"]


class MissingExtra(KafkaArchiveError, ImportError):
    """A feature needs an optional dependency that is not installed. ``str()`` says what
    needs it and the ``pip install`` command; ``extra`` is the extra's name. An ``ImportError``
    too (``name`` is the missing module)."""

    def __init__(self, what: str, extra: str, module: str) -> None:
        self.what = what
        self.extra = extra
        super().__init__(
            f"{what} needs `pip install kafka-archive[{extra}]` ({module} is not installed)"
        )
        self.name = module


def require(module: str, *, extra: str, what: str) -> ModuleType:
    """Import and return ``module``, or raise :class:`MissingExtra` when the package that
    provides it (the ``extra`` of kafka-archive) is not installed. ``what`` names the feature,
    e.g. ``"catalog build with Spark"``."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".", 1)[0]
        if exc.name is not None and exc.name != top and not exc.name.startswith(top + "."):
            raise  # the package is there but one of its own dependencies is broken
        raise MissingExtra(what, extra, top) from None
