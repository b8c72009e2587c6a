"""The learning test: a tiny BERT trained briefly on generated data gets answers and evidence right.

This is the proof that labels, losses and decoding line up: any off-by-one between them keeps F1 low.
"""

from __future__ import annotations

import pytest
import statistics

import torch

from helpers.common import needs_punkt
from expmrc.data.datasets import load_dataset
from expmrc.models.backbones import load_encoder
from expmrc.metrics.leaderboard import f1
from expmrc.decoding.span import decode_span_predictions
from expmrc.features.span import SpanDataset, build_span_features, collate_span
from expmrc.models.span import SpanModel
from expmrc.training.loop import TrainConfig, make_accelerator, predict, train
from helpers.span_data import make_span_file
from helpers.tiny_bert import make_tiny_bert_folder

torch.set_num_threads(1)  # the CI machine is small and shared; more threads only contend

SEQ, STRIDE, QUERY = 64, 16, 16  # passages run to ~90 tokens, so many questions span several windows


def scores(model, tokenizer, dataset, accelerator):
    features, _ = build_span_features(dataset.questions, tokenizer, SEQ, STRIDE, QUERY, False, show_progress=False)
    outputs = predict(model, SpanDataset(features, False), collate_span, 32, accelerator)
    predictions, _ = decode_span_predictions(dataset.questions, features, outputs, 20, 10, 30)
    answer = statistics.mean(f1(predictions[q.qid]["answer"], q.answers) for q in dataset.questions)
    evidence = statistics.mean(f1(predictions[q.qid]["evidence"], q.evidences) for q in dataset.questions)
    return answer, evidence


@pytest.mark.slow
@needs_punkt
def test_tiny_model_learns_answers_and_evidence(tmp_path):
    train_set = load_dataset(str(make_span_file(tmp_path / "train.json", 400, seed=1, max_sentences=10)))
    dev_set = load_dataset(str(make_span_file(tmp_path / "dev.json", 60, seed=2, max_sentences=10)))
    config = TrainConfig(output_dir=str(tmp_path / "run"), learning_rate=3e-3, max_steps=800, train_batch_size=16,
                         save_checkpoints_steps=10_000, logging_steps=100, seed=1)
    accelerator = make_accelerator(config)
    encoder = load_encoder(model_name_or_path=str(make_tiny_bert_folder(tmp_path / "bert")), add_pooling_layer=False)
    model = SpanModel(encoder.model, loss_lambda=1.0)
    features, report = build_span_features(train_set.questions, encoder.tokenizer, SEQ, STRIDE, QUERY, True,
                                           show_progress=False)
    assert report.windows > report.questions  # windows, and [CLS] labels, are exercised

    before = scores(model, encoder.tokenizer, dev_set, accelerator)
    train(model, SpanDataset(features, True), collate_span, config, accelerator)
    answer, evidence = scores(model, encoder.tokenizer, dev_set, accelerator)
    assert before[0] < 0.2 and before[1] < 0.5
    assert answer >= 0.9 and evidence >= 0.9, (answer, evidence)
