"""A closed output (``kafka-archive ... | head``) is a normal end, exit 141, for every command.

The reader of a pipe may go away at any write: while a table is printed, while a command's own
error handler reports something (a broad ``except OSError``/``except Exception`` sees the
``BrokenPipeError`` too), while Click or rich print ``--help`` (both end with ``SystemExit(1)``
on a broken pipe, before any command runs), or when Python flushes what is still buffered at
exit. Each of those paths asks :func:`closed_pipe` and ends through :func:`end_quietly`
(:mod:`kafka_archive.cli.guard` for the command's run and its help,
:func:`kafka_archive.cli.output.print_error` inside handlers,
:func:`kafka_archive.cli.crash.report_unexpected` last), so no such end is
ever reported as a failure or as a bug with a crash log. A broken pipe elsewhere (a socket to
a broker) is not the output's and stays an error.

Standard library only: ``kafka-archive --help`` imports this.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import sys

__all__ = [
    "EXIT_CLOSED_PIPE",
    "broken_pipe_in",
    "closed_pipe",
    "end_quietly",
    "flush_output",
    "output_closed",
    "silence_output",
]

#: exit code when the reader of stdout/stderr went away (``| head``): 128 + SIGPIPE, what a
#: program killed by the signal (git, coreutils) reports to ``set -o pipefail``
EXIT_CLOSED_PIPE = 141


def output_closed() -> bool:
    """Whether stdout or stderr is a pipe whose reader has closed it (Linux and macOS answer
    POLLERR for it). Without ``poll`` or a real descriptor (a test runner's buffer), any
    broken pipe is taken for the output's."""
    if not hasattr(select, "poll"):
        return True
    fds = []
    for stream in (sys.stdout, sys.stderr):
        try:
            fds.append(stream.fileno())
        except (AttributeError, OSError, ValueError):
            return True
    for fd in fds:
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                continue
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            if any(ev & (select.POLLERR | select.POLLHUP) for _fd, ev in poller.poll(0)):
                return True
        except OSError:
            return True
    return False


def broken_pipe_in(exc: BaseException | None) -> bool:
    """Whether ``exc`` or an exception it was raised while handling is a broken pipe."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, BrokenPipeError) or (
            isinstance(exc, OSError) and exc.errno == errno.EPIPE
        ):
            return True
        exc = exc.__context__ or exc.__cause__
    return False


def closed_pipe(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what it was raised while handling) is a broken pipe of this
    process's own output, i.e. the reader went away: a quiet end, not a failure."""
    return broken_pipe_in(exc) and output_closed()


def silence_output() -> None:
    """Point stdout and stderr at /dev/null, so what is still buffered, and Python's flush at
    exit, do not fail again ("Exception ignored ... BrokenPipeError"): the recipe of the
    Python documentation's note on SIGPIPE."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (AttributeError, OSError, ValueError):
            continue  # not a real descriptor (a test runner's buffer): nothing to flush at exit


def end_quietly() -> int:
    """Silence the output (:func:`silence_output`) and return :data:`EXIT_CLOSED_PIPE`."""
    silence_output()
    return EXIT_CLOSED_PIPE


def flush_output() -> int | None:
    """Flush stdout and stderr now, inside the command's guard rather than at interpreter
    exit (where a closed pipe is "Exception ignored ... BrokenPipeError" and exit 120);
    :data:`EXIT_CLOSED_PIPE` when the reader had gone, else None."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError) as exc:
            if isinstance(exc, ValueError):  # already closed by the caller: nothing to flush
                continue
            return end_quietly()
        except AttributeError:
            continue
    return None
