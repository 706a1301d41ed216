"""Start-up time of the ``kafka-archive`` command line, against ``python -c pass``.

Wall time of whole processes, as a user at a shell sees it:

* ``python``: ``python -c pass`` (the interpreter alone: the floor);
* ``help``: ``kafka-archive --help``;
* ``offsets``: ``kafka-archive catalog offsets --cluster c1 --topic orders --at T`` on a small
  SQLite catalog (made here by the broker-faithful writer, archived and cataloged in-process),
  with ``--store`` (exact answers: the ranged reads are included);
* ``topics``: ``kafka-archive catalog topics --cluster c1`` on the same catalog;
* ``libs``: ``python -c "import typer, rich.console, sqlalchemy"``: only the libraries
  ``catalog offsets`` cannot do without (the option parser, the console, SQLAlchemy Core:
  its path imports no ORM), i.e. the floor under ``offsets`` short of replacing them.

The commands run round-robin ``--reps`` times after one warm-up round; reported: median and
min in milliseconds, each median as a multiple of ``python``'s and minus it (what the CLI
itself costs), and the median CPU time (user + system) of each process, which a loaded machine
barely changes (the load average is recorded with the results).

Bytecode: by default the runs use a private bytecode cache (``PYTHONPYCACHEPREFIX`` in a scratch
directory, written by the warm-up round), which is what an installed package has (pip compiles
``.pyc`` files at install time). ``--no-bytecode`` measures with ``PYTHONDONTWRITEBYTECODE=1``
and no cache instead: every module is compiled from source on every run (some sandboxes run
like that), which costs roughly three times as much for the same imports.

    .venv/bin/python benchmarks/bench_cli_startup.py
    .venv/bin/python benchmarks/bench_cli_startup.py --reps 21 --no-bytecode
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _data

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

CLUSTER = "c1"


def make_catalog(root: Path) -> tuple[str, str]:
    """(store URI, catalog path): a small archive of the test suite's history, cataloged."""
    from support.catalog_data import archived_catalog

    _hist, store_uri, db = archived_catalog(root, cluster=CLUSTER, seed=3, appends=60)
    return store_uri, db


def commands(store: str, db: str) -> dict[str, list[str]]:
    """The measured command lines (see the module docstring)."""
    cli = str(Path(sys.executable).with_name("kafka-archive"))
    at = "2026-01-01T00:00:00Z"
    return {
        "python": [sys.executable, "-c", "pass"],
        "help": [cli, "--help"],
        "offsets": [
            cli, "catalog", "offsets", "--cluster", CLUSTER, "--topic", "orders", "--at", at,
            "--db", db, "--store", store,
        ],
        "topics": [cli, "catalog", "topics", "--cluster", CLUSTER, "--db", db],
        "libs": [sys.executable, "-c", "import typer, rich.console, sqlalchemy"],
    }  # fmt: skip


def environment(scratch: Path, bytecode: bool) -> dict[str, str]:
    env: dict[str, str] = _data.cli_environment(scratch, bytecode)
    return env


def run_ms(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One run's wall time and CPU time (user + system of the child), in ms; a failing
    command aborts the benchmark (its output is shown)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return elapsed, cpu


def measure(cmds: dict[str, list[str]], env: dict[str, str], reps: int) -> dict[str, Any]:
    for argv in cmds.values():  # warm-up: fills the bytecode cache and the page cache
        run_ms(argv, env)
    samples: dict[str, list[float]] = {name: [] for name in cmds}
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(reps):
        for name, argv in cmds.items():
            wall, used = run_ms(argv, env)
            samples[name].append(wall)
            cpu[name].append(used)
    base = statistics.median(samples["python"])
    results: dict[str, Any] = {}
    for name, values in samples.items():
        median = statistics.median(values)
        results[name] = {
            "median_ms": round(median, 1),
            "min_ms": round(min(values), 1),
            "x_python": round(median / base, 1),
            "minus_python_ms": round(median - base, 1),
            # CPU time barely moves with the machine's load (wall time waits for a core):
            # on a shared machine it is the better estimate of a quiet machine's wall time
            "cpu_median_ms": round(statistics.median(cpu[name]), 1),
        }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--reps", type=int, default=11, help="rounds after the warm-up")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="run without a bytecode cache (see above)"
    )
    parser.add_argument("--out", type=Path, default=_data.RESULTS_DIR)
    args = parser.parse_args()

    scratch = _data.scratch_dir("bench-cli-")
    store, db = make_catalog(scratch)
    env = environment(scratch, bytecode=not args.no_bytecode)
    results = measure(commands(store, db), env, args.reps)
    for name, res in results.items():
        print(
            f"{name:8} median {res['median_ms']:7.1f} ms  min {res['min_ms']:7.1f} ms  "
            f"{res['x_python']:5.1f} x python  (+{res['minus_python_ms']:.1f} ms)  "
            f"cpu {res['cpu_median_ms']:7.1f} ms",
            flush=True,
        )
    out = _data.result_file("cli-startup", args.out)
    out.write_text(
        json.dumps(
            {
                "kind": "cli-startup",
                "reps": args.reps,
                "bytecode_cache": not args.no_bytecode,
                "results": results,
                "load_average": list(os.getloadavg()),
                "machine": _data.machine(),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
