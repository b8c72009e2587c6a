"""The ExpMRC metric: mixed Chinese/English tokenization, normalization and bag-of-tokens F1.

This is the one canonical implementation every number in the project goes through. It follows the
leaderboard's scorer exactly, including its quirks, which are written down in tests/scoring/test_metric.py:

- Tokenize: strip; every CJK character (U+4E00-U+9FA5) and every element of SPECIAL_TOKENS is a
  token of its own; each maximal run of other characters goes to NLTK's `word_tokenize`. The list
  holds the two-character string "……", which never equals one character, so a lone "…" is not split.
- Normalize: drop tokens that are exactly "a", "an", "the" (case-sensitive, so "The" stays); drop
  single-character tokens found in `string.punctuation` or among the characters of SPECIAL_TOKENS
  (so a "…" token is dropped, while NLTK's "``" and "''" stay); lowercase the rest.
- F1 against several references is the maximum over them; an empty side scores 1 only if both are.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from expmrc.data.datasets import SpanQuestion
from expmrc.errors import ExpmrcError
from expmrc.metrics import nltk_words
from expmrc.metrics.nltk_words import PUNKT_RESOURCE, NltkWords
from expmrc.metrics.registry import Metric, percent_mean, register

SPECIAL_TOKENS = (
    "-", ":", "_", "*", "^", "/", "\\", "~", "`", "+", "=",
    "，", "。", "：", "？", "！", "“", "”", "；", "’", "《", "》", "……", "·", "、",
    "「", "」", "（", "）", "－", "～", "『", "』",
)
_SPLIT_CHARS = frozenset(t for t in SPECIAL_TOKENS if len(t) == 1)
_DROP_CHARS = frozenset(string.punctuation + "".join(SPECIAL_TOKENS))
_ARTICLES = frozenset(("a", "an", "the"))
_DROPPED = _ARTICLES | _DROP_CHARS  # the tokens `normalize` drops: articles (lowercase) and single punctuation
NLTK_HINT = "python -m nltk.downloader punkt_tab"
T = TypeVar("T")  # what a metric compares: normalized text, tokens, segments
# NLTK's English Punkt tables (Apache 2.0), copied unchanged into the package with their licence
# (nltk_data/LICENSE.txt and NOTICE.md): read when NLTK's own search (NLTK_DATA, ~/nltk_data, ...) finds none,
# so scoring needs no download. Identical files give identical tokens and the same `punkt:` hash in the signature.
SHIPPED_NLTK_DATA = Path(__file__).resolve().parent / "nltk_data"

_nltk: NltkWords | None = None
_word_tokenize: Callable[..., list[str]] | None = None


def nltk_tokenizer() -> NltkWords:
    """NLTK's word tokenizer and where its Punkt tables are, loaded on first use (only the parts of NLTK it needs, see
    nltk_words.py): NLTK's own search for the tables first, else the copy shipped in this package."""
    global _nltk
    if _nltk is None:
        _nltk = nltk_words.load(SHIPPED_NLTK_DATA)
    return _nltk


def find_punkt() -> Path | None:
    """The folder of NLTK's English Punkt tables: where NLTK's own search finds them, else the copy shipped in this
    package (whose folder is then added last to NLTK's search); None when neither holds them."""
    return nltk_tokenizer().punkt


def _nltk_word_tokenize() -> Callable[..., list[str]]:
    """NLTK's word_tokenize, loaded on first use, with a one-line error when Punkt data is missing."""
    global _word_tokenize
    if _word_tokenize is None:
        if find_punkt() is None:
            raise ExpmrcError(
                f"NLTK's English Punkt data ({PUNKT_RESOURCE}) is missing, and so is the copy this package ships "
                f"({SHIPPED_NLTK_DATA}): reinstall expmrc, run `{NLTK_HINT}` or point NLTK_DATA at a folder that "
                "holds it"
            )
        _word_tokenize = nltk_tokenizer().word_tokenize
    return _word_tokenize


# Long runs are tokenized in pieces: NLTK 3.10 bounds every regex call by 5 s (TimeoutError) and some of its
# patterns are superlinear, so a 5 MB passage would crash. A piece ends at a run of spaces, tabs or newlines
# with a letter or digit on both sides: no Punkt candidate ([.?!]) can see across it, and no Treebank rule
# anchored at the start or end of a sentence (quotes, a final period, colon or comma) can fire there, so
# the pieces' tokens are exactly the whole run's (tests/scoring/test_long_texts.py checks it on the dev sets).
PIECE_CHARS = 2000
_SAFE_SPLIT = re.compile(r"(?<=[^\W_])[ \t\r\n]+(?=[^\W_])")


def safe_pieces(run: str, size: int | None = None) -> list[str]:
    """Cut `run` at safe whitespace (see above) into pieces of about `size` (PIECE_CHARS) characters, longer
    where no safe cut exists; joining their NLTK tokens gives the tokens of the whole run."""
    size = PIECE_CHARS if size is None else size
    if len(run) <= size:
        return [run]
    pieces, start = [], 0
    for match in _SAFE_SPLIT.finditer(run, size):
        if match.start() - start >= size:
            pieces.append(run[start:match.start()])
            start = match.end()
    pieces.append(run[start:])
    return pieces


def _nltk_piece(piece: str) -> list[str]:
    """NLTK's tokens of one piece. Where NLTK itself gives up (its regex time limit; the leaderboard's script
    crashes there, so there is no official result to match), Treebank-tokenize whitespace-cut slices without
    Punkt's sentence split (a sentence-final period then stays on its word), in time linear in the text."""
    try:
        return _nltk_word_tokenize()(piece)
    except TimeoutError:
        return [token for part in _slices(piece) for token in _nltk_word_tokenize()(part, preserve_line=True)]


def _slices(text: str) -> Iterator[str]:
    """`text`'s words joined by single spaces into slices of at most PIECE_CHARS (a longer word is cut)."""
    slice_words: list[str] = []
    length = 0
    for word in text.split():
        for start in range(0, len(word), PIECE_CHARS):
            part = word[start:start + PIECE_CHARS]
            if length + len(part) > PIECE_CHARS and slice_words:
                yield " ".join(slice_words)
                slice_words, length = [], 0
            slice_words.append(part)
            length += len(part) + 1
    if slice_words:
        yield " ".join(slice_words)


@lru_cache(maxsize=1 << 17)
def word_tokens(run: str) -> tuple[str, ...]:
    """NLTK's tokens of one run of non-CJK text; cached, since passages repeat names and numbers."""
    if len(run) <= PIECE_CHARS:
        return tuple(_nltk_word_tokenize()(run))
    return tuple(token for piece in safe_pieces(run) for token in _nltk_piece(piece))


def _is_split_char(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fa5" or ch in _SPLIT_CHARS


# One CJK or special character, captured: re.split then gives the runs between them with the characters themselves.
_SPLIT_CHAR = re.compile("([\u4e00-\u9fa5" + "".join(sorted(re.escape(c) for c in _SPLIT_CHARS)) + "])")


def tokenize(text: str) -> list[str]:
    """Split `text` into the leaderboard's tokens (before normalization): each CJK or special character (as
    `_is_split_char` says) is a token, each run of other characters goes to NLTK."""
    tokens: list[str] = []
    parts = _SPLIT_CHAR.split(text.strip())
    for i in range(0, len(parts) - 1, 2):  # a run (maybe empty), then a split character
        if parts[i]:
            tokens.extend(word_tokens(parts[i]))
        tokens.append(parts[i + 1])
    if parts[-1]:
        tokens.extend(word_tokens(parts[-1]))
    return tokens


def normalize(tokens: Iterable[str]) -> list[str]:
    """Drop articles and single punctuation characters, lowercase the rest."""
    return [t.lower() for t in tokens if t not in _DROPPED]


@lru_cache(maxsize=1 << 18)
def _normalized(text: str) -> tuple[str, ...]:
    return tuple(normalize(tokenize(text)))


def as_text(value: Any) -> str:
    """A prediction or reference as it is scored: a string as it is, anything else (a JSON number) as str()."""
    return value if isinstance(value, str) else str(value)


def score_tokens(value: Any) -> tuple[str, ...]:
    """The normalized tokens of `str(value)` (memoized: references and predictions repeat a lot)."""
    return _normalized(as_text(value))


@lru_cache(maxsize=1 << 18)
def _bag(text: str) -> Counter[str]:
    return Counter(_normalized(text))


def score_bag(value: Any) -> Counter[str]:
    """The normalized tokens of `str(value)` as a bag (token -> count), memoized like `score_tokens`; not to be
    changed by the caller."""
    return _bag(as_text(value))


def common_count(a: Counter[str], b: Counter[str]) -> int:
    """How many tokens two bags share: the size of their multiset intersection, `sum((a & b).values())`."""
    if len(a) > len(b):
        a, b = b, a
    return sum(min(n, b[token]) for token, n in a.items() if token in b)


def clear_caches() -> None:
    """Forget memoized tokens (benchmarks use it to time tokenization from cold)."""
    _bag.cache_clear()
    _normalized.cache_clear()
    word_tokens.cache_clear()


def token_f1(prediction: tuple[str, ...] | list[str], reference: tuple[str, ...] | list[str]) -> float:
    """Bag-of-tokens F1 between two normalized token lists, with the leaderboard's empty-side rule."""
    if not prediction or not reference:
        return float(list(prediction) == list(reference))
    return overlap_f1(common_count(Counter(prediction), Counter(reference)), len(prediction), len(reference))


def overlap_f1(same: int, predicted: int, reference: int) -> float:
    """F1 of `same` tokens shared by a prediction of `predicted` tokens and a reference of `reference`, computed
    as the official SQuAD and CMRC 2018 scripts do (0 when none is shared); each metric counts `same` its way."""
    if same == 0:
        return 0.0
    precision = 1.0 * same / predicted
    recall = 1.0 * same / reference
    return (2 * precision * recall) / (precision + recall)


def best_f1(prediction: Any, references: Iterable[Any]) -> tuple[float, int]:
    """Max F1 of `prediction` over `references` and the index of the first reference reaching it."""
    pred, pred_bag = score_tokens(prediction), score_bag(prediction)
    best, best_index = -1.0, -1
    for i, ref in enumerate(references):
        tokens = score_tokens(ref)
        if pred and tokens:  # token_f1, from the memoized bags
            value = overlap_f1(common_count(pred_bag, score_bag(ref)), len(pred), len(tokens))
        else:
            value = float(pred == tokens)
        if value > best:
            best, best_index = value, i
    if best_index < 0:
        raise ValueError("best_f1 needs at least one reference")
    return best, best_index


def f1(prediction: Any, references: Iterable[Any]) -> float:
    """Max bag-of-tokens F1 of `prediction` against `references` (each passed through str())."""
    return best_f1(prediction, references)[0]


def exact_match(prediction: Any, references: Iterable[Any]) -> float:
    """1.0 when the normalized tokens of `prediction` equal those of some reference, else 0.0."""
    return matches_any(_normalized, prediction, references)


def matches_any(view: Callable[[str], Any], prediction: Any, references: Iterable[Any]) -> float:
    """1.0 when `view` of the prediction's text equals `view` of some reference's, else 0.0 (also with none)."""
    pred = view(as_text(prediction))
    return float(any(pred == view(as_text(ref)) for ref in references))


def max_over_references(view: Callable[[str], T], score: Callable[[T, T], float], prediction: Any,
                        references: Iterable[Any], metric: str) -> float:
    """Max over the references of `score` between the views of the prediction's and the reference's texts;
    with no reference an error naming `metric`, as the official SQuAD and CMRC 2018 scripts fail on none."""
    pred = view(as_text(prediction))
    scores = [score(pred, view(as_text(ref))) for ref in references]
    if not scores:
        raise ValueError(f"{metric} needs at least one reference (the official script fails on none)")
    return max(scores)


def score_question(question: Any, prediction: Any) -> dict[str, Any]:
    """The leaderboard's scores of one answered question, with the references that matched best.

    Span subsets: answer F1 (and exact match) against the gold answers; multiple choice: answer 1 when
    the label equals the gold label exactly. Evidence F1 against the question's evidences (0 when the
    dataset has none); overall = answer × evidence.
    """
    answer, evidence = prediction.answer, prediction.evidence
    values: dict[str, Any] = {"best_answer_reference": None, "best_evidence_reference": None, "evidence": 0.0}
    if isinstance(question, SpanQuestion):
        values["answer"], i = best_f1(answer, question.answers)
        values["best_answer_reference"] = str(question.answers[i])
        values["exact"] = exact_match(answer, question.answers)
    else:
        values["answer"] = values["exact"] = float(isinstance(answer, str) and answer == question.answer)
        values["best_answer_reference"] = question.answer
    if question.evidences is not None:
        values["evidence"], i = best_f1(evidence, question.evidences)
        values["best_evidence_reference"] = str(question.evidences[i])
    values["overall"] = values["answer"] * values["evidence"]
    return values


def punkt_hash() -> str:
    """The first 12 hex digits of a sha256 over NLTK's English Punkt data files (names and bytes)."""
    folder = find_punkt()
    if folder is None:
        return "missing"
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def leaderboard_signature() -> str:
    """How the leaderboard's figures are computed: tokenization, Punkt data, normalization, F1 over references."""
    return f"tok:zh-char+nltk-word_tokenize|punkt:{punkt_hash()}|norm:articles+punct+lower|f1:max-over-refs"


LEADERBOARD = register(Metric(
    name="expmrc",
    summary="the leaderboard's answer F1 (accuracy for multiple choice), evidence F1, overall and answer EM",
    tasks=("span", "choice"),
    keys=("ALL_F1", "ANS_F1", "EVI_F1", "ANS_EM"),
    question=score_question,
    aggregate=percent_mean(("overall", "answer", "evidence", "exact"), ("ALL_F1", "ANS_F1", "EVI_F1", "ANS_EM")),
    signature=leaderboard_signature,
))
