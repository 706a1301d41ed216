"""``--target-config`` / ``-X`` settings: ``NAME=VALUE`` items, or ``@FILE`` of such lines, so a
secret (``sasl.password``) need not sit in the process's argument list."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from kafka_archive.cli import _register_groups, app
from kafka_archive.cli.client_settings import parse_settings
from typer.testing import CliRunner


def test_items_and_files_apply_in_order(tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text(
        "# the target's SASL settings\n\nsecurity.protocol = SASL_SSL\n"
        "sasl.password=s3cr3t=with=equals\nacks=1\n",
        encoding="utf-8",
    )
    got = parse_settings(["acks=all", f"@{props}", "linger.ms=5"], "--target-config", False)
    assert got == {
        "acks": "1",  # the file came later
        "security.protocol": "SASL_SSL",
        "sasl.password": "s3cr3t=with=equals",
        "linger.ms": "5",
    }


@pytest.mark.parametrize(
    ("content", "item"),
    [(None, "@{dir}/missing.properties"), ("ok=1\nsasl.password s3cr3t\n", "@{file}"), ("", "=x")],
)
def test_bad_items_are_usage_errors_that_never_echo_a_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, item: str
) -> None:
    file = tmp_path / "bad.properties"
    if content is not None:
        file.write_text(content, encoding="utf-8")
    with pytest.raises(typer.Exit) as exc:
        parse_settings([item.format(dir=tmp_path, file=file)], "-X", False)
    assert exc.value.exit_code == 2
    err = capsys.readouterr().err
    assert "error:" in err and "s3cr3t" not in err


def test_help_of_every_settings_option_teaches_the_file_form() -> None:
    _register_groups()
    runner = CliRunner()
    for argv in (["replay", "run"], ["replay", "resume"], ["catalog", "follow-offsets"]):
        out = runner.invoke(app, [*argv, "--help"], env={"COLUMNS": "200"}).output
        assert "@FILE" in out, argv
