"""How the three answers of CMRC 2018's original development set relate, and what each human-performance protocol
gives over them with CMRC 2018's official EM and F1: the figures of docs/scoring.md, "CMRC 2018's own protocol".

    python scripts/cmrc2018_annotators.py [$EXPMRC_CMRC2018_DEV]

Prints how often answers 1 and 2 are the same string and how they differ otherwise (a trailing `。`, surrounding
spaces; where answer 2's `answer_start` is -1; where answer 1's points at its text; whether the two agree after CMRC
normalization), then EM and F1 (×100, mean over questions) for every choice of one answer as the
prediction against a non-empty set of the other answers as references (`expmrc human` prints the rotation's).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from expmrc.data.datasets import SpanQuestion, load_dataset  # noqa: E402
from expmrc.errors import ExpmrcError, OneLineParser  # noqa: E402
from expmrc.metrics.cmrc2018 import cmrc2018_exact_match, cmrc2018_f1, cmrc2018_normalize  # noqa: E402


def agreement(questions: list[SpanQuestion]) -> list[str]:
    """Lines on how answers 1 and 2 differ."""
    differ = [q for q in questions if q.answers[0] != q.answers[1]]
    full_stop = [q for q in differ if q.answers[1] == q.answers[0] + "。"]
    spaces = [q for q in differ if q.answers[1] != q.answers[0] and q.answers[1].strip() == q.answers[0]]
    unplaced = [q for q in differ if q.answer_starts[1] == -1]
    placed = sum(q.answer_starts[0] is not None and q.answer_starts[0] >= 0
                 and q.context[q.answer_starts[0]:q.answer_starts[0] + len(q.answers[0])] == q.answers[0]
                 for q in questions)
    normalized = all(cmrc2018_normalize(q.answers[0]) == cmrc2018_normalize(q.answers[1]) for q in questions)
    return [f"questions: {len(questions)}; answers 1 and 2 the same string: {len(questions) - len(differ)}",
            f"otherwise answer 2 is answer 1 with a trailing 。: {len(full_stop)}, with surrounding spaces: "
            f"{len(spaces)}, other: {len(differ) - len(full_stop) - len(spaces)}",
            f"of those, answer 2's answer_start is -1: {len(unplaced)}; answer 1's answer_start points at its text in "
            f"the passage in {placed} questions; answers 1 and 2 agree after CMRC normalization in every question: "
            f"{normalized}"]


def protocols(questions: list[SpanQuestion]) -> list[str]:
    """EM and F1 of each answer as the prediction against each non-empty set of the others."""
    lines = []
    for predicted in range(3):
        others = [k for k in range(3) if k != predicted]
        for size in (1, 2):
            for chosen in itertools.combinations(others, size):
                em = 100 * sum(cmrc2018_exact_match(q.answers[predicted], [q.answers[k] for k in chosen])
                               for q in questions) / len(questions)
                f1 = 100 * sum(cmrc2018_f1(q.answers[predicted], [q.answers[k] for k in chosen])
                               for q in questions) / len(questions)
                against = " and ".join(str(k + 1) for k in chosen)
                lines.append(f"answer {predicted + 1} against answer {against}: EM {em:.3f}  F1 {f1:.3f}")
    return lines


def main() -> None:
    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", nargs="?", default=os.environ.get("EXPMRC_CMRC2018_DEV"),
                        help="CMRC 2018's cmrc2018_dev.json (default: $EXPMRC_CMRC2018_DEV)")
    args = parser.parse_args()
    if not args.dataset or not Path(args.dataset).is_file():
        raise ExpmrcError(f"{args.dataset or 'no dataset'}: give CMRC 2018's cmrc2018_dev.json, or set "
                          "EXPMRC_CMRC2018_DEV to it")
    questions = [q for q in load_dataset(args.dataset, subset="cmrc2018").questions if isinstance(q, SpanQuestion)]
    if any(len(q.answers) != 3 for q in questions):
        raise ExpmrcError(f"{args.dataset}: every question needs three answers, as CMRC 2018's development set has")
    print("\n".join(agreement(questions) + protocols(questions)))


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
