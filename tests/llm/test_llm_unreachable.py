"""Where replies cannot come from, `expmrc llm` says so at once: a Hub id for the local backend that neither the
Hugging Face cache nor the Hub can give is one line before any retry (transformers alone retries each file for
about a minute); a cached one loads from the cache with one warning; an endpoint that does not answer prints a
line per retry round with its count instead of sitting silently at 0 of N."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.common import environment
from helpers.llm_data import write_dataset, write_many


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (just freed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hub_env(tmp_path: Path, offline: bool = False) -> dict[str, str]:
    """No network to the Hub (its endpoint a closed local port), an empty cache under `tmp_path`."""
    env = {k: v for k, v in environment().items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    return dict(env, HF_HUB_OFFLINE="1") if offline else env


def run_llm(tmp_path: Path, env: dict[str, str], *flags: str) -> tuple[subprocess.CompletedProcess, float]:
    dataset = write_dataset(tmp_path, "squad")
    argv = [sys.executable, "-m", "expmrc.cli", "llm", dataset, "--output", str(tmp_path / "run"), "--cache",
            str(tmp_path / "cache.sqlite"), "--quiet", *flags]
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    return done, time.monotonic() - started


@pytest.mark.parametrize("offline", [False, True], ids=["hub-unreachable", "hf-hub-offline"])
def test_a_hub_id_neither_cached_nor_reachable_is_one_line_before_any_retry(tmp_path, offline):
    done, seconds = run_llm(tmp_path, hub_env(tmp_path, offline), "--backend", "transformers", "--model", "org/name")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    reason = "HF_HUB_OFFLINE is set" if offline else "cannot be reached"
    assert lines[0].startswith("error: org/name: no such folder") and reason in lines[0]
    assert "hf download org/name" in lines[0] and seconds < 30 and not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_cached_hub_id_loads_from_the_cache_with_one_warning_when_the_hub_is_unreachable(tmp_path):
    from helpers.tiny_chat import make_tiny_chat_model

    env = hub_env(tmp_path)
    snapshot = tmp_path / "hf" / "hub" / "models--org--tiny" / "snapshots" / "0123abcd"
    shutil.copytree(make_tiny_chat_model(tmp_path / "model"), snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0123abcd", encoding="utf-8")
    done, seconds = run_llm(tmp_path, env, "--backend", "transformers", "--model", "org/tiny", "--limit", "1",
                            "--max-tokens", "4")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: the Hub")]
    assert len(warnings) == 1 and "org/tiny is loaded from the Hugging Face cache" in warnings[0], done.stderr
    assert "Retrying" not in done.stderr and seconds < 90


def test_an_unreachable_endpoint_prints_one_line_per_retry_round_with_the_count(tmp_path):
    dataset = write_many(tmp_path, 6)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    argv = [sys.executable, "-m", "expmrc.cli", "llm", dataset, "--model", "m", "--base-url", url, "--output",
            str(tmp_path / "run"), "--no-cache", "--retries", "3", "--backoff", "0.05", "--concurrency", "4"]
    done = subprocess.run(argv, env=environment(), capture_output=True, text=True, timeout=120)
    rounds = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    assert done.returncode == 2, done.stderr
    assert [re.search(r"retry (\d) of 3", line)[1] for line in rounds] == ["1", "2", "3"], done.stderr
    assert all("cannot connect" in line and url.removesuffix("/v1") in line for line in rounds)
    assert done.stderr.strip().splitlines()[-1].startswith(f"error: {url}: no reply after 3 retries")
