"""The support judge's flags, shared by `expmrc judge` (under their own names) and `evaluate`, `compare` and `llm`
(as --judge-NAME): a flag helper like expmrc/cli/args.py, no command of its own. Their defaults are
`JudgeConfig`'s, and `JudgeConfig.from_flags` reads them back (expmrc/llm/judges.py)."""

from __future__ import annotations

import argparse
from typing import Any

from expmrc.cli.args import integer_in, number_in
from expmrc.llm.backends import BACKENDS
from expmrc.llm.judges import JUDGES, JudgeConfig
from expmrc.scoring.support import STATEMENTS

# name -> (argparse options, help, also offered by evaluate, compare and llm as --judge-NAME); each default is the
# `JudgeConfig` field's of that name
FLAGS: dict[str, tuple[dict[str, Any], str, bool]] = {
    "statement": ({"choices": STATEMENTS.names(), "metavar": "NAME"}, "a statement template (see above)", True),
    "backend": ({"choices": BACKENDS.names()},
                "the chat judge's backend: " + "; ".join(f"{n}: {k.summary}" for n, k in BACKENDS.items())
                + " (default %(default)s)", True),
    "base-url": ({}, "the chat judge's endpoint, up to /v1 (default %(default)s)", True),
    "api-key-env": ({"metavar": "VAR"}, "environment variable holding the chat judge's API key (default %(default)s)",
                    True),
    "device": ({}, "where a local judge runs (default %(default)s: cuda if there is one)", True),
    "batch-size": ({"type": integer_in(1, 4096)}, "pairs per forward pass of a local judge (default %(default)s)", True),
    "concurrency": ({"type": integer_in(1, 1024)},
                    "the chat judge's requests in flight at once (default %(default)s)", True),
    "retries": ({"type": integer_in(0, 20)},
                "the chat judge's retries on 429, 5xx, timeouts and refused connections (default %(default)s)", False),
    "backoff": ({"type": number_in(0.0, 600.0), "metavar": "SECONDS"},
                "first retry's wait, doubled for each further retry (default %(default)g)", False),
    "timeout": ({"type": number_in(1.0, 86400.0)}, "seconds per chat request (default %(default)g)", False),
    "max-tokens": ({"type": integer_in(1, 131072)},
                   "the chat judge's reply length limit (default %(default)s)", False),
    "cache": ({"metavar": "FILE"}, "the chat judge's response cache (default: `expmrc llm`'s)", True),
    "no-cache": ({"action": "store_true"}, "neither read nor write the chat judge's response cache", True),
}


def add_judge_arguments(parser: argparse.ArgumentParser, own: bool = False, without: tuple[str, ...] = ()) -> None:
    """--judge and --judge-model, and the judge's settings: under their own names in `expmrc judge` (`own`), as
    --judge-NAME (the commonest ones, less those named in `without`) elsewhere; every value lands in `judge_NAME`."""
    defaults = JudgeConfig(judge="", model="")
    group = parser.add_argument_group("support judge" + ("" if own else " (see `expmrc judge --help`)"))
    group.add_argument("--judge", choices=JUDGES.names(), required=own,
                       help="; ".join(f"{n}: {k.summary}" for n, k in JUDGES.items()) if not own else
                       "nli or chat (see above)")
    group.add_argument("--judge-model", metavar="NAME", help="an NLI model's folder or Hub id, or a chat model's name")
    for name, (options, text, shared) in FLAGS.items():
        if (own or shared) and name not in without:
            field = name.replace("-", "_")
            if "choices" not in options and options.get("action") != "store_true":
                options = {"metavar": name.upper().replace("-", "_"), **options}
            group.add_argument(f"--{name}" if own else f"--judge-{name}", dest="judge_" + field,
                               default=getattr(defaults, field),
                               help=text if own else text.replace("(see above)", "(`expmrc judge --help`)"), **options)
