"""The README's promises: its two first commands are what CI runs, and every command has --help."""

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from expmrc.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]


def test_readme_commands_are_what_ci_runs():
    """CI runs the README's set-up, then its test command exactly, with the data variables unset as on a fresh
    clone, then the `data`-marked tests with them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    setup, test = (line.split("#", 1)[0].strip() for line in block[:2])
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert setup.split(" && ")[0] in ci          # bash scripts/setup.sh
    at = ci.index(test)                          # the test command, exactly
    assert ci[at - 1] == "unset EXPMRC_DATA EXPMRC_TRAIN_DATA EXPMRC_CMRC2018_DEV"
    assert not any("export EXPMRC" in line for line in ci[:at])
    assert ci[-1] == f"{test} -m data" and sum("export EXPMRC" in line for line in ci[at:]) == 3


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_explains_itself(command):
    result = subprocess.run([sys.executable, "-m", "expmrc.cli", command, "--help"], capture_output=True, text=True,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: expmrc {command}") and "example" in result.stdout


def test_python_dash_m_expmrc_is_the_command():
    result = subprocess.run([sys.executable, "-m", "expmrc", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0 and result.stdout.strip().startswith("expmrc ")


def test_importing_the_package_leaves_transformers_logging_alone_until_a_command_sets_it_up():
    code = ("import logging; import expmrc.models.backbones, expmrc.inference.rerun; "
            "from transformers.utils import logging as t; before = t.get_verbosity(); "
            "from expmrc.logs import setup_logging; setup_logging(); print(before, t.get_verbosity())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(logging.WARNING), str(logging.ERROR)]
