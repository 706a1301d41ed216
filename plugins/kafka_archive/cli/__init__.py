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
    from kafka_archive.cli import segments

    app.add_typer(segments.app, name="segments")
    from kafka_archive.cli.demo import demo

    app.command(name="demo")(demo)
    from kafka_archive.cli import archive

    archive.register(app)
    from kafka_archive.cli import catalog

    catalog.register(app)
    from kafka_archive.cli import catalog

    catalog.register(app)
    app.add_typer(__import__("kafka_archive.cli.replay", fromlist=["app"]).app, name="replay")


def main() -> None:
    """Console-script entry point."""
    _register_groups()
    app()
