"""`expmrc evaluate`: the leaderboard's numbers for several submissions in one process, with details."""

from __future__ import annotations

import argparse
import json
import sys

from expmrc.cli.args import add_resampling_arguments
from expmrc.cli.judge_flags import add_judge_arguments
from expmrc.data import subsets
from expmrc.data.datasets import Dataset, load_dataset
from expmrc.data.io import check_output_path, write_text_atomic
from expmrc.errors import ExpmrcError, warn
from expmrc.metrics.registry import METRICS, select
from expmrc.scoring.scorer import Report, coverage_warnings, no_match_problem, score_files, signature
from expmrc.scoring.stats import Resampling, intervals
from expmrc.scoring.support import Support

_HELP = """\
Score one or more submissions with the leaderboard's metric (the same numbers as eval_expmrc.py),
plus answer exact match, a breakdown by question type, per-question details and a signature that
says exactly how the numbers were computed.

Question types: English questions take their first wh-word (what, which, who/whom/whose, when,
where, why, how, and "how many/much" apart); Chinese questions take the interrogative that starts
earliest (什么时候/何时 -> when, 哪里/哪儿 -> where, 为什么/为何 -> why, 怎么/如何 -> how,
多少/几 -> how many/much, 谁 -> who, 哪 -> which, 什么 -> what); anything else is "other".

Answer exact match (ANS_EM): span subsets, 1 when the normalized tokens of the answer equal those
of a gold answer; multiple choice, the accuracy itself.

Figures beside the leaderboard's (--metrics; by default those of each dataset's subset):
{metrics}

A span dataset without any gold `evidences`, such as the original CMRC 2018 development set
(pass --subset cmrc2018, its `version` is "v1.0"), gets the answer figures only: evidence and
overall are absent ("n/a" here, null with --json), never 0.

--ci adds a confidence interval to every figure: a bootstrap over the questions of the dev set
(--ci-resamples resamples of its questions, drawn with replacement from --seed, so the same command
gives the same interval); the text, --json ("CI" in each result) and the signature say how it was
drawn. To tell whether two submissions differ, use `expmrc compare` (a paired test). See
docs/scoring.md, "Confidence intervals and significance".

--judge nli|chat --judge-model NAME adds the support rate beside the scores: whether each question's
evidence supports its answer, judged by an NLI or a chat model, with the check of the judge (as
`expmrc judge` gives it; --details then holds each question's label). See docs/coupling.md.

examples:
  expmrc evaluate squad sub/squad.json --ci
  expmrc evaluate data/squad/expmrc-squad-dev.json sample_submission/squad.json
  expmrc evaluate squad sub/squad.json race sub/race.json --json --details details.jsonl
  expmrc evaluate cmrc2018_dev.json preds.json --subset cmrc2018 --metrics cmrc2018
"""


DESCRIPTION = _HELP.format(metrics="\n".join(
    f"  {m.name:<12} {m.summary} (default for {', '.join(subsets.metric_defaults(m.name)) or 'none'})"
    for name, m in METRICS.items() if name != "expmrc") or "  (none registered yet)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pairs", nargs="+", metavar="DATASET PREDICTIONS",
                        help="dataset file (or subset name) followed by its prediction file; repeat for more")
    parser.add_argument("--subset", choices=subsets.names(),
                        help="the subset of every dataset given, when their `version` does not say")
    parser.add_argument("--details", metavar="FILE.jsonl",
                        help="write one JSON line per question: id, type, scores, the question, the predicted "
                             "answer and evidence, and the best-matching gold answer and evidence")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument("--metrics", type=str, metavar="NAME[,NAME]",  # type=str: `--metrics ""` means none
                        help="figures to add beside the leaderboard's (names above; default: each subset's own)")
    parser.add_argument("--ci", action="store_true",
                        help="add a confidence interval to every figure, from a bootstrap over questions")
    add_resampling_arguments(parser, "with --ci: how many resamples of the questions")
    add_judge_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from expmrc.llm.fetch import Interrupted
    from expmrc.llm.judges import JudgeConfig, judge_each, stopped_line

    if len(args.pairs) % 2:
        raise ExpmrcError(f"expected DATASET PREDICTIONS pairs, got {len(args.pairs)} paths (an odd number)")
    if args.details:
        check_output_path(args.details, "file", inputs=args.pairs)
    config = JudgeConfig.from_flags(vars(args))
    reports, datasets = _score_pairs(args)
    settings = _resampling(args)
    supports: list[Support | None] = [None] * len(reports)
    if config is not None:
        try:
            supports = list(judge_each(config, settings or Resampling(), [(d, r.prediction_path)
                                                                          for d, r in zip(datasets, reports)]))
        except Interrupted as stop:
            print(stopped_line(stop.status, stop.cached, stop.total, config), file=sys.stderr)
            return stop.status
    ci = [intervals(r, settings) for r in reports] if settings else [{} for _ in reports]
    sig = signature(reports, settings.describe()) if settings else signature(reports)
    if args.details:
        _write_details(args.details, reports, supports)
    if args.json:
        results = [{**r.summary(), **({"CI": _rounded(c)} if settings else {}),
                    **({"support": s.summary()} if s is not None else {})} for r, c, s in zip(reports, ci, supports)]
        extra = {"ci": settings.as_dict()} if settings else {}
        print(json.dumps({"results": results, **extra, "signature": sig}, ensure_ascii=False, indent=1))
        return 0
    _print_text(reports, ci, settings, supports, sig)
    return 0


def _score_pairs(args: argparse.Namespace) -> tuple[list[Report], list[Dataset]]:
    """Each DATASET PREDICTIONS pair loaded and scored, its coverage warnings printed; one that matches no
    question is refused."""
    reports, datasets = [], []
    for dataset_arg, prediction_path in zip(args.pairs[::2], args.pairs[1::2]):
        dataset = load_dataset(dataset_arg, args.subset)
        report = score_files(dataset, prediction_path, select(args.metrics, dataset), answers_only=True)
        if problem := no_match_problem(report):
            raise ExpmrcError(problem)
        for line in coverage_warnings(report):
            print(line, file=sys.stderr)
        reports.append(report)
        datasets.append(dataset)
    return reports, datasets


def _write_details(path: str, reports: list[Report], supports: list[Support | None]) -> None:
    """--details: one JSON line per question of every submission, with its support label when judged."""
    lines = []
    for report, support in zip(reports, supports):
        labels = [None] * report.total if support is None else support.details()
        for record, label in zip(report.details(), labels):
            extra = {} if label is None else {"support": {k: label[k] for k in ("label", "probability", "reply",
                                                                               "note")}}
            lines.append(json.dumps({"subset": report.subset, "predictions": report.prediction_path, **record,
                                     **extra}, ensure_ascii=False))
    write_text_atomic(path, "\n".join(lines) + "\n")


def _print_text(reports: list[Report], ci: list[dict], settings: Resampling | None, supports: list[Support | None],
                sig: str) -> None:
    """The tables: the leaderboard's figures, their intervals, the added figures and notes, support, and the
    figures by question type, then the signatures."""
    print(_table(["subset", "predictions", "ANS_F1", "ANS_EM", "EVI_F1", "ALL_F1", "TOTAL", "SKIP"], 2,
                 [[r.subset, r.prediction_path, *(_figure(r.mean(k)) for k in ("answer", "exact", "evidence", "overall")),
                   str(r.total), str(r.skipped)] for r in reports]))
    if settings:
        _print_intervals(reports, ci, settings)
    for r in reports:
        if not r.has_evidence:
            print(f"\nnote: {r.dataset_path} has no gold evidences: EVI_F1 and ALL_F1 are absent (n/a)")
    for r, c in zip(reports, ci):
        figures = r.extra_figures()
        if figures:
            print(f"\n{r.subset} ({r.prediction_path}): " + ", ".join(f"{k} {_figure(v)}{_span(c.get(k))}"
                                                                     for k, v in figures.items()))
        for note in r.notes():
            print(f"note: {note}")
    _print_support(supports)
    for r in reports:
        print(f"\n{r.subset} ({r.prediction_path}) by question type:")
        print(_table(["type", "count", "ANS_F1", "ANS_EM", "EVI_F1", "ALL_F1"], 1,
                     [[name, str(v["count"]), *(_figure(v[k]) for k in ("ANS_F1", "ANS_EM", "EVI_F1", "ALL_F1"))]
                      for name, v in r.by_type().items()]))
    print(f"\nsignature: {sig}")
    for line in dict.fromkeys(s.signature for s in supports if s is not None):
        print(f"support signature: {line}")


def _print_support(supports: list[Support | None]) -> None:
    """Each judged submission's support lines and the check's warning."""
    for support in supports:
        if support is not None:
            print("\n" + "\n".join(support.lines()))
            if (line := support.check.warning()) is not None:
                warn(line)


def _resampling(args: argparse.Namespace) -> Resampling | None:
    """The resampling behind --ci, or None without it (where its flags would do nothing, they are refused)."""
    if args.ci:
        return Resampling(args.ci_resamples, args.seed, args.confidence)
    defaults = Resampling()
    given = [flag for flag, value, default in (("--ci-resamples", args.ci_resamples, defaults.resamples),
                                               ("--seed", args.seed, defaults.seed),
                                               ("--confidence", args.confidence, defaults.confidence))
             if value != default]
    if given:
        raise ExpmrcError(f"{given[0]} sets how intervals are drawn; add --ci to get them")
    return None


def _print_intervals(reports: list[Report], ci: list[dict], settings: Resampling) -> None:
    print(f"\n{settings.confidence * 100:g}% confidence intervals: bootstrap over questions, {settings.resamples} "
          f"resamples, seed {settings.seed}")
    print(_table(["subset", "predictions", "ANS_F1", "ANS_EM", "EVI_F1", "ALL_F1"], 2,
                 [[r.subset, r.prediction_path, *(_interval(c.get(k)) for k in ("ANS_F1", "ANS_EM", "EVI_F1", "ALL_F1"))]
                  for r, c in zip(reports, ci)]))


def _rounded(ci: dict) -> dict:
    return {key: None if span is None else [round(span[0], 3), round(span[1], 3)] for key, span in ci.items()}


def _interval(span) -> str:
    return "n/a" if span is None else f"[{span[0]:.3f}, {span[1]:.3f}]"


def _span(span) -> str:
    return "" if span is None else f" {_interval(span)}"


def _figure(value) -> str:
    return f"{value:.3f}" if isinstance(value, float) else "n/a" if value is None else str(value)


def _table(header: list[str], text_columns: int, rows: list[list[str]]) -> str:
    """Plain aligned columns: the first `text_columns` left-aligned, figures right-aligned."""
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < text_columns else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(header)] + [line(r) for r in rows])
