"""``NAME=VALUE`` client settings given on the command line, or read from a file.

``--target-config`` (replay) and ``-X``/``--consumer-config`` (follow-offsets) take librdkafka
settings. A secret given as ``sasl.password=...`` would sit in the process's argument list, which
every user of the machine can read (``ps``); ``@PATH`` instead reads ``NAME=VALUE`` lines from a
file (blank lines and ``#`` comments skipped), so secrets stay off the command line. Items are
applied in order: a later one overrides an earlier one.
"""

from __future__ import annotations

from pathlib import Path

from kafka_archive.cli.output import fail

__all__ = ["SETTINGS_FILE_HELP", "parse_settings"]

#: the sentence every option taking settings adds to its --help
SETTINGS_FILE_HELP = (
    "@FILE reads NAME=VALUE lines from FILE instead, which keeps secrets such as "
    "sasl.password off the command line."
)


def parse_settings(items: list[str] | None, option: str, as_json: bool) -> dict[str, str]:
    """The settings ``items`` give (``NAME=VALUE`` or ``@PATH``), in order; a malformed item or
    an unreadable file is a usage error (exit 2) naming it. Values are never echoed."""
    out: dict[str, str] = {}
    for item in items or []:
        if not item.startswith("@"):
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                fail(
                    f"{option} {item!r} is not NAME=VALUE",
                    hint=f"e.g. {option} security.protocol=SSL, or {option} @client.properties",
                    code=2,
                    as_json=as_json,
                )
            out[name.strip()] = value
            continue
        path = Path(item[1:]).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            fail(
                f"{option} {item}: cannot read {path}: {reason}",
                code=2,
                as_json=as_json,
                hint="give a readable file of NAME=VALUE lines",
            )
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            # the line itself is not shown: it may hold a secret
            name, _sep, value = line.partition("=")
            if not _sep or not name.strip():
                fail(
                    f"{option} {item}: line {number} is not NAME=VALUE",
                    code=2,
                    as_json=as_json,
                    hint="one NAME=VALUE per line; # starts a comment",
                )
            out[name.strip()] = value.strip()
    return out
