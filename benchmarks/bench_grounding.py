"""How well and how fast `expmrc ground` ties LLM-style quotes to the four dev sets, and keeps its one rule: only
form is repaired.

    python benchmarks/bench_grounding.py [--subsets squad,cmrc2018,race,c3] [--seeds 0,8] [--against main]

Needs $EXPMRC_DATA. Every question whose first gold evidence is passage text gives the quotes of
tests/helpers/quotes.py, tests/helpers/rule_quotes.py and tests/helpers/edge_quotes.py. The first
table: per subset the share of honest quotes (spacing, width, case, dropped words, an ellipsis, a
framing sentence) located with character IoU >= 0.75 against the gold evidence (any located status),
the share of fabricated quotes flagged `unverified`, the share of span answers repaired to their
text, and quotes grounded per CPU second (honest and fabricated together; CPU time, as the machine is
shared) against a verbatim `str.find` of the same quotes in the same run. With `--against COMMIT`,
the same quotes are grounded by the package as it is and by the package of COMMIT (`git archive`),
both imported afresh in this process, taking turns on chunks of 25 quotes (ABBA) so that the load
of a shared machine falls on both alike, `--rounds` passes each; their ratio is printed. Then, per seed (the rules were tuned on seed 0 only; HELD_OUT_SEED, 8, is run
for the figures of docs/grounding.md and never tuned on): per kind of change of meaning, the quotes
not accepted as verbatim (neither `exact` nor `normalized`, so never replaced by the passage text)
and, of them, those `altered`; per kind of honest quote, those `altered` or `unverified`; for a
parenthetical left out silently, the `reworded` ones; for a swap of ordinary words, the `altered`
ones (never, is the aim) and the `reworded` ones.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from expmrc.data import subsets  # noqa: E402
from expmrc.data.datasets import load_dataset, passage_of, resolve_dataset_path  # noqa: E402
from expmrc.text.grounding import ground_text  # noqa: E402
from helpers.quotes import fabricated, faithful, gold_cases, longest_other, measure, rng_for, units  # noqa: E402
from helpers.rule_quotes import (FACT_KINDS, HELD_OUT_SEED, HONEST_KINDS, SAYING_LESS, SWAPPED,  # noqa: E402
                                 TUNING_SEED, measure_rule)


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


def share(pair: tuple[int, int]) -> str:
    """`k/n = p%`, or `n/a` when there is no case."""
    k, n = pair
    return f"{k}/{n} = {100 * k / n:.1f}%" if n else "n/a"


def grounding_seconds(pairs: list[tuple[str, str]]) -> float:
    """CPU seconds to ground every pair once (OpenCC loaded beforehand)."""
    ground_text("北京大学", "北京大學")
    begin = time.process_time()
    for passage, quote in pairs:
        ground_text(passage, quote)
    return time.process_time() - begin


def rates_and_speed(subset: str) -> str:
    """The first table's row of one subset."""
    dataset = load_dataset(subset)
    rates = measure(dataset)
    pairs = quotes(dataset)
    grounding = grounding_seconds(pairs)
    begin = time.process_time()
    for passage, quote in pairs:
        passage.find(quote)
    finding = time.process_time() - begin
    answers = "n/a" if rates["answers"] is None else f"{100 * rates['answers']:.1f}%"
    return (f"{subset:<9} {rates['cases']:>5} {100 * rates['located']:>7.1f}% {100 * rates['flagged']:>7.1f}% "
            f"{answers:>8} {len(pairs) / grounding:>9.0f} {len(pairs) / max(finding, 1e-9):>9.0f}")


def _fresh_ground_text(root: str) -> Callable[..., object]:
    """`ground_text` of the package under `root`, freshly imported (empty caches) beside the one this script
    imported, which stays in place for everything else."""
    def ours() -> dict:
        return {k: v for k, v in sys.modules.items() if k == "expmrc" or k.startswith("expmrc.")}

    kept = ours()
    for name in kept:
        del sys.modules[name]
    sys.path.insert(0, root)
    try:
        module = importlib.import_module("expmrc.text.grounding")
    finally:
        sys.path.remove(root)
        for name in ours():
            del sys.modules[name]
        sys.modules.update(kept)
    if not Path(module.__file__).resolve().is_relative_to(Path(root).resolve()):
        raise SystemExit(f"bench_grounding: imported {module.__file__}, not the package under {root}")
    return module.ground_text


def interleaved(pairs: list[tuple[str, str]], roots: dict[str, str], rounds: int) -> dict[str, float]:
    """CPU seconds each package (name -> root) takes to ground `pairs`, summed over `rounds` passes; in each pass
    both are imported afresh and take turns on chunks of 25 quotes (ABBA), so that the machine's load falls on
    both alike."""
    seconds = dict.fromkeys(roots, 0.0)
    for _ in range(rounds):
        ground = {name: _fresh_ground_text(root) for name, root in roots.items()}
        for function in ground.values():
            function("北京大学", "北京大學")  # OpenCC loaded
        for k in range(0, len(pairs), 25):
            order = list(ground) if k // 25 % 2 == 0 else list(ground)[::-1]
            for name in order:
                begin = time.process_time()
                for passage, quote in pairs[k:k + 25]:
                    ground[name](passage, quote)
                seconds[name] += time.process_time() - begin
    return seconds


def against(chosen: list[str], commit: str, rounds: int) -> None:
    """Quotes per CPU second of this checkout's package and of COMMIT's, in one process, taking turns."""
    with tempfile.TemporaryDirectory(prefix="bench_grounding_") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "expmrc"], capture_output=True,
                                 check=False)
        if archive.returncode != 0:
            raise SystemExit(f"bench_grounding: git archive {commit}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        print(f"\nspeed against {commit}: quotes per CPU second, {rounds} passes each, taking turns on chunks of 25")
        print(f"{'subset':<9} {'quotes':>6} {'this':>9} {commit[:12]:>12} {'this/that':>10}")
        for subset in chosen:
            pairs = quotes(load_dataset(subset))
            seconds = interleaved(pairs, {"this": str(ROOT), "that": tmp}, rounds)
            this, that = rounds * len(pairs) / seconds["this"], rounds * len(pairs) / seconds["that"]
            print(f"{subset:<9} {len(pairs):>6} {this:>9.0f} {that:>12.0f} {this / that:>10.2f}")


def rule_tables(chosen: list[str], seed: int) -> None:
    """The tables of one seed: changes of meaning, then honest quotes and swapped words."""
    rates = {subset: measure_rule(load_dataset(subset), seed) for subset in chosen}
    role = "tuning" if seed == TUNING_SEED else "held out" if seed == HELD_OUT_SEED else "not held out"
    print(f"\nseed {seed} ({role}): one change of meaning, not accepted as verbatim (of them altered)")
    print(f"{'kind':<20} " + " ".join(f"{s:>24}" for s in chosen))
    for kind in FACT_KINDS:
        cells = []
        for subset in chosen:
            r = rates[subset][kind]
            n, caught = r["cases"], r["cases"] - r["verbatim"]
            cells.append("n/a" if not n else f"{share((caught, n))} ({r['altered']})")
        print(f"{kind:<20} " + " ".join(f"{c:>24}" for c in cells))
    print(f"\nseed {seed} ({role}): honest quotes altered or unverified; a parenthetical left out silently: reworded")
    print(f"{'kind':<20} " + " ".join(f"{s:>24}" for s in chosen))
    for kind in (*HONEST_KINDS, *SAYING_LESS):
        cells = []
        for subset in chosen:
            r = rates[subset][kind]
            flagged = r["reworded"] if kind in SAYING_LESS else r["altered"] + r["unverified"]
            cells.append(share((flagged, r["cases"])))
        print(f"{kind:<20} " + " ".join(f"{c:>24}" for c in cells))
    print(f"\nseed {seed} ({role}): ordinary words swapped: altered (reworded)")
    print(f"{'kind':<20} " + " ".join(f"{s:>24}" for s in chosen))
    for kind in SWAPPED:
        cells = [f"{share((rates[s][kind]['altered'], rates[s][kind]['cases']))} ({rates[s][kind]['reworded']})"
                 for s in chosen]
        print(f"{kind:<20} " + " ".join(f"{c:>24}" for c in cells))


def main() -> None:
    from expmrc.errors import OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subsets", default=",".join(subsets.names()))
    parser.add_argument("--seeds", default=f"{TUNING_SEED},{HELD_OUT_SEED}",
                        help=f"the seeds of the rule's cases ({TUNING_SEED}: the tests' and the tuning's; "
                             f"{HELD_OUT_SEED}: held out)")
    parser.add_argument("--against", metavar="COMMIT", help="also time the package of this commit (git archive) on "
                        "the same quotes, in turns, and print the ratio")
    parser.add_argument("--rounds", type=int, default=3, help="passes of each package with --against")
    args = parser.parse_args()
    chosen = args.subsets.split(",")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    unknown = [s for s in chosen if s not in subsets.names()]
    if unknown:
        parser.error(f"--subsets: unknown subset {unknown[0]!r} (known: {', '.join(subsets.names())})")
    if args.against and subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                                        f"{args.against}^{{commit}}"], capture_output=True).returncode != 0:
        parser.error(f"--against: {args.against!r} names no commit of {ROOT}")
    for subset in chosen:  # every dev set there, before the table starts
        resolve_dataset_path(subset)
    print(f"{'subset':<9} {'cases':>5} {'located':>8} {'flagged':>8} {'answers':>8} {'quotes/s':>9} {'find/s':>9}")
    for subset in chosen:
        print(rates_and_speed(subset))
    if args.against:
        against(chosen, args.against, args.rounds)
    for seed in (int(s) for s in args.seeds.split(",") if s):
        rule_tables(chosen, seed)


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
