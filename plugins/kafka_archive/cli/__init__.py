"""The ``kafka-archive`` command line.

One console script; each capability adds a sub-command group here (``segments``, ``archive``,
``catalog``, ``replay``, ``demo``). Every command accepts ``--json`` for scripts and prints
readable tables otherwise.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="kafka-archive",
    help=(
        "Archive Kafka's own log segments, catalog them, and replay any moment of history.\n\n"
        "Start with `kafka-archive segments --help` to inspect broker log files."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register_groups() -> None:
    """Attach every sub-command group (imported here so ``--help`` of one group does not pay
    for the imports of the others at module import time)."""
    from kafka_archive.cli import archive, catalog, replay, segments
    from kafka_archive.cli.demo import demo

    app.add_typer(segments.app, name="segments")
    archive.register(app)
    catalog.register(app)
    app.add_typer(replay.app, name="replay")
    app.command(name="demo")(demo)


def main() -> None:
    """Console-script entry point."""
    _register_groups()
    app()
