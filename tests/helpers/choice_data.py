"""Generated multiple-choice data whose answers and evidence are learnable."""

from __future__ import annotations

import json
import random

from expmrc.data.datasets import LABELS

OPTION_WORDS = ["apple", "river", "stone", "bridge"]
FILLER_WORDS = ["town", "market", "school", "wool", "salt", "timber", "morning", "century", "merchant", "road"]


def choice_file(path, count: int, seed: int) -> str:
    """One-question passages: a filler sentence and `the answer is X .` with X the gold option's word, the other
    options absent, so the passage must be read; the evidence is that sentence."""
    rng = random.Random(seed)
    data = []
    for k in range(count):
        options = rng.sample(OPTION_WORDS, rng.choice([2, 3, 4]))
        gold = rng.randrange(len(options))
        evidence = f"the answer is {options[gold]} ."
        sentences = [" ".join(rng.choices(FILLER_WORDS, k=3)) + " ." for _ in range(2)]
        sentences.insert(rng.randrange(3), evidence)
        data.append({"id": f"g{k}", "article": " ".join(sentences), "questions": ["what is it ?"],
                     "options": [options], "answers": [LABELS[gold]], "evidences": [[evidence]]})
    path.write_text(json.dumps({"version": "expmrc-race-generated", "data": data}), encoding="utf-8")
    return str(path)


def choice_distractor_file(path, count: int, seed: int) -> str:
    """Filler sentences, `the answer is X .` (the pseudo evidence, X the gold option's word) and a distractor
    sentence that starts with another option's word, so that evidence can point at a wrong option."""
    rng = random.Random(seed)
    data = []
    for k in range(count):
        options = rng.sample(OPTION_WORDS, 4)
        gold, other = rng.sample(range(4), 2)
        evidence = f"the answer is {options[gold]} ."
        sentences = [" ".join(rng.choices(FILLER_WORDS, k=3)) + " ." for _ in range(rng.randint(2, 3))]
        sentences.insert(rng.randint(0, len(sentences)), evidence)
        sentences.insert(rng.randint(0, len(sentences)), f"{options[other]} " + " ".join(rng.choices(FILLER_WORDS, k=2))
                         + " .")
        data.append({"id": f"d{seed}-{k}", "article": " ".join(sentences), "questions": ["what is it ?"],
                     "options": [options], "answers": [LABELS[gold]], "evidences": [[evidence]]})
    path.write_text(json.dumps({"version": "expmrc-race-generated", "data": data}), encoding="utf-8")
    return str(path)
