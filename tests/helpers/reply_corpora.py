"""Every reply corpus, named as `python benchmarks/bench_llm.py --parse-only` and tests/llm/test_reply_corpus.py
report them: the tuned corpus, the held-out corpora of the parser's first rewrite and of issue 30, and the issue 38
model-family draws. Each draw of issue 38 was written before the parser changes that followed it and measured once
untouched; the first seven were then read to correct the parser ("read"), the eighth never was ("held out")."""

from __future__ import annotations

from helpers.reply_corpus import STYLES, Case, cases
from helpers.reply_corpus_heldout import HELD_OUT
from helpers.reply_corpus_heldout_draw3 import HELD_OUT_DRAW3
from helpers.reply_corpus_heldout_draw4 import HELD_OUT_DRAW4
from helpers.reply_corpus_heldout_draw5 import HELD_OUT_DRAW5
from helpers.reply_corpus_heldout_draw6 import HELD_OUT_DRAW6
from helpers.reply_corpus_heldout_draw7 import HELD_OUT_DRAW7
from helpers.reply_corpus_heldout_draw8 import HELD_OUT_DRAW8
from helpers.reply_corpus_heldout_families import HELD_OUT_FAMILIES
from helpers.reply_corpus_heldout_fresh import HELD_OUT_FRESH
from helpers.reply_corpus_heldout_shapes import HELD_OUT_SHAPES

FAMILY_DRAWS = [HELD_OUT_FAMILIES, HELD_OUT_FRESH, HELD_OUT_DRAW3, HELD_OUT_DRAW4, HELD_OUT_DRAW5, HELD_OUT_DRAW6,
                HELD_OUT_DRAW7]
HELD_OUT_FAMILIES_NAME = "held-out families"  # the issue 38 draw never read: HELD_OUT_DRAW8


def corpora() -> dict[str, list[Case]]:
    """Each corpus by name, in the order they were written."""
    named = {"tuned": cases(STYLES), "held-out": cases(HELD_OUT), "held-out shapes": cases(HELD_OUT_SHAPES)}
    named.update({f"families {n}, read": cases(draw) for n, draw in enumerate(FAMILY_DRAWS, 1)})
    named[HELD_OUT_FAMILIES_NAME] = cases(HELD_OUT_DRAW8)
    return named
