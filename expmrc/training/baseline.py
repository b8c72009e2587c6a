"""One baseline run end to end, the same for the span-extraction and the multiple-choice script.

Flags in, run directory out (`expmrc.training.rundir`): every input checked before any work, then
train on --train_file (resuming from the newest checkpoint), save the fine-tuned model to
OUTPUT_DIR/model, predict on --predict_file, decode, write dev_predictions.json and dev_nbest.json,
print the scores, and record the run in run_info.json. A --do_predict run without --do_train uses the
model a previous training run left in OUTPUT_DIR/model, as the original scripts used the output
directory's latest checkpoint. What differs between the tasks is a `BaselineTask`
(`expmrc/training/span_task.py`, `expmrc/training/choice_task.py`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from expmrc.data.datasets import Dataset
from expmrc.data.io import atomic_directory, check_output_path
from expmrc.data.submissions import PREDICTIONS_FILE, write_predictions
from expmrc.decoding.predictions import decode_predictions
from expmrc.errors import ExpmrcError
from expmrc.features.cache import cache_key, cached_features, shared_cache_path
from expmrc.features.windows import FeatureReport, FeatureTable, WindowDataset, uses_token_types
from expmrc.models.backbones import ModelSource, load_task_model, resolve_source
from expmrc.scoring.scorer import score
from expmrc.training.flags import check_flags, flag_values, ignored_flags
from expmrc.training.loop import (TrainConfig, checkpoint_steps, make_accelerator, precision_record, predict,
                                  train)
from expmrc.training.rundir import ANSWERER_DIR, ANSWERER_RUN_DIR, CHECKPOINT_DIR, MODEL_DIR, recorded_run
from expmrc.training.select_forget import SelectAndForget, answerer_folder

logger = logging.getLogger("expmrc")


@dataclass(frozen=True)
class BaselineTask:
    """What one baseline does its own way; `run_baseline` does the rest."""

    kind: str  # "span" or "choice": run_info.json's `task`, and what the saved model records
    parser: Callable[[], argparse.ArgumentParser]  # the shared flags with the task's defaults and extra flags
    positive_flags: tuple[str, ...]  # the task's extra flags that must be at least 1
    load: Callable[[str, str], Dataset]  # (path or subset name, --task_name) -> the dataset, of this task's kind
    settings: Callable[[argparse.Namespace], dict[str, Any]]  # the flags the features depend on
    # (questions, tokenizer, args, is_training, token_types, progress) -> (table, report)
    features: Callable[..., tuple[FeatureTable, FeatureReport]]
    model_class: type  # a TaskModel subclass


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The training loop's settings from parsed flags."""
    return TrainConfig(
        output_dir=args.output_dir, learning_rate=args.learning_rate, num_train_epochs=args.num_train_epochs,
        max_steps=args.max_steps, train_batch_size=args.train_batch_size, predict_batch_size=args.predict_batch_size,
        warmup_proportion=args.warmup_proportion, weight_decay=args.weight_decay,
        gradient_accumulation_steps=args.gradient_accumulation_steps, mixed_precision=args.mixed_precision,
        seed=args.rand_seed, save_checkpoints_steps=args.save_checkpoints_steps, logging_steps=args.logging_steps,
        keep_checkpoints=args.keep_checkpoints, tf32=args.tf32, group_by_length=args.group_by_length,
        per_device_micro_batch=args.per_device_micro_batch, torch_compile=args.torch_compile)


# flags that change neither the training features nor the trained weights
NOT_TRAINING = {"do_predict", "predict_file", "predict_tfrecord", "predict_batch_size", "n_best_size",
                "max_answer_length", "max_evidence_length", "output_dir", "keep_checkpoints", "keep_final_checkpoints",
                "logging_steps", "save_checkpoints_steps", "cache_dir", "train_tfrecord", "per_device_micro_batch",
                "tpu_name", "tpu_zone"}


def training_signature(args: argparse.Namespace, features_key: str) -> str:
    """A hash of what fixes the trained weights: the training features' cache key and every training flag."""
    flags = {k: v for k, v in flag_values(args).items() if k not in NOT_TRAINING}
    return hashlib.sha256(json.dumps([features_key, flags], sort_keys=True, default=str).encode()).hexdigest()


def already_trained(trained: Path, signature: str) -> bool:
    """Whether OUTPUT_DIR/model is the finished result of training with this signature (a rerun of a finished run)."""
    try:
        config = json.loads((trained / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config.get("expmrc"), dict) and config["expmrc"].get("training_signature") == signature


COUPLING_KEYS = ("coupling_loss", "coupling_c")


def coupling_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The coupling options a run trains with, as run_info.json and the fine-tuned folder record them."""
    return {"coupling_loss": bool(args.coupling_loss),
            "coupling_c": [args.coupling_c1, args.coupling_c2, args.coupling_c3] if args.coupling_loss else None,
            "select_and_forget": bool(args.select_and_forget)}


def decoding_settings(task: BaselineTask, args: argparse.Namespace) -> dict[str, Any]:
    """The window and decoding lengths a fine-tuned folder records, so that it predicts alone as its run did."""
    return {**task.settings(args), "n_best_size": args.n_best_size, "max_answer_length": args.max_answer_length,
            "max_evidence_length": args.max_evidence_length}


def setup_logging(is_main_process: bool) -> None:
    """Log lines as plain messages on stderr, from the main process only (others log warnings)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root = logging.getLogger("expmrc")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO if is_main_process else logging.WARNING)
    root.propagate = False


def check_outputs(args: argparse.Namespace) -> Path:
    """The run directory, created, once every output path was checked (one line naming a bad one)."""
    output = check_output_path(args.output_dir, "dir")
    for cache in (args.train_tfrecord, args.predict_tfrecord):
        if cache:
            check_output_path(cache, "file", [args.train_file or "", args.predict_file or ""])
    if args.cache_dir:
        check_output_path(args.cache_dir, "dir")
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExpmrcError(f"{args.output_dir}: cannot create --output_dir ({exc.strerror})") from None
    return output


def model_source(args: argparse.Namespace, trained: Path) -> ModelSource:
    """Where the model comes from: OUTPUT_DIR/model for a predict-only rerun, else the model flags."""
    if not args.do_train and (trained / "config.json").is_file():
        return resolve_source(str(trained))
    return resolve_source(args.model_name_or_path, args.bert_config_file, args.vocab_file, args.init_checkpoint,
                          args.do_lower_case)


def features(task: BaselineTask, args: argparse.Namespace, dataset: Dataset, tokenizer: Any, token_types: bool,
             is_training: bool, cache_path: str | None,
             accelerator: Any) -> tuple[FeatureTable, FeatureReport, str]:
    """The dataset's windows and their cache key, from the feature cache while it is valid (`cache_path`, else
    the shared cache folder); an input error names the file."""
    def build() -> tuple[FeatureTable, FeatureReport]:
        try:
            return task.features(dataset.questions, tokenizer, args, is_training, token_types,
                                 accelerator.is_local_main_process)
        except ExpmrcError as exc:
            raise ExpmrcError(f"{dataset.path}: {exc}") from None

    settings = {"task": task.kind, "is_training": is_training, "token_types": token_types, **task.settings(args)}
    key = cache_key(tokenizer, settings, dataset.path)
    path = cache_path or shared_cache_path(args.cache_dir, key, "train" if is_training else "predict")
    table, report = cached_features(path, key, build, accelerator)
    logger.info(f"{dataset.path}: {report.summary()}")
    if report.unknown_share > 0.05:
        logger.warning(f"warning: {100 * report.unknown_share:.1f}% of the tokens of {dataset.path} are the unknown "
                       "token: is the tokenizer's casing or vocabulary right for this language?")
    return table, report, key


def save_model(model: Any, tokenizer: Any, folder: Path, record: dict[str, Any]) -> None:
    """Write the fine-tuned model and its tokenizer as a complete Hugging Face folder, atomically."""
    model.config.expmrc = record
    with atomic_directory(str(folder), overwrite=True) as staging:
        model.save_pretrained(str(staging))
        tokenizer.save_pretrained(str(staging))


def run_baseline(task: BaselineTask, argv: list[str] | None = None) -> int:
    """Parse the flags and run `task`: train, save, predict, decode, write, score; returns the exit status."""
    args = task.parser().parse_args(argv)
    check_flags(args)
    for name in task.positive_flags:
        if getattr(args, name) < 1:
            raise ExpmrcError(f"--{name} must be at least 1, got {getattr(args, name)}")
    train_set = task.load(args.train_file, args.task_name) if args.do_train else None
    predict_set = task.load(args.predict_file, args.task_name) if args.do_predict else None
    output = check_outputs(args)
    if args.select_and_forget and args.do_predict and not args.do_train:
        answerer_folder(output)
    config = train_config(args)
    accelerator = make_accelerator(config, use_tpu=args.use_tpu)
    main = accelerator.is_main_process
    setup_logging(accelerator.is_local_main_process)
    ignored = ignored_flags(args)
    if ignored:
        logger.info(f"ignored (original TPU-era flags, not needed here): {' '.join(ignored)}")
    trained = output / MODEL_DIR
    source = model_source(args, trained)
    info: dict[str, Any] = {"task": task.kind, "task_name": args.task_name,
                            "predict_file": predict_set.path if predict_set else args.predict_file,
                            "train_file": train_set.path if train_set else args.train_file, "loss_lambda": float(args.loss_lambda),
                            "rand_seed": int(args.rand_seed), "model": source.name, "status": "running",
                            "global_step": 0, "mixed_precision": accelerator.mixed_precision,
                            "precision": precision_record(config, accelerator),
                            "flags": flag_values(args), **coupling_settings(args)}
    with recorded_run(args.output_dir, info, main, lambda: max(checkpoint_steps(args.output_dir), default=0)):
        model, report = load_task_model(task.model_class, source)
        logger.info(f"model {source.name} ({type(model.base_model).__name__}): {report.summary()}")
        tokenizer = source.tokenizer
        usable = model.usable_length()
        if args.max_seq_length > usable:
            raise ExpmrcError(f"--max_seq_length {args.max_seq_length} exceeds the {usable} positions the model has")
        model.loss_lambda = args.loss_lambda
        model.coupling = (args.coupling_c1, args.coupling_c2, args.coupling_c3) if args.coupling_loss else None
        token_types = uses_token_types(tokenizer, model.config)
        record = getattr(model.config, "expmrc", None) or {}
        info["global_step"] = int(record.get("global_step", 0))
        if not args.do_train:  # predictions of a fine-tuned model are recorded under the settings that trained it
            for key in ("loss_lambda", "rand_seed", *COUPLING_KEYS):
                info[key] = record.get(key, info[key])
            info["model"] = record.get("base_model", info["model"])
            if record.get("select_and_forget") and not args.select_and_forget:
                logger.warning(f"warning: {source.name} is the selector of a Select & Forget run; predicting with it "
                               "alone (pass --select_and_forget True to answer from its evidence as trained)")
            if not record:
                logger.warning(f"warning: {source.name} is not a fine-tuned {task.kind} model (train first, or point "
                               "--model_name_or_path at a fine-tuned folder): predictions will be meaningless")
        # tensor-core shapes on GPUs, fewer shapes to compile; on CPU padding buys nothing
        pad_multiple = 64 if args.torch_compile else 8 if accelerator.device.type == "cuda" else 1
        forget = SelectAndForget(output, accelerator, lambda questions, is_training: task.features(
            questions, tokenizer, args, is_training, token_types, False)[0], tokenizer.pad_token_id or 0,
            args.predict_batch_size, (args.n_best_size, args.max_answer_length, args.max_evidence_length)
        ) if args.select_and_forget else None
        answerer = None
        if train_set is not None:
            table, train_report, key = features(task, args, train_set, tokenizer, token_types, True,
                                                args.train_tfrecord, accelerator)
            info["train_features"] = train_report.as_dict()
            signature = training_signature(args, key)
            saved = {"task": task.kind, "loss_lambda": args.loss_lambda, "rand_seed": args.rand_seed,
                     "base_model": source.name, **coupling_settings(args), "settings": decoding_settings(task, args),
                     "training_signature": signature}
            if already_trained(trained, signature):  # the final weights are in model/, not in a checkpoint
                logger.info(f"{trained} already holds the result of this training run; not training again")
                model, _ = load_task_model(task.model_class, resolve_source(str(trained)))
                model.loss_lambda = args.loss_lambda
                info["global_step"] = int(model.config.expmrc.get("global_step", 0))
            else:
                data = WindowDataset(table, True, tokenizer.pad_token_id or 0, pad_multiple, args.max_seq_length)
                result = train(model, data, config, accelerator)
                info["global_step"] = result.global_step
                if result.micro_batch:
                    info["per_device_micro_batch"] = result.micro_batch
                model = accelerator.unwrap_model(model, keep_torch_compile=False)
                if main:
                    save_model(model, tokenizer, trained, {**saved, "global_step": result.global_step})
                    if not args.keep_final_checkpoints:  # model/ holds the result; checkpoints only resume
                        shutil.rmtree(output / CHECKPOINT_DIR, ignore_errors=True)
                accelerator.wait_for_everyone()
            if forget is not None:  # the answerer phase: docs/coupling.md, expmrc/training/select_forget.py
                def windows() -> FeatureTable:  # the training set's prediction windows, for the selector
                    return features(task, args, train_set, tokenizer, token_types, False, None, accelerator)[0]

                selection_key = cache_key(tokenizer, {"selector_step": info["global_step"],
                                                      **decoding_settings(task, args)}, train_set.path)
                questions, info["select_and_forget_training"] = forget.select(model, train_set.questions, windows,
                                                                              selection_key)
                if already_trained(output / ANSWERER_DIR, signature):
                    logger.info(f"{output / ANSWERER_DIR} already holds the trained answerer; not training it again")
                    answerer, _ = load_task_model(task.model_class, resolve_source(str(output / ANSWERER_DIR)))
                    info["answerer_global_step"] = int(answerer.config.expmrc.get("global_step", 0))
                else:
                    answerer, answer_result = forget.train_answerer(
                        lambda: load_task_model(task.model_class, source)[0], questions, config)
                    info["answerer_global_step"] = answer_result.global_step
                    if main:
                        save_model(answerer, tokenizer, output / ANSWERER_DIR,
                                   {**saved, "role": "answerer", "loss_lambda": 0.0, "coupling_loss": False,
                                    "coupling_c": None, "global_step": answer_result.global_step,
                                    "selection": info["select_and_forget_training"]})
                        if not args.keep_final_checkpoints:
                            shutil.rmtree(output / ANSWERER_RUN_DIR / CHECKPOINT_DIR, ignore_errors=True)
                accelerator.wait_for_everyone()
        if predict_set is not None:
            table, predict_report, _ = features(task, args, predict_set, tokenizer, token_types, False,
                                                args.predict_tfrecord, accelerator)
            info["predict_features"] = predict_report.as_dict()
            outputs = predict(model, WindowDataset(table, False, tokenizer.pad_token_id or 0, pad_multiple,
                                                   args.max_seq_length),
                              args.predict_batch_size, accelerator)
            predictions, nbest = decode_predictions(predict_set.questions, table, outputs, args.n_best_size,
                                                    args.max_answer_length, args.max_evidence_length)
            if forget is not None:
                if answerer is None:
                    answerer, _ = load_task_model(task.model_class, resolve_source(str(answerer_folder(output))))
                predictions, nbest = forget.answer(answerer, predict_set.questions, predictions, nbest)
            if main:
                write_predictions(str(output), predictions, nbest)
                logger.info(f"wrote {len(predictions)} predictions to {output / PREDICTIONS_FILE}")
                log_scores(predict_set, predictions)
        accelerator.wait_for_everyone()
    return 0


def log_scores(dataset: Dataset, predictions: dict[str, dict[str, Any]]) -> None:
    """Log the leaderboard's figures for the predictions (the predict file carries gold answers)."""
    try:
        report = score(dataset, predictions)
    except ExpmrcError as exc:  # e.g. no NLTK data: the predictions are written, only the score is missing
        logger.warning(f"not scored: {exc}")
        return
    official = report.official()
    logger.info(f"{dataset.path}: answer F1 {official['ANS_F1']}, evidence F1 {official['EVI_F1']}, "
                f"overall {official['ALL_F1']} ({official['TOTAL']} questions)")
