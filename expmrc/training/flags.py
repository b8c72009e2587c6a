"""The flags of the baseline scripts: the original release's names and spellings, plus modern ones.

Users keep their shell scripts, so every original flag works unchanged, including `True`/`False`
strings as values (`--do_train=True`, `--do_train True`, or a bare `--do_train`). Defaults are the
original scripts' own, so an original command line that relies on a default gets the original
configuration: the window and decoding lengths come from the task layer's one set of defaults
(`expmrc.tasks.TaskSettings`), optimization from `TrainConfig`'s, the rest per task from `TASK_DEFAULTS`;
`parse_config` turns the flags into the run's typed configuration (`expmrc.training.config`), the one
place past which no Namespace goes; scripts/run_*.sh pass
the paper's settings explicitly. `--do_lower_case` defaults to None, "not given": an original vocab.txt is then read
cased, the original default False, and a Hugging Face tokenizer keeps its own casing
(`expmrc.models.backbones.resolve_source`). The original TPU-only flags are accepted and ignored
(`IGNORED_FLAGS`). Task scripts add their own extra flags to the parser.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from typing import Any

from expmrc.errors import ExpmrcError, OneLineParser, warn
from expmrc.models.heads import COUPLING_DEFAULTS, LossSettings
from expmrc.models.unpadded import ATTENTION_MODES
from expmrc.tasks import TASKS, TaskSettings
from expmrc.training.config import BaselineConfig, Paths
from expmrc.training.curves import REPORT_TO, check_report_to
from expmrc.training.graphs import GRAPH_MODES
from expmrc.training.loop import COMPILE_MODES, TrainConfig, default_buckets

TASK_DEFAULTS: dict[str, dict[str, Any]] = {  # the original run_se_mrc.py / run_mc_mrc.py defaults
    "span": {"loss_lambda": 0.1, "task_name": "squad"},
    "choice": {"loss_lambda": 0.1, "task_name": "race"},
}
# original flags with nothing to do here, and their defaults: a value other than these is logged as ignored
IGNORED_FLAGS: dict[str, Any] = {"tpu_name": None, "tpu_zone": None, "gcp_project": None, "master": None,
                                 "num_tpu_cores": 8, "iterations_per_loop": 1000, "verbose_logging": False}

_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


def str2bool(value: str | bool) -> bool:
    """`True`/`False` (any case, also 1/0, yes/no) as a bool, as the original absl flags accepted."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected True or False, got {value!r}")


def _bool_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, name: str, default: bool | None,
               help_text: str) -> None:
    parser.add_argument(f"--{name}", type=str2bool, nargs="?", const=True, default=default, metavar="True|False",
                        help=help_text)


def build_parser(task: str, prog: str | None = None, description: str | None = None) -> argparse.ArgumentParser:
    """The shared parser for a `span` or `choice` baseline script, with that task's defaults."""
    if task not in TASK_DEFAULTS:
        raise ValueError(f"task must be one of {sorted(TASK_DEFAULTS)}")
    defaults = TASK_DEFAULTS[task]
    train = TrainConfig(output_dir="")
    parser = OneLineParser(prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    _model_source_flags(parser)
    _data_flags(parser, defaults["task_name"])
    _window_flags(parser, task, TASKS[task].defaults)
    _optimization_flags(parser, train, defaults["loss_lambda"])
    _speed_flags(parser, train)
    _bookkeeping_flags(parser, train)
    _coupling_flags(parser)
    _original_tpu_flags(parser)
    return parser


def _model_source_flags(parser: argparse.ArgumentParser) -> None:
    """Where the encoder and its tokenizer come from: a Hugging Face folder or id, or the original release's files."""
    model = parser.add_argument_group("model (either --model_name_or_path, or the original three files)")
    model.add_argument("--model_name_or_path", default=None,
                       help="a Hugging Face folder or Hub id of any encoder the Auto classes know (BERT, RoBERTa, "
                            "ELECTRA, DeBERTa, XLM-R, ...), with its fast tokenizer")
    model.add_argument("--bert_config_file", default=None, help="original release: bert_config.json")
    model.add_argument("--vocab_file", default=None, help="original release: vocab.txt")
    model.add_argument("--init_checkpoint", default=None,
                       help="TensorFlow prefix (bert_model.ckpt), weights file or model folder to start from")
    _bool_flag(model, "do_lower_case", None,
               "lowercase the original release's vocab.txt input (default False, as in the original scripts; "
               "an uncased vocab.txt then warns); a Hugging Face tokenizer keeps its own casing")


def _data_flags(parser: argparse.ArgumentParser, task_name: str) -> None:
    """The data files, the run directory (`Paths`) and what the run does with them."""
    data = parser.add_argument_group("data and outputs")
    data.add_argument("--task_name", default=task_name,
                      help=f"subset name recorded in run_info.json (default {task_name})")
    data.add_argument("--train_file", default=None, help="training data (SQuAD-style or RACE/C3-style JSON)")
    data.add_argument("--predict_file", default=None, help="data to predict (e.g. an ExpMRC dev set)")
    data.add_argument("--output_dir", required=True,
                      help="run directory: checkpoints, model, predictions, run_info.json")
    for split in ("train", "predict"):
        data.add_argument(f"--{split}_tfrecord", default=None,
                          help="names a feature cache file (not a TFRecord: the original's name is kept) of its own "
                               f"for --{split}_file (default: a file in the shared --cache_dir); rebuilt when stale")
    _bool_flag(data, "do_train", False, "train on --train_file")
    _bool_flag(data, "do_predict", False, "predict on --predict_file, writing dev_predictions.json and dev_nbest.json")
    _bool_flag(data, "overwrite_output_dir", False,
               "replace the run in --output_dir: train again where a finished run had other settings, or write over "
               "a run record that cannot be read (default False: both refused)")
    _bool_flag(data, "allow_unknown_tokens", False,
               "run even when half or more of the tokens are the tokenizer's unknown token (default False: refused)")


def _window_flags(parser: argparse.ArgumentParser, task: str, settings: TaskSettings) -> None:
    """The window and decoding lengths: `TaskSettings`' integer fields, one flag each under the field's name."""
    query_help = ("question tokens kept, from its start, before the passage is paired" if task == "span" else
                  "tokens kept of question and option joined, the LAST ones (the option survives)")
    helps = {"max_seq_length": "tokens per input window", "max_query_length": query_help,
             "doc_stride": "tokens between window starts", "max_answer_length": "longest answer in tokens",
             "max_evidence_length": "longest evidence in tokens when decoding",
             "n_best_size": "candidates kept per question"}
    lengths = parser.add_argument_group("lengths")
    for name, text in helps.items():
        default = getattr(settings, name)
        lengths.add_argument(f"--{name}", type=int, default=default, help=f"{text} (default {default})")


def _optimization_flags(parser: argparse.ArgumentParser, train: TrainConfig, loss_lambda: float) -> None:
    """Batches, schedule, precision, λ and seed: `TrainConfig`'s defaults, λ the task's."""
    opt = parser.add_argument_group("optimization")
    opt.add_argument("--train_batch_size", type=int, default=train.train_batch_size,
                     help="examples per optimizer step, TOTAL over all devices and accumulation steps "
                          f"(default {train.train_batch_size})")
    opt.add_argument("--predict_batch_size", type=int, default=train.predict_batch_size,
                     help=f"examples per prediction batch, total (default {train.predict_batch_size})")
    opt.add_argument("--learning_rate", type=float, default=train.learning_rate,
                     help=f"peak AdamW learning rate (default {train.learning_rate:g})")
    opt.add_argument("--num_train_epochs", type=float, default=train.num_train_epochs,
                     help=f"epochs over the training features (default {train.num_train_epochs:g})")
    opt.add_argument("--max_steps", type=int, default=train.max_steps,
                     help="optimizer steps; overrides --num_train_epochs when > 0")
    opt.add_argument("--warmup_proportion", type=float, default=train.warmup_proportion,
                     help=f"share of steps with linear warm-up (default {train.warmup_proportion:g})")
    opt.add_argument("--weight_decay", type=float, default=train.weight_decay,
                     help="AdamW weight decay, not applied to biases and LayerNorm weights "
                          f"(default {train.weight_decay:g})")
    opt.add_argument("--gradient_accumulation_steps", type=int, default=train.gradient_accumulation_steps,
                     help="micro-batches per optimizer step")
    opt.add_argument("--mixed_precision", choices=("auto", "no", "fp16", "bf16"), default=train.mixed_precision,
                     help="autocast precision; auto (default): bf16 on GPUs and TPUs (fp16 with loss scaling on GPUs "
                          "without bf16), no (FP32) on CPU; fp16 is refused on CPU")
    opt.add_argument("--loss_lambda", type=float, default=loss_lambda,
                     help=f"weight of the evidence loss: L = L_answer + lambda * L_evidence (default {loss_lambda})")
    opt.add_argument("--rand_seed", type=int, default=train.seed, help="seed of initialization, data order and dropout")


def _speed_flags(parser: argparse.ArgumentParser, train: TrainConfig) -> None:
    """How fast and in how much memory the same run goes: TF32, batching, torch.compile, the attention path, fused
    kernels, the feature cache and the checkpoints kept."""
    speed = parser.add_argument_group("speed and memory")
    _bool_flag(speed, "tf32", train.tf32, "let FP32 matmuls on GPUs use TF32 (default True; False for strict FP32)")
    _bool_flag(speed, "group_by_length", train.group_by_length,
               "train on batches of similar lengths (default True): each epoch's seeded order is cut into "
               "megabatches of about 50 batches, each sorted by length; False keeps the plain random order")
    speed.add_argument("--per_device_micro_batch", type=int, default=train.per_device_micro_batch,
                       help="most windows per forward pass on one device; 0 (default): the whole micro-batch, "
                            "halved on a GPU out-of-memory error until it fits (the step's result is the same)")
    _bool_flag(speed, "torch_compile", train.torch_compile,
               "compile the model with torch.compile for training (prediction stays eager): batches are padded to "
               "the --compile_buckets lengths and each is compiled once, its time logged apart. On an H200 it halved a "
               "BERT-base CMRC 2018 run's step time: 64 s against 97 s eager once inductor's cache holds the "
               "kernels (every sweep run after the first), but 117 s from an empty cache (docs/benchmarks.md)")
    speed.add_argument("--compile_buckets", default=None, metavar="N,N,...",
                       help="with --torch_compile: the padded lengths of training batches, ascending, the last one "
                            "at least --max_seq_length (default 128,256,384 where below --max_seq_length, then "
                            "--max_seq_length); fewer buckets compile less and pad more")
    speed.add_argument("--torch_compile_mode", choices=COMPILE_MODES, default=train.compile_mode,
                       help="with --torch_compile: torch.compile's mode (default: default); reduce-overhead adds CUDA "
                            "graphs, which cut the host's kernel launches (no gain measured on an H200 for "
                            "BERT-base, 42 s more compiling)")
    speed.add_argument("--attention", choices=ATTENTION_MODES, default=train.attention,
                       help="unpadded: BERT, RoBERTa, XLM-R and ELECTRA encoders compute on the batch's real tokens "
                            "only (the same weights; variable-length FlashAttention on CUDA under bf16/fp16, "
                            "attention dropout kept); padded: the library's forward on padded batches, what every "
                            "other encoder runs; auto (default): what was measured faster on the device "
                            "(docs/training.md), padded with --torch_compile True")
    _bool_flag(speed, "fused_kernels", train.fused_kernels,
               "on the unpadded path, run each layer's dense + dropout + residual + LayerNorm and dense + GELU, and "
               "the heads' logits and loss, as small compiled regions (dynamic shapes: compiled once, seconds from "
               "an empty cache) instead of separate eager kernels (default False until a GPU measurement decides; "
               "docs/benchmarks.md)")
    speed.add_argument("--cuda_graphs", choices=GRAPH_MODES, default=train.cuda_graphs,
                       help="on: replay each training step on the unpadded path as a CUDA graph, one per bucket of "
                            "token counts planned from the run's own batches (recorded in run_info.json), so the host "
                            "launches a step's kernels once per bucket instead of every step; prediction uses the same "
                            "buckets. Needs one CUDA GPU, bf16 and the unpadded path (on with anything else is "
                            "refused); auto (default): on where it can be, off elsewhere (the CPU); off: eager steps")
    speed.add_argument("--cache_dir", default=None,
                       help="feature caches shared by runs (default $EXPMRC_CACHE, else "
                            "$XDG_CACHE_HOME/expmrc/features, else ~/.cache/expmrc/features); "
                            "--train_tfrecord/--predict_tfrecord override it")
    _bool_flag(speed, "keep_final_checkpoints", False,
               "keep the checkpoints of a finished run (default False: model/ holds the result)")


def _bookkeeping_flags(parser: argparse.ArgumentParser, train: TrainConfig) -> None:
    """How often a run writes checkpoints and logs, and how many checkpoints it keeps."""
    runs = parser.add_argument_group("checkpoints and logging")
    runs.add_argument("--save_checkpoints_steps", type=int, default=train.save_checkpoints_steps,
                      help="write a resumable checkpoint every N optimizer steps "
                           f"(default {train.save_checkpoints_steps})")
    runs.add_argument("--keep_checkpoints", type=int, default=train.keep_checkpoints,
                      help="checkpoints kept in OUTPUT_DIR/checkpoints")
    runs.add_argument("--logging_steps", type=int, default=train.logging_steps,
                      help="log loss and learning rate every N steps")
    runs.add_argument("--report_to", choices=REPORT_TO, default="none",
                      help="also draw the training curves (the loss and its parts L_A, L_E and J, lambda, the learning "
                           "rate, throughput, then the dev scores) in TensorBoard (OUTPUT_DIR/tensorboard: "
                           "`tensorboard --logdir` a sweep's root shows its runs side by side), Weights & Biases or "
                           "MLflow, named by the output folder (default none)")


def _coupling_flags(parser: argparse.ArgumentParser) -> None:
    """Answer and evidence trained together: the coupling regularizer (`LossSettings`) and Select & Forget."""
    coupling = parser.add_argument_group("coupling (answer and evidence together; docs/coupling.md)")
    _bool_flag(coupling, "coupling_loss", False,
               "add J = p_a(1-p_e)c1 + (1-p_a)(p_e c2 + (1-p_e)c3) to the loss, unweighted (p_a: the gold answer's "
               "probability, p_e: the pseudo evidence's)")
    for number, value in enumerate(COUPLING_DEFAULTS, 1):  # c1, c2, c3 (docs/coupling.md)
        coupling.add_argument(f"--coupling_c{number}", type=float, default=value,
                              help=f"c{number} of the coupling regularizer (default {value})")
    _bool_flag(coupling, "select_and_forget", False,
               "Select & Forget: train a second model (OUTPUT_DIR/answerer) that answers from the evidence text "
               "alone, and predict the answer from the evidence the first model selects")


def _original_tpu_flags(parser: argparse.ArgumentParser) -> None:
    """`--use_tpu`, and the original TPU-only flags, accepted with `IGNORED_FLAGS`' defaults and otherwise ignored."""
    tpu = parser.add_argument_group("TPU and other original flags (accelerate/torch_xla picks the device; the rest "
                                    "are accepted, not needed, and logged as ignored when given)")
    _bool_flag(tpu, "use_tpu", False, "run on a TPU through torch_xla")
    ignored = IGNORED_FLAGS
    tpu.add_argument("--tpu_name", default=ignored["tpu_name"], help="ignored: torch_xla uses the TPU VM's own chips")
    tpu.add_argument("--tpu_zone", default=ignored["tpu_zone"], help="ignored: not needed on a TPU VM")
    tpu.add_argument("--gcp_project", default=ignored["gcp_project"], help="ignored: not needed on a TPU VM")
    tpu.add_argument("--master", default=ignored["master"], help="ignored: no TensorFlow master address is used")
    tpu.add_argument("--num_tpu_cores", type=int, default=ignored["num_tpu_cores"],
                     help="ignored: the launcher starts one process per core")
    tpu.add_argument("--iterations_per_loop", type=int, default=ignored["iterations_per_loop"],
                     help="ignored: there is no TPUEstimator loop (checkpoints follow --save_checkpoints_steps)")
    _bool_flag(tpu, "verbose_logging", ignored["verbose_logging"],
               "ignored: answers are always passage character spans, so there is no mapping failure to print")


def ignored_flags(args: argparse.Namespace) -> list[str]:
    """`--name=value` for each original flag in IGNORED_FLAGS given a value other than its default."""
    return [f"--{name}={getattr(args, name)}" for name, default in IGNORED_FLAGS.items()
            if getattr(args, name, default) != default]


def check_flags(args: argparse.Namespace) -> None:
    """Refuse flag combinations that cannot run, in one line each, before any model is loaded (each part of the
    configuration checks its own ranges)."""
    if not args.do_train and not args.do_predict:
        raise ExpmrcError("nothing to do: pass --do_train True and/or --do_predict True")
    if args.do_train and not args.train_file:
        raise ExpmrcError("--do_train needs --train_file")
    if args.do_predict and not args.predict_file:
        raise ExpmrcError("--do_predict needs --predict_file")
    changed = [f"--coupling_c{k}" for k, default in enumerate(COUPLING_DEFAULTS, 1)
               if getattr(args, f"coupling_c{k}", default) != default]
    if changed and not getattr(args, "coupling_loss", False):
        warn(f"{', '.join(changed)} given without --coupling_loss True: the coupling regularizer is off, so "
             "they change nothing")


def compile_buckets(text: str | None, torch_compile: bool, max_length: int) -> tuple[int, ...]:
    """--compile_buckets as token counts (`TrainConfig.checked` checks them), else with --torch_compile the
    default buckets up to --max_seq_length; () without either."""
    if text is None:
        return default_buckets(max_length) if torch_compile else ()
    try:
        return tuple(int(part) for part in str(text).split(","))
    except ValueError:
        raise ExpmrcError(f"--compile_buckets must be ascending token counts separated by commas, such as "
                          f"128,256,384,512; got {text!r}") from None


def flag_values(args: argparse.Namespace) -> dict[str, Any]:
    """Every flag value, sorted by name, for run_info.json."""
    return {key: value for key, value in sorted(vars(args).items())}


def given_flags(words: list[str]) -> frozenset[str]:
    """The names of the flags a command line gives explicitly (`--name value` or `--name=value`)."""
    return frozenset(word[2:].split("=", 1)[0] for word in words if word.startswith("--"))


def parse_config(task: str, parser: argparse.ArgumentParser, argv: list[str] | None = None) -> BaselineConfig:
    """Parse a baseline script's command line (`argv`, else sys.argv) once into its typed configuration, every part
    checked; one line for anything that cannot run."""
    words = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(words)
    check_flags(args)
    settings = TaskSettings(**{f.name: getattr(args, f.name) for f in fields(TaskSettings)
                               if hasattr(args, f.name)}).checked("--")
    named = {"seed": "rand_seed", "compile_mode": "torch_compile_mode"}  # fields whose flag has another name
    values = {f.name: getattr(args, named.get(f.name, f.name)) for f in fields(TrainConfig)
              if f.name not in ("max_grad_norm", "compile_buckets", "compile_backend", "graph_buckets")}
    buckets = compile_buckets(args.compile_buckets, args.torch_compile, settings.max_seq_length)
    train = TrainConfig(**values, compile_buckets=buckets).checked(settings.max_seq_length)
    loss = LossSettings(args.loss_lambda, args.coupling_loss,
                        (args.coupling_c1, args.coupling_c2, args.coupling_c3)).checked("--")
    paths = Paths(**{f.name: getattr(args, f.name) for f in fields(Paths)})
    return BaselineConfig(task, args.task_name, paths, settings, train, loss, args.do_train, args.do_predict,
                          args.do_lower_case, args.select_and_forget, args.overwrite_output_dir,
                          args.allow_unknown_tokens, args.keep_final_checkpoints, args.use_tpu,
                          check_report_to(args.report_to), flags=flag_values(args), given=given_flags(words), ignored=tuple(ignored_flags(args)),
                          command=(parser.prog if argv is not None else sys.argv[0], *words))
