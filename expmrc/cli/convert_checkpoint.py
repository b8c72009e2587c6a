"""`expmrc convert-checkpoint`: an original TensorFlow BERT release -> a Hugging Face-format folder."""

from __future__ import annotations

import argparse
import sys

from expmrc.cli.args import add_flag

DESCRIPTION = """\
Convert an original TensorFlow BERT release (BERT, BERT-wwm, MacBERT: bert_config.json, vocab.txt,
bert_model.ckpt.index + .data-*) into a Hugging Face folder (config.json, model.safetensors, vocab.txt,
tokenizer.json, tokenizer_config.json, conversion.json) that the training scripts load with
--model_name_or_path. TensorFlow is not needed: the checkpoint is read by expmrc's own reader.

Every encoder variable is mapped; the pre-training heads (cls/...), Adam slots and global_step are
ignored; unused variables are listed; missing ones or a shape that disagrees with the config stop it.

example:
  expmrc convert-checkpoint chinese_macbert_base/ models/macbert-base --do-lower-case True
"""


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected True or False, got {text!r}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tf_dir", metavar="TF_DIR", help="folder of the unpacked TensorFlow release")
    parser.add_argument("output_dir", metavar="OUT_DIR", help="Hugging Face folder to write")
    add_flag(parser, "--do-lower-case", type=_bool, default=True, metavar="True|False",
                        help="lowercase (and strip accents) in the tokenizer: True for uncased English and "
                             "the Chinese models, False for cased ones (default: True)")
    add_flag(parser, "--bert-config-file", help="config file (default: TF_DIR/bert_config.json)")
    add_flag(parser, "--vocab-file", help="vocabulary (default: TF_DIR/vocab.txt)")
    add_flag(parser, "--init-checkpoint", help="checkpoint prefix, e.g. TF_DIR/bert_model.ckpt "
                                                  "(default: the one *.index file in TF_DIR)")
    parser.add_argument("--overwrite", action="store_true", help="replace OUT_DIR if it is not empty")
    parser.add_argument("--allow-missing", action="store_true",
                        help="write the folder even if encoder weights are missing (they stay random)")


def run(args: argparse.Namespace) -> int:
    from expmrc.data.io import check_output_folder
    from expmrc.models.tf_checkpoint import convert_tf_checkpoint

    sources = [args.tf_dir, args.bert_config_file, args.vocab_file, args.init_checkpoint]
    check_output_folder(args.output_dir, [s for s in sources if s], args.overwrite)
    report = convert_tf_checkpoint(
        args.tf_dir, args.output_dir, do_lower_case=args.do_lower_case, overwrite=args.overwrite,
        allow_missing=args.allow_missing, bert_config_file=args.bert_config_file,
        vocab_file=args.vocab_file, init_checkpoint=args.init_checkpoint,
    )
    print(report.summary(), file=sys.stderr)
    print(f"wrote {args.output_dir}")
    return 0
