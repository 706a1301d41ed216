"""The on-call API's errors in the page's own words, with the request field they are about.

The platform's typed errors are written for the CLI: their hints name options ("pass
--create-topic", "Choose one with --replay ID or --target-topic NAME") and commands
(`` `kafka-archive catalog topics --cluster C` ``). The page has fields, not options:
:func:`page_words` rewrites a message and its hint into the page's terms and names the field
at fault (``field``: the request's JSON name, the same as the query parameter or body key the
page sent), so the page can put the message next to that field; :func:`validation_words`
does the same for a request the schema refuses ("T is missing" rather than "Field required -
see .../openapi.json"). The CLI keeps its own wording: only the API's error boundary
(:mod:`kafka_archive.ui.errors`) calls this.

:data:`FIELDS` is the one table: CLI option -> (request field, the page's name for it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["FIELDS", "LABELS", "page_words", "validation_words"]

#: CLI option -> (the request field, the page's label for it)
FIELDS: dict[str, tuple[str, str]] = {
    "--cluster": ("cluster", "Cluster"),
    "--topic": ("topic", "Topic"),
    "--at": ("at", "Time T"),
    "--from": ("from", "From"),
    "--to": ("to", "To"),
    "--partition": ("partition", "Partition"),
    "--partitions": ("partitions", "Partitions"),
    "--offset": ("offset", "Offset"),
    "--group": ("group", "Group"),
    "--target": ("target", "Target"),
    "--target-topic": ("target_topic", "Target topic"),
    "--target-config": ("target_config", "the target's settings"),
    "--partition-mapping": ("partition_mapping", "Mapping"),
    "--key-filter": ("key_filter", "Key filter"),
    "--create-topic": ("create_topic", "create target topic"),
    "--topic-config": ("topic_config", "Topic configs"),
    "--no-source-config": ("no_source_config", "don't copy the source's configs"),
    "--replication-factor": ("replication_factor", "Replication factor"),
    "--allow-gaps": ("allow_gaps", "replay around holes"),
    "--allow-same-topic": ("allow_same_topic", "allow the same topic"),
    "--provenance-headers": ("provenance_headers", "provenance headers"),
    "--force": ("force", "replay again"),
    "--replay": ("replay_id", "Replay id"),
    "--commits-at": ("commits_at", "Commits as of"),
    "--bucket": ("bucket", "Bucket"),
    "--wait-for-open-transactions": ("wait_for_open_transactions_s", "wait for open transactions"),
}

#: request field -> the page's label (the fields no option names too)
LABELS: dict[str, str] = {field: label for field, label in FIELDS.values()} | {
    "from_": "From",
    "bucket_ms": "Bucket",
    "rate_limit_mb": "MB/s",
    "rate_limit_records": "records/s",
    "replay_path": "Replay path",
    "preserve_timestamps": "keep timestamps",
    "execution": "Execution",
}

#: the fields whose value is a time (their hint says which forms a time takes)
_TIME_FIELDS = {"at", "from", "to", "commits_at"}
_TIME_FORMS = "give a time: 2026-11-21T03:00Z (UTC), epoch ms, or a relative time like -2h"

#: the check boxes: "pass --x" is "tick 'x'"
_BOXES = {
    "create_topic",
    "no_source_config",
    "allow_gaps",
    "allow_same_topic",
    "provenance_headers",
    "force",
}

_VALUE = r"(?:[ =](?:HOST:PORT|[A-Z][A-Z0-9_]*(?:[=:,][A-Z0-9_]+)*))?"
_KNOWN = "|".join(sorted((re.escape(o) for o in FIELDS), key=len, reverse=True))
#: only the product's own options: another tool's (``kafka-configs.sh --alter``) stay as written
_OPTION = re.compile(rf"(?<![\w.-])({_KNOWN})(?![\w-])" + _VALUE)
_VERB = re.compile(
    rf"\b(pass|add|use|set|with|give (?:them |it )?(?:again )?with)\s+({_KNOWN})(?![\w-])" + _VALUE
)
#: whole sentences of the CLI's hints that read better rewritten than word by word
_SENTENCES: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = (
    (
        re.compile(r"List what the archive holds with `kafka-archive catalog topics[^`]*`\."),
        "Pick a topic the archive holds (the Topic list shows them).",
        ("topic",),
    ),
    (re.compile(r"Run `kafka-archive catalog gaps[^`]*`"), "Open the topic's gaps", ()),
    (
        re.compile(r"Choose one with --replay ID or --target-topic NAME\."),
        "Pick one: give its “Replay id”, or its “Target topic”.",
        ("replay_id",),
    ),
)
#: CLI commands named in hints -> where the page shows the same
_COMMANDS = (
    (re.compile(r"`kafka-archive catalog topics[^`]*`"), "the topics the archive holds"),
    (re.compile(r"`kafka-archive catalog gaps[^`]*`"), "the gaps of the topic"),
    (re.compile(r"`(?:kafka-archive )?replay status[^`]*`"), "the replays list"),
    (re.compile(r"`kafka-archive settings[^`]*`"), "the API server's settings"),
    (re.compile(r"`kafka-archive catalog build[^`]*`"), "the catalog DAG"),
)
#: "do X (CLI), or do Y (DAG, on-call page)": the page's half only
_CLI_HALF = re.compile(r"(?:^|(?<=; ))[^;]*?\(CLI\),?\s*(?:or\s+)?")
_SURFACES = re.compile(r"\s*\((?:DAG, )?on-call page\)|\s*\(DAG, on-call page\)")


def _label(option: str) -> tuple[str, str]:
    return FIELDS[option]


def _quoted(label: str) -> str:
    return f"“{label}”"


def _rewrite(text: str, fields: list[str]) -> str:
    """``text`` with every CLI option and command in page words; the fields named are
    appended to ``fields`` in order."""
    for sentence, words, named in _SENTENCES:
        if sentence.search(text):
            fields.extend(named)
            text = sentence.sub(words, text)
    text = _CLI_HALF.sub("", text)
    text = _SURFACES.sub("", text)
    for pattern, words in _COMMANDS:
        text = pattern.sub(words, text)

    def verb(m: re.Match[str]) -> str:
        field, label = _label(m.group(2))
        if field:
            fields.append(field)
        if m.group(1) == "with":
            return f"by ticking {_quoted(label)}" if field in _BOXES else f"with {_quoted(label)}"
        return f"tick {_quoted(label)}" if field in _BOXES else f"set {_quoted(label)}"

    def bare(m: re.Match[str]) -> str:
        field, label = _label(m.group(1))
        if field:
            fields.append(field)
        return _quoted(label)

    text = _VERB.sub(verb, text)
    text = _OPTION.sub(bare, text)
    return re.sub(r"`kafka-archive ([^`]*)`", r"the CLI's `kafka-archive \1`", text)


def page_words(
    message: str, hint: str | None, field: str | None = None
) -> tuple[str, str | None, str | None]:
    """``(message, hint, field)`` in the page's words: CLI options become the page's field
    names (a check box is ticked, a field is set), CLI commands the page's views; ``field``
    is kept when given, else the first field the message, then the hint, names."""
    named: list[str] = []
    message = _rewrite(message, named)
    hint = _rewrite(hint, named) if hint else hint
    field = field or (named[0] if named else None)
    if field in _TIME_FIELDS:  # "at: '...' is outside ..." / "cannot read ...": say which
        label = LABELS[field]
        message = f"{label}: {message.removeprefix(f'{field}: ')}"
    return message, hint or None, field


def _field_of(loc: Sequence[Any]) -> str | None:
    parts = [str(x) for x in loc if x not in ("body", "query", "path", "header")]
    if not parts:
        return None
    first = parts[0]
    return "from" if first == "from_" else first


def validation_words(errors: Sequence[dict[str, Any]]) -> tuple[str, str | None, str | None]:
    """``(message, hint, field)`` for a request the schema refuses (FastAPI's validation
    errors): the first problem, named by the page's label ("Time T is missing"), with what to
    give; ``field``: the request field of the first problem."""
    if not errors:
        return "the request could not be read", None, None
    first = errors[0]
    field = _field_of(first.get("loc", ()))
    label = LABELS.get(field or "", field or "the request")
    kind = str(first.get("type", ""))
    if kind == "missing":
        message = f"{label} is missing"
    elif kind in ("string_too_short", "too_short"):
        message = f"{label} is empty"
    elif kind == "extra_forbidden":
        message = f"{label} is not a field of this request"
    else:
        message = f"{label}: {str(first.get('msg', 'invalid')).rstrip('.').lower()}"
    if field in _TIME_FIELDS:
        hint: str | None = _TIME_FORMS
    elif kind in ("missing", "string_too_short", "too_short"):
        hint = f"fill in {_quoted(label)}"
    else:
        hint = None
    if len(errors) > 1:
        seen = (_field_of(e.get("loc", ())) for e in errors[1:])
        others = sorted({f for f in seen if f is not None and f != field})
        if others:
            more = ", ".join(_quoted(LABELS.get(f, f)) for f in others)
            message += f" (also: {more})"
    return message, hint, field
