"""Key filters for replays: exact, prefix or regular expression on the record key.

Spec strings (``--key-filter``): ``exact:VALUE``, ``prefix:VALUE`` or ``regex:PATTERN``; a bare
value without a colon means ``exact``. Any other ``WORD:...`` is an error, not an exact match of
the whole text: a mistyped kind (``prefx:user-``) would otherwise filter out every record and the
replay would report success having sent nothing (write ``exact:a:b`` for a key containing a
colon). ``exact`` and ``prefix`` compare the key's bytes with VALUE encoded as
UTF-8, so they also work on keys that are not text. ``regex`` uses Python's :mod:`re`
``search`` on the key decoded as UTF-8 (anchor with ``^``/``$`` for whole-key matches); keys that
are not valid UTF-8 never match it. A null key never matches any filter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from kafka_archive.replay.errors import ReplayConfigError

__all__ = ["KeyFilter"]


@dataclass(frozen=True, slots=True)
class KeyFilter:
    """A compiled key filter; call :meth:`matches` per record."""

    kind: Literal["exact", "prefix", "regex"]
    text: str
    _value: bytes
    _regex: re.Pattern[str] | None

    @classmethod
    def parse(cls, spec: str) -> KeyFilter:
        """Parse ``exact:V`` / ``prefix:V`` / ``regex:P`` (bare ``V`` = exact).

        Raises:
            ReplayConfigError: an unknown kind, an empty filter or an invalid regular expression.
        """
        kind, sep, text = spec.partition(":")
        if not sep:
            kind, text = "exact", spec
        elif kind not in ("exact", "prefix", "regex"):
            raise ReplayConfigError(
                f"unknown key filter kind {kind!r} in {spec!r}",
                hint="Use exact:VALUE, prefix:VALUE or regex:PATTERN "
                f"(for a key containing a colon: exact:{spec}).",
            )
        if kind != "exact" and text == "":
            raise ReplayConfigError(
                f"empty {kind} key filter", hint="Give a value: --key-filter prefix:user-"
            )
        regex = None
        if kind == "regex":
            try:
                regex = re.compile(text)
            except re.error as exc:
                raise ReplayConfigError(
                    f"invalid key filter regex {text!r}: {exc}",
                    hint="Use Python regular expression syntax, e.g. regex:^order-[0-9]+$",
                ) from None
        return cls(kind, text, text.encode("utf-8"), regex)  # type: ignore[arg-type]

    def matches(self, key: bytes | None) -> bool:
        """Whether a record with ``key`` passes the filter."""
        if key is None:
            return False
        if self.kind == "exact":
            return key == self._value
        if self.kind == "prefix":
            return key.startswith(self._value)
        assert self._regex is not None
        try:
            text = key.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return self._regex.search(text) is not None

    def __str__(self) -> str:
        return f"{self.kind}:{self.text}"
