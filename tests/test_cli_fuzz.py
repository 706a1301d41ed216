"""Every option of every CLI command, fed random and hostile values (issue 10, point 6).

For each leaf command of ``kafka-archive`` (found by walking the Typer app, so a new command or
option is fuzzed without editing this file), hypothesis builds argument lists: each option is
present or not (required ones always), its value drawn from a pool chosen by what the option
means (catalogs, stores, times, offsets, partitions, Kafka addresses, config pairs) mixed with
generic hostile text (empty, huge and negative numbers, unicode, path tricks, option-looking
values). Each run is checked for:

* an exit code in the documented set (:data:`DOCUMENTED_EXIT_CODES`, see docs/reliability.md);
  70 (internal error) is a bug and fails the test;
* no traceback: the command raised nothing but ``SystemExit`` and printed no Python traceback;
* nothing created or changed: the sandbox (a built catalog, an archive store, log dirs, hostile
  files) is byte-for-byte the same afterwards when the command failed, and always for the
  commands that only read.

The commands that write (``archive``, ``catalog build``, ``replay run``/``resume``,
``translate-group --apply``, ``follow-offsets``) get only destinations that cannot be
valid all at once (no real log dir to archive, no live Kafka to replay into: dead loopback
ports), so a run that succeeds has nothing to write; a failing one must leave no trace.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_archive.cli import _register_groups, app
from support.catalog_data import archived_catalog
from typer.testing import CliRunner

#: exit codes the CLI documents (docs/reliability.md): 0 ok, 1 error (a clear message and a
#: hint), 2 usage error (Typer/click: unknown option, bad type, missing value)
DOCUMENTED_EXIT_CODES = {0, 1, 2}
CLUSTER = "fz"
#: options always given (from their pool of invalid values) so the command cannot run for real:
#: `metrics serve`, a server, would run until interrupted: it always gets a port it refuses
ALWAYS_GIVEN: dict[tuple[str, ...], tuple[str, ...]] = {
    ("metrics", "serve"): ("--port",),
}
#: commands that must never change anything, whatever they are given
READ_ONLY = {
    ("segments", "dump"),
    ("segments", "lookup"),
    ("catalog", "offsets"),
    ("catalog", "locate"),
    ("catalog", "stats"),
    ("catalog", "gaps"),
    ("catalog", "topics"),
    ("catalog", "group-offsets"),
    ("catalog", "clusters"),
    ("catalog", "topic-config"),
    ("catalog", "topic-history"),
    ("catalog", "acls"),
    ("replay", "status"),
    ("settings",),
    ("status",),
    ("metrics", "serve"),
}


def _leaf_commands() -> list[tuple[tuple[str, ...], Any]]:
    _register_groups()
    found: list[tuple[tuple[str, ...], Any]] = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in sorted(subs.items()):
                walk(sub, (*path, name))
        else:
            found.append((path, cmd))

    walk(typer.main.get_command(app), ())
    return found


COMMANDS = _leaf_commands()


# -- the sandbox ----------------------------------------------------------------------------------


class Sandbox:
    """A directory with a built catalog, its store, and hostile files; its fingerprint."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.db = root / "catalog.db"
        self.store = root / "store"
        self.empty_dir = root / "empty"
        self.garbage = root / "garbage.log"
        self.loop = root / "looped"
        self.logdir_junk = root / "junk-logs"

    def fingerprint(self) -> dict[str, str]:
        """Path -> content hash (or link target) of everything under the root, SQLite's
        transient ``-wal``/``-shm`` files aside (a reader may create and remove them)."""
        out: dict[str, str] = {}
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            for name in dirnames + filenames:
                p = Path(dirpath) / name
                rel = str(p.relative_to(self.root))
                if rel.endswith(("-wal", "-shm", "-journal")):
                    continue
                if p.is_symlink():
                    out[rel] = "-> " + os.readlink(p)
                elif p.is_file():
                    out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
                else:
                    out[rel] = "dir"
        return out


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    root = tmp_path_factory.mktemp("fuzz")
    box = Sandbox(root)
    _hist, store_uri, db = archived_catalog(root, cluster=CLUSTER, seed=11, appends=30)
    assert (store_uri, db) == (box.store.as_uri(), str(box.db))
    box.empty_dir.mkdir()
    box.garbage.write_bytes(b"\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xffnot a log" * 7)
    box.loop.mkdir()
    (box.loop / "a").symlink_to(box.loop / "b")
    (box.loop / "b").symlink_to(box.loop / "a")
    part = box.logdir_junk / "t-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(b"\x01" * 61)
    (part / "48.log").write_bytes(b"")
    yield box


# -- values ---------------------------------------------------------------------------------------

_HOSTILE_TEXT = [
    "",
    " ",
    "-",
    "--json",
    "-5",
    "0",
    "9" * 30,
    str(2**63),
    str(-(2**63) - 1),
    str(2**64),
    "1e400",
    "nan",
    "../../etc/passwd",
    "/dev/null",
    "a\tb",
    "%s%n{0}",
    "ñ🔥\u202e",
    "x" * 300,
    "bogus:x",
    ":",
    "=",
    "a=b=c",
]
_INTS = [str(n) for n in (-(2**63), -5, -1, 0, 1, 3, 2**31, 2**63 - 1, 2**63, 2**64)]
_TIMES = [
    "-2h",
    "-0s",
    "-999999999999999h",
    "+3d",
    "2026-13-45T00:00:00",
    "2021-01-01T00:00:00Z",
    "1700000000000",
    "99999999999999999999999",
    "yesterday",
    "-2 hours",
]


def _pool(sb: Sandbox, command: tuple[str, ...], opt: str, *, generic: bool = True) -> list[str]:
    """Values that mean something to ``opt`` (plus the generic hostile ones)."""
    paths = [
        str(sb.root / "nope" / "x.db"),
        str(sb.empty_dir),
        str(sb.garbage),
        str(sb.loop),
        str(sb.loop / "a"),
    ]
    pools: dict[str, list[str]] = {
        "--db": [
            str(sb.db),
            *paths,
            f"sqlite:///{sb.root}/nope/y.db",
            "postgresql://fuzz:not-a-secret@127.0.0.1:1/db",
            "mysql://x",
            "bogus://",
        ],
        "--store": [sb.store.as_uri(), str(sb.store), *paths, "s3://", "gs://bucket/x"],
        "--cluster": [CLUSTER, "nope"],
        "--topic": ["t0", "nope"],
        "--target-topic": ["t0", "__consumer_offsets"],
        "--group": ["g0", "nope"],
        "--partition": [*_INTS, "0,1", "0-3"],
        "--partitions": [*_INTS, "0,1", "0-3", "all", "0-99999999999", "5-1", "0-2147483648"],
        "--output": [str(sb.garbage), str(sb.garbage / "sub"), "/sys/kafka-archive-fuzz"],
        "--offset": _INTS,
        "--bucket": ["1m", "0s", "-1h", "5", "1y"],
        "--interval-bytes": _INTS,
        "--concurrency": _INTS,
        "--broker-id": _INTS,
        "--seed": _INTS,
        "--rate-limit-mb": [*_INTS, "0.5", "-0.5", "inf"],
        "--rate-limit-records": _INTS,
        "--duration": ["1", "0", "-1", "1s", str(2**64)],
        "--replay": ["1", "0", "-1", str(2**64), "nope"],
        "--partition-mapping": ["0:1", "0:-1", "x:y", "0:0,0:1", "identity", "hash"],
        "--key-filter": ["bogus:x", "prefix:", "regex:[", "exact:k", "regex:.*"],
        "--target": ["127.0.0.1:1", "127.0.0.1:0", "[::1]:1", "a b"],
        "--bootstrap": ["127.0.0.1:1", "127.0.0.1:0", "a b"],
        "--target-config": ["bogus.key=1", "no-equals", "acks=all", "=", "linger.ms=-1"],
        "--consumer-config": ["bogus.key=1", "no-equals", "=", "fetch.wait.max.ms=x"],
        "--store-option": ["bogus=1", "no-equals", "="],
        "--spark-master": ["bogus", "local[0]", "local[-1]", "yarn://x", ""],
        "--log-dir": [str(sb.logdir_junk), *paths],
        "--state-dir": [*paths, str(sb.root / "new-state")],
        "--port": ["-1", "65536", "port", str(2**64)],
        "--png": [str(sb.garbage), str(sb.root / "nope" / "x.png"), str(sb.empty_dir)],
        "files": [str(sb.garbage), *paths],
        "partition_dir": [str(sb.logdir_junk / "t-0"), *paths],
        "replay_id": ["1", "0", "-1", str(2**64), "nope"],
    }
    for name in ("--at", "--from", "--to", "--commits-at", "--timestamp"):
        pools[name] = _TIMES + _INTS
    return pools.get(opt, []) + (_HOSTILE_TEXT if generic else [])


def _long_name(param: Any) -> str:
    longs = [o for o in param.opts if o.startswith("--")]
    return longs[0] if longs else param.name


@st.composite
def _argv(draw: st.DrawFn, sb: Sandbox, command: tuple[str, ...], cmd: Any) -> list[str]:
    argv = list(command)
    positional: list[str] = []
    for param in cmd.params:
        name = _long_name(param)
        if getattr(param, "param_type_name", "") == "argument":
            count = draw(st.integers(1, 2)) if param.nargs == -1 else 1
            for _ in range(count):
                positional.append(draw(st.sampled_from(_pool(sb, command, name))))
            continue
        if name in ALWAYS_GIVEN.get(command, ()):
            invalid = _pool(sb, command, name, generic=False)
            argv += [param.opts[0], draw(st.sampled_from(invalid))]
            continue
        if param.is_flag:
            if draw(st.booleans()):
                argv.append(param.opts[0])
            continue
        times = 1 if param.required else draw(st.integers(0, 2 if param.multiple else 1))
        for _ in range(times):
            argv += [
                draw(st.sampled_from(param.opts)),
                draw(st.sampled_from(_pool(sb, command, name))),
            ]
    return argv + (["--", *positional] if positional else [])


# -- the test -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "cmd"), COMMANDS, ids=[" ".join(path) for path, _ in COMMANDS])
def test_every_option_survives_hostile_values(
    command: tuple[str, ...],
    cmd: Any,
    sandbox: Sandbox,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # nothing from the developer's environment leaks in (a real catalog, store or secrets)
    for var in list(os.environ):
        if var.startswith(("KAFKA_ARCHIVE_", "AWS_")) and var != "KAFKA_ARCHIVE_ERROR_LOG_DIR":
            monkeypatch.delenv(var)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    # relative paths land in the sandbox: what a failing command creates there is seen
    cwd = sandbox.root / "cwd"
    cwd.mkdir(exist_ok=True)
    monkeypatch.chdir(cwd)
    runner = CliRunner()
    state = sandbox.fingerprint()

    @settings(
        max_examples=int(os.environ.get("KAFKA_ARCHIVE_FUZZ_EXAMPLES", "25")),
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(argv=_argv(sandbox, command, cmd))
    def one(argv: list[str]) -> None:
        result = runner.invoke(app, argv, catch_exceptions=True)
        shown = f"argv={argv!r}\nexit={result.exit_code}\n{result.output[-2000:]}"
        exc = result.exception
        assert exc is None or isinstance(exc, SystemExit), f"{type(exc).__name__}: {exc}\n{shown}"
        assert "Traceback (most recent call last)" not in result.output, shown
        assert result.exit_code in DOCUMENTED_EXIT_CODES, shown
        after = sandbox.fingerprint()
        if result.exit_code != 0 or command in READ_ONLY:
            changed = {k for k in state.keys() | after.keys() if state.get(k) != after.get(k)}
            assert not changed, f"changed {sorted(changed)}\n{shown}"
        state.clear()
        state.update(after)  # a write that succeeded is the new baseline

    one()
