"""The README as a newcomer pastes it: every command in its shell blocks names a script that exists and flags
its parser accepts (`expmrc` subcommands, the baseline scripts, eval_expmrc.py), every link leads to a file,
and the page stays short."""

from __future__ import annotations

import importlib
import re
import shlex

import pytest
from helpers.common import ROOT

from expmrc.cli import COMMANDS, OneLineParser
from expmrc.training.flags import build_parser

README = (ROOT / "README.md").read_text(encoding="utf-8")
BASELINES = {"baseline/run_se_mrc.py": "span", "baseline/run_mc_mrc.py": "choice"}


def commands() -> list[list[str]]:
    """Each command of the README's bash blocks as words: continuation lines joined, comments, environment
    assignments and `&&` chains taken apart."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words:
                part = words[:words.index("&&")] if "&&" in words else words
                words = words[len(part) + 1:]
                while part and re.fullmatch(r"[A-Z_]+=.*", part[0]):
                    part = part[1:]
                if part:
                    found.append(part)
    return found


def parse(program: list[str]) -> None:
    """Parse a command's arguments as the program would, without running it; a usage error fails the test."""
    if program[0] == "expmrc":
        name = program[1]
        assert name in COMMANDS, f"no expmrc command {name!r}"
        module = importlib.import_module(COMMANDS[name][0])
        parser = OneLineParser(prog=f"expmrc {name}")
        module.add_arguments(parser)
        parser.parse_args(program[2:])
    elif program[0] == "python" and program[1] in BASELINES:
        build_parser(BASELINES[program[1]]).parse_args(program[2:])
    elif program[0] == "python" and program[1] == "eval_expmrc.py":
        assert len(program) == 4, "eval_expmrc.py takes a dataset and a submission"
    elif program[0] == "bash":
        assert (ROOT / program[1]).is_file(), program[1]


@pytest.mark.parametrize("program", commands(), ids=lambda words: " ".join(words)[:60])
def test_every_readme_command_parses(program):
    try:
        parse(program)
    except SystemExit as exc:
        pytest.fail(f"{shlex.join(program)}: usage error (exit {exc.code})")


def test_the_commands_are_those_of_the_three_paths():
    programs = {" ".join(words[:2]) for words in commands()}
    for needed in ("expmrc download", "python eval_expmrc.py", "python baseline/run_se_mrc.py", "expmrc llm",
                   "lm-eval run", "expmrc export"):
        assert needed in programs


def test_links_lead_to_files_and_the_page_is_short():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
    assert len(README.splitlines()) <= 200
