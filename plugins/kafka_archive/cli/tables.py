"""Tables for people that fit the terminal.

A rich table wider than the terminal folds every cell into a column a few characters wide
(a 10-column table at 80 columns becomes rows of five-line cells nobody can read). So
:func:`print_table` measures the table's natural width first and, when it does not fit, prints
each row as a block of ``key: value`` lines instead (the vertical layout ``psql \\x`` uses):
the same data, every value on one line.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from typing import Any

from rich.cells import cell_len
from rich.markup import escape
from rich.table import Table

from kafka_archive.cli.output import PipeConsole, console

__all__ = ["print_table", "table_fits", "terminal_width"]

#: what a rich table with the default box adds per column (padding and its border)
_PER_COLUMN = 3


def terminal_width() -> int:
    """Columns of the terminal: ``$COLUMNS`` when set (read now, not when the console was
    made, so a resized terminal or ``COLUMNS=80 cmd`` counts), else what rich detects."""
    text = os.environ.get("COLUMNS", "")
    return int(text) if text.isdigit() and int(text) > 0 else console.width


def table_fits(columns: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> bool:
    """Whether the table is at most ``width`` columns wide with no cell wrapped."""
    need = 1
    for i, c in enumerate(columns):
        need += _PER_COLUMN + max([cell_len(c), *(cell_len(r[i]) for r in rows)])
    return need <= width


def print_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    left: Collection[str] = (),
    width: int | None = None,
) -> None:
    """Print ``rows`` under ``columns`` as a table (``left``: left-aligned columns, others are
    right-aligned numbers), or as ``key: value`` blocks when the table would not fit in
    ``width`` (default: :func:`terminal_width`)."""
    cells = [[str(x) for x in r] for r in rows]
    width = terminal_width() if width is None else width
    if table_fits(columns, cells, width):
        t = Table(title=escape(title), title_justify="left")
        for c in columns:
            t.add_column(c, justify="left" if c in left else "right", no_wrap=True)
        for r in cells:
            t.add_row(*[escape(x) for x in r])
        # console.print(width=) never exceeds the console's own width: a console for this
        # width, writing where the shared one writes (its file is resolved at call time)
        wide = PipeConsole(
            file=console.file,
            width=width,
            highlight=False,
            force_terminal=console.is_terminal,
        )
        wide.print(t)
        return
    key_width = max(cell_len(c) for c in columns) + 1
    console.print(title, markup=False, highlight=False)
    for n, r in enumerate(cells):
        if n:
            console.print("")
        for c, v in zip(columns, r, strict=True):
            console.print(f"  {c + ':':<{key_width}} {v}", markup=False, highlight=False)
