"""The `expmrc` command: one subcommand per pipeline stage, each a thin shell over the package.

Subcommand modules are imported only when chosen, so `expmrc evaluate` never pays for torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from expmrc import __version__
from expmrc.errors import ExpmrcError

# name -> (module, one-line help). Each module defines add_arguments(parser) and run(args) -> int.
COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("expmrc.cli.evaluate", "score one or more submissions, with breakdowns and a signature"),
    "human": ("expmrc.cli.human", "estimate human performance by cross-validation over the references"),
    "download": ("expmrc.cli.download", "fetch or import the four ExpMRC dev sets, checksum-verified"),
    "evidence": ("expmrc.cli.evidence", "pick evidence with an unsupervised method and write a submission"),
    "pseudo": ("expmrc.cli.pseudo", "label a training set with pseudo evidence for the baselines"),
    "convert-checkpoint": ("expmrc.cli.convert_checkpoint", "turn a TensorFlow BERT release into a Hugging Face folder"),
    "collect": ("expmrc.cli.collect", "score many training runs into a Table-3-style table and a lambda figure"),
    "report": ("expmrc.cli.report", "write a self-contained HTML page showing a submission, or comparing two"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="expmrc",
        description="Score, reproduce and improve explainable machine reading comprehension (ExpMRC).",
    )
    parser.add_argument("--version", action="version", version=f"expmrc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point: dispatch to a subcommand; any ExpmrcError becomes one line on stderr and exit 2."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in COMMANDS:
        parser = build_parser()
        if not argv:
            parser.print_help()
            return 2
        parser.parse_args(argv)  # prints --help/--version, or a one-line usage error
        return 2
    name = argv[0]
    module_name, help_text = COMMANDS[name]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"expmrc {name}", description=getattr(module, "DESCRIPTION", help_text),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(parser)
    args = parser.parse_args(argv[1:])
    return run_guarded(module.run, args)


def run_guarded(func, args) -> int:
    """Run a command body, printing an ExpmrcError as `error: ...` and returning 2."""
    try:
        return int(func(args) or 0)
    except ExpmrcError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

