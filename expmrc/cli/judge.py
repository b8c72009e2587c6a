"""`expmrc judge`: does each question's evidence support its answer? A local NLI model or any chat model judges,
with a check of the judge on the same questions every run. The judge flags are shared with evaluate, compare and
llm (as --judge-NAME there: expmrc/cli/judge_flags.py); the judging itself is expmrc/llm/judges.py's."""

from __future__ import annotations

import argparse
import json
import sys
import time

from expmrc.cli.args import add_resampling_arguments, listing
from expmrc.cli.judge_flags import add_judge_arguments
from expmrc.data import subsets
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
    from expmrc.data.io import check_distinct_outputs, check_output_path, json_text, write_texts_atomic
    from expmrc.data.submissions import load_submission
    from expmrc.errors import warn
    from expmrc.llm.fetch import Interrupted
    from expmrc.llm.judges import judge_submission, stopped_line
    from expmrc.scoring.stats import Resampling
    from expmrc.scoring.support import choose_statement
    from expmrc.text.grounding import check_subset

    started = time.time()
    config = JudgeConfig.from_flags(vars(args))
    assert config is not None  # --judge is required here
    settings = Resampling(args.ci_resamples, args.seed, args.confidence)
    dataset = load_dataset(args.dataset, args.subset)
    submission = load_submission(args.predictions)
    check_subset(dataset, submission, args.predictions)
    choose_statement(config.statement, dataset.language)
    for output in (args.details, args.output):
        if output:
            check_output_path(output, "file", inputs=[dataset.path, args.predictions])
    check_distinct_outputs({"--details": args.details, "--output": args.output})
    try:
        support, record = judge_submission(config, dataset, args.predictions, submission, settings, started,
                                           getattr(args, "command_line", None))
    except Interrupted as stop:
        print(stopped_line(stop.status, stop.cached, stop.total, config), file=sys.stderr)
        return stop.status
    summary = support.summary()
    outputs = []  # all or none: a full device under one leaves the other as it was
    if args.details:
        outputs.append((args.details, "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in support.details())))
    if args.output:
        outputs.append((args.output, json_text(args.output, {"support": summary, "record": record.as_json()}, indent=1)))
    write_texts_atomic(outputs)
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=1))
    else:
        print("\n".join(support.lines() + [f"signature: {support.signature}"]))
    if (line := support.check.warning()) is not None:
        warn(line)
    return 0
