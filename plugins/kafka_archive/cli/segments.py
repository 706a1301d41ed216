"""``kafka-archive segments``: inspect broker log files, in the spirit of kafka-dump-log.sh."""

from __future__ import annotations

import typer

app = typer.Typer(help="Read broker log files: dump batches and records, look up offsets and times.",
                  no_args_is_help=True)
