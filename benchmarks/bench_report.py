"""Size and build time of `expmrc report` pages for the four sample submissions and one comparison, and how
quickly headless Chromium loads them, filters the full question list and draws a passage.

    python benchmarks/bench_report.py [--repeat 3] [--no-browser]

Needs $EXPMRC_DATA and NLTK's Punkt data; the browser figures need Chromium (skipped without it). The
comparison is SQuAD's sample submission (A) against a changed copy (B: every other question takes the
first gold evidence, every seventh answers "no idea"). Build time is the best of --repeat runs of the
whole job in this process, tokenizer caches cleared before each: load, score, render, write (a fresh
`expmrc report` process pays its imports on top), as wall time and as this process's CPU time (which
other jobs on the machine change less). Browser figures: load to the page's script
being ready, then one quadrant filter over all questions and one passage drawn, each timed inside the
page up to the layout that follows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the headless-browser driver lives with the tests

from expmrc.data import subsets  # noqa: E402
from expmrc.data.datasets import load_dataset  # noqa: E402
from expmrc.metrics.leaderboard import clear_caches  # noqa: E402
from expmrc.reports.html import build_report  # noqa: E402
from expmrc.reports.pages import human_size, write_page  # noqa: E402
from helpers.browser import Browser, find_browser  # noqa: E402

FILTER_AND_DRAW = """(() => {
  let start = performance.now();
  document.querySelector('button.quadrant[data-sub="0"][data-quadrant="right-poor"]').click();
  void document.body.offsetHeight;  // style and layout included
  const filter = performance.now() - start;
  const shown = document.getElementById('shown').textContent;
  start = performance.now();
  document.querySelector('#question-table tr.qrow:not([hidden]) button.open').click();
  void document.body.offsetHeight;
  return {filter, draw: performance.now() - start, shown};
})()"""


def changed_copy(folder: Path) -> str:
    """SQuAD's sample submission with better evidence on every other question and no answer on every seventh."""
    dataset = load_dataset("squad")
    sample = json.loads((ROOT / "sample_submission" / "squad.json").read_text(encoding="utf-8"))
    for k, question in enumerate(dataset.questions):
        if k % 2 == 0:
            sample[question.qid]["evidence"] = question.evidences[0]
        if k % 7 == 0:
            sample[question.qid]["answer"] = "no idea"
    path = folder / "squad-changed.json"
    path.write_text(json.dumps(sample, ensure_ascii=False), encoding="utf-8")
    return str(path)


def main() -> None:
    from expmrc.errors import ExpmrcError, OneLineParser  # usage errors in one line

    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-browser", action="store_true", help="only build the pages")
    args = parser.parse_args()
    if not os.environ.get("EXPMRC_DATA"):
        raise ExpmrcError("set EXPMRC_DATA to the folder holding the four dev sets")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        jobs = [(subset, [str(ROOT / "sample_submission" / f"{subset}.json")]) for subset in subsets.names()]
        jobs.append(("squad", [str(ROOT / "sample_submission" / "squad.json"), changed_copy(folder)]))
        pages = []
        for subset, submissions in jobs:
            name = f"{subset}{'-compare' if len(submissions) > 1 else ''}"
            page = str(folder / f"{name}.html")
            times, cpu = [], []
            for _ in range(args.repeat):
                clear_caches()  # every run tokenizes from cold, as a fresh `expmrc report` does
                start, start_cpu = time.perf_counter(), time.process_time()
                html, subs = build_report(subset, submissions)
                size = write_page(page, html)
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            passages = len(set(json.loads(html.split('id="report-data">', 1)[1].split("</script>", 1)[0])["passages"]))
            print(f"{name:<16} {subs[0].report.total:4d} questions, {passages:3d} passages, "
                  f"{size:>9,d} bytes ({human_size(size)}), built in {min(times):.2f} s, {min(cpu):.2f} s of CPU "
                  f"(best of {args.repeat})")
            pages.append((name, page))
        if args.no_browser or find_browser() is None:
            print("browser: skipped" + ("" if args.no_browser else " (no Chromium found)"))
            return
        with Browser(width=1280, height=900) as browser:
            for name, page in pages:
                start = time.perf_counter()
                browser.open(page)
                browser.wait_for("document.documentElement.dataset.ready === 'true'")
                loaded = time.perf_counter() - start
                timing = browser.evaluate(FILTER_AND_DRAW)
                print(f"{name:<16} Chromium: loaded in {loaded:.2f} s; quadrant filter {timing['filter']:.1f} ms "
                      f"({timing['shown']}); one passage drawn in {timing['draw']:.1f} ms")
                if browser.errors:
                    print(f"  page errors: {browser.errors}")


if __name__ == "__main__":
    from expmrc.cli import run_guarded  # bad input in one line, exit 2; Ctrl-C 130

    sys.exit(run_guarded(lambda _: main(), None))
