"""`expmrc judge`: does each question's evidence support its answer? A local NLI model or any chat model judges,
with a check of the judge on the same questions every run. The judge flags are shared with evaluate, compare and
llm (as --judge-NAME there)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from expmrc.cli.args import add_resampling_arguments, integer_in, listing, number_in
from expmrc.data import subsets
from expmrc.llm.backends import BACKENDS
from expmrc.llm.config import LLMConfig
from expmrc.llm.judges import JUDGES, JudgeConfig
from expmrc.scoring.support import CHECK_GAP, LABELS, STATEMENTS

_DESCRIPTION = """\
Ask, for each question of a submission, whether its evidence supports its answer: the premise is the
evidence, the hypothesis the question with the answer (for multiple choice, the chosen option's text)
phrased as a statement by a versioned template in the dataset's language. Labels:
  {labels}
(no-evidence: empty or left out; no-answer: an empty answer, or a letter naming no option; unjudged: a
chat reply without a verdict, counted as not supported). The support rate is the share supported over
all questions, with a bootstrap interval over questions (--ci-resamples, --seed, --confidence), by
question type and by the evidence's grounding status (`expmrc ground`'s: is it passage text?).

Judges (--judge):
{judges}
An NLI judge labels a pair by its most probable class (entailment: supported; contradiction:
contradicted; neutral or not-entailment: not-supported) and keeps P(entailment). A chat judge is asked
through `expmrc llm`'s backends (--backend: an OpenAI-compatible endpoint at --base-url, the key read
from the variable --api-key-env names; or a local chat model), greedy, each reply cached as it arrives
(a rerun or a run resumed after Ctrl-C pays for no reply twice); its reply is kept.

The check of the judge runs every time: on the same questions it also judges the gold evidence with the
gold answer (which should be supported) and another passage sentence, apart from the gold evidence, with
the gold answer (which should mostly not be; drawn by --seed and the question id). Both rates are printed, with one warning line when the
judge does not separate them by {gap:g} points: its labels cannot then be trusted on this data.

--details writes one JSON line per question (its label, the evidence and statement judged, P(entailment)
or the reply, the evidence's grounding status, and the check's labels of that question); --output writes
every figure, the signature and the run record (the judge, its weights' fingerprint or server, the
templates' hashes, versions) as JSON, e.g. into a training run's folder for `expmrc collect`.
docs/coupling.md explains, and compares support with LOCA, FARM and comprehensiveness.

statement templates (--statement; default: the newest for the dataset's language):
{statements}

examples:
  expmrc judge squad sample_submission/squad.json --judge nli --judge-model MoritzLaurer/mDeBERTa-v3-base-xnli-multilingual-nli-2mil7
  expmrc judge c3 runs/c3-gpt/grounded.json --judge chat --judge-model qwen2.5:7b --base-url http://localhost:11434/v1 --details c3-support.jsonl
  expmrc judge race runs/race-base/dev_predictions.json --judge nli --judge-model models/nli --output runs/race-base/support.json
"""

DESCRIPTION = _DESCRIPTION.format(
    labels=", ".join(LABELS), judges=listing([(n, k.summary) for n, k in JUDGES.items()]), gap=CHECK_GAP,
    statements=listing([(n, f"{t.language}: {t.text} (a cloze question gets the answer in its blank)")
                        for n, t in STATEMENTS.items()]))

# name -> (argparse options, help, also offered by evaluate, compare and llm as --judge-NAME)
FLAGS: dict[str, tuple[dict[str, Any], str, bool]] = {
    "statement": ({"choices": STATEMENTS.names(), "metavar": "NAME"}, "a statement template (see above)", True),
    "backend": ({"choices": BACKENDS.names(), "default": LLMConfig.backend},
                "the chat judge's backend: " + "; ".join(f"{n}: {k.summary}" for n, k in BACKENDS.items())
                + " (default %(default)s)", True),
    "base-url": ({"default": LLMConfig.base_url}, "the chat judge's endpoint, up to /v1 (default %(default)s)", True),
    "api-key-env": ({"default": LLMConfig.api_key_env, "metavar": "VAR"},
                    "environment variable holding the chat judge's API key (default %(default)s)", True),
    "device": ({"default": LLMConfig.device}, "where a local judge runs (default %(default)s: cuda if there is one)",
               True),
    "batch-size": ({"type": integer_in(1, 4096), "default": JudgeConfig.batch_size},
                   "pairs per forward pass of a local judge (default %(default)s)", True),
    "concurrency": ({"type": integer_in(1, 1024), "default": LLMConfig.concurrency},
                    "the chat judge's requests in flight at once (default %(default)s)", True),
    "retries": ({"type": integer_in(0, 20), "default": LLMConfig.retries},
                "the chat judge's retries on 429, 5xx, timeouts and refused connections (default %(default)s)", False),
    "backoff": ({"type": number_in(0.0, 600.0), "default": LLMConfig.backoff, "metavar": "SECONDS"},
                "first retry's wait, doubled for each further retry (default %(default)g)", False),
    "timeout": ({"type": number_in(1.0, 86400.0), "default": LLMConfig.timeout},
                "seconds per chat request (default %(default)g)", False),
    "max-tokens": ({"type": integer_in(1, 131072), "default": LLMConfig.max_tokens},
                   "the chat judge's reply length limit (default %(default)s)", False),
    "cache": ({"metavar": "FILE"}, "the chat judge's response cache (default: `expmrc llm`'s)", True),
    "no-cache": ({"action": "store_true"}, "neither read nor write the chat judge's response cache", True),
}


def add_judge_arguments(parser: argparse.ArgumentParser, own: bool = False) -> None:
    """--judge and --judge-model, and the judge's settings: under their own names in `expmrc judge` (`own`), as
    --judge-NAME (the commonest ones) elsewhere; every value lands in `judge_NAME`."""
    group = parser.add_argument_group("support judge" + ("" if own else " (see `expmrc judge --help`)"))
    group.add_argument("--judge", choices=JUDGES.names(), required=own,
                       help="; ".join(f"{n}: {k.summary}" for n, k in JUDGES.items()) if not own else
                       "nli or chat (see above)")
    group.add_argument("--judge-model", metavar="NAME", help="an NLI model's folder or Hub id, or a chat model's name")
    for name, (options, text, shared) in FLAGS.items():
        if own or shared:
            if "choices" not in options and options.get("action") != "store_true":
                options = {"metavar": name.upper().replace("-", "_"), **options}
            group.add_argument(f"--{name}" if own else f"--judge-{name}", dest="judge_" + name.replace("-", "_"),
                               help=text if own else text.replace("(see above)", "(`expmrc judge --help`)"), **options)


def judge_config(args: argparse.Namespace) -> JudgeConfig:
    """The judge the flags name; --judge without --judge-model is one line."""
    from expmrc.errors import ExpmrcError

    if not args.judge_model:
        raise ExpmrcError(f"--judge {args.judge} needs --judge-model (an NLI model's folder or Hub id, or a chat "
                          "model's name)")
    values = {name: getattr(args, "judge_" + name) for name in JudgeConfig.__dataclass_fields__
              if hasattr(args, "judge_" + name)}
    return JudgeConfig(judge=args.judge, model=args.judge_model, quiet=getattr(args, "quiet", False),
                       **{k: v for k, v in values.items() if k not in ("judge", "model")})


def stopped(status: int, cached: int, total: int, config: JudgeConfig) -> int:
    """Print the line of a chat judge stopped by Ctrl-C or SIGTERM, and return its exit status."""
    from expmrc.llm.cache import cache_path

    word = "interrupted" if status == 130 else "terminated"
    where = cache_path(config.llm())
    kept = f"{cached} of {total} judge replies are cached in {where}" if where else "no reply was kept (no cache)"
    print(f"{word}: {kept}; the same command resumes", file=sys.stderr)
    return status


def judge_each(config: JudgeConfig, settings: Any, items: list[tuple[Any, str]]) -> list[Any]:
    """The `Support` of each (dataset, predictions path), judged by one judge loaded once, the submissions of one
    dataset object together (each distinct pair once, one check); a chat judge stopped by Ctrl-C raises
    expmrc.llm.fetch.Interrupted."""
    from expmrc.data.submissions import load_submission
    from expmrc.llm.judges import judge_submissions, make_judge
    from expmrc.scoring.support import choose_statement

    groups: dict[int, list[int]] = {}
    for k, (dataset, _) in enumerate(items):
        choose_statement(config.statement, dataset.language)
        groups.setdefault(id(dataset), []).append(k)
    judge = make_judge(config)
    found: dict[int, Any] = {}
    for ks in groups.values():
        dataset = items[ks[0]][0]
        given = [(items[k][1], load_submission(items[k][1]), None) for k in ks]
        found.update(zip(ks, judge_submissions(dataset, given, judge, config.statement, settings)))
    return [found[k] for k in range(len(items))]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", metavar="SUBSET", help=f"{', '.join(subsets.names())} (the dev set) or a dataset file")
    parser.add_argument("predictions", metavar="PREDICTIONS", help="a submission (answer and evidence per question)")
    parser.add_argument("--subset", choices=subsets.names(), help="the subset, when the dataset's `version` does not say")
    add_judge_arguments(parser, own=True)
    parser.add_argument("--details", metavar="FILE.jsonl", help="write one JSON line per question (see above)")
    parser.add_argument("--output", metavar="FILE.json", help="write the figures, signature and run record as JSON")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object instead of lines")
    add_resampling_arguments(parser, "how many resamples of the questions for the interval")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from expmrc.data.datasets import load_dataset
    from expmrc.data.io import check_output_path, write_json_atomic, write_text_atomic
    from expmrc.data.submissions import load_submission
    from expmrc.errors import warn
    from expmrc.llm.fetch import Interrupted
    from expmrc.llm.judges import judge_record, judge_submissions, make_judge
    from expmrc.scoring.stats import Resampling
    from expmrc.scoring.support import choose_statement, file_sha256
    from expmrc.text.grounding import check_subset

    started = time.time()
    config = judge_config(args)
    settings = Resampling(args.ci_resamples, args.seed, args.confidence)
    dataset = load_dataset(args.dataset, args.subset)
    submission = load_submission(args.predictions)
    check_subset(dataset, submission, args.predictions)
    choose_statement(config.statement, dataset.language)
    for output in (args.details, args.output):
        if output:
            check_output_path(output, "file", inputs=[dataset.path, args.predictions])
    judge = make_judge(config)
    try:
        [support] = judge_submissions(dataset, [(args.predictions, submission, None)], judge, config.statement, settings)
    except Interrupted as stop:
        return stopped(stop.status, stop.cached, stop.total, config)
    record = judge_record(judge, [support], started, getattr(args, "command_line", None))
    summary = {**support.summary(), "predictions_sha256": file_sha256(args.predictions)}
    if args.details:
        write_text_atomic(args.details, "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in support.details()))
    if args.output:
        write_json_atomic(args.output, {"support": summary, "record": record.as_json()}, indent=1)
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=1))
    else:
        print("\n".join(support.lines() + [f"signature: {support.signature}"]))
    if (line := support.check.warning()) is not None:
        warn(line)
    return 0
