"""One baseline run end to end, the same for the span-extraction and the multiple-choice script.

Flags in, run directory out (`expmrc.data.runs`): every input checked before any work, then
train on --train_file (resuming from the newest checkpoint), save the fine-tuned model to
OUTPUT_DIR/model, predict on --predict_file, decode, write dev_predictions.json and dev_nbest.json,
print the scores, and record the run in run_info.json. A --do_predict run without --do_train uses the
model a previous training run left in OUTPUT_DIR/model, as the original scripts used the output
directory's latest checkpoint. What differs between the tasks is a `BaselineTask`
(`expmrc/training/span_task.py`, `expmrc/training/choice_task.py`).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from expmrc.data.datasets import Dataset, load_dataset
from expmrc.data.io import json_kind
from expmrc.data.io import atomic_directory, check_output_path
from expmrc.data.runs import (ANSWERER_DIR, ANSWERER_RUN_DIR, CHECKPOINT_DIR, MODEL_DIR, PREDICT_ONLY_DIR,
                              PREDICTIONS_FILE, RUN_INFO, SCHEMA, Environment, NewerRecord, Phases, RunRecord,
                              recorded_run)
from expmrc.data.submissions import write_predictions
from expmrc.errors import ExpmrcError
from expmrc.features.cache import cache_key, cached_features, shared_cache_path
from expmrc.features.windows import FeatureReport, FeatureTable, uses_token_types
from expmrc.inference.buckets import BucketPlan
from expmrc.inference.saved import Prediction, SavedModel
from expmrc.inference.task_predictor import TaskPredictor
from expmrc.logs import setup_logging
from expmrc.models.backbones import ModelSource, check_model_folder, load_task_model, resolve_source
from expmrc.models.unpadded import resolve_attention
from expmrc.scoring.scorer import score
from expmrc.tasks import TaskSettings, TaskSpec
from expmrc.training.config import BaselineConfig, Paths
from expmrc.training.curves import check_tracker_dir, log_dev_scores, start_curves
from expmrc.training.flags import parse_config
from expmrc.training.graphs import resolve_graphs
from expmrc.training.loop import (TrainConfig, checkpoint_steps, device_name, make_accelerator, precision_record,
                                  run_device,
                                  train)
from expmrc.training.select_forget import SelectAndForget, answerer_folder

if TYPE_CHECKING:
    from accelerate import Accelerator
    from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

    from expmrc.models.heads import TaskModel

logger = logging.getLogger("expmrc")
UNKNOWN_REFUSED = 0.5  # share of unknown tokens from which a run is refused (a vocabulary that does not fit)


@dataclass(frozen=True)
class BaselineTask:
    """A baseline script: the task layer's spec (settings, features, model, decoder) and its flags."""

    spec: TaskSpec
    parser: Callable[[], argparse.ArgumentParser]  # the shared flags with the task's defaults and extra flags

    @property
    def kind(self) -> str:
        """"span" or "choice": run_info.json's `task`, and what the saved model records."""
        return self.spec.kind

    @property
    def model_class(self) -> type:
        """The task's model class (a TaskModel subclass)."""
        return self.spec.model_class


# flags that change neither the training features nor the trained weights
NOT_TRAINING = {"do_predict", "predict_file", "predict_tfrecord", "predict_batch_size", "n_best_size",
                "max_answer_length", "max_evidence_length", "output_dir", "keep_checkpoints", "keep_final_checkpoints",
                "logging_steps", "save_checkpoints_steps", "cache_dir", "train_tfrecord", "per_device_micro_batch",
                "tpu_name", "tpu_zone", "overwrite_output_dir", "allow_unknown_tokens", "compile_buckets",
                "torch_compile_mode", "report_to"}


def training_signature(config: BaselineConfig, features_key: str) -> str:
    """A hash of what fixes the trained weights: the training features' cache key and every training flag."""
    flags = {k: v for k, v in config.flags.items() if k not in NOT_TRAINING}
    return hashlib.sha256(json.dumps([features_key, flags], sort_keys=True, default=str).encode()).hexdigest()


def already_trained(trained: Path, signature: str) -> bool:
    """Whether OUTPUT_DIR/model is the finished result of training with this signature (a rerun of a finished run)."""
    try:
        config = json.loads((trained / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config.get("expmrc"), dict) and config["expmrc"].get("training_signature") == signature


COUPLING_KEYS = ("coupling_loss", "coupling_c")


def check_outputs(paths: Paths) -> Path:
    """The run directory, created, once every output path was checked (one line naming a bad one)."""
    output = check_output_path(paths.output_dir, "dir")
    for cache in (paths.train_tfrecord, paths.predict_tfrecord):
        if cache:
            check_output_path(cache, "file", [paths.train_file or "", paths.predict_file or ""])
    if paths.cache_dir:
        check_output_path(paths.cache_dir, "dir")
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExpmrcError(f"{paths.output_dir}: cannot create --output_dir ({exc.strerror})") from None
    return output


def reruns_saved(config: BaselineConfig, trained: Path) -> bool:
    """Whether the run predicts with the model a training run left in OUTPUT_DIR/model (a predict-only rerun)."""
    return not config.do_train and (trained / "config.json").is_file()


def model_source(config: BaselineConfig, trained: Path) -> ModelSource:
    """Where the model comes from: OUTPUT_DIR/model for a predict-only rerun, else the model flags."""
    if reruns_saved(config, trained):
        return resolve_source(str(trained))
    p = config.paths
    return resolve_source(p.model_name_or_path, p.bert_config_file, p.vocab_file, p.init_checkpoint,
                          config.do_lower_case)


def saved_model(config: BaselineConfig, trained: Path) -> SavedModel:
    """The record of the model the run starts from (`model_source`'s): OUTPUT_DIR/model's for a predict-only rerun,
    else that of the folder --model_name_or_path names; none for a Hub id or an original release's files."""
    if reruns_saved(config, trained):
        return SavedModel.read(trained)
    name = config.paths.model_name_or_path
    if name and (Path(name) / "config.json").is_file():
        return SavedModel.read(Path(name))
    return SavedModel(None)


def given_prediction(config: BaselineConfig) -> dict[str, Any]:
    """The prediction settings the command line gives explicitly, by flag name: what overrides a saved model's
    record (`SavedModel.choose`)."""
    values = {**config.task.as_dict(), "predict_batch_size": config.training.predict_batch_size,
              "mixed_precision": config.training.mixed_precision, "attention": config.training.attention,
              "allow_unknown_tokens": config.allow_unknown_tokens}
    return {name: value for name, value in values.items() if name in config.given}


def predicting_with(config: BaselineConfig, chosen: Prediction) -> BaselineConfig:
    """A predict-only run's configuration under the settings `SavedModel.choose` settled."""
    training = dataclasses.replace(config.training, predict_batch_size=chosen.batch_size,
                                   mixed_precision=chosen.precision, attention=chosen.attention)
    return dataclasses.replace(config, task=chosen.settings, training=training,
                               allow_unknown_tokens=chosen.allow_unknown_tokens)


@dataclass
class BaselineRun:
    """One baseline run in progress: its flags, settings, device, model and run record."""

    task: BaselineTask
    config: BaselineConfig
    settings: TaskSettings  # the config's (for a predict-only run, as `SavedModel.choose` settled them)
    output: Path
    accelerator: Accelerator
    record: RunRecord  # what run_info.json will hold
    # the source's, set before any phase reads it (None only while the run starts)
    tokenizer: PreTrainedTokenizerFast = None  # type: ignore[assignment]
    token_types: bool = True
    signature: str = ""
    previous: RunRecord | None = None  # the record OUTPUT_DIR held before this run started (checked)
    saved: SavedModel = field(default_factory=lambda: SavedModel(None))  # the model's record (checked)
    allow_unknown_tokens: bool = False  # the config's, as `settings`
    predict_batch_size: int = 32  # the same
    attention: str = "padded"  # the attention path --attention resolved to on this device (`resolve_attention`)
    graphs: bool = False  # whether --cuda_graphs resolved to on for this device and path (`resolve_graphs`)
    phases: Phases = field(default_factory=Phases)  # where the run's time goes (run_info.json's timing.phases)
    buckets: BucketPlan | None = None  # the token buckets predictions are laid out in (a graphed run's)

    @property
    def info(self) -> dict[str, Any]:
        """The run's own settings and results in its record, which the phases fill in."""
        return self.record.settings

    @property
    def main(self) -> bool:
        """Whether this process writes files."""
        return bool(self.accelerator.is_main_process)

    @property
    def predictor(self) -> TaskPredictor:
        """The run's task predictor: its windows, padding, prediction loop and decoding, under its settings."""
        return TaskPredictor.of_run(self.task.spec, self.tokenizer, self.settings, self.token_types, self.accelerator,
                                    self.predict_batch_size, self.buckets)

    def configured(self, model: TaskModel) -> TaskModel:
        """`model` on the run's attention path, its kernels fused where --fused_kernels asks; the run record says
        which path the encoder takes and, when it keeps the padded one, why."""
        training = self.config.training
        why = model.use_attention(self.attention, training.fused_kernels, training.compile_backend)
        record = self.info["attention"]
        if why and record["path"] == "unpadded":
            record.update(path="padded", why=why, fused_kernels=False)
            (logger.warning if training.attention == "unpadded" else logger.info)(f"attention: {why}")
        if why and self.graphs:  # the encoder keeps the padded path: no graphs (`on` is refused)
            self.graphs, graphs_why = resolve_graphs(training.cuda_graphs, self.accelerator.device.type,
                                                     str(self.accelerator.mixed_precision), "padded")
            self.info["cuda_graphs"].update(used=False, why=graphs_why)
        return model


def features(run: BaselineRun, dataset: Dataset, is_training: bool, cache_path: str | None) -> tuple[FeatureTable, FeatureReport, str]:
    """The dataset's windows and their cache key, from the feature cache while it is valid (`cache_path`, else
    the shared cache folder); an input error names the file, and mostly unknown tokens are refused."""
    def build() -> tuple[FeatureTable, FeatureReport]:
        try:
            return run.predictor.features(dataset.questions, is_training, run.accelerator.is_local_main_process)
        except ExpmrcError as exc:
            raise ExpmrcError(f"{dataset.path}: {exc}") from None

    kind = "train" if is_training else "predict"
    with run.phases.phase(f"{kind}_features"):
        key = features_key(run, dataset, is_training)
        path = cache_path or shared_cache_path(run.config.paths.cache_dir, key, kind)
        table, report = cached_features(path, key, build, run.accelerator)
    logger.info(f"{dataset.path}: {report.summary()}")
    if is_training and len(table) == 0:
        raise ExpmrcError(f"{dataset.path}: no training features: none of its {len(dataset.questions)} questions "
                          f"gave a window to train on ({report.summary()})")
    share = 100 * report.unknown_share
    if report.unknown_share >= UNKNOWN_REFUSED and not run.allow_unknown_tokens:
        raise ExpmrcError(f"{dataset.path}: {share:.1f}% of its tokens are the tokenizer's unknown token: the "
                          "vocabulary or casing does not fit this language (pass --allow_unknown_tokens True to run "
                          "anyway)")
    if report.unknown_share > 0.05:
        logger.warning(f"warning: {share:.1f}% of the tokens of {dataset.path} are the unknown "
                       "token: is the tokenizer's casing or vocabulary right for this language?")
    return table, report, key


def save_model(model: TaskModel, tokenizer: PreTrainedTokenizerBase, folder: Path, record: dict[str, Any]) -> None:
    """Write the fine-tuned model and its tokenizer as a complete Hugging Face folder, atomically."""
    model.config.expmrc = record
    with atomic_directory(str(folder), overwrite=True) as staging:
        model.save_pretrained(str(staging))
        tokenizer.save_pretrained(str(staging))


def features_key(run: BaselineRun, dataset: Dataset, is_training: bool) -> str:
    """The feature cache key of a dataset's windows under this run's tokenizer and settings."""
    settings = {"task": run.task.kind, "is_training": is_training, "token_types": run.token_types,
                **run.settings.feature_dict()}
    return cache_key(run.tokenizer, settings, dataset.path)


def predict_destination(run: BaselineRun) -> Path:
    """Where predictions and the run record go: OUTPUT_DIR, or OUTPUT_DIR/predict-only for a predict-only run
    into a training run's folder, whose record and predictions are kept (it says so)."""
    output = run.output
    if run.config.do_train or run.previous is None or not run.previous.get("flags", {}).get("do_train"):
        return output
    logger.info(f"{output} holds a training run: its {RUN_INFO} and predictions are kept; this predict-only run "
                f"writes to {output / PREDICT_ONLY_DIR}")
    return output / PREDICT_ONLY_DIR


def refuse_other_settings(run: BaselineRun, trained: Path) -> None:
    """One line when a training run would replace a finished run's model trained with other settings, unless
    --overwrite_output_dir."""
    if run.config.overwrite_output_dir or not (trained / "config.json").is_file() or already_trained(trained, run.signature):
        return
    if run.previous is None or run.previous.status != "finished":
        return
    before: dict[str, Any] = run.previous.get("flags", {})
    now = run.config.flags
    changed = [f"--{k} {before.get(k)!r} -> {now[k]!r}" for k in sorted(now)
               if k not in NOT_TRAINING and k in before and before[k] != now[k]]
    what = f" ({', '.join(changed[:4])})" if changed else ""
    raise ExpmrcError(f"{run.output}: holds a finished run trained with other settings{what}; pass "
                      "--overwrite_output_dir True to train again and replace its model, or use a new --output_dir")


def previous_record(folder: Path, overwrite: bool, whole: bool = True) -> RunRecord | None:
    """The record an earlier run left in `folder`, checked before anything is written. One line naming the file when
    it cannot be read, is of the wrong shape or (`whole`) is not a training run's or lacks its status and flags, which
    a rerun needs to keep or replace it; with --overwrite_output_dir True it is replaced instead. One written by a
    newer expmrc is refused even then: nothing is written into its folder."""
    path = folder / RUN_INFO
    try:
        previous = RunRecord.read(folder)
        if previous is not None and whole:
            if previous.kind != "baseline":
                raise ExpmrcError(f"{path}: records an `expmrc {previous.kind}` run, not a training run")
            if not previous.status or not isinstance(previous.get("flags"), dict):
                missing, value = ("flags", previous.get("flags")) if previous.status else ("status", None)
                raise ExpmrcError(f"{path}: its `{missing}` is {json_kind(value)}, not what a training run records")
        return previous
    except NewerRecord:
        raise
    except ExpmrcError as exc:
        if not overwrite:
            raise ExpmrcError(f"{exc}; pass --overwrite_output_dir True to replace the run in {folder}, or use a new "
                              "--output_dir") from None
        logger.warning(f"warning: {exc}; replaced, as --overwrite_output_dir True asks")
        return None


def check_model(run: BaselineRun, source: ModelSource, train_set: Dataset | None) -> None:
    """Settle what depends on the model before anything is written: its tokenizer, and whether training would
    replace a finished run's model trained with other settings."""
    run.tokenizer = source.tokenizer
    run.token_types = uses_token_types(source.tokenizer, source.config)
    record = run.saved.record
    if not run.config.do_train and run.graphs and record.get("graph_buckets") is not None:
        run.buckets = BucketPlan.from_record(record["graph_buckets"], run.saved.where)  # as its graphed run predicted
    if train_set is not None:
        run.signature = training_signature(run.config, features_key(run, train_set, True))
        refuse_other_settings(run, run.output / MODEL_DIR)


def start_run(task: BaselineTask, argv: list[str] | None) -> tuple[BaselineRun, Dataset | None, Dataset | None]:
    """Parse the flags into the run's configuration, check the inputs and the run directory's record, make the run
    directory and the accelerator; nothing loaded yet."""
    config = parse_config(task.kind, task.parser(), argv)
    paths = config.paths
    train_set = load_dataset(paths.train_file or "", kind=task.kind, fallback=config.task_name) \
        if config.do_train else None
    predict_set = load_dataset(paths.predict_file or "", kind=task.kind, fallback=config.task_name) \
        if config.do_predict else None
    if paths.model_name_or_path:  # a folder that is not there, or damaged: before the run says or makes anything
        check_model_folder(paths.model_name_or_path)
    existed = Path(paths.output_dir).exists()
    output = check_outputs(paths)
    try:
        return configured_run(task, config, output, train_set, predict_set)
    except (ExpmrcError, KeyboardInterrupt):
        if not existed:  # made by this run, which is refused before it starts: nothing of it is left behind
            shutil.rmtree(output, ignore_errors=True)
        raise


def configured_run(task: BaselineTask, config: BaselineConfig, output: Path, train_set: Dataset | None,
                   predict_set: Dataset | None) -> tuple[BaselineRun, Dataset | None, Dataset | None]:
    """The run in its directory: the directory's record, the saved model's settings, the accelerator, the attention
    path and whether CUDA graphs run (a setting this device cannot run is refused here, in one line)."""
    paths = config.paths
    previous = previous_record(output, config.overwrite_output_dir)
    if config.select_and_forget and config.do_predict and not config.do_train:
        answerer_folder(output)
    saved = saved_model(config, output / MODEL_DIR)
    notes: tuple[str, ...] = ()
    if not config.do_train:  # a saved model predicts with what it was trained with (`SavedModel.choose`)
        chosen = saved.choose(task.spec, given_prediction(config), run_device(config.use_tpu))
        config, notes = predicting_with(config, chosen), chosen.notes
    accelerator = make_accelerator(config.training, config.use_tpu, None if config.report_to == "none"
                                   else config.report_to, str(output))
    setup_logging(accelerator.is_local_main_process)
    for note in notes:
        logger.info(note)
    if config.ignored:
        logger.info(f"ignored (original TPU-era flags, not needed here): {' '.join(config.ignored)}")
    info: dict[str, Any] = {"task": task.kind, "task_name": config.task_name,
                            "predict_file": predict_set.path if predict_set else paths.predict_file,
                            "train_file": train_set.path if train_set else paths.train_file,
                            "rand_seed": int(config.training.seed), "global_step": 0,
                            "mixed_precision": accelerator.mixed_precision,
                            "precision": precision_record(config.training, accelerator), "flags": config.flags,
                            **config.recorded()}
    record = RunRecord("baseline", info, environment=Environment.here(accelerator.device.type),
                       command=list(config.command))
    run = BaselineRun(task, config, config.task, output, accelerator, record, previous=previous, saved=saved,
                      allow_unknown_tokens=config.allow_unknown_tokens,
                      predict_batch_size=config.training.predict_batch_size)
    run.attention, info["attention"] = attention_path(config.training, accelerator)
    run.graphs, why = resolve_graphs(config.training.cuda_graphs, accelerator.device.type,
                                     str(accelerator.mixed_precision), run.attention, accelerator.num_processes,
                                     config.training.torch_compile, info["attention"]["fused_kernels"])
    info["cuda_graphs"] = {"requested": config.training.cuda_graphs, "used": run.graphs, "why": why}
    logger.info(f"CUDA graphs: {'on' if run.graphs else 'off'} ({why})")
    return run, train_set, predict_set


def attention_path(training: TrainConfig, accelerator: Accelerator) -> tuple[str, dict[str, Any]]:
    """The attention path --attention resolves to on the run's device and precision, and what run_info.json records
    of it (asked, taken, why, whether the kernels are fused); --fused_kernels on the padded path is said and
    ignored."""
    path, why = resolve_attention(training.attention, accelerator.device.type, accelerator.mixed_precision,
                                  training.torch_compile)
    fused = training.fused_kernels and path == "unpadded"
    if training.fused_kernels and not fused:
        logger.warning(f"warning: --fused_kernels True ignored: the run takes the padded path ({why})")
    logger.info(f"attention: {path} ({why})" + ("; small kernels fused into compiled regions" if fused else ""))
    return path, {"requested": training.attention, "path": path, "why": why, "fused_kernels": fused}


def load_model(run: BaselineRun, source: ModelSource) -> TaskModel:
    """The task model from `source`, built with the run's loss settings; a predict-only run is recorded under the
    settings the model records."""
    config = run.config
    model, report = load_task_model(run.task.model_class, source, config.loss)
    run.configured(model)
    logger.info(f"model {source.name} ({type(model.base_model).__name__}): {report.summary()}")
    record, info = run.saved.record, run.info
    if not config.do_train:  # predictions of a fine-tuned model are recorded under the settings that trained it
        for key in ("loss_lambda", "rand_seed", *COUPLING_KEYS):
            info[key] = record.get(key, info[key])
        info["model"] = record.get("base_model", info["model"])
        if record.get("select_and_forget") and not config.select_and_forget:
            logger.warning(f"warning: {source.name} is the selector of a Select & Forget run; predicting with it "
                           "alone (pass --select_and_forget True to answer from its evidence as trained)")
        if not record:
            logger.warning(f"warning: {source.name} is not a fine-tuned {run.task.kind} model (train first, or point "
                           "--model_name_or_path at a fine-tuned folder): predictions will be meaningless")
    run.predictor.check_fits(model, "--")
    info["global_step"] = int(record.get("global_step", 0))
    info["settings"] = run.settings.as_dict()
    return model


def saved_record(run: BaselineRun, source: ModelSource) -> dict[str, Any]:
    """What the fine-tuned folder's config.json records about the run that trained it."""
    config = run.config
    return {"schema": SCHEMA, "task": run.task.kind, "rand_seed": config.training.seed, "base_model": source.name,
            **config.loss.as_dict(), "select_and_forget": config.select_and_forget, "settings": run.settings.as_dict(),
            "mixed_precision": run.accelerator.mixed_precision, "attention": run.info["attention"]["path"],
            "predict_batch_size": run.predict_batch_size, "allow_unknown_tokens": run.allow_unknown_tokens,
            "training_signature": run.signature, "graph_buckets": run.buckets.as_dict() if run.buckets else None}


def train_phase(run: BaselineRun, model: TaskModel, train_set: Dataset, source: ModelSource) -> TaskModel:
    """Train on the training set (or reuse OUTPUT_DIR/model when it holds this run's result) and save the model."""
    config, trained = run.config, run.output / MODEL_DIR
    table, train_report, _ = features(run, train_set, True, config.paths.train_tfrecord)
    run.info["train_features"] = train_report.as_dict()
    if already_trained(trained, run.signature):  # the final weights are in model/, not in a checkpoint
        logger.info(f"{trained} already holds the result of this training run; not training again")
        model = run.configured(load_task_model(run.task.model_class, resolve_source(str(trained)), config.loss)[0])
        run.info["global_step"] = int(model.config.expmrc.get("global_step", 0))
        if run.graphs and model.config.expmrc.get("graph_buckets") is not None:
            run.buckets = BucketPlan.from_record(model.config.expmrc["graph_buckets"], f"{trained}/config.json")
        return model
    with run.phases.phase("training"):
        result = train(model, run.predictor.windows(table, with_labels=True), config.training, run.accelerator)
    run.info["global_step"] = result.global_step
    run.info["cuda_graphs"] = result.graphs
    if result.graphs.get("used"):  # its predictions, and its model's, laid out in the same buckets
        run.buckets = BucketPlan.from_record(result.graphs["buckets"], "the run's token buckets")
    run.info["timing"] = {"train_seconds": round(result.seconds, 3), "steps_run": result.global_step - result.resumed_from,
                          "compile_seconds": round(result.compile_seconds, 3),
                          "compiled_shapes": [list(shape) for shape in result.compiled_shapes],
                          "checkpoint_seconds": round(result.checkpoint_seconds, 3)}
    if result.micro_batch:
        run.info["per_device_micro_batch"] = result.micro_batch
    model = run.accelerator.unwrap_model(model, keep_torch_compile=False)
    if run.main:
        with run.phases.phase("save_model"):
            save_model(model, run.tokenizer, trained, {**saved_record(run, source), "global_step": result.global_step})
            if not config.keep_final_checkpoints:  # model/ holds the result; checkpoints only resume
                shutil.rmtree(run.output / CHECKPOINT_DIR, ignore_errors=True)
    run.accelerator.wait_for_everyone()
    return model


def select_forget(run: BaselineRun) -> SelectAndForget:
    """The Select & Forget phase of this run (expmrc/training/select_forget.py)."""
    return SelectAndForget(run.output, run.accelerator, run.predictor)


def answerer_phase(run: BaselineRun, forget: SelectAndForget, selector: TaskModel, train_set: Dataset,
                   source: ModelSource) -> TaskModel:
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
        answerer = run.configured(load_task_model(run.task.model_class, resolve_source(str(answerers)))[0])
        info["answerer_global_step"] = int(answerer.config.expmrc.get("global_step", 0))
    else:
        answerer, result = forget.train_answerer(lambda: run.configured(load_task_model(run.task.model_class, source)[0]),
                                                 questions,
                                                 run.config.training)
        info["answerer_global_step"] = result.global_step
        if run.main:
            save_model(answerer, run.tokenizer, answerers,
                       {**saved_record(run, source), "role": "answerer", "loss_lambda": 0.0, "coupling_loss": False,
                        "coupling_c": None, "global_step": result.global_step,
                        "selection": info["select_and_forget_training"]})
            if not run.config.keep_final_checkpoints:
                shutil.rmtree(run.output / ANSWERER_RUN_DIR / CHECKPOINT_DIR, ignore_errors=True)
    run.accelerator.wait_for_everyone()
    return answerer


def predict_phase(run: BaselineRun, model: TaskModel, predict_set: Dataset, forget: SelectAndForget | None,
                  answerer: TaskModel | None,
                  destination: Path) -> None:
    """Predict, decode, write the predictions into `destination` and log their scores."""
    table, report, _ = features(run, predict_set, False, run.config.paths.predict_tfrecord)
    run.info["predict_features"] = report.as_dict()
    with run.phases.phase("prediction"):
        predicted = run.predictor.predict(model, predict_set.questions, table)
    predictions, nbest = predicted.predictions, predicted.nbest
    if forget is not None:
        if answerer is None:
            answerer = run.configured(load_task_model(run.task.model_class,
                                                      resolve_source(str(answerer_folder(run.output))))[0])
        predictions, nbest = forget.answer(answerer, predict_set.questions, predictions, nbest)
    if run.main:
        with run.phases.phase("writing"):
            write_predictions(str(destination), predictions, nbest)
        logger.info(f"wrote {len(predictions)} predictions to {destination / PREDICTIONS_FILE}")
        with run.phases.phase("scoring"):
            scores = log_scores(predict_set, predictions)
        if scores:
            log_dev_scores(run.accelerator, scores, run.info["global_step"])


def run_baseline(task: BaselineTask, argv: list[str] | None = None) -> int:
    """Parse the flags and run `task`: train, save, predict, decode, write, score; returns the exit status."""
    phases = Phases()
    with phases.phase("inputs"):
        run, train_set, predict_set = start_run(task, argv)
    run.phases = phases
    with phases.phase("model_load"):
        source = model_source(run.config, run.output / MODEL_DIR)
        run.info["model"] = source.name
        check_model(run, source, train_set)
        model = load_model(run, source)
    destination = predict_destination(run)
    if destination != run.output:
        previous_record(destination, run.config.overwrite_output_dir, whole=False)
    check_tracker_dir(run.config.report_to, destination)
    if run.main:  # every refusal came before this first write
        destination.mkdir(parents=True, exist_ok=True)
    begin_curves(run, train_set is not None, destination)
    try:
        with recorded_run(str(destination), run.record, run.main,
                          lambda: max(checkpoint_steps(run.config.paths.output_dir), default=0)):
            forget = select_forget(run) if run.config.select_and_forget else None
            answerer = None
            if train_set is not None:
                model = train_phase(run, model, train_set, source)
                if forget is not None:  # the answerer phase: docs/coupling.md, expmrc/training/select_forget.py
                    answerer = answerer_phase(run, forget, model, train_set, source)
            if predict_set is not None:
                predict_phase(run, model, predict_set, forget, answerer, destination)
            run.accelerator.wait_for_everyone()
            record_phases(run)
    finally:
        if run.config.report_to != "none":
            run.accelerator.end_training()
    return 0


def record_phases(run: BaselineRun) -> None:
    """The run's phases into its record's timing, and one log line of the time spent outside training."""
    phases = run.phases.as_dict()
    run.info.setdefault("timing", {}).update(phases=phases, device=device_name(run.accelerator.device))
    outside = {k: v for k, v in phases.items() if k not in ("training", "wall")}
    logger.info(f"{phases['wall']:.1f} s in all, {phases.get('training', 0.0):.1f} s of it training; the rest: "
                + ", ".join(f"{name.replace('_', ' ')} {seconds:.1f} s" for name, seconds in outside.items()))


def begin_curves(run: BaselineRun, trains: bool, destination: Path) -> None:
    """Start the run's tracker (--report_to), named by the run's folder: a run that trains hides the TensorBoard
    events an interrupted run wrote after the checkpoint it resumes from (`expmrc.training.curves`)."""
    purge = None
    if trains and not already_trained(run.output / MODEL_DIR, run.signature):
        purge = max(checkpoint_steps(run.config.paths.output_dir), default=0) + 1
    start_curves(run.accelerator, run.config.report_to, destination, str(destination), run.config.flags, purge)


def log_scores(dataset: Dataset, predictions: dict[str, dict[str, Any]]) -> dict[str, float] | None:
    """Log the leaderboard's figures for the predictions (the predict file carries gold answers) and return them
    (answer, evidence, overall), or None where they cannot be computed."""
    try:
        report = score(dataset, predictions)
        official = report.official()
    except ExpmrcError as exc:  # e.g. no NLTK data: the predictions are written, only the score is missing
        logger.warning(f"not scored: {exc}")
        return None
    logger.info(f"{dataset.path}: answer F1 {official['ANS_F1']}, evidence F1 {official['EVI_F1']}, "
                f"overall {official['ALL_F1']} ({official['TOTAL']} questions)")
    return {name: float(official[key]) for name, key in (("answer", "ANS_F1"), ("evidence", "EVI_F1"),
                                                          ("overall", "ALL_F1"))}
