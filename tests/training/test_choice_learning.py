"""The multiple-choice model learns a generated task: proof that labels, losses, windows and decoding line up.

Each passage has a filler sentence and one sentence `mark X f .` where X is the gold option's word;
the other options (2 to 4 options in all) never occur in the passage. Reading the passage is needed
to pick the answer, and the evidence is the marked sentence. Passages span two windows, so labels on
windows without the evidence ([CLS]) and the combination of windows in decoding are exercised.
Training goes through the shared loop and the result is scored by the leaderboard scorer.
"""

from __future__ import annotations

import json
import random

import pytest
import torch

from helpers.choice_tiny import tiny_encoder, tokenizer
from helpers.common import needs_punkt
from expmrc.decoding.choice import decode_choice_predictions
from expmrc.features.choice import ChoiceDataset, build_choice_features, collate_choice
from expmrc.models.choice import ChoiceModel
from expmrc.data.datasets import LABELS, load_dataset
from expmrc.scoring.scorer import score
from expmrc.training.loop import TrainConfig, make_accelerator, predict, train

ANSWER_WORDS = [f"w{i}" for i in range(30, 34)]
FILLER_WORDS = [f"w{i}" for i in range(30)]
SENTENCES = 2  # 8 passage tokens: a tiny encoder learns to match an option against them in ~1000 steps
FILLER_LENGTH = 3


def generated_file(path, count: int, seed: int) -> str:
    """A RACE-format file of `count` one-question passages whose answer and evidence are learnable."""
    rng = random.Random(seed)
    data = []
    for k in range(count):
        options = rng.sample(ANSWER_WORDS, rng.choice([2, 3, 4]))
        gold = rng.randrange(len(options))
        sentences = [" ".join(rng.choices(FILLER_WORDS, k=FILLER_LENGTH)) + " ." for _ in range(SENTENCES)]
        slot = rng.randrange(SENTENCES)
        sentences[slot] = f"mark {options[gold]} {rng.choice(FILLER_WORDS)} ."
        data.append({"id": f"g{k}", "article": " ".join(sentences), "questions": ["what ?"], "options": [options],
                     "answers": [LABELS[gold]], "evidences": [[sentences[slot]]]})
    path.write_text(json.dumps({"version": "expmrc-race-generated", "data": data}), encoding="utf-8")
    return str(path)


@pytest.fixture
def one_thread():
    """Run on one thread: a tiny model gains nothing from two, and on a shared machine threads thrash."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
@needs_punkt
def test_tiny_model_learns_answers_and_evidence(tmp_path, one_thread):
    tok = tokenizer(tmp_path)
    train_set = load_dataset(generated_file(tmp_path / "train.json", 512, seed=1))
    dev_set = load_dataset(generated_file(tmp_path / "dev.json", 100, seed=2))
    # windows of 6 passage tokens, 2 apart: every passage spans two windows, for training and prediction
    windows = {"max_seq_length": 12, "doc_stride": 2}
    train_features, _ = build_choice_features(train_set.questions, tok, **windows, is_training=True)
    dev_features, dev_report = build_choice_features(dev_set.questions, tok, **windows)
    assert dev_report.multi_window_questions == 100

    config = TrainConfig(output_dir=str(tmp_path / "run"), learning_rate=2e-3, max_steps=1000, train_batch_size=16,
                         predict_batch_size=64, save_checkpoints_steps=10_000, logging_steps=10_000, seed=0)
    accelerator = make_accelerator(config)
    model = ChoiceModel(tiny_encoder(len(tok), hidden=32, layers=2), loss_lambda=0.5)
    train(model, ChoiceDataset(train_features, with_labels=True), collate_choice, config, accelerator)
    outputs = predict(model, ChoiceDataset(dev_features, with_labels=False), collate_choice, 64, accelerator)
    predictions, _ = decode_choice_predictions(dev_set.questions, dev_features, outputs, max_evidence_length=8)

    report = score(dev_set, predictions)
    assert report.skipped == 0
    assert report.mean("answer") >= 90.0
    assert report.mean("evidence") >= 90.0
