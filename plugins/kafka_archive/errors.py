"""The root of every error the platform raises: :class:`KafkaArchiveError`.

Every exception class defined in :mod:`kafka_archive` derives from it (a test walks the package
to check). It carries what the boundaries need, so that each boundary maps errors once, by the
root's attributes, and never by class names:

* ``message`` - what went wrong (secrets never in it: each subclass builds it from redacted
  parts); ``str()`` is the message, or the subclass's fuller rendering (a store error names the
  store URI and the key);
* ``hint`` - one sentence on what to do next (``None`` or empty: none; a class's
  ``default_hint`` when the raiser gives none);
* :meth:`~KafkaArchiveError.to_dict` - a JSON-ready description (``--json`` output, task
  reports);
* ``exit_code`` (class attribute) - the CLI's exit code when it reports the error (1; 2 for a
  usage error);
* ``http_status`` / ``api_error`` (class attributes) - the on-call API's answer: status and the
  machine-readable ``error`` name. ``http_status`` ``None`` (the default) means the API has no
  answer of its own for it: a 500 like any bug;
* ``field`` - the input the error is about, by the on-call API's request name (``at``,
  ``target``, ``target_topic``, ...; ``None``: the request as a whole): the API answers it
  beside the message so the page can show it next to that field (a class default, or set by
  the raiser);
* ``internal`` (class attribute) - raised and caught inside the platform (control flow, such as
  "abort this transaction and redo it"): one reaching a boundary is a bug, reported as an
  internal error, never as a user-facing failure.

Where existing callers catch a builtin (``except ValueError``, ``except LookupError``), the class
keeps that builtin as a second base (``class SettingsError(KafkaArchiveError, ValueError)``).

:mod:`segment_lib` has its own error tree (:class:`segment_lib.errors.SegmentError`) and knows
nothing of the platform: the boundaries map it beside this one.

This module imports nothing of the platform (it sits on the lowest floor).
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["InternalSignal", "KafkaArchiveError"]


class KafkaArchiveError(Exception):
    """Base of every platform error: ``message``, ``hint``, :meth:`to_dict` and how the CLI
    (``exit_code``) and the API (``http_status``, ``api_error``) report it."""

    #: the hint when the raiser gives none
    default_hint: ClassVar[str | None] = None
    #: the CLI's exit code for this error
    exit_code: ClassVar[int] = 1
    #: the on-call API's HTTP status (None: no answer of its own, a 500)
    http_status: ClassVar[int | None] = None
    #: the on-call API's machine-readable ``error`` name
    api_error: ClassVar[str] = "error"
    #: raised and caught inside the platform: one that reaches a boundary is a bug
    internal: ClassVar[bool] = False

    #: the request field the error is about (see the module docstring); None: the whole request
    field: str | None = None
    message: str
    hint: str | None

    def __init__(self, message: str = "", *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = self.default_hint if hint is None else hint

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: ``{"error": <class name>, "message", "hint"}`` (subclasses
        add their own fields)."""
        return {"error": type(self).__name__, "message": self.message, "hint": self.hint or None}


class InternalSignal(KafkaArchiveError):
    """Raised and caught inside the platform (control flow); never reported to a user as such
    (``internal``: one that reaches a boundary is a bug)."""

    internal = True
