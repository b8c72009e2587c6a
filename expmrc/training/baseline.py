"""One baseline run end to end, shared by the span-extraction and multiple-choice scripts.

Flags in, run directory out: train on --train_file (resuming from the newest checkpoint), save the
fine-tuned model to OUTPUT_DIR/model, predict on --predict_file, decode and write dev_predictions.json
and dev_nbest.json, print the scores, and record the run (and what feature building counted) in
run_info.json. A --do_predict run without --do_train uses the model a previous training run left in
OUTPUT_DIR/model, as the original scripts used the output directory's latest checkpoint. What differs
between the tasks is described by a `BaselineTask` (expmrc/training/span_task.py, expmrc/training/choice_task.py).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from expmrc.errors import ExpmrcError
from expmrc.training.flags import check_flags, train_config_from_flags

TRAINED_MODEL_DIR = "model"
PREDICTIONS_FILE = "dev_predictions.json"


@dataclass(frozen=True)
class BaselineTask:
    """What one baseline does its own way; `run_baseline` does the rest."""

    kind: str  # "span" or "choice": run_info.json's `task`, and what the saved model records
    parser: Callable[[], argparse.ArgumentParser]  # the shared flags with the task's defaults and extra flags
    positive_flags: tuple[str, ...]  # the task's extra flags that must be at least 1
    # (args, path, cache_path, tokenizer, is_training, accelerator) -> (dataset, features, report); checks the subset
    features: Callable[..., tuple[Any, Any, Any]]
    dataset: Callable[..., Any]  # (features, with_labels) -> the model's inputs, one dict of tensors per feature
    collate: Callable[[Any], Callable[..., Any]]  # tokenizer -> the function that pads a batch of those dicts
    model: Callable[[Any, float], Any]  # (BertModel, loss_lambda) -> the task model, with load_heads(state)
    pooling: bool  # whether the model reads BERT's pooled [CLS] output
    heads: str  # what the task's own head predicts, for the untrained-heads warning: "answer" or "option"
    decode: Callable[[Any, Any, Any, argparse.Namespace], tuple[dict, dict]]  # (questions, features, outputs, args)
    write_outputs: Callable[[str, dict, dict], None]  # (output_dir, predictions, nbest): both files, atomically


def model_flags(args: argparse.Namespace, trained: Path) -> dict[str, Any]:
    """Where the encoder comes from: OUTPUT_DIR/model for a predict-only rerun, else the model flags."""
    if not args.do_train and (trained / "config.json").is_file():
        return {"model_name_or_path": str(trained)}
    return {"model_name_or_path": args.model_name_or_path, "bert_config_file": args.bert_config_file,
            "vocab_file": args.vocab_file, "init_checkpoint": args.init_checkpoint}


def cached_features(path: str, cache_path: str, settings: dict[str, Any], tokenizer: Any, accelerator: Any,
                    to_payload: Callable[[Any], Any], from_payload: Callable[[Any], Any],
                    build: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
    """`build()`'s (features, report) for the data file `path`, from the feature cache while it is valid.

    The cache key covers the tokenizer, `settings` and the file's bytes; an input error names the file.
    """
    from expmrc.features.cache import cache_key, cached

    def build_naming_the_file() -> tuple[Any, Any]:
        try:
            return build()
        except ExpmrcError as exc:
            raise ExpmrcError(f"{path}: {exc}") from None

    (features, report), _ = cached(cache_path, cache_key(tokenizer, settings, path), build_naming_the_file,
                                   accelerator, to_payload, from_payload)
    if accelerator.is_main_process:
        print(f"{path}: {report.summary()}", file=sys.stderr)
    return features, report


def run_baseline(task: BaselineTask, argv: list[str] | None = None) -> int:
    """Parse the flags and run `task`: train, save, predict, decode, write, score; returns the exit status."""
    from expmrc.models.backbones import load_encoder, save_model_folder
    from expmrc.training.rundir import recorded_run, run_info_base
    from expmrc.training.loop import make_accelerator, predict, train

    args = task.parser().parse_args(argv)
    check_flags(args)
    for name in task.positive_flags:
        if getattr(args, name) < 1:
            raise ExpmrcError(f"--{name} must be at least 1, got {getattr(args, name)}")
    config = train_config_from_flags(args)
    accelerator = make_accelerator(config, use_tpu=args.use_tpu)
    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    trained = output / TRAINED_MODEL_DIR
    source = model_flags(args, trained)
    model_path = source.get("model_name_or_path") or source.get("init_checkpoint") or source.get("bert_config_file")
    info = run_info_base(task.kind, args, model=model_path)
    main = accelerator.is_main_process
    with recorded_run(args.output_dir, info, main):
        encoder = load_encoder(**source, do_lower_case=args.do_lower_case, add_pooling_layer=task.pooling)
        if main:
            print(f"model {info['model']}: {encoder.report.summary()}", file=sys.stderr)
        if args.max_seq_length > encoder.config.max_position_embeddings:
            raise ExpmrcError(f"--max_seq_length {args.max_seq_length} exceeds the model's "
                              f"max_position_embeddings {encoder.config.max_position_embeddings}")
        model = task.model(encoder.model, args.loss_lambda)
        has_heads = model.load_heads(encoder.extra_state)
        trained_with = getattr(encoder.config, "expmrc", {})  # what a fine-tuned folder records about its training
        info["global_step"] = int(trained_with.get("global_step", 0))
        if not args.do_train:  # predictions of a fine-tuned model are recorded under the settings that trained it
            for key in ("model", "loss_lambda", "rand_seed"):
                info[key] = trained_with.get("base_model" if key == "model" else key, info[key])
        collate = task.collate(encoder.tokenizer)

        if args.do_train:
            _, features, report = task.features(args, path=args.train_file, tokenizer=encoder.tokenizer,
                                                cache_path=args.train_tfrecord or str(output / "cache/train-features.pt"),
                                                is_training=True, accelerator=accelerator)
            info["train_features"] = report.as_dict()
            result = train(model, task.dataset(features, with_labels=True), collate, config, accelerator)
            info["global_step"] = result.global_step
            model = accelerator.unwrap_model(model)
            if main:  # keys bert.* and the heads', which load_encoder and load_heads read back
                save_model_folder(str(trained), model.state_dict(), encoder.config, encoder.tokenizer,
                                  {"task": task.kind, "loss_lambda": args.loss_lambda, "rand_seed": args.rand_seed,
                                   "global_step": result.global_step, "base_model": info["model"]})
            accelerator.wait_for_everyone()
        elif not has_heads and main:
            print(f"warning: the model has no trained {task.heads} and evidence heads (train first, or point "
                  "--model_name_or_path at a fine-tuned folder); predictions will be meaningless", file=sys.stderr)

        if args.do_predict:
            dataset, features, report = task.features(
                args, path=args.predict_file, tokenizer=encoder.tokenizer, is_training=False, accelerator=accelerator,
                cache_path=args.predict_tfrecord or str(output / "cache/predict-features.pt"))
            info["predict_features"] = report.as_dict()
            outputs = predict(model, task.dataset(features, with_labels=False), collate, args.predict_batch_size,
                              accelerator)
            predictions, nbest = task.decode(dataset.questions, features, outputs, args)
            if main:
                task.write_outputs(str(output), predictions, nbest)
                print(f"wrote {len(predictions)} predictions to {output / PREDICTIONS_FILE}", file=sys.stderr)
                print_scores(dataset, predictions)
        accelerator.wait_for_everyone()
    return 0


def print_scores(dataset: Any, predictions: dict[str, dict[str, str]]) -> None:
    """Print the leaderboard's figures for the predictions (the predict file carries gold answers)."""
    from expmrc.scoring.scorer import score

    try:
        report = score(dataset, predictions)
    except ExpmrcError as exc:  # e.g. no NLTK data: the predictions are written, only the score is missing
        print(f"not scored: {exc}", file=sys.stderr)
        return
    official = report.official()
    print(f"{dataset.path}: answer F1 {official['ANS_F1']}, evidence F1 {official['EVI_F1']}, "
          f"overall {official['ALL_F1']} ({official['TOTAL']} questions)", file=sys.stderr)
