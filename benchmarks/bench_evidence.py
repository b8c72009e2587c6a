"""Wall time of every evidence method on the four dev sets, and of pseudo labelling CMRC 2018 train.

    python benchmarks/bench_evidence.py [--repeat 3] [--no-reference] [--dense-only]

Needs $EXPMRC_DATA (dev sets), $EXPMRC_TRAIN_DATA (cmrc2018-train.json) and NLTK's Punkt data.
Every timing starts from cold caches (sentences, tokens, stems) and is the best of --repeat runs.
The reference for pseudo labelling, measured in the same run, is the obvious implementation: every
candidate run's text scored with `expmrc.metrics.leaderboard.f1` against question + answer.
idf-window on RACE+ is also timed, in the same run, the way its sentence encoder worked before it
embedded all questions' texts at once: each question's texts embedded on their own when it is picked.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from expmrc.evidence import baselines as evidence, idf_window  # noqa: E402
from expmrc.text import sentences  # noqa: E402
from expmrc.data import subsets  # noqa: E402
from expmrc.data.datasets import load_dataset  # noqa: E402
from expmrc.evidence.extract import BEST, METHODS, Method, build_method, extract  # noqa: E402
from expmrc.metrics import leaderboard as metric  # noqa: E402
from expmrc.metrics.leaderboard import f1, tokenize  # noqa: E402
from expmrc.evidence.pseudo import pseudo_label  # noqa: E402


def cold() -> None:
    """Empty every cache the evidence code keeps, so each timing pays for tokenization."""
    metric.clear_caches()
    for cached in (evidence.prepare_passage, sentences._split_cached, idf_window._stem):
        cached.cache_clear()


def best_of(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        cold()
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def naive_pseudo(dataset) -> int:
    """The reference: each run of 1-3 sentences as text, scored with metric.f1 against question + answer."""
    multi = 0
    for q in dataset.questions:
        split = sentences.split_sentences(q.context)
        key = q.question + str(q.answers[0])
        best = (-1.0, 0, 0)
        for i in range(len(split)):
            for j in range(i, min(i + 3, len(split))):
                value = f1(q.context[split[i].start:split[j].end], [key])
                if value > best[0]:
                    best = (value, i, j)
        multi += best[2] > best[1]
    return multi


def per_question(method: Method) -> Method:
    """The method without its `prefetch`: each question's dense texts are embedded when it is picked."""
    return Method(method.name, method.rule, lambda passage, query: method.pick(passage, query))


def method_table(datasets: dict, repeat: int) -> None:
    """Seconds of every evidence method on every dev set, as a Markdown table."""
    print(f"evidence methods, gold answers, seconds per dev set (cold caches, best of {repeat}):")
    print("| method | " + " | ".join(subsets.names()) + " |")
    print("| --- |" + " ---: |" * len(subsets.names()))
    for method in METHODS:
        cells = []
        for dataset in datasets.values():
            if method == "answer-sentence" and dataset.kind != "span":
                cells.append("—")
                continue
            seconds = best_of(repeat, lambda d=dataset, m=method: extract(d, build_method(m, d), progress=False))
            cells.append(f"{seconds:.2f}")
        print(f"| {method} | " + " | ".join(cells) + " |")


def main() -> None:
    from expmrc.errors import ExpmrcError, OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-reference", action="store_true", help="skip the slow reference implementation")
    parser.add_argument("--dense-only", action="store_true", help="only idf-window on RACE+: batched, per question, "
                        "and without the dense term")
    parser.add_argument("--race-questions", type=int, default=0,
                        help="time idf-window on the first N RACE+ dev questions only (0: all)")
    args = parser.parse_args()
    train = Path(os.environ.get("EXPMRC_TRAIN_DATA", "")) / "cmrc2018-train.json"
    if not os.environ.get("EXPMRC_DATA") or not train.is_file():
        raise ExpmrcError("set EXPMRC_DATA to the dev sets and EXPMRC_TRAIN_DATA to the folder with cmrc2018-train.json")
    tokenize("warm up NLTK")  # the one-off Punkt load is not part of any timing

    datasets = {s: load_dataset(s) for s in subsets.names()}
    if not args.dense_only:
        method_table(datasets, args.repeat)
    race = datasets["race"]  # idf-window's dense term (all-MiniLM-L6-v2) against its lexical part alone
    if args.race_questions:
        race = replace(race, questions=race.questions[:args.race_questions])
    lexical = replace(idf_window.SETTINGS[("choice", "en")], dense_weight=0.0)
    texts, questions = [q.passage for q in race.questions], [q.question for q in race.questions]
    alone = best_of(args.repeat, lambda: extract(race, Method(BEST, idf_window.RULE, idf_window.idf_window_for(
        texts, "choice", "en", lexical, questions)), progress=False))
    print(f"\nidf-window on RACE+ ({len(race.questions)} questions) without the dense term: {alone:.2f} s (the table's figure includes the encoder)")
    batched = best_of(args.repeat, lambda: extract(race, build_method(BEST, race), progress=False))
    unbatched = best_of(args.repeat, lambda: extract(race, per_question(build_method(BEST, race)), progress=False))
    print(f"idf-window on RACE+: all questions' texts embedded together, length-sorted (new) {batched:.2f} s; "
          f"each question's texts embedded on their own (old) {unbatched:.2f} s; new / old {batched / unbatched:.2f}")
    if args.dense_only:
        return

    dataset = load_dataset(str(train), "cmrc2018")
    release = best_of(args.repeat, lambda: pseudo_label(dataset, "release", progress=False))
    ours = best_of(args.repeat, lambda: pseudo_label(dataset, "normalized", progress=False))
    print(f"\npseudo labels, CMRC 2018 train ({len(dataset.questions)} questions), in process: "
          f"--preset release {release:.2f} s, --preset normalized {ours:.2f} s (the reference's computation)")
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "expmrc.cli", "pseudo", "--subset", "cmrc2018", str(train),
                        "--output", str(Path(folder) / "out.json")], check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"`expmrc pseudo` (--preset release) end to end (start-up, load, label, write): "
              f"{time.perf_counter() - start:.2f} s")
    if not args.no_reference:
        cold()
        start = time.perf_counter()
        naive_pseudo(dataset)
        reference = time.perf_counter() - start
        print(f"reference (metric.f1 on every run's text): {reference:.2f} s; ratio ours/reference "
              f"{ours / reference:.2f}")


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
