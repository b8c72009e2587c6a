"""The multiple-choice baseline end to end (the body of baseline/run_mc_mrc.py).

Flags in, run directory out: train on --train_file (resuming from the newest checkpoint), save the
fine-tuned model to OUTPUT_DIR/model, predict on --predict_file and write dev_predictions.json and
dev_nbest.json, recording the run (and what feature building counted) in run_info.json. A
--do_predict run without --do_train uses the model a previous training run left in OUTPUT_DIR/model.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

from expmrc.data import CHOICE_SUBSETS, Dataset, load_dataset, read_json, subset_from_version
from expmrc.errors import ExpmrcError
from expmrc.flags import build_parser, check_flags, train_config_from_flags
from expmrc.span_run import TRAINED_MODEL_DIR, model_flags, print_scores  # run-directory rules both baselines share

DESCRIPTION = """\
Train and run the multiple-choice baseline (RACE+, C3): BERT with one logit per option from the pooled
[CLS] and an evidence head over the passage, loss = answer loss + loss_lambda * evidence loss.
Passages longer than one window are cut into windows --doc_stride tokens apart; the options'
probabilities are combined over windows (each option keeps its best window).

example:
  python baseline/run_mc_mrc.py --model_name_or_path PLM_DIR --task_name c3 --do_train True \\
      --train_file c3-train-pseudo.json --do_predict True --predict_file expmrc-c3-dev.json \\
      --output_dir runs/c3-seed1
"""


def choice_parser() -> argparse.ArgumentParser:
    """The shared flags with multiple-choice defaults, plus the choice-only ones."""
    parser = build_parser("choice", prog="run_mc_mrc.py", description=DESCRIPTION)
    choice = parser.add_argument_group("multiple choice")
    choice.add_argument("--max_qa_length", type=int, default=128,
                        help="tokens kept of question + option together (default 128)")
    choice.add_argument("--max_evidence_length", type=int, default=128,
                        help="longest evidence in tokens when decoding (default 128)")
    choice.add_argument("--n_best_size", type=int, default=20, help="evidence candidates kept per question (default 20)")
    return parser


def load_choice_dataset(path: str, task_name: str) -> Dataset:
    """A RACE/C3-format file; when its `version` names no subset, --task_name says which it is."""
    doc = read_json(path, "dataset file")
    version = str(doc.get("version", "")) if isinstance(doc, dict) else ""
    subset = None
    if subset_from_version(version) is None and task_name in CHOICE_SUBSETS:
        subset = task_name
    dataset = load_dataset(path, subset)
    if dataset.kind != "choice":
        raise ExpmrcError(f"{path}: is a {dataset.subset} (span extraction) file; run_mc_mrc.py needs RACE or C3 data")
    return dataset


def choice_features(args: argparse.Namespace, path: str, cache_path: str, tokenizer: Any, is_training: bool,
                    accelerator: Any) -> tuple[Dataset, Any, Any]:
    """The dataset and its window features, from the feature cache when it is still valid."""
    from expmrc.choice_features import build_choice_features, features_from_payload, features_to_payload
    from expmrc.feature_cache import cache_key, cached

    dataset = load_choice_dataset(path, args.task_name)
    settings = {"task": "choice", "max_seq_length": args.max_seq_length, "doc_stride": args.doc_stride,
                "max_qa_length": args.max_qa_length, "is_training": is_training}

    def build() -> Any:
        try:
            return build_choice_features(dataset.questions, tokenizer, args.max_seq_length, args.max_qa_length,
                                         args.doc_stride, is_training, accelerator.is_local_main_process)
        except ExpmrcError as exc:  # name the file, as every input error does
            raise ExpmrcError(f"{path}: {exc}") from None

    (features, report), _ = cached(cache_path, cache_key(tokenizer, settings, path), build, accelerator,
                                   features_to_payload, features_from_payload)
    if accelerator.is_main_process:
        print(f"{path}: {report.summary()}", file=sys.stderr)
    return dataset, features, report


def run_choice(argv: list[str] | None = None) -> int:
    """Parse the flags and run; returns the exit status."""
    from expmrc.choice_decoding import decode_choice_predictions, write_choice_outputs
    from expmrc.choice_features import ChoiceDataset, collate_choice
    from expmrc.choice_model import ChoiceModel
    from expmrc.encoder import load_encoder, save_model_folder
    from expmrc.rundir import recorded_run, run_info_base
    from expmrc.training import make_accelerator, predict, train

    args = choice_parser().parse_args(argv)
    check_flags(args)
    for name in ("max_qa_length", "max_evidence_length", "n_best_size"):
        if getattr(args, name) < 1:
            raise ExpmrcError(f"--{name} must be at least 1, got {getattr(args, name)}")
    config = train_config_from_flags(args)
    accelerator = make_accelerator(config, use_tpu=args.use_tpu)
    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    trained = output / TRAINED_MODEL_DIR
    source = model_flags(args, trained)
    model_path = source.get("model_name_or_path") or source.get("init_checkpoint") or source.get("bert_config_file")
    info = run_info_base("choice", args, model=model_path)
    main = accelerator.is_main_process
    with recorded_run(args.output_dir, info, main):
        encoder = load_encoder(**source, do_lower_case=args.do_lower_case, add_pooling_layer=True)
        if main:
            print(f"model {info['model']}: {encoder.report.summary()}", file=sys.stderr)
        if args.max_seq_length > encoder.config.max_position_embeddings:
            raise ExpmrcError(f"--max_seq_length {args.max_seq_length} exceeds the model's "
                              f"max_position_embeddings {encoder.config.max_position_embeddings}")
        model = ChoiceModel(encoder.model, args.loss_lambda)
        has_heads = model.load_heads(encoder.extra_state)
        trained_with = getattr(encoder.config, "expmrc", {})  # what a fine-tuned folder records about its training
        info["global_step"] = int(trained_with.get("global_step", 0))
        if not args.do_train:  # predictions of a fine-tuned model are recorded under the settings that trained it
            for key in ("model", "loss_lambda", "rand_seed"):
                info[key] = trained_with.get("base_model" if key == "model" else key, info[key])
        collate = partial(collate_choice, pad_token_id=encoder.tokenizer.pad_token_id)

        if args.do_train:
            _, features, report = choice_features(args, path=args.train_file, tokenizer=encoder.tokenizer,
                                                  cache_path=args.train_tfrecord or str(output / "cache/train-features.pt"),
                                                  is_training=True, accelerator=accelerator)
            info["train_features"] = report.as_dict()
            result = train(model, ChoiceDataset(features, with_labels=True), collate, config, accelerator)
            info["global_step"] = result.global_step
            model = accelerator.unwrap_model(model)
            if main:  # keys bert.* and the heads', which load_encoder and load_heads read back
                save_model_folder(str(trained), model.state_dict(), encoder.config, encoder.tokenizer,
                                  {"task": "choice", "loss_lambda": args.loss_lambda, "rand_seed": args.rand_seed,
                                   "global_step": result.global_step, "base_model": info["model"]})
            accelerator.wait_for_everyone()
        elif not has_heads and main:
            print("warning: the model has no trained option and evidence heads (train first, or point "
                  "--model_name_or_path at a fine-tuned folder); predictions will be meaningless", file=sys.stderr)

        if args.do_predict:
            dataset, features, report = choice_features(
                args, path=args.predict_file, tokenizer=encoder.tokenizer, is_training=False, accelerator=accelerator,
                cache_path=args.predict_tfrecord or str(output / "cache/predict-features.pt"))
            info["predict_features"] = report.as_dict()
            outputs = predict(model, ChoiceDataset(features, with_labels=False), collate,
                              args.predict_batch_size, accelerator)
            predictions, nbest = decode_choice_predictions(dataset.questions, features, outputs,
                                                           args.max_evidence_length, args.n_best_size)
            if main:
                write_choice_outputs(str(output), predictions, nbest)
                print(f"wrote {len(predictions)} predictions to {output / 'dev_predictions.json'}", file=sys.stderr)
                print_scores(dataset, predictions)
        accelerator.wait_for_everyone()
    return 0
