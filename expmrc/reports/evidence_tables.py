"""Evidence reports on the dev sets: the paper's Table 4 beside ours, and the held-out protocol table.

    python -m expmrc.reports.evidence_tables table4    # what scripts/reproduce_table4.sh prints
    python -m expmrc.reports.evidence_tables heldout   # every method on the first and second half of each dev set

All figures are evidence F1 (× 100) with the gold answers, scored by `expmrc.scoring.scorer`.
"""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from expmrc.data import subsets
from expmrc.data.datasets import Dataset, Question, load_dataset
from expmrc.errors import ExpmrcError, OneLineParser
from expmrc.evidence.extract import BEST, METHODS, build_method, extract, split_halves
from expmrc.scoring.scorer import score

# The ExpMRC paper's Table 4 columns: the method behind each, and the paper's name for it; the cells are in the
# subset table (`Subset.paper_table4`, in this order).
TABLE4_METHODS = {"gold-answer-sentence": "Ground Truth Answer Sent.",
                  "gold-evidence-sentence": "Ground Truth Evidence Sent."}


def evidence_f1(dataset: Dataset, method: str, questions: list[Question] | None = None,
                rule: str | None = None, progress: bool = False) -> float:
    """Evidence F1 of `method` with the gold answers on `questions` (default: all) of `dataset`; `progress`
    shows the extraction's own bars (the dense embeddings of idf-window take minutes)."""
    extraction = extract(dataset, build_method(method, dataset, rule), None, questions, progress=progress)
    report = score(dataset, extraction.submission())
    value = report.mean("evidence", [q for q in report.questions if q.answered])
    if value is None:  # score() refuses a dataset without gold evidence first
        raise ExpmrcError(f"{dataset.path}: no gold evidence to score {method} against")
    return value


def table4(datasets: dict[str, Dataset], progress: bool = True) -> str:
    """Markdown: per dev set, the paper's two Table 4 cells beside ours and the difference (a progress
    bar on stderr); a subset the paper has no row for gets ours alone, and a note says so."""
    header = " | ".join(f"{column}: paper | ours | Δ" for column in TABLE4_METHODS.values())
    lines = [f"| dev set | {header} |", "| --- |" + " ---: | ---: | ---: |" * len(TABLE4_METHODS)]
    bar = tqdm(total=len(datasets) * len(TABLE4_METHODS), desc="table4", unit="run", disable=not progress)
    absent = []
    for name, dataset in datasets.items():
        subset = subsets.subset(name)
        cells = []
        for i, method in enumerate(TABLE4_METHODS):
            bar.set_postfix_str(f"{name} {method}")
            ours = evidence_f1(dataset, method, progress=progress)
            bar.update()
            paper = subset.paper_table4[i] if subset.paper_table4 else None
            cells.append(f"— | {ours:.2f} | —" if paper is None else f"{paper:.1f} | {ours:.2f} | {ours - paper:+.2f}")
        if subset.paper_table4 is None:
            absent.append(subset.display)
        lines.append(f"| {subset.display} | " + " | ".join(cells) + " |")
    methods = ", ".join(f"`{m}`" for m in TABLE4_METHODS)
    bar.close()
    lines.append(f"\nEvidence F1 with the gold answers, full dev sets; ours: {methods}.")
    if absent:
        lines.append(f"Not in the paper (ours alone): {', '.join(absent)}.")
    return "\n".join(lines)


def heldout(datasets: dict[str, Dataset], progress: bool = True) -> str:
    """Markdown: every method's evidence F1 on the first half (where settings were chosen) and the
    second half (held out) of each dev set (a progress bar on stderr: this takes minutes)."""
    lines = ["| method | " + " | ".join(f"{subsets.subset(s).display} 1st half | 2nd half" for s in datasets) + " |",
             "| --- |" + " --- | --- |" * len(datasets)]
    bar = tqdm(total=len(METHODS) * len(datasets), desc="heldout", unit="run", disable=not progress)
    for method in METHODS:
        cells = []
        for dataset in datasets.values():
            bar.set_postfix_str(f"{dataset.subset} {method}")
            if dataset.kind not in METHODS[method].tasks:
                cells.append("— | —")
            else:
                first, second = split_halves(dataset)
                halves = [evidence_f1(dataset, method, half, progress=progress) for half in (first, second)]
                cells.append(f"{halves[0]:.2f} | {halves[1]:.2f}")
            bar.update()
        name = f"**{method}** (best)" if method == BEST else method
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    bar.close()
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m expmrc.reports.evidence_tables", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", choices=("table4", "heldout"))
    parser.add_argument("--subsets", nargs="+", choices=subsets.names(), default=list(subsets.names()))
    args = parser.parse_args(argv)
    try:
        datasets = {s: load_dataset(s) for s in args.subsets}
    except ExpmrcError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(table4(datasets) if args.report == "table4" else heldout(datasets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
