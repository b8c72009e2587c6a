"""How well and how fast `expmrc ground` ties LLM-style quotes to the four dev sets.

    python benchmarks/bench_grounding.py [--subsets squad,cmrc2018,race,c3]

Needs $EXPMRC_DATA. For every question whose first gold evidence is passage text, one honest quote
of it (spacing, punctuation width, case, dropped words, an ellipsis, a framing sentence: one to
three of them, seeded by the question id) and one fabricated quote sharing words with it are
grounded, and each span answer in a variant a model may write (tests/helpers/quotes.py). Prints per
subset the share of honest quotes located with character IoU >= 0.75 against the gold evidence,
the share of fabricated quotes flagged `unverified`, the share of answers grounded to their text,
and quotes grounded per second (honest and fabricated together, the fuzzy stage included) against
a verbatim `str.find` of the same quotes in the same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from expmrc.data import subsets  # noqa: E402
from expmrc.data.datasets import load_dataset, passage_of  # noqa: E402
from expmrc.text.grounding import ground_text  # noqa: E402
from helpers.quotes import fabricated, faithful, gold_cases, longest_other, measure, rng_for, units  # noqa: E402


def quotes(dataset) -> list[tuple[str, str]]:
    """(passage, quote) pairs: an honest and (where the evidence is long enough) a fabricated quote per case."""
    cases = gold_cases(dataset)
    pairs = []
    for k, (q, span) in enumerate(cases):
        passage = passage_of(q)
        evidence = passage[span[0]:span[1]]
        pairs.append((passage, faithful(evidence, rng_for(q.qid, "faithful"))[0]))
        if len(units(evidence)) >= 6:
            other = longest_other(cases, k, len(units(evidence)))
            pairs.append((passage, fabricated(evidence, q.question, other, rng_for(q.qid, "fabricated"))[0]))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subsets", default=",".join(subsets.names()))
    args = parser.parse_args()
    print(f"{'subset':<9} {'cases':>5} {'located':>8} {'flagged':>8} {'answers':>8} {'quotes/s':>9} {'find/s':>9}")
    for subset in args.subsets.split(","):
        dataset = load_dataset(subset)
        rates = measure(dataset)
        pairs = quotes(dataset)
        begin = time.perf_counter()
        for passage, quote in pairs:
            ground_text(passage, quote)
        grounding = time.perf_counter() - begin
        begin = time.perf_counter()
        for passage, quote in pairs:
            passage.find(quote)
        finding = time.perf_counter() - begin
        answers = "n/a" if rates["answers"] is None else f"{100 * rates['answers']:.1f}%"
        print(f"{subset:<9} {rates['cases']:>5} {100 * rates['located']:>7.1f}% {100 * rates['flagged']:>7.1f}% "
              f"{answers:>8} {len(pairs) / grounding:>9.0f} {len(pairs) / max(finding, 1e-9):>9.0f}")


if __name__ == "__main__":
    main()
