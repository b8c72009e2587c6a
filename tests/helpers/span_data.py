"""Generated span-extraction data whose answers and evidence sit at learnable places.

Each passage is filler sentences with one fact sentence, "the capital is NAME ." or
"the king is NAME .", at a random place; the question asks for that fact. The answer is the name
(several word pieces), the evidence is the whole fact sentence.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

FILLER = ["city", "river", "year", "paris", "france", "born", "of", "in", "a", "evidence", "answer"]
FACTS = {"capital": "what is the capital ?", "king": "who is the king ?"}


def _name(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiou") for _ in range(rng.randint(1, 2)))


def make_question(rng: random.Random, qid: str, max_sentences: int = 6, names: list[str] | None = None) -> dict:
    """One paragraph with one question, in SQuAD format with `evidences`; the answer is a made-up name, or one of
    `names` when given."""
    sentences = [" ".join(rng.choice(FILLER) for _ in range(rng.randint(3, 6))) + " ."
                 for _ in range(rng.randint(2, max_sentences))]
    fact = rng.choice(sorted(FACTS))
    name = rng.choice(names) if names else _name(rng)
    evidence = f"the {fact} is {name} ."
    sentences.insert(rng.randint(0, len(sentences)), evidence)
    context = " ".join(sentences)
    answer_start = context.index(evidence) + len(f"the {fact} is ")
    qa = {"id": qid, "question": FACTS[fact], "answers": [{"text": name, "answer_start": answer_start}],
          "evidences": [evidence]}
    return {"context": context, "qas": [qa]}


def make_span_file(path: Path, count: int, seed: int, max_sentences: int = 6,
                   version: str = "expmrc-squad-generated", names: list[str] | None = None) -> Path:
    """Write `count` generated questions to `path` as an ExpMRC span-extraction file."""
    rng = random.Random(seed)
    paragraphs = [make_question(rng, f"q{seed}-{i}", max_sentences, names) for i in range(count)]
    doc = {"version": version, "data": [{"title": "generated", "paragraphs": paragraphs}]}
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


NAMES = ["salt", "wool", "timber", "market", "school", "bridge", "stone", "morning", "merchant", "road", "town",
         "church", "mill", "harbour", "valley", "forest"]  # words every tiny tokenizer knows whole


def distractor_file(path, count: int, seed: int) -> str:
    """Fillers, the fact `the capital is NAME .` (the pseudo evidence, where the gold answer is) and a distractor
    sentence that starts with the same NAME, so an answer can also be found outside the evidence."""
    rng = random.Random(seed)
    paragraphs = []
    for i in range(count):
        name = rng.choice(NAMES)
        sentences = [" ".join(rng.choice(FILLER) for _ in range(rng.randint(3, 5))) + " ."
                     for _ in range(rng.randint(2, 4))]
        evidence = f"the capital is {name} ."
        sentences.insert(rng.randint(0, len(sentences)), evidence)
        sentences.insert(rng.randint(0, len(sentences)), f"{name} " + " ".join(rng.choices(FILLER, k=3)) + " .")
        context = " ".join(sentences)
        start = context.index(evidence) + len("the capital is ")
        paragraphs.append({"context": context, "qas": [{"id": f"q{seed}-{i}", "question": "what is the capital ?",
                                                        "answers": [{"text": name, "answer_start": start}],
                                                        "evidences": [evidence]}]})
    path.write_text(json.dumps({"version": "expmrc-squad-generated", "data": [{"title": "g", "paragraphs": paragraphs}]}),
                    encoding="utf-8")
    return str(path)
