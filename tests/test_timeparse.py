from __future__ import annotations

from datetime import UTC, datetime

import pytest
from kafka_archive.timeparse import TimeParseError, format_ms, parse_time_ms

NOW = 1_800_000_000_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1763694000000", 1763694000000),
        ("2026-11-21T03:00:00Z", int(datetime(2026, 11, 21, 3, tzinfo=UTC).timestamp() * 1000)),
        ("2026-11-21T03:00:00", int(datetime(2026, 11, 21, 3, tzinfo=UTC).timestamp() * 1000)),
        (
            "2026-11-21T04:00:00+01:00",
            int(datetime(2026, 11, 21, 3, tzinfo=UTC).timestamp() * 1000),
        ),
        ("2026-11-21", int(datetime(2026, 11, 21, tzinfo=UTC).timestamp() * 1000)),
        ("-2h", NOW - 7_200_000),
        ("now-30m", NOW - 1_800_000),
        ("now", NOW),
        ("now+5s", NOW + 5_000),
        ("-1h30m", NOW - 5_400_000),
        ("-250ms", NOW - 250),
    ],
)
def test_accepted_forms(text: str, expected: int) -> None:
    assert parse_time_ms(text, now_ms=NOW) == expected


@pytest.mark.parametrize("text", ["", "yesterday", "-2x", "1763694000", "2026-13-01", "¹", "٣٣"])
def test_rejected_forms_explain_what_to_type(text: str) -> None:
    with pytest.raises(TimeParseError) as err:
        parse_time_ms(text, now_ms=NOW)
    assert "ISO-8601" in str(err.value) or "milliseconds" in str(err.value)


def test_format_round_trips_through_parse() -> None:
    assert parse_time_ms(format_ms(1763694000123)) == 1763694000123
    assert format_ms(-1) == "-"
