"""The contract, for every command: bad input gets exit status 2 (130 for Ctrl-C), exactly one line on stderr, no
traceback, no file changed or left behind, and nothing on stdout where no figure can be computed.

The commands and what their arguments are come from tests/contract/commands.py; how each class of hostile input is
made and run, from tests/contract/harness.py. Cheap commands get every class that applies to them; the heavy ones
(torch, the baselines, the scripts that start them) a few, drawn by $EXPMRC_CONTRACT_SEED (default 0), so that the
whole test stays well inside CI's time while every command and every class is run (docs/bad-input.md, "The contract
test")."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from contract.commands import NO_FILES, NOT_COMMANDS, ROWS, Row
from contract.harness import (CLASSES, INPUT_CLASSES, UNKNOWN_FLAG, FifoFeeder, Outcome, Sandbox, check_refused,
                              damage, damage_model, in_process, in_subprocess, make_sandbox, placeholders,
                              subprocess_argv, child_environment)
from helpers.common import ROOT, needs_punkt
from helpers.fake_openai import FakeChatServer

from expmrc.cli import COMMANDS

pytestmark = needs_punkt
SEED = int(os.environ.get("EXPMRC_CONTRACT_SEED", "0"))
EVERY_CASE = os.environ.get("EXPMRC_CONTRACT_ALL") == "1"  # every class of every row, nothing drawn (minutes)
HEAVY_CASES = 2  # classes drawn per heavy row and run
CTRL_C_CASES = 3  # rows drawn for Ctrl-C among the cheap ones (a process each)


def applicable(row: Row) -> list[str]:
    """The classes of hostile input that apply to a row, in CLASSES' order."""
    found = set()
    if row.inputs:
        found.update(INPUT_CLASSES)
    if row.dir_inputs:
        found.update(("missing", "wrong-kind"))
    if row.outputs and not row.heavy:
        found.add("full-output")
    if row.prints:
        found.update(("full-stdout", "closed-stdout"))
    if (row.outputs or row.dir_outputs) and (row.inputs or row.dir_inputs or row.models):
        found.add("output-is-input")
    if len(row.outputs) >= 2:
        found.add("two-outputs")
    found.add("unknown-flag")
    if row.lone:
        found.add("lone-flag")
    if row.models:
        found.update(("no-model", "damaged-model"))
    if row.interrupt:
        found.add("ctrl-c")
    return [c for c in CLASSES if c in found and (row.only is None or c in row.only)]


def drawn(seed: int) -> list[tuple[str, str]]:
    """Every (row, class) the test runs under `seed`: all of a cheap row's but Ctrl-C, which CTRL_C_CASES cheap rows
    get, and HEAVY_CASES of a heavy row's, drawn so that each class any row has is run by some row."""
    rng = random.Random(seed)
    chosen = [(name, c) for name, row in ROWS.items() if not row.heavy for c in applicable(row) if c != "ctrl-c"]
    chosen += [(name, "ctrl-c") for name in rng.sample(sorted(name for name, row in ROWS.items()
                                                            if not row.heavy and "ctrl-c" in applicable(row)),
                                                     CTRL_C_CASES)]
    heavy = {name: applicable(row) for name, row in ROWS.items() if row.heavy}
    for name, classes in heavy.items():
        chosen += [(name, c) for c in rng.sample(classes, min(HEAVY_CASES, len(classes)))]
    for missing in {c for classes in heavy.values() for c in classes} - {c for _, c in chosen}:
        name = rng.choice(sorted(n for n, classes in heavy.items() if missing in classes))
        chosen.append((name, missing))
    return chosen


CASES = [(name, c) for name, row in ROWS.items() for c in applicable(row)] if EVERY_CASE else drawn(SEED)


def case_id(case: tuple[str, str]) -> str:
    return f"{case[0]}:{case[1]}"


def contract_reply(body: dict) -> str:
    """A judge's question gets a verdict, any other prompt an answer with its evidence."""
    judged = "Reply with one word" in json.dumps(body) or "只回答一个词" in json.dumps(body, ensure_ascii=False)
    return "supported" if judged else '{"answer": "Melbourne", "evidence": "Melbourne is the sporting capital."}'


@pytest.fixture(scope="module")
def server():
    with FakeChatServer(contract_reply) as s:
        yield s.url


def pick(options: tuple[str, ...], hostile: str) -> str:
    """The placeholder a class is tried on, where a row has several: turned by the seed."""
    return options[(SEED + list(CLASSES).index(hostile)) % len(options)]


def prepare(row: Row, hostile: str, tmp_path: Path, server: str) -> tuple[Sandbox, list[str], dict[str, str], dict]:
    """The sandbox, argv and environment of a case, with what the refusal must say (`names`, `stdout`)."""
    argv = list(row.lone[0] if hostile == "lone-flag" else row.argv)
    sandbox = make_sandbox(tmp_path / "sandbox", placeholders(*row.argv, *argv, *row.env.values()), server)
    expect: dict = {"names": None, "strict": True, "fifo": None}
    if hostile in INPUT_CLASSES:
        placeholder = pick(row.inputs or row.dir_inputs, hostile)
        target = Path(sandbox.paths[placeholder])
        variables = [key for key, value in row.env.items() if value == f"{{{placeholder}}}"]
        expect.update(names=(target.name, *variables),  # the file, or the variable that names it
                      accepted=row.accepts.get(f"{hostile}:{placeholder}"))
        if hostile == "fifo":
            expect["fifo"] = (str(target), target.read_bytes())
            target.unlink()
            os.mkfifo(target)
        else:
            damage(target, hostile)
    elif hostile == "full-output":
        sandbox.paths[pick(row.outputs, hostile)] = "/dev/full"
        expect.update(names="/dev/full", strict=False)
    elif hostile in ("full-stdout", "closed-stdout"):
        expect.update(names="standard output", strict=False)
    elif hostile == "output-is-input":
        output = pick(row.outputs + row.dir_outputs, hostile)
        source = sandbox.paths[pick(row.inputs + row.dir_inputs + row.models, hostile)]
        sandbox.paths[output] = source if output in row.outputs else str(Path(source).parent)
        expect["names"] = Path(sandbox.paths[output]).name
    elif hostile == "two-outputs":
        sandbox.paths[row.outputs[1]] = sandbox.paths[row.outputs[0]]
        expect["names"] = Path(sandbox.paths[row.outputs[0]]).name
    elif hostile == "unknown-flag":
        argv.insert(1 if row.runner == "expmrc" else 0, UNKNOWN_FLAG)
        expect["names"] = UNKNOWN_FLAG
    elif hostile == "lone-flag":
        expect["names"] = row.lone[1]
    elif hostile in ("no-model", "damaged-model"):
        model = Path(sandbox.paths[pick(row.models, hostile)])
        expect["names"] = model.name
        if hostile == "no-model":
            damage(model, "missing")
        else:
            damage_model(model)
    if row.copy:  # the script works on the checkout it sits in: a copy of scripts/ in the sandbox
        shutil.copytree(ROOT / "scripts", sandbox.root / "scripts")
    env = {key: sandbox.fill(value) for key, value in row.env.items()}
    return sandbox, [sandbox.fill(word) for word in argv], env, expect


def run(row: Row, sandbox: Sandbox, argv: list[str], env: dict[str, str], hostile: str, capfd, monkeypatch) -> Outcome:
    stdout = {"full-stdout": "full", "closed-stdout": "closed"}.get(hostile, "capture")
    script = sandbox.root / row.runner if row.copy else ROOT / row.runner
    if row.runner.endswith(".sh"):
        return in_subprocess(str(script), argv, sandbox, env, stdout)
    monkeypatch.chdir(sandbox.root)
    for key, value in child_environment(sandbox, env).items():
        if key.startswith(("EXPMRC", "HF_", "TRANSFORMERS_")):
            monkeypatch.setenv(key, value)
    for key in ("EXPMRC_DATA", "EXPMRC_TRAIN_DATA"):
        if key not in env:
            monkeypatch.delenv(key, raising=False)
    return in_process(row.runner, argv, stdout, capfd)


def params(ctrl_c: bool) -> list:
    """The cases as pytest parameters; a class a row still fails (its `later`) is expected to fail, strictly; a
    heavy row's, a shell script's and every Ctrl-C (a process each) are `slow`."""
    def marks(name: str, hostile: str) -> list:
        row = ROWS[name]
        later = [pytest.mark.xfail(reason=row.later[hostile], strict=True)] if hostile in row.later else []
        return later + ([pytest.mark.slow] if row.heavy or row.runner.endswith(".sh") or hostile == "ctrl-c" else [])
    return [pytest.param(case, id=case_id(case), marks=marks(*case)) for case in CASES
            if (case[1] == "ctrl-c") == ctrl_c]


@pytest.mark.parametrize("case", params(ctrl_c=False))
def test_hostile_input_is_refused_in_one_line(case, tmp_path, capfd, monkeypatch, server):
    name, hostile = case
    row = ROWS[name]
    sandbox, argv, env, expect = prepare(row, hostile, tmp_path, server)
    before = sandbox.snapshot()
    if expect["fifo"]:
        with FifoFeeder(*expect["fifo"]):
            outcome = run(row, sandbox, argv, env, hostile, capfd, monkeypatch)
        assert "Traceback" not in outcome.err, outcome.err[-3000:]
        if outcome.status == 0:  # read as the file: only its outputs are new
            return
        check_refused(outcome, expect["names"], True)
    elif expect.get("accepted"):  # read as documented: the figures, with a warning naming the file
        outcome = run(row, sandbox, argv, env, hostile, capfd, monkeypatch)
        assert outcome.status == 0 and "Traceback" not in outcome.err, outcome.err[-3000:]
        assert any(line.startswith("warning:") and any(name in line for name in expect["names"])
                   for line in outcome.err.splitlines())
    else:
        outcome = run(row, sandbox, argv, env, hostile, capfd, monkeypatch)
        check_refused(outcome, expect["names"], expect["strict"])
        if not expect["strict"]:  # failed once the work was done: a reply cache stays, as the outputs written whole
            kept = names_of(row, sandbox, row.keeps + (row.outputs + row.dir_outputs if hostile != "full-output" else ()))
            before.update({key: value for key, value in sandbox.snapshot().items() if key.split("/")[0] in kept})
    assert sandbox.snapshot() == before, "files changed or left behind"


def names_of(row: Row, sandbox: Sandbox, placeholders: tuple[str, ...]) -> set[str]:
    """The names in the sandbox's top folder of these placeholders."""
    return {Path(sandbox.paths[name]).name for name in placeholders if name in sandbox.paths}


@pytest.mark.parametrize("case", params(ctrl_c=True))
def test_ctrl_c_is_130_and_one_line_and_leaves_nothing(case, tmp_path, server, press_ctrl_c):
    """Ctrl-C while the command waits for its input (a FIFO nobody writes): exit 130, one line, nothing left."""
    row = ROWS[case[0]]
    sandbox, argv, env, _ = prepare(row, "ctrl-c", tmp_path, server)
    fifo = Path(sandbox.paths[row.interrupt])
    fifo.unlink()
    os.mkfifo(fifo)
    before = sandbox.snapshot()
    process = press_ctrl_c.start(subprocess_argv_of(row, sandbox, argv), cwd=sandbox.root, text=True,
                                 env=child_environment(sandbox, env), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    held = press_ctrl_c.HeldFifo(str(fifo), process)
    try:
        status, out, err, _ = press_ctrl_c.press_when(process, held, timeout=120)
        reached = held.reached
    finally:
        held.close()
    assert reached, f"never waited in a read of {fifo.name}: exit {status}, stderr {err[-1500:]!r}"
    check_refused(Outcome(status, out, err), None, True, status=130, starts="interrupted")
    assert sandbox.snapshot() == before, "files changed or left behind"


def subprocess_argv_of(row: Row, sandbox: Sandbox, argv: list[str]) -> list[str]:
    return subprocess_argv(str(sandbox.root / row.runner) if row.copy else row.runner, argv)


def test_every_command_has_a_row():
    """Every `expmrc` command, the leaderboard's script, the baselines, every script and every benchmark has a row
    of the table (or, for a file that is no command or reads no file, a line saying why)."""
    files = {str(p.relative_to(ROOT)) for folder in ("scripts", "benchmarks", "baseline")
             for p in (ROOT / folder).iterdir() if p.suffix in (".py", ".sh")} | {"eval_expmrc.py"}
    rows = {name for name, row in ROWS.items() if row.runner != "expmrc"}
    commands = {name.split(" ")[0] for name, row in ROWS.items() if row.runner == "expmrc"}
    assert commands == set(COMMANDS), f"expmrc commands without a row: {set(COMMANDS) - commands}"
    assert files == rows | set(NOT_COMMANDS) | set(NO_FILES), f"without a row: {files - rows - set(NOT_COMMANDS) - set(NO_FILES)}"
    assert all(ROWS[name].runner == name for name in rows), "a file's row runs that file"


@pytest.mark.parametrize("path", sorted(NO_FILES))
def test_a_benchmark_said_to_read_no_file_reads_none(path):
    source = (ROOT / path).read_text(encoding="utf-8")
    readers = re.findall(r"EXPMRC_\w*DATA|load_dataset|read_json|load_training_set|open\(|read_text|read_bytes|"
                         r"from_pretrained|add_argument\([^)]*\b(?:FILE|DIR|file|folder|path)\b", source)
    assert not readers, f"{path} reads files ({readers}): give it a row in tests/contract/commands.py"


@pytest.mark.parametrize("seed", range(12))
def test_every_class_and_every_row_is_run_under_any_seed(seed):
    cases = drawn(seed)
    assert {c for _, c in cases} == set(CLASSES)
    assert {name for name, _ in cases} == set(ROWS)
    assert all(c in applicable(ROWS[name]) for name, c in cases)
