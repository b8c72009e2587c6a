"""Ctrl-C as a terminal sends it, for every test that sends one (the `press_ctrl_c` fixture of tests/conftest.py
hands this module out and marks the test `ctrl_c`).

A terminal's Ctrl-C is SIGINT to the whole foreground process group: a shell script and the Python it started both
get it. A command started here gets a process group of its own, and SIGINT's default action: a parent started in
the background by a script (`bash -c 'trap "" INT; pytest ...'`, `nohup pytest &`) ignores SIGINT, every child
inherits that, and Python (or bash) then never sees the Ctrl-C the test sends. tests/cli/test_ctrl_c.py runs every
`ctrl_c` test under such a parent.

The default is not set in the child between fork and exec (`preexec_fn`, which Python's documentation calls unsafe
where the parent has threads, as the test process does: the fixtures' servers, the pipe readers below). Instead
SIGINT is caught in the parent while it starts the command, and exec resets a caught signal to its default.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any


def start(argv: list[str], **popen: Any) -> subprocess.Popen:
    """Start `argv` in a process group of its own, with SIGINT's default action (other Popen arguments pass on)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # caught here, so the default after exec
    try:
        return subprocess.Popen(argv, process_group=0, **popen)
    finally:
        if previous is not None:  # None: a handler not set from Python, which no test process has
            signal.signal(signal.SIGINT, previous)


def press(process: subprocess.Popen, signum: int = signal.SIGINT) -> None:
    """Ctrl-C (or `signum`): the signal to the command's whole process group, as a terminal sends it."""
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:  # it has ended already: nothing to interrupt
        pass


def press_when(process: subprocess.Popen, ready: Callable[[], bool], timeout: float = 60.0,
               signum: int = signal.SIGINT) -> tuple[int, str, str, float]:
    """Wait until `ready()` (or the command ended, or `timeout`), press Ctrl-C, and wait for the command to end:
    (exit status, stdout, stderr, seconds from the signal to the end). Whether `ready()` came true is the caller's
    to assert (a command that ended first was never interrupted). The command's pipes are read all along, so one
    that writes much before it gets ready never waits on a full pipe."""
    readers = {name: _drain(stream) for name, stream in (("out", process.stdout), ("err", process.stderr))}
    deadline = time.monotonic() + timeout
    while not ready() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    sent = time.monotonic()
    press(process, signum)
    try:
        process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"still running 120 s after the signal: stderr {readers['err']()[-1500:]!r}") from None
    return process.returncode, readers["out"](), readers["err"](), time.monotonic() - sent


def _drain(stream: Any) -> Callable[[], str]:
    """Read `stream` (a pipe, or None) to its end in a thread; the returned call gives what it held, once ended."""
    if stream is None:
        return lambda: ""
    chunks: list[Any] = []
    reader = threading.Thread(target=lambda: chunks.append(stream.read()), daemon=True)
    reader.start()

    def text() -> str:
        reader.join(timeout=30)
        got = chunks[0] if chunks else ""
        return got.decode("utf-8", "replace") if isinstance(got, bytes) else got

    return text


class HeldFifo:
    """The write end of a FIFO a command reads, taken the moment the command opens the FIFO and held open, so that
    the command then waits in a read for data that never comes: a point where Ctrl-C always finds it working.
    Called, it says whether the command waits in that read yet (`press_when`'s `ready`); `reached` says whether it
    ever did.

    Having opened the FIFO is not enough: a signal that arrives between the open and the read is handled (Python
    notes it) before the read starts, and the read then waits for ever, deaf to it, as one did in CI now and then.
    So the process of the command's group that holds the FIFO must be asleep in the kernel's pipe read (its /proc
    wchan); where the kernel does not say, two seconds after the open stand in for it."""

    GRACE = 2.0

    def __init__(self, fifo: str, process: subprocess.Popen) -> None:
        self.fifo = os.path.realpath(fifo)
        self.group = process.pid  # `start` made it the leader of a group of its own
        self.fd: int | None = None
        self.opened = 0.0
        self.reached = False

    def __call__(self) -> bool:
        if self.fd is None:
            try:
                self.fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: nobody has it open for reading yet
                return False
            self.opened = time.monotonic()
        self.reached = self.reached or self._in_read()
        return self.reached

    def _in_read(self) -> bool:
        if any(word in _wchan(pid) for pid in self._readers() for word in ("pipe_read", "pipe_wait")):
            return True
        return time.monotonic() - self.opened >= self.GRACE  # the kernel does not say (or not in these words)

    def _readers(self) -> list[int]:
        """The processes of the command's group that have the FIFO open."""
        found: list[int] = []
        try:
            names = os.listdir("/proc")
        except OSError:  # no /proc (not Linux): the grace
            return found
        for name in names:
            try:
                if not name.isdigit() or os.getpgid(int(name)) != self.group:
                    continue
                fds = os.listdir(f"/proc/{name}/fd")
                if any(os.readlink(f"/proc/{name}/fd/{fd}") == self.fifo for fd in fds):
                    found.append(int(name))
            except OSError:  # ended meanwhile, or not ours to look at
                continue
        return found

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _wchan(pid: int) -> str:
    """Where in the kernel a process sleeps (`anon_pipe_read`; "0" or "" while it runs, or where the kernel does not
    say)."""
    try:
        with open(f"/proc/{pid}/wchan", encoding="ascii") as where:
            return where.read().strip()
    except OSError:
        return ""
