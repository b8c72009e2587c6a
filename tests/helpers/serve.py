"""`transformers serve`, the real OpenAI-compatible server the LLM tests run on 127.0.0.1, pinned to one model. It is
started as `python -m transformers.cli.transformers serve` with this interpreter, which needs no console script
beside it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from helpers.common import environment


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def transformers_serve(model: str, wait: float = 120.0) -> Iterator[str]:
    """`transformers serve MODEL` on CPU on a free port of 127.0.0.1; its URL up to /v1 while the block runs
    (the test fails when it does not come up within `wait` seconds)."""
    port = free_port()
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", model, "--host", "127.0.0.1",
               "--port", str(port), "--device", "cpu"]
    process = subprocess.Popen(command, env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + wait
        while time.time() < deadline and process.poll() is None:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("transformers serve did not come up on 127.0.0.1")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
