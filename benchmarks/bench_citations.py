"""What the ids evidence form (`expmrc llm --evidence-form ids`) can reach on the four dev sets, and how fast
citations are read.

    python benchmarks/bench_citations.py [--subsets squad,cmrc2018,race,c3]

Needs $EXPMRC_DATA. The first table, per subset: the questions; the mean and largest number of numbered
sentences a prompt shows (`expmrc.llm.citations.passage_sentences`); the share of questions whose first
gold evidence is found in its passage (verbatim or normalized), and the mean number of sentences it
covers; and the oracle evidence F1: the scorer's EVI_F1 when every question cites exactly the sentences
its first gold evidence covers (the gold answers given) — the ceiling that citing whole sentences allows,
where a verbatim quote of the gold evidence scores 100. The second: CPU seconds to read the citations of
hostile evidence of 50, 100 and 200 thousand characters in three shapes, with the ratio of the largest
to the smallest, measured in the same run (4 means linear, 16 quadratic).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from expmrc.data import subsets  # noqa: E402
from expmrc.data.datasets import SpanQuestion, load_dataset, passage_of, resolve_dataset_path  # noqa: E402
from expmrc.llm.citations import Citation, cited_text, passage_sentences, read_citations, sentence_numbers  # noqa: E402
from expmrc.scoring.scorer import score  # noqa: E402

HOSTILE = {"brackets": lambda n: "".join(f"[{i % 997}]" for i in range(n // 5)),
           "unended 第…句": lambda n: "第1、" * (n // 3),
           "bare list": lambda n: ", ".join(str(i % 9973) for i in range(n // 6))}
SIZES = (50_000, 100_000, 200_000)


def oracle_row(subset: str) -> str:
    """The first table's row of one subset."""
    dataset = load_dataset(subset)
    counts, covered, found, submission = [], [], 0, {}
    for question in dataset.questions:
        passage = passage_of(question)
        sentences = passage_sentences(passage)
        counts.append(len(sentences))
        gold = next((e for e in question.evidences or [] if e.strip()), "")
        numbers = sentence_numbers(passage, gold)
        found += bool(numbers)
        covered += [len(numbers)] if numbers else []
        answer = question.answers[0] if isinstance(question, SpanQuestion) else question.answer
        submission[question.qid] = {"answer": answer,
                                    "evidence": cited_text(passage, sentences, Citation(tuple(numbers)))}
    evidence_f1 = score(dataset, submission).summary()["EVI_F1"]
    n = len(dataset.questions)
    return (f"{subset:<9} {n:>9} {sum(counts) / n:>9.1f} {max(counts):>7} {100 * found / n:>8.1f}% "
            f"{sum(covered) / max(len(covered), 1):>10.2f} {evidence_f1:>10.3f}")


def cpu_seconds(text: str) -> float:
    start = time.process_time()
    read_citations(text, 40)
    return time.process_time() - start


def main() -> None:
    from expmrc.errors import OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subsets", default=",".join(subsets.names()))
    args = parser.parse_args()
    for subset in args.subsets.split(","):  # every dev set there, before the table starts
        resolve_dataset_path(subset)
    print(f"{'subset':<9} {'questions':>9} {'sent/psg':>9} {'largest':>7} {'gold found':>9} {'sent/gold':>10} "
          f"{'oracle EVI_F1':>10}")
    for subset in args.subsets.split(","):
        print(oracle_row(subset))
    print("\nreading citations, CPU seconds by evidence length (characters)")
    print(f"{'shape':<14} " + " ".join(f"{size:>9,}" for size in SIZES) + f" {'ratio':>7}")
    for name, make in HOSTILE.items():
        times = [cpu_seconds(make(size)) for size in SIZES]
        print(f"{name:<14} " + " ".join(f"{t:>9.3f}" for t in times) + f" {times[-1] / max(times[0], 1e-9):>7.1f}")


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
