"""The ``kafka-archive`` command line.

One console script; each capability adds a sub-command group here (``segments``, ``archive``,
``catalog``, ``replay``, ``export``, ``settings``; the demo is a development command,
``./dev demo``). Every command accepts ``--json`` for scripts and prints
readable tables otherwise.

Exit codes (the whole CLI):

* ``0`` success;
* ``1`` a reported failure (bad input, missing catalog, unreachable store, failed run ...),
  always with an ``error:`` line and usually a ``hint:`` (one JSON error object with ``--json``);
* ``2`` a usage error found by the option parser (unknown option, missing value);
* ``70`` an internal error (a bug): one ``internal error:`` line, the path of a log file with
  the traceback, and a hint to report it (:mod:`kafka_archive.cli.crash`). A Python traceback is
  never printed;
* ``141`` (128 + SIGPIPE, as git or coreutils) the reader of the output went away
  (``kafka-archive ... | head``): a normal end, nothing printed, no crash log.

Every command runs with log redaction installed (:func:`kafka_archive.redact.install_log_redaction`)
and its output passes through the redacting helpers of :mod:`kafka_archive.cli.output`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import typer
from click.core import Command, Context
from typer.core import TyperCommand

from kafka_archive.cli.guard import GuardedGroup
from kafka_archive.cli.pipes import EXIT_CLOSED_PIPE

__all__ = ["EXIT_CLOSED_PIPE", "EXIT_INTERNAL", "SUBCOMMANDS", "app", "main"]

#: exit code of an internal error (see :mod:`kafka_archive.cli.crash`)
EXIT_INTERNAL = 70  # kept equal to kafka_archive.cli.crash.EXIT_INTERNAL
_LISTING_KEY = "kafka_archive.listing"


def _add_segments(root: typer.Typer) -> None:
    from kafka_archive.cli import segments

    root.add_typer(segments.app, name="segments")


def _add_archive(root: typer.Typer) -> None:
    from kafka_archive.cli import archive

    archive.register(root)


def _add_settings(root: typer.Typer) -> None:
    from kafka_archive.cli import settings_cmd

    settings_cmd.register(root)


def _add_catalog(root: typer.Typer) -> None:
    from kafka_archive.cli import catalog

    catalog.register(root)


def _add_replay(root: typer.Typer) -> None:
    from kafka_archive.cli import replay

    root.add_typer(replay.app, name="replay")


def _add_restore(root: typer.Typer) -> None:
    from kafka_archive.cli import restore

    root.add_typer(restore.app, name="restore")


def _add_export(root: typer.Typer) -> None:
    from kafka_archive.cli import export

    export.register(root)


def _add_status(root: typer.Typer) -> None:
    from kafka_archive.cli import status

    status.register_status(root)


def _add_metrics(root: typer.Typer) -> None:
    from kafka_archive.cli import status

    status.register_metrics(root)


#: Every sub-command of the root, in the order ``--help`` lists them (typer lists single
#: commands before groups): name -> (the first paragraph of its help, as the root ``--help``
#: shows it; the function that registers it on a Typer app). The help line lives here so that
#: ``kafka-archive --help`` needs none of the sub-command modules; tests/test_cli_imports.py
#: checks it equals the real command's help.
SUBCOMMANDS: dict[str, tuple[str, Callable[[typer.Typer], None]]] = {
    "archive": (
        "Archive the rolled segments of one broker's log dirs to object storage.",
        _add_archive,
    ),
    "segments": (
        "Read broker log files directly from disk: dump batches and records, check indexes, "
        "and look up offsets and times exactly as the broker would.",
        _add_segments,
    ),
    "catalog": (
        "The SQL catalog of the archive: exact time -> offset answers for all of archived "
        "history, where any offset lives, traffic over time, coverage gaps, and consumer "
        "group offsets at any moment.",
        _add_catalog,
    ),
    "replay": (
        "Replay archived records into a target cluster, exactly once and resumable; translate "
        "consumer-group positions to the replayed topic.",
        _add_replay,
    ),
    "restore": (
        "Restore many topics of an archived cluster as they were at one moment T: partitions, "
        "configs, ACLs, data (exactly once, in parallel) and consumer groups.",
        _add_restore,
    ),
    "export": (
        "Export an archived range of a topic to Parquet files (local directory or S3), with "
        "Spark: the records a replay would deliver, one row each.",
        _add_export,
    ),
    "status": (
        "Is the platform healthy? One screen: last archive per broker or fetcher, archive lag, "
        "catalog freshness, the offsets follower's position vs __consumer_offsets' end, open "
        "integrity problems, running replays, prunes.",
        _add_status,
    ),
    "metrics": (
        "Prometheus metrics of the archive: serve them for scraping (docs/operations.md).",
        _add_metrics,
    ),
    "settings": (
        "Show every setting's effective value and where it came from (option, environment, "
        "configuration file or default); passwords are masked.",
        _add_settings,
    ),
}

#: the order :func:`_register_groups` registers in (as it always has)
_REGISTRATION_ORDER = ("segments", "archive", "catalog", "replay")


def _noop_callback() -> None:
    # A root callback makes typer build a group even before any sub-command is registered
    # (they are all loaded lazily); it takes no options and has no docstring, so the help
    # text is still the app's own.
    pass


def _load(name: str) -> Command:
    """Import the module of sub-command ``name`` and build its Click command exactly as the
    eager registration does (through a throw-away Typer app)."""
    holder = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    holder.callback()(_noop_callback)
    SUBCOMMANDS[name][1](holder)
    group = typer.main.get_group(holder)
    return group.commands[name]


class _LazyCommands(MutableMapping[str, Command]):
    """The root's sub-commands: names are known up front, a module is imported only when its
    command is looked up (``kafka-archive catalog offsets`` never imports the archive,
    segments or replay commands, nor what they import)."""

    def __init__(self, eager: MutableMapping[str, Command]) -> None:
        self._loaded: dict[str, Command] = dict(eager)
        self._names = list(eager) + [n for n in SUBCOMMANDS if n not in eager]

    def __getitem__(self, name: str) -> Command:
        if name not in self._loaded:
            if name not in SUBCOMMANDS:
                raise KeyError(name)
            self._loaded[name] = _load(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: Command) -> None:
        if name not in self._names:
            self._names.append(name)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def listing_stub(self, name: str) -> Command | None:
        """What ``--help`` lists for ``name``: the loaded command if there is one, else a
        placeholder carrying the help line (so listing imports nothing)."""
        if name in self._loaded:
            return self._loaded[name]
        if name in SUBCOMMANDS:
            return TyperCommand(name=name, help=SUBCOMMANDS[name][0])
        return None


class _GuardedGroup(GuardedGroup):
    """The root group: runs every command guarded (:class:`~kafka_archive.cli.guard.GuardedGroup`:
    the last-resort error handler, log redaction, a closed output as a quiet exit 141; also when
    the app is invoked by a test runner, not only via :func:`main`), and loads each
    sub-command's module only when that sub-command is used."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands(self.commands)

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)  # names only: listing must not load the modules

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        commands = self.commands
        if ctx.meta.get(_LISTING_KEY) and isinstance(commands, _LazyCommands):
            return commands.listing_stub(cmd_name)
        return commands.get(cmd_name)

    def format_help(self, ctx: Context, formatter: Any) -> None:
        ctx.meta[_LISTING_KEY] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            ctx.meta.pop(_LISTING_KEY, None)


app = typer.Typer(
    name="kafka-archive",
    help=(
        "Archive Kafka's own log segments, catalog them, and replay any moment of history.\n\n"
        "Start with `kafka-archive segments --help` to inspect broker log files."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_GuardedGroup,
)
app.callback()(_noop_callback)


_registered: list[bool] = []


def _register_groups() -> None:
    """Attach every sub-command group to :data:`app` now, once (tests that drive ``app`` with a
    runner may call it, many times; :func:`main` does not: the root loads each sub-command on
    first use). Registering again would add copies that every later invocation builds."""
    if _registered:
        return
    _registered.append(True)
    for name in _REGISTRATION_ORDER:
        SUBCOMMANDS[name][1](app)


def main() -> None:
    """Console-script entry point (exit codes: see the module docstring). Sub-commands are
    loaded on first use, so ``--help`` and one query import only what they need."""
    app()
