"""`expmrc faithfulness`: FARM(k), comprehensiveness and sufficiency of a fine-tuned model, with the model in the loop."""

from __future__ import annotations

import argparse
import json
import sys

from expmrc.cli.args import add_flag
from expmrc.data import subsets

DESCRIPTION = """\
Re-predict a dataset on edited passages with a fine-tuned model (a run directory of either baseline,
or its model/ folder) and report how its answers depend on its own evidence (docs/coupling.md):
  FARM(k)            c_rel(k) / (1 + c_irr(k)), k = 1..--max-k: c_rel the share of all questions whose
                     answer changes when up to k facts (sentences) overlapping the predicted evidence
                     are deleted, most evidence-like first; c_irr the same for the other sentences
  comprehensiveness  p(answer | passage) - p(answer | passage without the evidence)
  sufficiency        p(answer | passage) - p(answer | the evidence alone)
both as means, and over right and wrong answers when the dataset has gold answers. The cost per
question (seconds, forward passes) is printed with them.

examples:
  expmrc faithfulness runs/squad-seed1 squad
  expmrc faithfulness runs/c3-seed1/model c3 --max-k 2 --json --details c3-faith.jsonl
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory, or a fine-tuned model folder")
    parser.add_argument("dataset", metavar="DATASET", help="dataset file, or a subset name resolved in $EXPMRC_DATA or data/")
    add_flag(parser, "--max-k", type=int, default=4, help="largest k of FARM(k), at least 1 (default 4)")
    parser.add_argument("--subset", choices=subsets.names(),
                        help="the dataset's subset, when its `version` does not say")
    add_flag(parser, "--batch-size", type=int, default=None,
                        help="windows per forward pass (default: the run's own --predict_batch_size)")
    parser.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--output", metavar="FILE.json", help="also write the JSON figures to this file")
    parser.add_argument("--details", metavar="FILE.jsonl",
                        help="write one JSON line per question: answer, evidence, facts, answers after each "
                             "deletion, and the three probabilities")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from expmrc.data.datasets import load_dataset
    from expmrc.data.io import check_distinct_outputs, check_output_path, json_text, write_texts_atomic
    from expmrc.inference.faithfulness_run import run_faithfulness
    from expmrc.inference.rerun import FineTuned, torch_device
    from expmrc.errors import ExpmrcError
    from expmrc.logs import quiet_libraries

    if args.max_k < 1:
        raise ExpmrcError(f"--max-k must be at least 1, got {args.max_k}")
    if args.batch_size is not None and args.batch_size < 1:
        raise ExpmrcError(f"--batch-size must be at least 1, got {args.batch_size}")
    for path in (args.details, args.output):
        if path:
            check_output_path(path, "file", inputs=[args.dataset])
    check_distinct_outputs({"--output": args.output, "--details": args.details})
    torch_device(args.device)  # a bad --device is one line before any loading
    quiet_libraries()
    dataset = load_dataset(args.dataset, args.subset)
    model = FineTuned(args.run_dir, args.device, args.batch_size)
    if model.record.get("select_and_forget"):
        raise ExpmrcError(f"{args.run_dir}: a Select & Forget run (--select_and_forget True): its answer comes from "
                          "a second model reading the evidence alone, which expmrc faithfulness does not measure")
    result = run_faithfulness(model, dataset, args.max_k, progress=not args.quiet)
    outputs = [(args.details, "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in result.details))] \
        if args.details else []
    if args.output:
        outputs.append((args.output, json_text(args.output, result.as_dict(), indent=1)))
    write_texts_atomic(outputs)
    if args.json:
        print(json.dumps(result.as_dict(), ensure_ascii=False, indent=1))
    else:
        print(result.text())
    if args.details:
        print(f"wrote {len(result.details)} lines to {args.details}", file=sys.stderr)
    return 0
