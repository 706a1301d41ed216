"""``kafka-archive settings``: every setting's effective value and the source it came from.

The answer to "which catalog is this command talking to, and why": each setting of
:data:`kafka_archive.settings.SETTINGS` with its value (passwords masked), the layer that gave
it (explicit, environment, file, default; the CLI reads no Airflow Variables), and the names to
set it by.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kafka_archive.cli.context import cli_settings
from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json

HELP = (
    "Show every setting's effective value and where it came from (option, environment, "
    "configuration file or default); passwords are masked.\n\n"
    "Precedence: command-line option > environment (KAFKA_ARCHIVE_<NAME>) > Airflow Variable "
    "(kafka_archive_<name>, in DAG tasks) > the file named by KAFKA_ARCHIVE_CONFIG > default.\n\n"
    "Example: KAFKA_ARCHIVE_DB=catalog.db kafka-archive settings --json"
)


def settings_command(
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
) -> None:
    rows = cli_settings(as_json).describe()
    if as_json:
        for row in rows:
            emit_json(row)
        return
    from kafka_archive.cli.tables import print_table

    print_table(
        "settings",
        ["name", "value", "source", "environment", "file key"],
        [[r["name"], _shown(r["value"]), r["source"], r["env"], r["file_key"]] for r in rows],
        left={"name", "value", "source", "environment", "file key"},
    )
    console.print("see `kafka-archive settings --help` for the precedence", markup=False)


def _shown(value: object) -> str:
    return "(unset)" if value is None else str(value)


def register(app: typer.Typer) -> None:
    """Add ``settings`` to the ``kafka-archive`` command line."""
    app.command(name="settings", help=HELP)(settings_command)
