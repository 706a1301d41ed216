"""Redaction: the one place that decides what a secret looks like and hides it.

Everything the platform shows a person or writes to a log goes through here at a few choke
points (the CLI's ``fail``/``emit_json``, the last-resort error handler, the typed errors of the
store and catalog layers, and a log-record factory installed by the CLI and the Airflow tasks),
so a password, secret key or token never reaches a terminal, a ``--json`` line, a log file or
an Airflow task log.

What is hidden (each replaced by :data:`MASK`):

* the password of any URL's userinfo (``postgresql://user:PASS@host/db``, ``s3://k:PASS@...``);
  database URLs are rendered by SQLAlchemy with ``hide_password=True`` (:func:`redact_url`);
* the value of any ``key=value`` / ``key: value`` / ``"key": "value"`` pair (also URL query
  parameters) whose key names a secret (:func:`is_secret_key`: ``password``, ``passwd``, ``pwd``,
  ``secret``, ``token``, ``sasl.password``, ``ssl.key.password``, ``aws_secret_access_key``,
  ``secret_key``, ``session_token``, ``api_key``, ``credential`` ...);
* any value registered with :func:`register_secret` (e.g. the password parsed from ``--db``,
  an Airflow connection's secret key) and the values of the environment variables in
  :data:`SECRET_ENV_NAMES` (``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ...; registered
  by :func:`register_env_secrets`), wherever they appear, whatever the surrounding syntax.

Contract: the functions are pure apart from the registry of known secret values; they never
raise on odd input (a text that does not parse as a URL is scanned as plain text), and they
are idempotent (redacting twice gives the same text as once).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MASK",
    "SECRET_ENV_NAMES",
    "SECRET_KEY_PATTERN",
    "RedactingFilter",
    "install_log_redaction",
    "is_secret_key",
    "may_hold_secret",
    "redact_known_values",
    "redact_mapping",
    "redact_text",
    "redact_url",
    "register_env_secrets",
    "register_secret",
]

#: what a hidden secret is replaced with
MASK = "***"

#: environment variables whose values are secrets wherever they show up
SECRET_ENV_NAMES = frozenset(
    {
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "PGPASSWORD",
        "KAFKA_ARCHIVE_SASL_PASSWORD",
    }
)

#: shortest value treated as a secret literal (shorter ones would mask ordinary words)
_MIN_SECRET_LEN = 4

# a key names a secret when one of its '.', '_' or '-' separated words is one of these, or it
# ends in one of the compound names (sasl.password, ssl.key.password, aws_secret_access_key)
_SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "secret",
        "token",
        "credential",
        "credentials",
        "apikey",
        "passphrase",
    }
)
_SECRET_SUFFIXES = ("password", "passwd", "secret", "token")
_SECRET_COMPOUNDS = ("secret_access_key", "secret_key", "api_key", "private_key", "access_token")
# librdkafka settings whose value is a secret although no word of the name says so: a private
# key given inline (ssl.key.pem; ssl_key is its set-by-API twin; the OAUTHBEARER assertion's
# key) and the unsecured-JWT handler's config (it may carry the token's claims and extensions)
_SECRET_NAMES = frozenset(
    {
        "ssl.key.pem",
        "ssl_key",
        "sasl.oauthbearer.assertion.private.key.pem",
        "sasl.oauthbearer.config",
    }
)

_KEY_PATTERN = r"[A-Za-z0-9_.\-]*(?:password|passwd|pwd|secret|token|credential|api[_-]?key|passphrase|private[_-]?key)[A-Za-z0-9_.\-]*"  # noqa: E501
# key=value, key: value, "key": "value", 'key'='value' (JSON, properties, repr of dicts, queries)
_PAIR = re.compile(
    rf"""(?ix)
    (?<![\w./:@\-])   # a key starts a word; not the user of a URL's userinfo (://user:pw@)
    (?P<key>["']?{_KEY_PATTERN}["']?)
    (?P<sep>\s*[=:]\s*)
    (?P<quote>["'])?
    (?P<value>(?(quote)(?:(?!(?P=quote)).)*|[^\s&,;"'}})\]]*))
    """
)
# scheme://user:password@host - the password is everything between the first ':' of the
# userinfo and the last '@' before the host
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)(?P<pw>[^\s/]*)(?P<at>@)")

# a text without any of these (lower-cased) cannot hold a pair or userinfo to mask: the fast
# path of most output lines (substring tests are ~20x cheaper than one case-insensitive regex)
_MAYBE = (
    "://",
    "pass",
    "pwd",
    "secret",
    "token",
    "credential",
    "apikey",
    "api_key",
    "api-key",
    "private",
)

_known: set[str] = set()
_known_sorted: list[str] = []
_lock = threading.Lock()


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Whether a configuration key or parameter name names a secret (case-insensitive)."""
    k = key.strip().strip("\"'").lower()
    if k in _SECRET_NAMES:
        return True
    if any(k.endswith(c) or k.endswith(c.replace("_", ".")) for c in _SECRET_COMPOUNDS):
        return True
    words = re.split(r"[._\-]", k)
    # camelCase and run-together words: spark.ssl.keyPassword, accesstoken
    return any(w in _SECRET_WORDS or w.endswith(_SECRET_SUFFIXES) for w in words)


def _any_case(regex: str) -> str:
    """``regex`` matching letters in either case without a flag (JSON Schema's ECMA-262
    patterns have no inline ``(?i)``): each letter outside a class becomes ``[xX]``."""
    out = []
    escaped = False
    for ch in regex:
        out.append(f"[{ch}{ch.upper()}]" if ch.isalpha() and not escaped else ch)
        escaped = ch == "\\" and not escaped
    return "".join(out)


_SEP = r"[._\-]"
#: a JSON Schema (ECMA-262, unanchored ``pattern``) regex matching exactly the names
#: :func:`is_secret_key` calls secret (give it to ``propertyNames: {not: {pattern: ...}}`` to
#: refuse secret-named settings in a request or a DAG run's conf before anything is stored;
#: a test keeps the two equal)
SECRET_KEY_PATTERN: str = (
    r"^[\s\"']*(?:"
    + "|".join(_any_case(n.replace(".", r"\.")) for n in sorted(_SECRET_NAMES))
    + r"|(?:[\s\S]*"
    + _SEP
    + r")?(?:"
    + _any_case("pwd|credentials?|apikey|passphrase")
    + "|[^._\\-]*(?:"
    + _any_case("password|passwd|secret|token")
    + r"))(?:"
    + _SEP
    + r"[\s\S]*)?"
    + r"|[\s\S]*(?:"
    + "|".join(_any_case(c.replace("_", "[._]")) for c in _SECRET_COMPOUNDS)
    + r"))[\s\"']*$"
)


def register_secret(value: str | None) -> None:
    """Remember ``value`` as a secret: it is hidden from every later :func:`redact_text`.

    Values shorter than 4 characters are ignored (they would mask ordinary words)."""
    if value and len(value) >= _MIN_SECRET_LEN:
        with _lock:
            if value not in _known:
                _known.add(value)
                # longest first, so a secret containing another is masked whole
                _known_sorted[:] = sorted(_known, key=len, reverse=True)


def register_env_secrets() -> None:
    """Register the values of :data:`SECRET_ENV_NAMES` set in this process's environment now
    (called by :func:`install_log_redaction`, i.e. at the start of every CLI command and
    Airflow task; code that sets such a variable later registers the value itself)."""
    for name in SECRET_ENV_NAMES:
        register_secret(os.environ.get(name))


def _literals() -> list[str]:
    return _known_sorted


def may_hold_secret(text: str) -> bool:
    """False when ``text`` certainly shows no secret-named key, URL userinfo or registered
    secret (the cheap test that lets most output skip the scan)."""
    low = text.lower()
    return any(m in low for m in _MAYBE) or any(s in text for s in _literals())


def redact_known_values(text: str) -> str:
    """``text`` with only the registered secret values (:func:`register_secret`) masked: safe
    on structured text such as a JSON line, whose syntax it cannot change."""
    for secret in _literals():
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _mask_pair(m: re.Match[str]) -> str:
    key = m.group("key")
    if not is_secret_key(key) or not m.group("value") or m.group("value").startswith(MASK):
        return m.group(0)
    return f"{key}{m.group('sep')}{m.group('quote') or ''}{MASK}"


def redact_text(text: object) -> str:
    """``text`` (anything; ``str()`` is taken) with every secret it shows replaced by ``***``."""
    out = redact_known_values(text if isinstance(text, str) else str(text))
    if not may_hold_secret(out):
        return out
    out = _USERINFO.sub(
        lambda m: m.group(0) if m.group("pw") == MASK else f"{m.group('head')}{MASK}@", out
    )
    return _PAIR.sub(_mask_pair, out)


def redact_url(url: object) -> str:
    """A URL (or a catalog path) fit to show: SQLAlchemy's rendering with the password hidden
    for database URLs, :func:`redact_text` for everything else and for what does not parse."""
    text = os.fspath(url) if isinstance(url, os.PathLike) else str(url)
    if "://" in text:
        try:
            from sqlalchemy.engine import make_url

            parsed = make_url(text)
            if parsed.password:
                register_secret(str(parsed.password))
            text = parsed.render_as_string(hide_password=True)
        except Exception:  # not a database URL: the text scan below still hides userinfo
            pass
    return redact_text(text)


def redact_mapping(values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``values`` with the value of every secret-named key replaced by ``***`` (and
    the others redacted as text when they are strings)."""
    out: dict[str, Any] = {}
    for k, v in values.items():
        if is_secret_key(str(k)) and v not in (None, ""):
            out[k] = MASK
        elif isinstance(v, str):
            out[k] = redact_text(v)
        elif isinstance(v, Mapping):
            out[k] = redact_mapping(v)
        else:
            out[k] = v
    return out


class RedactingFilter(logging.Filter):
    """A logging filter that redacts a record's message and exception text in place (always
    lets the record through). Attach it to a handler to protect everything that handler
    writes, whichever logger the record came from."""

    def filter(self, record: logging.LogRecord) -> bool:
        _redact_record(record)
        return True


_FORMATTER = logging.Formatter()


def _redact_record(record: logging.LogRecord) -> None:
    if getattr(record, "_kafka_archive_redacted", False):
        return
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: logging reports it itself, keep the raw text
        message = str(record.msg)
    record.msg = redact_text(message)
    record.args = ()
    if record.exc_info and not record.exc_text:
        record.exc_text = _FORMATTER.formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redact_text(record.exc_text)
    if record.stack_info:
        record.stack_info = redact_text(record.stack_info)
    record._kafka_archive_redacted = True


def install_log_redaction() -> None:
    """Redact every log record of this process when it is created (idempotent), and register
    the secret values of the environment (:func:`register_env_secrets`; on every call).

    Wraps the logging record factory, so the protection covers every logger and every handler,
    including handlers added later (Airflow's task log handler, Spark's py4j logger); if some
    other code replaced the factory since, the new one is wrapped in turn. Also attaches a
    :class:`RedactingFilter` to the root logger's current handlers for records made by code
    that bypasses the factory."""
    register_env_secrets()
    with _lock:
        previous = logging.getLogRecordFactory()
        if getattr(previous, "_kafka_archive_redacting", False):
            return

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            _redact_record(record)
            return record

        factory._kafka_archive_redacting = True  # type: ignore[attr-defined]
        logging.setLogRecordFactory(factory)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
