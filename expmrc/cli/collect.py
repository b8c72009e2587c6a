"""`expmrc collect`: score many training runs into a Table-3-style table and a λ figure."""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """\
Score every run directory's dev_predictions.json on its dev set (run_info.json's predict_file, or
--data) and group the runs by subset, model and lambda over seeds. Writes into --output-dir:
  table3.md   maximum over seeds (the paper's Table 3), mean ± std (its lambda figure), the 95%
              interval over questions of each setting (bootstrap of its seeds' mean per question,
              1000 resamples, seed 12345) marked ★ for the best setting of its subset and ≈ for one
              that does not differ significantly from it (paired bootstrap, p >= 0.05), every
              setting, and the runs left out (unfinished, failed or unscorable) with the reason
  table3.csv  one row per setting: mean, sample std and max of answer, evidence and overall, and the
              interval over questions and p-value against the best ("best" for the best itself)
  runs.csv    one row per run directory, scored or not
  lambda.png  answer, evidence and overall against lambda (mean over seeds, std bars, the interval
              over questions as a band, hollow points where significantly worse than the best), a
              panel per subset
  index.html  with --html: the tables and the lambda figure on one page that opens offline, each scored
              run linked to its own `expmrc report` page (reports/RUN.html)
A folder without run_info.json is searched for run directories below it. Folders written by
`expmrc llm` are listed in llm_runs.md, a table of their own (model, shots, template, raw and grounded
overall; docs/llm.md); one not finished, or whose scores.json is missing or damaged, is left out with
the reason.

example:
  expmrc collect runs/sweep --output-dir results/sweep --html
  expmrc collect runs/squad-* runs/race-* --data data/squad/expmrc-squad-dev.json \\
      --data data/race/expmrc-race-dev.json --format md,csv
"""


def _formats(text: str) -> tuple[str, ...]:
    from expmrc.reports.collect import FORMATS

    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"formats are a comma list of {', '.join(FORMATS)}; got {text!r}")
    return chosen


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories, or folders holding them")
    parser.add_argument("--output-dir", default=".", help="where to write the tables and figure (default: .)")
    parser.add_argument("--data", action="append", metavar="DEV_SET",
                        help="score on this dataset instead of each run's predict_file (a path or a subset "
                             "name); repeat once per subset: each run takes the one sharing its question ids")
    parser.add_argument("--format", type=_formats, default=("md", "csv", "png"), metavar="md,csv,png",
                        help="which outputs to write (default: all three)")
    parser.add_argument("--html", action="store_true",
                        help="also write index.html and a report page per scored run under reports/")
    parser.add_argument("--farm", action="store_true",
                        help="add FARM(4) columns, read from each run's faithfulness.json (written by "
                             "`expmrc faithfulness RUN_DIR DEV --output RUN_DIR/faithfulness.json`)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no table on stdout")


def run(args: argparse.Namespace) -> int:
    from expmrc.data.io import check_output_path
    from expmrc.reports.collect import collect

    check_output_path(args.output_dir, "dir")
    check_destinations(args.output_dir, args.format, args.html)
    result = collect(args.run_dirs, args.output_dir, data=args.data, formats=args.format, progress=not args.quiet,
                     html=args.html, farm=args.farm)
    if not args.quiet:
        section = result.llm_section
        sys.stdout.write(result.markdown + ("\n" if result.markdown and section else "") + section)
    left_out = [r for r in result.runs if r.status != "finished"] + result.llm_left_out
    for r in left_out:
        print(f"left out {r.run_dir} ({r.status}): {r.note}", file=sys.stderr)
    for path in result.written:
        print(f"wrote {path}", file=sys.stderr)
    return 0


def check_destinations(output_dir: str, formats: tuple[str, ...], html: bool) -> None:
    """Refuse, before anything is written, any file or folder collect would write that cannot be written."""
    from pathlib import Path

    from expmrc.data.io import check_output_path
    from expmrc.reports.collect_render import REPORTS_DIR
    from expmrc.reports.collect_runs import OUTPUT_FILES
    from expmrc.reports.llm_runs import TABLE

    kinds = [kind for kind in ("md", "csv", "png") if kind in formats] + (["runs"] if "csv" in formats else [])
    for kind in kinds + (["html"] if html else []):
        check_output_path(str(Path(output_dir) / OUTPUT_FILES[kind]), "file")
    check_output_path(str(Path(output_dir) / TABLE), "file")  # written when LLM runs are among the runs
    if html:
        check_output_path(str(Path(output_dir) / REPORTS_DIR), "dir")
