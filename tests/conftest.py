"""Shared pytest fixtures."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import pytest
from helpers.common import torch_threads


def pytest_configure(config):
    """Feature caches of the tests (and of the scripts they run) go to a private folder, never the user's cache."""
    config.addinivalue_line("markers", "ctrl_c: sends Ctrl-C to a command (the press_ctrl_c fixture); "
                                       "tests/cli/test_ctrl_c.py runs them all with SIGINT ignored, as a script would")
    config._expmrc_cache = tempfile.mkdtemp(prefix="expmrc-test-cache-")
    os.environ["EXPMRC_CACHE"] = config._expmrc_cache


def pytest_unconfigure(config):
    shutil.rmtree(getattr(config, "_expmrc_cache", ""), ignore_errors=True)


@pytest.fixture
def write_json(tmp_path):
    """Write an object (or raw text/bytes) to a file in tmp_path and return its path."""
    def write(name: str, obj) -> str:
        path = tmp_path / name
        if isinstance(obj, bytes):
            path.write_bytes(obj)
        elif isinstance(obj, str):
            path.write_text(obj, encoding="utf-8")
        else:
            path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
        return str(path)
    return write


@pytest.fixture
def press_ctrl_c():
    """Ctrl-C as a terminal sends it (tests/helpers/interrupt.py): every test that sends one takes this fixture, and
    is marked `ctrl_c` by it."""
    from helpers import interrupt

    return interrupt


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "press_ctrl_c" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ctrl_c)


@pytest.fixture
def learning_threads():
    """Run a learning test on $EXPMRC_TEST_THREADS torch threads (default 1), restoring the count after it."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(torch_threads())
    yield
    torch.set_num_threads(before)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that skips for want of the data (its reason names an EXPMRC_ variable to set) must carry the
    `data` marker: CI runs the suite without the data, then only `-m data` with it, so an unmarked one never
    runs anywhere."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and "(set EXPMRC_" in str(report.longrepr) and item.get_closest_marker("data") is None:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} skips without the data but has no `data` marker, so CI never runs it: "
                           "add @pytest.mark.data")
