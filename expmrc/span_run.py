"""The span-extraction baseline end to end (the body of baseline/run_se_mrc.py).

Flags in, run directory out: train on --train_file (resuming from the newest checkpoint), save the
fine-tuned model to OUTPUT_DIR/model, predict on --predict_file and write dev_predictions.json and
dev_nbest.json, recording the run in run_info.json. A --do_predict run without --do_train uses the
model a previous training run left in OUTPUT_DIR/model, as the original scripts used the output
directory's latest checkpoint.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from expmrc.data import load_dataset, write_json_atomic
from expmrc.errors import ExpmrcError
from expmrc.flags import build_parser, check_flags, train_config_from_flags

DESCRIPTION = """\
Train and run the span-extraction baseline (SQuAD, CMRC 2018): BERT with an answer head and an
evidence head, loss = answer loss + loss_lambda * evidence loss.

example:
  python baseline/run_se_mrc.py --model_name_or_path PLM_DIR --do_train True --train_file train.json \\
      --do_predict True --predict_file expmrc-squad-dev.json --output_dir runs/squad-seed1
"""
TRAINED_MODEL_DIR = "model"
PREDICTIONS_FILE = "dev_predictions.json"
NBEST_FILE = "dev_nbest.json"


def span_parser() -> argparse.ArgumentParser:
    """The shared flags with span-extraction defaults, plus the span-only ones."""
    parser = build_parser("span", prog="run_se_mrc.py", description=DESCRIPTION)
    span = parser.add_argument_group("span extraction")
    span.add_argument("--max_query_length", type=int, default=128, help="question tokens kept (default 128)")
    span.add_argument("--max_evidence_length", type=int, default=128,
                      help="longest evidence in tokens when decoding (default 128)")
    span.add_argument("--n_best_size", type=int, default=20, help="candidates kept per question (default 20)")
    return parser


def model_flags(args: argparse.Namespace, trained: Path) -> dict[str, Any]:
    """Where the encoder comes from: OUTPUT_DIR/model for a predict-only rerun, else the model flags."""
    if not args.do_train and (trained / "config.json").is_file():
        return {"model_name_or_path": str(trained)}
    return {"model_name_or_path": args.model_name_or_path, "bert_config_file": args.bert_config_file,
            "vocab_file": args.vocab_file, "init_checkpoint": args.init_checkpoint}


def span_features(args: argparse.Namespace, path: str, cache_path: str | None, tokenizer: Any, is_training: bool,
                  accelerator: Any) -> tuple[Any, Any, Any]:
    """The dataset and its windows, from the feature cache when it is still valid."""
    from expmrc.feature_cache import cache_key, cached
    from expmrc.span_features import build_span_features, features_from_payload, features_to_payload

    dataset = load_dataset(path)
    if dataset.kind != "span":
        raise ExpmrcError(f"{path}: is a {dataset.subset} (multiple-choice) file; run_se_mrc.py needs span extraction data")
    settings = {"task": "span", "max_seq_length": args.max_seq_length, "doc_stride": args.doc_stride,
                "max_query_length": args.max_query_length, "is_training": is_training}
    build = lambda: build_span_features(dataset.questions, tokenizer, args.max_seq_length, args.doc_stride,  # noqa: E731
                                        args.max_query_length, is_training, accelerator.is_local_main_process)
    (features, report), _ = cached(cache_path, cache_key(tokenizer, settings, path), build, accelerator,
                                   features_to_payload, features_from_payload)
    if accelerator.is_main_process:
        print(f"{path}: {report.summary()}", file=sys.stderr)
    return dataset, features, report


def run_span(argv: list[str] | None = None) -> int:
    """Parse the flags and run; returns the exit status."""
    from expmrc.encoder import load_encoder, save_model_folder
    from expmrc.rundir import recorded_run, run_info_base
    from expmrc.span_decoding import decode_span_predictions
    from expmrc.span_features import SpanDataset, collate_span
    from expmrc.span_model import SpanModel
    from expmrc.training import make_accelerator, predict, train

    args = span_parser().parse_args(argv)
    check_flags(args)
    for name in ("max_query_length", "max_evidence_length", "n_best_size"):
        if getattr(args, name) < 1:
            raise ExpmrcError(f"--{name} must be at least 1, got {getattr(args, name)}")
    config = train_config_from_flags(args)
    accelerator = make_accelerator(config, use_tpu=args.use_tpu)
    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    trained = output / TRAINED_MODEL_DIR
    source = model_flags(args, trained)
    info = run_info_base("span", args, model=next((v for v in source.values() if v), ""))
    main = accelerator.is_main_process
    with recorded_run(args.output_dir, info, main):
        encoder = load_encoder(**source, do_lower_case=args.do_lower_case, add_pooling_layer=False)
        if main:
            print(f"model {info['model']}: {encoder.report.summary()}", file=sys.stderr)
        if args.max_seq_length > encoder.config.max_position_embeddings:
            raise ExpmrcError(f"--max_seq_length {args.max_seq_length} exceeds the model's "
                              f"max_position_embeddings {encoder.config.max_position_embeddings}")
        model = SpanModel(encoder.model, args.loss_lambda)
        has_heads = model.load_heads(encoder.extra_state)
        info["global_step"] = int(getattr(encoder.config, "expmrc", {}).get("global_step", 0))

        if args.do_train:
            _, features, report = span_features(args, path=args.train_file, tokenizer=encoder.tokenizer,
                                                cache_path=args.train_tfrecord or str(output / "cache/train-features.pt"),
                                                is_training=True, accelerator=accelerator)
            info["train_features"] = report.as_dict()
            result = train(model, SpanDataset(features, with_labels=True), collate_span, config, accelerator)
            info["global_step"] = result.global_step
            model = accelerator.unwrap_model(model)
            if main:  # keys bert.* and the heads', which load_encoder and load_heads read back
                save_model_folder(str(trained), model.state_dict(), encoder.config, encoder.tokenizer,
                                  {"task": "span", "loss_lambda": args.loss_lambda, "global_step": result.global_step})
            accelerator.wait_for_everyone()
        elif not has_heads and main:
            print("warning: the model has no trained answer and evidence heads (train first, or point "
                  "--model_name_or_path at a fine-tuned folder); predictions will be meaningless", file=sys.stderr)

        if args.do_predict:
            dataset, features, report = span_features(
                args, path=args.predict_file, tokenizer=encoder.tokenizer, is_training=False, accelerator=accelerator,
                cache_path=args.predict_tfrecord or str(output / "cache/predict-features.pt"))
            info["predict_features"] = report.as_dict()
            outputs = predict(model, SpanDataset(features, with_labels=False), collate_span,
                              args.predict_batch_size, accelerator)
            predictions, nbest = decode_span_predictions(dataset.questions, features, outputs, args.n_best_size,
                                                         args.max_answer_length, args.max_evidence_length)
            if main:
                write_json_atomic(str(output / NBEST_FILE), nbest, indent=1)
                write_json_atomic(str(output / PREDICTIONS_FILE), predictions, indent=1)
                print(f"wrote {len(predictions)} predictions to {output / PREDICTIONS_FILE}", file=sys.stderr)
        accelerator.wait_for_everyone()
    return 0

