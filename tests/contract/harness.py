"""How the contract test runs one command of its table (commands.py) on one class of hostile input, and what it
asserts: exit status 2 (130 for Ctrl-C), exactly one line on stderr, no traceback, no file changed or left behind,
nothing on stdout where no figure can be computed.

Each case runs in a sandbox folder of its own (the current folder of the command, and its $EXPMRC_CACHE), holding
the files the command's arguments name (`Sandbox`). `expmrc` commands and Python scripts run in this process
(`expmrc.cli.main`, or the script as `__main__` with what the interpreter does at exit), shell scripts and every
Ctrl-C in a process of their own (tests/helpers/interrupt.py)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import runpy
import shutil
import stat
import subprocess
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.common import CHOICE_DATA, FIXTURES, ROOT, SPAN_DATA, environment, without_stdout

# every class of hostile input, with what it does; commands.py says which apply to which command
CLASSES = {
    "missing": "an input path that does not exist",
    "empty": "an input file that is empty",
    "damaged": "an input file cut short (truncated JSON)",
    "foreign": "an input file of valid JSON of another tool's shape",
    "wrong-kind": "a folder where an input file is expected (a file where a folder is)",
    "fifo": "an input that is a FIFO (a pipe, as `<(cat file)` gives): read as the file, or refused in one line",
    "full-output": "an output file on a full device (/dev/full)",
    "full-stdout": "stdout on a full device (> /dev/full)",
    "closed-stdout": "stdout closed (>&-)",
    "output-is-input": "an output that is one of the command's inputs",
    "two-outputs": "the same file given for two outputs",
    "unknown-flag": "a flag the command does not have",
    "lone-flag": "a flag that only works with another flag, given alone",
    "no-model": "a model folder that does not exist",
    "damaged-model": "a model folder whose config is cut short and whose weights are empty",
    "ctrl-c": "Ctrl-C while the command reads its input",
}
INPUT_CLASSES = ("missing", "empty", "damaged", "foreign", "wrong-kind", "fifo")
OUTPUT_CLASSES = ("full-output", "output-is-input", "two-outputs")
FOREIGN = {"name": "left-pad", "version": "1.3.0", "dependencies": {"lodash": "^4.17.21"}}  # a package.json
UNKNOWN_FLAG = "--no-such-flag"


@dataclass
class Outcome:
    status: int
    out: str
    err: str


@dataclass
class Sandbox:
    """A folder holding the files a command's arguments name: `paths[name]` for each placeholder `{name}`."""

    root: Path
    paths: dict[str, str] = field(default_factory=dict)

    def fill(self, template: str) -> str:
        return template.format(**self.paths)

    def snapshot(self) -> dict[str, Any]:
        """Every file, folder, FIFO and link below the sandbox with what it holds: what a command must leave as
        it was when it refuses."""
        seen: dict[str, Any] = {}
        for root, dirs, files in os.walk(self.root):
            for name in dirs + files:
                path = Path(root, name)
                mode = path.lstat().st_mode
                key = str(path.relative_to(self.root))
                if stat.S_ISREG(mode):
                    seen[key] = hashlib.sha256(path.read_bytes()).hexdigest()
                elif stat.S_ISLNK(mode):
                    seen[key] = f"link to {os.readlink(path)}"
                else:
                    seen[key] = stat.S_IFMT(mode)
        return seen


class FifoFeeder:
    """Feeds `content` to a FIFO the first time a reader opens it, and nothing (at once end of file) every later
    time, until stopped: a command that reads its input twice then sees an empty second read, never a hang."""

    def __init__(self, fifo: str, content: bytes) -> None:
        self.fifo, self.content = fifo, content
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._feed, daemon=True)

    def _feed(self) -> None:
        first = True
        while not self.done.is_set():
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.005)
                continue
            try:
                if first:
                    os.set_blocking(fd, True)
                    with contextlib.suppress(OSError):  # BrokenPipe: the reader stopped early
                        os.write(fd, self.content)
                    first = False
            finally:
                os.close(fd)

    def __enter__(self) -> FifoFeeder:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.done.set()
        self.thread.join(timeout=5)


@contextlib.contextmanager
def _stdout_as(mode: str):
    """stdout for the command: the test's capture, a full device, or none (as `>&-` starts Python)."""
    if mode == "capture":
        yield
        return
    saved = sys.stdout
    stream = open("/dev/full", "w") if mode == "full" else None  # noqa: SIM115 - closed below
    sys.stdout = stream
    try:
        yield
    finally:
        sys.stdout = saved
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def run_expmrc(argv: list[str], stdout: str) -> int:
    from expmrc import cli

    with _stdout_as(stdout):
        return cli.main(argv)


def run_script(script: Path, argv: list[str], stdout: str) -> int:
    """A Python script run here as `python SCRIPT ARGV` runs it: as `__main__`, its folder first on sys.path, and
    what the interpreter does at the end (SystemExit's code or message, a traceback and 1 for any other
    exception, 130 after one for Ctrl-C, 120 when flushing stdout fails)."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.parent))
    status = 0
    try:
        with _stdout_as(stdout):
            try:
                runpy.run_path(str(script), run_name="__main__")
            except SystemExit as exc:
                if exc.code is None or isinstance(exc.code, int):
                    status = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    status = 1
            except BaseException as exc:  # noqa: BLE001 - what the interpreter does with it
                traceback.print_exc()
                status = 130 if isinstance(exc, KeyboardInterrupt) else 1
            if sys.stdout is not None:
                try:
                    sys.stdout.flush()
                except (OSError, ValueError) as exc:
                    print(f"Exception ignored while flushing sys.stdout: {exc!r}", file=sys.stderr)
                    status = status or 120
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return status


def in_process(runner: str, argv: list[str], stdout: str, capfd: Any) -> Outcome:
    """Run in this process (warnings shown every time, as in a fresh process), capturing both file descriptors."""
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.filterwarnings("always")
        if runner == "expmrc":
            status = run_expmrc(argv, stdout)
        else:
            status = run_script(ROOT / runner, argv, stdout)
    captured = capfd.readouterr()
    return Outcome(status, captured.out, captured.err)


def subprocess_argv(runner: str, argv: list[str]) -> list[str]:
    if runner == "expmrc":
        return [sys.executable, "-m", "expmrc.cli", *argv]
    if runner.endswith(".sh"):
        return ["bash", str(ROOT / runner), *argv]
    return [sys.executable, str(ROOT / runner), *argv]


def child_environment(sandbox: Sandbox, env: dict[str, str]) -> dict[str, str]:
    """The environment of a command run in its own process: this checkout's expmrc, no network, the sandbox's
    cache, no data sets but those the table names."""
    base = {k: v for k, v in environment().items() if not k.startswith(("EXPMRC_DATA", "EXPMRC_TRAIN_DATA"))}
    return {**base, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "EXPMRC_CACHE": str(sandbox.root / ".cache"),
            "PYTHON": sys.executable, "GPUS": "", **env}


def in_subprocess(runner: str, argv: list[str], sandbox: Sandbox, env: dict[str, str], stdout: str,
                  timeout: float = 120) -> Outcome:
    """Run in a process of its own, in the sandbox (shell scripts; a closed stdout or a full device)."""
    command = subprocess_argv(runner, argv)
    streams: dict[str, Any] = {"stdout": subprocess.PIPE}
    full = open("/dev/full", "w") if stdout == "full" else None  # noqa: SIM115 - closed below
    if full is not None:
        streams = {"stdout": full}
    elif stdout == "closed":
        command, streams = without_stdout(command), {"stdout": subprocess.DEVNULL}
    try:
        done = subprocess.run(command, cwd=sandbox.root, env=child_environment(sandbox, env),
                              stderr=subprocess.PIPE, text=True, timeout=timeout, **streams)
    finally:
        if full is not None:
            full.close()
    return Outcome(done.returncode, done.stdout or "", done.stderr)


def damage(path: Path, hostile: str) -> None:
    """Turn the input file `path` into the class `hostile` of bad input."""
    if hostile == "missing":
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    elif hostile == "empty":
        path.write_bytes(b"")
    elif hostile == "damaged":
        raw = path.read_bytes()
        path.write_bytes(raw[: max(1, len(raw) // 2)])
    elif hostile == "foreign":
        path.write_text(json.dumps(FOREIGN), encoding="utf-8")
    elif hostile == "wrong-kind":
        if path.is_dir():
            shutil.rmtree(path)
            path.write_text("not a folder\n", encoding="utf-8")
        else:
            path.unlink()
            path.mkdir()
            (path / "data.json").write_text("{}", encoding="utf-8")
    else:
        raise ValueError(hostile)


def damage_model(path: Path) -> None:
    """A model folder a copy cut short: config.json truncated, the weights empty."""
    if path.exists():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    path.mkdir(parents=True)
    (path / "config.json").write_text('{"model_type": "bert", "hidden_si', encoding="utf-8")
    (path / "model.safetensors").write_bytes(b"")


def stderr_lines(err: str) -> list[str]:
    """What a user sees on stderr, line by line (a progress bar's redraws each count)."""
    return [line for line in err.replace("\r", "\n").splitlines() if line.strip()]


def check_refused(outcome: Outcome, names: str | tuple[str, ...] | None, strict: bool, status: int = 2,
                  starts: str = "error:") -> None:
    """The contract of a refusal: exit `status`, the line (`starts`, naming `names`, or one of them) last on stderr,
    no traceback.
    `strict` (bad input, checked before any work): that line alone, and nothing on stdout; else (an output that
    fails once the work is done) progress bars, notes and warnings may come first, and the figures on stdout."""
    lines = stderr_lines(outcome.err)
    assert "Traceback" not in outcome.err, outcome.err[-3000:]
    assert outcome.status == status, f"exit {outcome.status}, not {status}; stderr: {outcome.err[-1500:]!r}"
    shown = lines if strict else [line for line in lines if line.startswith(("error:", starts))]
    assert len(shown) == 1 and shown[0].startswith(starts) and lines[-1] == shown[0], \
        f"not one `{starts}` line{'' if strict else ', last'}: {outcome.err[-1500:]!r}"
    if names is not None:
        assert any(name in shown[0] for name in ((names,) if isinstance(names, str) else names)), \
            f"the line does not name {names!r}: {shown[0]!r}"
    if strict:
        assert outcome.out == "", f"printed on stdout though it refused: {outcome.out[:500]!r}"


# ---------------------------------------------------------------- the sandbox's files

def _qas() -> list[dict]:
    return SPAN_DATA["data"][0]["paragraphs"][0]["qas"]


def _write_json(obj: Any):
    def write(path: Path) -> None:
        path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return write


def _training(data: dict, version: str) -> dict:
    doc = json.loads(json.dumps(data))
    doc["version"] = version
    return doc


def _runs(path: Path) -> None:
    run = path / "a"
    run.mkdir(parents=True)
    (run / "run_info.json").write_text(json.dumps({
        "task": "span", "predict_file": "../../dev.json", "loss_lambda": 0.1, "rand_seed": 1, "model": "m",
        "status": "finished", "flags": {}}), encoding="utf-8")
    _write_json(PREDS)(run / "dev_predictions.json")


def _release(path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("expmrc/squad/expmrc-squad-dev.json", json.dumps(SPAN_DATA))


def _data(path: Path) -> None:
    (path / "squad").mkdir(parents=True)
    _write_json(SPAN_DATA)(path / "squad" / "expmrc-squad-dev.json")
    _write_json(_training(SPAN_DATA, "expmrc-squad-train"))(path / "train-pseudo-squad.json")
    _write_json(SPAN_DATA)(path / "expmrc-squad-dev.json")


def _copy(source: Path):
    return lambda path: shutil.copytree(source, path)


_BERT: list[Path] = []  # the tiny BERT, made once (torch) and copied into each sandbox that names it


def _tiny_bert(path: Path) -> None:
    if not _BERT:
        import tempfile

        from helpers.tiny_bert import make_tiny_bert_folder

        _BERT.append(make_tiny_bert_folder(Path(tempfile.mkdtemp(prefix="contract-bert-")) / "bert"))
    shutil.copytree(_BERT[0], path)


PREDS = {q["id"]: {"answer": q["answers"][0]["text"], "evidence": q["evidences"][0]} for q in _qas()}
PREDS2 = {q["id"]: {"answer": q["answers"][0]["text"], "evidence": SPAN_DATA["data"][0]["paragraphs"][0]["context"]}
          for q in _qas()}
STEPS = {"runs": [{"subset": "squad", "shape": "base", "task": "span", "step_ms": 120.0, "windows": 1000,
                   "batch": 32}]}

# placeholder -> (path in the sandbox, how it is made; None: a name nothing exists at yet, an output)
FILES: dict[str, tuple[str, Any]] = {
    "dev": ("in/dev.json", _write_json(SPAN_DATA)),
    "preds": ("in/preds.json", _write_json(PREDS)),
    "preds2": ("in/preds2.json", _write_json(PREDS2)),
    "train": ("in/train.json", _write_json(_training(SPAN_DATA, "expmrc-squad-train"))),
    "cdev": ("in/cdev.json", _write_json(CHOICE_DATA)),
    "ctrain": ("in/ctrain.json", _write_json(_training(CHOICE_DATA, "expmrc-c3-train"))),
    "release": ("in/release.zip", _release),
    "runs": ("in/runs", _runs),
    "data": ("in/data", _data),
    "tf": ("in/tf", _copy(FIXTURES / "tiny_tf_bert")),
    "bert": ("in/bert", _tiny_bert),
    "finetuned": ("in/finetuned", lambda path: path.mkdir()),
    "chat": ("in/chat", lambda path: path.mkdir()),
    "nli": ("in/nli", lambda path: path.mkdir()),
    "script": ("in/run.sh", lambda path: path.write_text("#!/usr/bin/env bash\necho launched\n", encoding="utf-8")),
    "steps": ("in/steps.json", _write_json(STEPS)),
    "out": ("out.json", None),
    "details": ("details.jsonl", None),
    "outdir": ("outdir", None),
    "cache": ("cache.sqlite", None),
}


def placeholders(*templates: str) -> set[str]:
    """The `{name}`s the templates use."""
    import string

    return {name for template in templates for _, name, _, _ in string.Formatter().parse(template) if name}


def make_sandbox(root: Path, names: set[str], server: str | None) -> Sandbox:
    """The sandbox with the files of the placeholders `names` made (the server's URL as `{server}`)."""
    sandbox = Sandbox(root)
    (root / "in").mkdir(parents=True, exist_ok=True)
    for name in names:
        if name == "server":
            sandbox.paths[name] = server or "http://127.0.0.1:9/v1"
            continue
        relative, make = FILES[name]
        path = root / relative
        if make is not None:
            make(path)
        sandbox.paths[name] = str(path)
    return sandbox
