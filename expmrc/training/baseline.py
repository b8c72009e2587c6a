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
from typing import Any
from collections.abc import Callable

from expmrc.data.datasets import Dataset
from expmrc.data.io import atomic_directory, check_output_path
from expmrc.data.submissions import PREDICTIONS_FILE, write_predictions
from expmrc.errors import ExpmrcError
from expmrc.features.cache import cache_key, cached_features, shared_cache_path
from expmrc.features.windows import FeatureReport, FeatureTable, WindowDataset, uses_token_types
from expmrc.models.backbones import ModelSource, load_task_model, resolve_source
from expmrc.scoring.scorer import score
from expmrc.training.flags import check_flags, compile_buckets, flag_values, ignored_flags
from expmrc.training.loop import (TrainConfig, checkpoint_steps, make_accelerator, precision_record, predict,
                                  train)
from expmrc.training.rundir import (ANSWERER_DIR, ANSWERER_RUN_DIR, CHECKPOINT_DIR, MODEL_DIR, PREDICT_ONLY_DIR,
                                    RUN_INFO, SCHEMA, check_schema, environment, read_run_info, recorded_run)
from expmrc.training.select_forget import SelectAndForget, answerer_folder
from expmrc.training.tasks import TaskSettings, TaskSpec

logger = logging.getLogger("expmrc")
UNKNOWN_REFUSED = 0.5  # share of unknown tokens from which a run is refused (a vocabulary that does not fit)


@dataclass(frozen=True)
class BaselineTask:
    """A baseline script: the task layer's spec (settings, features, model, decoder), its flags and its data."""

    spec: TaskSpec
    parser: Callable[[], argparse.ArgumentParser]  # the shared flags with the task's defaults and extra flags
    load: Callable[[str, str], Dataset]  # (path or subset name, --task_name) -> the dataset, of this task's kind

    @property
    def kind(self) -> str:
        """"span" or "choice": run_info.json's `task`, and what the saved model records."""
        return self.spec.kind

    @property
    def model_class(self) -> type:
        """The task's model class (a TaskModel subclass)."""
        return self.spec.model_class


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The training loop's settings from parsed flags."""
    return TrainConfig(
        output_dir=args.output_dir, learning_rate=args.learning_rate, num_train_epochs=args.num_train_epochs,
        max_steps=args.max_steps, train_batch_size=args.train_batch_size, predict_batch_size=args.predict_batch_size,
        warmup_proportion=args.warmup_proportion, weight_decay=args.weight_decay,
        gradient_accumulation_steps=args.gradient_accumulation_steps, mixed_precision=args.mixed_precision,
        seed=args.rand_seed, save_checkpoints_steps=args.save_checkpoints_steps, logging_steps=args.logging_steps,
        keep_checkpoints=args.keep_checkpoints, tf32=args.tf32, group_by_length=args.group_by_length,
        per_device_micro_batch=args.per_device_micro_batch, torch_compile=args.torch_compile,
        compile_buckets=compile_buckets(args), compile_mode=args.torch_compile_mode)


# flags that change neither the training features nor the trained weights
NOT_TRAINING = {"do_predict", "predict_file", "predict_tfrecord", "predict_batch_size", "n_best_size",
                "max_answer_length", "max_evidence_length", "output_dir", "keep_checkpoints", "keep_final_checkpoints",
                "logging_steps", "save_checkpoints_steps", "cache_dir", "train_tfrecord", "per_device_micro_batch",
                "tpu_name", "tpu_zone", "overwrite_output_dir", "allow_unknown_tokens", "compile_buckets",
                "torch_compile_mode"}


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


def given_flags(argv: list[str] | None) -> set[str]:
    """The names of the flags a command line gives explicitly (`--name value` or `--name=value`)."""
    words = sys.argv[1:] if argv is None else argv
    return {word[2:].split("=", 1)[0] for word in words if word.startswith("--")}


@dataclass
class Run:
    """One baseline run in progress: its flags, settings, device, model and run record."""

    task: BaselineTask
    args: argparse.Namespace
    settings: TaskSettings
    output: Path
    config: TrainConfig
    accelerator: Any
    info: dict[str, Any]
    tokenizer: Any = None
    token_types: bool = True
    pad_multiple: int = 1
    signature: str = ""
    previous: dict[str, Any] | None = None  # the run_info.json OUTPUT_DIR held before this run started

    @property
    def main(self) -> bool:
        """Whether this process writes files."""
        return bool(self.accelerator.is_main_process)

    def windows(self, table: FeatureTable, with_labels: bool) -> WindowDataset:
        """The batches of a feature table under this run's padding."""
        return WindowDataset(table, with_labels, self.tokenizer.pad_token_id or 0, self.pad_multiple,
                             self.settings.max_seq_length)

    def build(self, questions: Any, is_training: bool, progress: bool = False) -> tuple[FeatureTable, FeatureReport]:
        """The windows of `questions` under this run's settings (no cache)."""
        return self.task.spec.features(questions, self.tokenizer, self.settings, is_training, self.token_types,
                                       progress)


def features(run: Run, dataset: Dataset, is_training: bool, cache_path: str | None) -> tuple[FeatureTable, FeatureReport, str]:
    """The dataset's windows and their cache key, from the feature cache while it is valid (`cache_path`, else
    the shared cache folder); an input error names the file, and mostly unknown tokens are refused."""
    def build() -> tuple[FeatureTable, FeatureReport]:
        try:
            return run.build(dataset.questions, is_training, run.accelerator.is_local_main_process)
        except ExpmrcError as exc:
            raise ExpmrcError(f"{dataset.path}: {exc}") from None

    settings = {"task": run.task.kind, "is_training": is_training, "token_types": run.token_types,
                **run.settings.feature_dict()}
    key = cache_key(run.tokenizer, settings, dataset.path)
    path = cache_path or shared_cache_path(run.args.cache_dir, key, "train" if is_training else "predict")
    table, report = cached_features(path, key, build, run.accelerator)
    logger.info(f"{dataset.path}: {report.summary()}")
    if is_training and len(table) == 0:
        raise ExpmrcError(f"{dataset.path}: no training features: none of its {len(dataset.questions)} questions "
                          f"gave a window to train on ({report.summary()})")
    share = 100 * report.unknown_share
    if report.unknown_share >= UNKNOWN_REFUSED and not run.args.allow_unknown_tokens:
        raise ExpmrcError(f"{dataset.path}: {share:.1f}% of its tokens are the tokenizer's unknown token: the "
                          "vocabulary or casing does not fit this language (pass --allow_unknown_tokens True to run "
                          "anyway)")
    if report.unknown_share > 0.05:
        logger.warning(f"warning: {share:.1f}% of the tokens of {dataset.path} are the unknown "
                       "token: is the tokenizer's casing or vocabulary right for this language?")
    return table, report, key


def save_model(model: Any, tokenizer: Any, folder: Path, record: dict[str, Any]) -> None:
    """Write the fine-tuned model and its tokenizer as a complete Hugging Face folder, atomically."""
    model.config.expmrc = record
    with atomic_directory(str(folder), overwrite=True) as staging:
        model.save_pretrained(str(staging))
        tokenizer.save_pretrained(str(staging))


def predict_only_settings(task: BaselineTask, args: argparse.Namespace, record: dict[str, Any], where: str,
                          given: set[str]) -> TaskSettings:
    """The settings a predict-only run uses: the fine-tuned model's recorded ones, except those the command
    line gives explicitly; the flags' when the model records none (a model that was never fine-tuned here)."""
    flags = TaskSettings.from_args(args)
    if "settings" not in record:
        return flags
    recorded = task.spec.settings_from_record(record["settings"], where)
    chosen = {name: getattr(flags if name in given else recorded, name) for name in recorded.as_dict()}
    differing = [f"{name} {getattr(recorded, name)}" for name in sorted(given & set(chosen))
                 if chosen[name] != getattr(recorded, name)]
    if differing:
        logger.info(f"predicting with settings other than the model was trained with (its {', '.join(differing)})")
    return TaskSettings(**chosen)


def predict_destination(output: Path, args: argparse.Namespace) -> Path:
    """Where predictions and the run record go: OUTPUT_DIR, or OUTPUT_DIR/predict-only for a predict-only run
    into a training run's folder, whose record and predictions are kept (it says so)."""
    if args.do_train:
        return output
    previous = read_run_info(str(output))
    flags = previous.get("flags") if previous else None
    if not (isinstance(flags, dict) and flags.get("do_train")):
        return output
    logger.info(f"{output} holds a training run: its {RUN_INFO} and predictions are kept; this predict-only run "
                f"writes to {output / PREDICT_ONLY_DIR}")
    return output / PREDICT_ONLY_DIR


def refuse_other_settings(run: Run, trained: Path) -> None:
    """One line when a training run would replace a finished run's model trained with other settings, unless
    --overwrite_output_dir."""
    if run.args.overwrite_output_dir or not (trained / "config.json").is_file() or already_trained(trained, run.signature):
        return
    previous = run.previous or {}
    if previous.get("status") != "finished":
        return
    recorded = previous.get("flags")
    before: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    now = flag_values(run.args)
    changed = [f"--{k} {before.get(k)!r} -> {now[k]!r}" for k in sorted(now)
               if k not in NOT_TRAINING and k in before and before[k] != now[k]]
    what = f" ({', '.join(changed[:4])})" if changed else ""
    raise ExpmrcError(f"{run.output}: holds a finished run trained with other settings{what}; pass "
                      "--overwrite_output_dir True to train again and replace its model, or use a new --output_dir")


def start_run(task: BaselineTask, argv: list[str] | None) -> tuple[Run, Dataset | None, Dataset | None]:
    """Parse and check the flags and inputs, make the run directory and the accelerator; nothing loaded yet."""
    args = task.parser().parse_args(argv)
    check_flags(args)
    settings = TaskSettings.from_args(args)
    train_set = task.load(args.train_file, args.task_name) if args.do_train else None
    predict_set = task.load(args.predict_file, args.task_name) if args.do_predict else None
    output = check_outputs(args)
    if args.select_and_forget and args.do_predict and not args.do_train:
        answerer_folder(output)
    config = train_config(args)
    accelerator = make_accelerator(config, use_tpu=args.use_tpu)
    setup_logging(accelerator.is_local_main_process)
    ignored = ignored_flags(args)
    if ignored:
        logger.info(f"ignored (original TPU-era flags, not needed here): {' '.join(ignored)}")
    info: dict[str, Any] = {"task": task.kind, "task_name": args.task_name,
                            "predict_file": predict_set.path if predict_set else args.predict_file,
                            "train_file": train_set.path if train_set else args.train_file,
                            "loss_lambda": float(args.loss_lambda), "rand_seed": int(args.rand_seed),
                            "status": "running", "global_step": 0, "mixed_precision": accelerator.mixed_precision,
                            "precision": precision_record(config, accelerator), "flags": flag_values(args),
                            "schema": SCHEMA, "environment": environment(accelerator.device.type),
                            **coupling_settings(args)}
    run = Run(task, args, settings, output, config, accelerator, info, previous=read_run_info(str(output)))
    return run, train_set, predict_set


def load_model(run: Run, source: ModelSource, given: set[str]) -> Any:
    """The task model from `source`, with the run's loss settings; a predict-only run takes the settings the
    model records, and is recorded under them."""
    model, report = load_task_model(run.task.model_class, source)
    logger.info(f"model {source.name} ({type(model.base_model).__name__}): {report.summary()}")
    run.tokenizer = source.tokenizer
    record = getattr(model.config, "expmrc", None) or {}
    check_schema(record, f"{source.name}/config.json")
    args, info = run.args, run.info
    if not args.do_train:  # predictions of a fine-tuned model are recorded under the settings that trained it
        run.settings = predict_only_settings(run.task, args, record, f"{source.name}/config.json", given)
        for key in ("loss_lambda", "rand_seed", *COUPLING_KEYS):
            info[key] = record.get(key, info[key])
        info["model"] = record.get("base_model", info["model"])
        if record.get("select_and_forget") and not args.select_and_forget:
            logger.warning(f"warning: {source.name} is the selector of a Select & Forget run; predicting with it "
                           "alone (pass --select_and_forget True to answer from its evidence as trained)")
        if not record:
            logger.warning(f"warning: {source.name} is not a fine-tuned {run.task.kind} model (train first, or point "
                           "--model_name_or_path at a fine-tuned folder): predictions will be meaningless")
    usable = model.usable_length()
    if run.settings.max_seq_length > usable:
        raise ExpmrcError(f"--max_seq_length {run.settings.max_seq_length} exceeds the {usable} positions the model has")
    model.loss_lambda = args.loss_lambda
    model.coupling = (args.coupling_c1, args.coupling_c2, args.coupling_c3) if args.coupling_loss else None
    run.token_types = uses_token_types(run.tokenizer, model.config)
    info["global_step"] = int(record.get("global_step", 0))
    info["settings"] = run.settings.as_dict()
    # tensor-core shapes on GPUs; on CPU padding buys nothing (a compiled run's training pads to its buckets)
    run.pad_multiple = 8 if run.accelerator.device.type == "cuda" else 1
    return model


def saved_record(run: Run, source: ModelSource) -> dict[str, Any]:
    """What the fine-tuned folder's config.json records about the run that trained it."""
    args = run.args
    return {"schema": SCHEMA, "task": run.task.kind, "loss_lambda": args.loss_lambda, "rand_seed": args.rand_seed,
            "base_model": source.name, **coupling_settings(args), "settings": run.settings.as_dict(),
            "mixed_precision": run.accelerator.mixed_precision, "predict_batch_size": args.predict_batch_size,
            "training_signature": run.signature}


def train_phase(run: Run, model: Any, train_set: Dataset, source: ModelSource) -> Any:
    """Train on the training set (or reuse OUTPUT_DIR/model when it holds this run's result) and save the model."""
    args, trained = run.args, run.output / MODEL_DIR
    table, train_report, key = features(run, train_set, True, args.train_tfrecord)
    run.info["train_features"] = train_report.as_dict()
    run.signature = training_signature(args, key)
    refuse_other_settings(run, trained)
    if already_trained(trained, run.signature):  # the final weights are in model/, not in a checkpoint
        logger.info(f"{trained} already holds the result of this training run; not training again")
        model, _ = load_task_model(run.task.model_class, resolve_source(str(trained)))
        model.loss_lambda = args.loss_lambda
        run.info["global_step"] = int(model.config.expmrc.get("global_step", 0))
        return model
    result = train(model, run.windows(table, True), run.config, run.accelerator)
    run.info["global_step"] = result.global_step
    run.info["timing"] = {"train_seconds": round(result.seconds, 3), "steps_run": result.global_step - result.resumed_from,
                          "compile_seconds": round(result.compile_seconds, 3),
                          "compiled_shapes": [list(shape) for shape in result.compiled_shapes],
                          "checkpoint_seconds": round(result.checkpoint_seconds, 3)}
    if result.micro_batch:
        run.info["per_device_micro_batch"] = result.micro_batch
    model = run.accelerator.unwrap_model(model, keep_torch_compile=False)
    if run.main:
        save_model(model, run.tokenizer, trained, {**saved_record(run, source), "global_step": result.global_step})
        if not args.keep_final_checkpoints:  # model/ holds the result; checkpoints only resume
            shutil.rmtree(run.output / CHECKPOINT_DIR, ignore_errors=True)
    run.accelerator.wait_for_everyone()
    return model


def select_forget(run: Run) -> SelectAndForget:
    """The Select & Forget phase of this run (expmrc/training/select_forget.py)."""
    s = run.settings
    return SelectAndForget(run.output, run.accelerator, lambda questions, is_training: run.build(questions, is_training)[0],
                           run.tokenizer.pad_token_id or 0, run.args.predict_batch_size,
                           (s.n_best_size, s.max_answer_length, s.max_evidence_length))


def answerer_phase(run: Run, forget: SelectAndForget, selector: Any, train_set: Dataset, source: ModelSource) -> Any:
    """Select the training questions' evidence with the trained selector, then train (or reuse) the answerer."""
    def windows() -> FeatureTable:  # the training set's prediction windows, for the selector
        return features(run, train_set, False, None)[0]

    info, answerers = run.info, run.output / ANSWERER_DIR
    # everything the selection depends on: the selector's training (signature, step) and the decoding settings
    selection_key = cache_key(run.tokenizer, {"selector_step": info["global_step"], "training_signature": run.signature,
                                              **run.settings.as_dict()}, train_set.path)
    questions, info["select_and_forget_training"] = forget.select(selector, train_set.questions, windows, selection_key)
    if already_trained(answerers, run.signature):
        logger.info(f"{answerers} already holds the trained answerer; not training it again")
        answerer, _ = load_task_model(run.task.model_class, resolve_source(str(answerers)))
        info["answerer_global_step"] = int(answerer.config.expmrc.get("global_step", 0))
    else:
        answerer, result = forget.train_answerer(lambda: load_task_model(run.task.model_class, source)[0], questions,
                                                 run.config)
        info["answerer_global_step"] = result.global_step
        if run.main:
            save_model(answerer, run.tokenizer, answerers,
                       {**saved_record(run, source), "role": "answerer", "loss_lambda": 0.0, "coupling_loss": False,
                        "coupling_c": None, "global_step": result.global_step,
                        "selection": info["select_and_forget_training"]})
            if not run.args.keep_final_checkpoints:
                shutil.rmtree(run.output / ANSWERER_RUN_DIR / CHECKPOINT_DIR, ignore_errors=True)
    run.accelerator.wait_for_everyone()
    return answerer


def predict_phase(run: Run, model: Any, predict_set: Dataset, forget: SelectAndForget | None, answerer: Any,
                  destination: Path) -> None:
    """Predict, decode, write the predictions into `destination` and log their scores."""
    s = run.settings
    table, report, _ = features(run, predict_set, False, run.args.predict_tfrecord)
    run.info["predict_features"] = report.as_dict()
    outputs = predict(model, run.windows(table, False), run.args.predict_batch_size, run.accelerator)
    predictions, nbest = run.task.spec.decode(predict_set.questions, table, outputs, s.n_best_size,
                                              s.max_answer_length, s.max_evidence_length)
    if forget is not None:
        if answerer is None:
            answerer, _ = load_task_model(run.task.model_class, resolve_source(str(answerer_folder(run.output))))
        predictions, nbest = forget.answer(answerer, predict_set.questions, predictions, nbest)
    if run.main:
        write_predictions(str(destination), predictions, nbest)
        logger.info(f"wrote {len(predictions)} predictions to {destination / PREDICTIONS_FILE}")
        log_scores(predict_set, predictions)


def run_baseline(task: BaselineTask, argv: list[str] | None = None) -> int:
    """Parse the flags and run `task`: train, save, predict, decode, write, score; returns the exit status."""
    run, train_set, predict_set = start_run(task, argv)
    trained = run.output / MODEL_DIR
    source = model_source(run.args, trained)
    run.info["model"] = source.name
    destination = predict_destination(run.output, run.args)
    if run.main:
        destination.mkdir(parents=True, exist_ok=True)
    with recorded_run(str(destination), run.info, run.main,
                      lambda: max(checkpoint_steps(run.args.output_dir), default=0)):
        model = load_model(run, source, given_flags(argv))
        forget = select_forget(run) if run.args.select_and_forget else None
        answerer = None
        if train_set is not None:
            model = train_phase(run, model, train_set, source)
            if forget is not None:  # the answerer phase: docs/coupling.md, expmrc/training/select_forget.py
                answerer = answerer_phase(run, forget, model, train_set, source)
        if predict_set is not None:
            predict_phase(run, model, predict_set, forget, answerer, destination)
        run.accelerator.wait_for_everyone()
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
