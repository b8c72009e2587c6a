"""scripts/setup.sh looks for NLTK's Punkt tables before it installs anything: a checkout that lacks the package's
copy (and has no NLTK_DATA holding them) stops at once with one line, not after minutes of installing; one that
has them goes on to install (here a stand-in python3 records that it was called, and stops)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from helpers.common import ROOT

PUNKT = Path("expmrc/metrics/nltk_data/tokenizers/punkt_tab/english")


def checkout(tmp_path: Path, with_punkt: bool) -> tuple[Path, dict[str, str], Path]:
    """A copy of the scripts (and, `with_punkt`, the shipped tables), and an environment whose python3 only notes
    that installing began (and fails, so the script stops there)."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("setup.sh", "_common.sh"):
        shutil.copy(ROOT / "scripts" / name, repo / "scripts" / name)
    if with_punkt:
        shutil.copytree(ROOT / PUNKT, repo / PUNKT)
    bin_dir, marker = tmp_path / "bin", tmp_path / "installing"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n", encoding="utf-8")
    (bin_dir / "python3").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("NLTK_DATA", "PYTHON")}
    env.update(PATH=f"{bin_dir}:{env['PATH']}", HOME=str(tmp_path / "home"))
    return repo, env, marker


def test_setup_without_punkt_stops_before_installing_anything(tmp_path):
    repo, env, marker = checkout(tmp_path, with_punkt=False)
    done = subprocess.run(["bash", str(repo / "scripts" / "setup.sh")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and not marker.exists(), done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: NLTK's English Punkt tables"), done.stderr
    assert "NLTK_DATA" in done.stderr and not (repo / ".venv").exists()


def test_setup_finds_the_shipped_tables_or_nltk_data_and_goes_on_to_install(tmp_path):
    repo, env, marker = checkout(tmp_path, with_punkt=True)
    subprocess.run(["bash", str(repo / "scripts" / "setup.sh")], env=env, capture_output=True, timeout=60)
    assert marker.exists()  # it went past the check, to `python3 -m venv`
    marker.unlink()
    shutil.rmtree(repo / "expmrc")
    nltk_data = tmp_path / "nltk_data"
    shutil.copytree(ROOT / PUNKT, nltk_data / "tokenizers" / "punkt_tab" / "english")
    subprocess.run(["bash", str(repo / "scripts" / "setup.sh")], env=dict(env, NLTK_DATA=f"/nowhere:{nltk_data}"),
                   capture_output=True, timeout=60)
    assert marker.exists()
