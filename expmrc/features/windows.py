"""What both tasks share between questions and model rows: windows, labels and the table they live in.

- **Rows.** A window is one or more rows of token ids (one for span extraction, one per option for
  multiple choice) laid out by the tokenizer's own pair template. The passage tokens of a window sit
  at the same positions `passage_pos .. passage_pos + n` of every row; `null_pos` is the position of
  the template's first special token, the label of "not in this window".
- **Windows.** A passage of `n` tokens is covered by windows of `capacity` tokens whose starts are
  `step` (`--doc_stride`) tokens apart, until a window reaches the end (`window_starts`). Each
  passage token is trusted in the one window where it has the most context on both sides
  (`max_context`), which is where decoding judges a span starting at it.
- **Labels.** A character span becomes the first and last passage token overlapping it; a window is
  labelled with those positions when both lie inside it, else with `null_pos`. Labels never come from
  rebuilt text, so every label maps back to exact passage characters.
- **Locating evidence.** One policy for both tasks (`expmrc.text.locate.locate_evidence`): each
  evidence string, stripped, is looked for verbatim; of several occurrences, the one holding the
  answer, else the one nearest to it, else the first; an evidence found nowhere verbatim is looked for
  once more letting any run of whitespace match any other ("repaired"); else it is "not found" and
  the question's evidence loss is masked, never guessed.
- **The table.** Windows are stored column by column in flat arrays (`FeatureTable`): token ids of
  every row back to back with row pointers, per-window labels and positions, and the passage offsets
  and max-context flags decoding needs. Flat arrays cache and load in a fraction of a second.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any
from collections.abc import Sequence

import numpy as np
import torch

from expmrc.errors import ExpmrcError

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedTokenizerBase, PreTrainedTokenizerFast

IGNORE = -100  # a label value the loss skips


@dataclass(frozen=True)
class PairTemplate:
    """A tokenizer's pair layout: the special token ids before A, between A and B and after B, and the
    token type of each of the five parts (None when the model takes no token types)."""

    before: tuple[int, ...]
    between: tuple[int, ...]
    after: tuple[int, ...]
    types: tuple[int, int, int, int, int] | None

    @classmethod
    def of(cls, tokenizer: PreTrainedTokenizerBase, token_types: bool) -> PairTemplate:
        """Read the template off the tokenizer by encoding a pair of one-token texts."""
        encoded = tokenizer("a", "b", add_special_tokens=True, return_token_type_ids=True)
        sequence = encoded.sequence_ids(0) if hasattr(encoded, "sequence_ids") else None
        ids = list(encoded["input_ids"])
        if sequence is None or 0 not in sequence or 1 not in sequence:
            raise ExpmrcError(f"{tokenizer_name(tokenizer)}: the tokenizer ({type(tokenizer).__name__}) does not mark "
                              "the two texts of a pair; a fast tokenizer is needed")
        a = [i for i, s in enumerate(sequence) if s == 0]
        b = [i for i, s in enumerate(sequence) if s == 1]
        before, between, after = ids[:a[0]], ids[a[-1] + 1:b[0]], ids[b[-1] + 1:]
        types = None
        if token_types:
            tt = list(encoded.get("token_type_ids") or [0] * len(ids))
            part = lambda positions, default: tt[positions[0]] if positions else default  # noqa: E731
            types = (part(range(0, a[0]), tt[a[0]]), tt[a[0]], part(range(a[-1] + 1, b[0]), tt[a[0]]),
                     tt[b[0]], part(range(b[-1] + 1, len(ids)), tt[b[0]]))
        return cls(tuple(before), tuple(between), tuple(after), types)

    @property
    def specials(self) -> int:
        """How many special tokens a pair adds."""
        return len(self.before) + len(self.between) + len(self.after)

    def null_pos(self, a_length: int) -> int:
        """The position of the row's first special token, the "not here" label (A has `a_length` tokens)."""
        return 0 if self.before else a_length

    def build(self, a: Sequence[int], b: Sequence[int]) -> tuple[list[int], list[int] | None]:
        """The row for texts A and B (token ids without specials) and its token types."""
        ids = [*self.before, *a, *self.between, *b, *self.after]
        if self.types is None:
            return ids, None
        parts = (self.before, a, self.between, b, self.after)
        return ids, [t for part, t in zip(parts, self.types) for _ in range(len(part))]


def tokenizer_name(tokenizer: PreTrainedTokenizerBase) -> str:
    """Where a tokenizer was loaded from (its folder or Hub id), for messages; its class where unknown."""
    return str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)


def encode_texts(tokenizer: PreTrainedTokenizerFast, texts: Sequence[str]) -> list[Any]:
    """The tokenizer's own encodings (`tokenizers.Encoding`: ids, offsets) of texts without special tokens, in one
    batched call to its Rust backend: what `tokenizer(text, add_special_tokens=False)` gives for each text,
    without converting every encoding to Python lists on the way."""
    backend = tokenizer.backend_tokenizer
    backend.no_truncation()  # as the tokenizer's own call without truncation or padding sets it
    backend.no_padding()
    split = bool(getattr(tokenizer, "split_special_tokens", False))
    if backend.encode_special_tokens != split:
        backend.encode_special_tokens = split
    return backend.encode_batch(list(texts), add_special_tokens=False)


def uses_token_types(tokenizer: PreTrainedTokenizerBase, config: PretrainedConfig) -> bool:
    """Whether rows carry token type ids: only when the tokenizer makes them and the model has types."""
    return "token_type_ids" in getattr(tokenizer, "model_input_names", ()) and \
        int(getattr(config, "type_vocab_size", 0) or 0) > 1


def window_starts(num_tokens: int, capacity: int, step: int) -> list[int]:
    """The first token of each window: every `step` tokens until a window reaches the passage end."""
    starts = [0]
    while starts[-1] + capacity < num_tokens:
        starts.append(starts[-1] + min(step, capacity))
    return starts


def max_context_flags(starts: Sequence[int], lengths: Sequence[int], num_tokens: int) -> np.ndarray:
    """Per window, whether each of its tokens has more context there than in any other window; the windows'
    flags back to back in one array.

    A token's context in a window is min(tokens before it, tokens after it) there; ties go to the
    earlier window, so every token is trusted in exactly one window.
    """
    best = np.full(num_tokens, -1, dtype=np.int64)  # token -> its most context so far
    owner = np.full(num_tokens, -1, dtype=np.int64)  # token -> the window giving it
    for w, (start, length) in enumerate(zip(starts, lengths)):
        position = np.arange(length)
        context = np.minimum(position, length - 1 - position)
        better = context > best[start:start + length]
        best[start:start + length][better] = context[better]
        owner[start:start + length][better] = w
    if not len(starts):
        return np.zeros(0, dtype=np.bool_)
    return np.concatenate([owner[start:start + length] == w
                           for w, (start, length) in enumerate(zip(starts, lengths))])


def max_context(starts: Sequence[int], lengths: Sequence[int], num_tokens: int) -> list[list[bool]]:
    """`max_context_flags` as one list of flags per window."""
    flags = max_context_flags(starts, lengths, num_tokens).tolist()
    cuts = np.cumsum([0, *lengths]).tolist()
    return [flags[a:b] for a, b in zip(cuts, cuts[1:])]


def char_span_to_tokens(offsets: Sequence[Sequence[int]] | np.ndarray, start: int, end: int) -> tuple[int, int] | None:
    """The first and last token overlapping characters [start, end), or None when none does."""
    spans = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    hits = np.flatnonzero((spans[:, 1] > start) & (spans[:, 0] < end) & (spans[:, 1] > spans[:, 0]))
    return None if not len(hits) else (int(hits[0]), int(hits[-1]))


def window_label(tokens: tuple[int, int] | None, start: int, end: int, passage_pos: int,
                 null_pos: int) -> tuple[int, int]:
    """Row positions of a token span lying wholly inside passage tokens [start, end), else the null position."""
    if tokens is None or tokens[0] < start or tokens[1] >= end:
        return null_pos, null_pos
    return passage_pos + tokens[0] - start, passage_pos + tokens[1] - start


@dataclass
class FeatureReport:
    """What building features met, counted per question with a few example ids, for the log and run_info.json."""

    questions: int = 0
    windows: int = 0
    multi_window_questions: int = 0
    question_truncated: int = 0  # question (and option) tokens cut to fit --max_query_length
    no_window: int = 0  # questions that gave no window (predicted as empty answers)
    skipped: int = 0  # training questions left out (the reasons below)
    empty_passage: int = 0
    answer_not_found: int = 0  # span answer text not in the passage, empty, or only dropped characters
    answer_start_repaired: int = 0
    bad_answer_label: int = 0  # multiple choice: the gold label names no option
    no_options: int = 0
    answer_outside_all_windows: int = 0  # the answer is longer than any window: only null labels
    evidence_missing: int = 0  # no evidence string: the evidence loss is masked
    evidence_not_found: int = 0  # evidence given but found nowhere in the passage: masked
    evidence_whitespace_repaired: int = 0
    tokens: int = 0  # question and passage tokens written into rows (specials excluded)
    unknown_tokens: int = 0  # of those, the tokenizer's unknown token
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, problem: str, qid: str) -> None:
        """Count one question under `problem`, keeping the first five ids as examples."""
        setattr(self, problem, getattr(self, problem) + 1)
        ids = self.examples.setdefault(problem, [])
        if len(ids) < 5:
            ids.append(qid)

    @property
    def unknown_share(self) -> float:
        """The share of tokens that are the unknown token (0 when there are none)."""
        return self.unknown_tokens / self.tokens if self.tokens else 0.0

    def summary(self) -> str:
        """One line: questions, windows, the unknown-token share and every non-zero problem with examples."""
        text = f"{self.questions} questions -> {self.windows} windows; unknown tokens {100 * self.unknown_share:.2f}%"
        for name in (f.name for f in fields(self)):
            value = getattr(self, name)
            if name in ("questions", "windows", "tokens", "unknown_tokens", "examples") or not value:
                continue
            example = f" (e.g. {', '.join(self.examples[name])})" if self.examples.get(name) else ""
            text += f"; {name.replace('_', ' ')}: {value}{example}"
        return text

    def as_dict(self) -> dict[str, Any]:
        """The counts (and the unknown-token share) as JSON-ready values, for run_info.json."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["unknown_share"] = round(self.unknown_share, 6)
        return out

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> FeatureReport:
        """The inverse of `as_dict`."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})


# per-window columns (int32) and their value when not set
WINDOW_COLUMNS = {"question_index": 0, "passage_pos": 0, "null_pos": 0, "start_positions": IGNORE,
                  "end_positions": IGNORE, "labels": IGNORE, "evidence_start": IGNORE, "evidence_end": IGNORE}


class FeatureTable:
    """Every window of a dataset, column by column (see the module docstring)."""

    # the columns, set from `arrays` (token_type_ids only where the model takes token types)
    input_ids: np.ndarray
    token_type_ids: np.ndarray
    row_ptr: np.ndarray
    window_ptr: np.ndarray
    passage_ptr: np.ndarray
    offsets: np.ndarray
    max_context: np.ndarray
    question_index: np.ndarray
    passage_pos: np.ndarray
    null_pos: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    labels: np.ndarray
    evidence_start: np.ndarray
    evidence_end: np.ndarray

    def __init__(self, task: str, arrays: dict[str, np.ndarray]) -> None:
        self.task = task
        self.arrays = arrays
        for name, value in arrays.items():
            setattr(self, name, value)

    def __len__(self) -> int:
        return len(self.question_index)

    def rows(self, window: int) -> range:
        """The row numbers of a window."""
        return range(int(self.window_ptr[window]), int(self.window_ptr[window + 1]))

    def row_ids(self, row: int) -> np.ndarray:
        """The token ids of one row."""
        return self.input_ids[self.row_ptr[row]:self.row_ptr[row + 1]]

    def passage(self, window: int) -> tuple[np.ndarray, np.ndarray]:
        """The character offsets ([n, 2]) and max-context flags ([n]) of a window's passage tokens."""
        a, b = int(self.passage_ptr[window]), int(self.passage_ptr[window + 1])
        return self.offsets[a:b], self.max_context[a:b]

    def lengths(self) -> np.ndarray:
        """The longest row of each window, in tokens (what a batch pads to)."""
        row_lengths = np.diff(self.row_ptr)
        return np.maximum.reduceat(row_lengths, self.window_ptr[:-1]) if len(self) else np.zeros(0, np.int64)

    def windows_of(self) -> dict[int, list[int]]:
        """question index -> its windows, in order."""
        grouped: dict[int, list[int]] = {}
        for window, question in enumerate(self.question_index.tolist()):
            grouped.setdefault(question, []).append(window)
        return grouped


class TableBuilder:
    """Collects windows one by one and packs them into a FeatureTable."""

    def __init__(self, task: str, token_types: bool) -> None:
        self.task = task
        self.token_types = token_types
        self.ids: list[np.ndarray] = []  # chunks, packed by build()
        self.types: list[np.ndarray] = []
        self.row_ptr = [0]
        self.window_ptr = [0]
        self.columns: dict[str, list[int]] = {name: [] for name in WINDOW_COLUMNS}
        self.offsets: list[np.ndarray] = []
        self.flags: list[np.ndarray] = []
        self.passage_ptr = [0]

    def add(self, rows: Sequence[tuple[Sequence[int] | np.ndarray, Sequence[int] | np.ndarray | None]],
            offsets: Sequence[Sequence[int]] | np.ndarray,
            flags: Sequence[bool] | np.ndarray, **columns: int) -> None:
        """Add one window: its rows (ids, token types), its passage offsets ([n, 2]) and flags, and its columns."""
        for ids, types in rows:
            self.ids.append(np.asarray(ids, dtype=np.int32))
            if self.token_types:
                self.types.append(np.asarray(types, dtype=np.int8))
            self.row_ptr.append(self.row_ptr[-1] + len(ids))
        self.window_ptr.append(len(self.row_ptr) - 1)
        for name, default in WINDOW_COLUMNS.items():
            self.columns[name].append(columns.get(name, default))
        self.offsets.append(np.asarray(offsets, dtype=np.int32).reshape(-1, 2))
        self.flags.append(np.asarray(flags, dtype=np.bool_))
        self.passage_ptr.append(self.passage_ptr[-1] + len(self.offsets[-1]))

    def build(self) -> FeatureTable:
        """The packed table."""
        def packed(chunks: list[np.ndarray], dtype: type, shape: tuple[int, ...] = (0,)) -> np.ndarray:
            return np.concatenate(chunks).astype(dtype, copy=False) if chunks else np.zeros(shape, dtype=dtype)

        arrays = {
            "input_ids": packed(self.ids, np.int32),
            "row_ptr": np.asarray(self.row_ptr, dtype=np.int64),
            "window_ptr": np.asarray(self.window_ptr, dtype=np.int64),
            "passage_ptr": np.asarray(self.passage_ptr, dtype=np.int64),
            "offsets": packed(self.offsets, np.int32, (0, 2)),
            "max_context": packed(self.flags, np.bool_),
            **{name: np.asarray(values, dtype=np.int32) for name, values in self.columns.items()},
        }
        if self.token_types:
            arrays["token_type_ids"] = packed(self.types, np.int8)
        return FeatureTable(self.task, arrays)


class WindowDataset:
    """A FeatureTable as the model's batches: `batch(windows)` pads rows to the longest, rounded up to a
    multiple of `pad_multiple` (8 gives tensor-core friendly shapes on GPUs; at most `max_length`), or to the
    shortest of `buckets` that holds them (a compiled model then meets a few fixed shapes), and adds masks;
    multiple-choice windows to the batch's most options, or to `width` options (a static shape) when more."""

    def __init__(self, table: FeatureTable, with_labels: bool, pad_id: int, pad_multiple: int = 1,
                 max_length: int | None = None, buckets: Sequence[int] = (), width: int = 0) -> None:
        self.table = table
        self.with_labels = with_labels
        self.pad_id = pad_id
        self.pad_multiple = max(1, pad_multiple)
        self.max_length = max_length
        self.buckets = tuple(sorted(buckets))
        self.width = width
        self._lengths: np.ndarray | None = None

    def bucketed(self, buckets: Sequence[int]) -> WindowDataset:
        """The same windows padded to `buckets` (the table and its lengths are shared, nothing is copied)."""
        padded = WindowDataset(self.table, self.with_labels, self.pad_id, self.pad_multiple, self.max_length, buckets,
                               self.width)
        padded._lengths = self._lengths
        return padded

    def fixed(self) -> WindowDataset:
        """The same windows at one fixed shape: every row padded to `max_length` (else the longest window) and every
        window to the table's most rows, so that batches of as many windows all have the same shape."""
        longest = self.max_length or int(self.lengths().max(initial=1))
        padded = WindowDataset(self.table, self.with_labels, self.pad_id, 1, longest, (longest,), self.widest())
        padded._lengths = self._lengths
        return padded

    def widest(self) -> int:
        """The most rows any window has (1 for span extraction; the most options for multiple choice)."""
        return int(np.diff(self.table.window_ptr).max(initial=1))

    def real_tokens(self) -> np.ndarray:
        """Each window's real tokens in a batch of this dataset's `width`: its rows' tokens, and one for each option
        row it is padded with (which attends to its first position)."""
        t = self.table
        rows = np.diff(t.window_ptr)
        tokens = np.add.reduceat(np.diff(t.row_ptr), t.window_ptr[:-1]) if len(self) else np.zeros(0, np.int64)
        return tokens.astype(np.int64) + np.maximum(self.width - rows, 0)

    def __len__(self) -> int:
        return len(self.table)

    def lengths(self) -> np.ndarray:
        """Each window's longest row in tokens: what length grouping and sorted prediction order by."""
        if self._lengths is None:
            self._lengths = self.table.lengths()
        return self._lengths

    def batch_shape(self, windows: Sequence[int]) -> tuple[int, int, int]:
        """(windows, rows per window, tokens per row) of the padded batch of these windows."""
        t = self.table
        width = max(self.width, *(int(t.window_ptr[w + 1] - t.window_ptr[w]) for w in windows))
        longest = max(int(self.lengths()[w]) for w in windows)
        if self.buckets:
            if longest > self.buckets[-1]:
                raise ExpmrcError(f"a window of {longest} tokens is longer than the largest length bucket "
                                  f"({self.buckets[-1]}); the buckets must reach --max_seq_length")
            return len(windows), width, next(b for b in self.buckets if b >= longest)
        length = -(-longest // self.pad_multiple) * self.pad_multiple
        if self.max_length is not None:
            length = max(longest, min(length, self.max_length))
        return len(windows), width, length

    def input_shape(self, windows: Sequence[int]) -> tuple[int, ...]:
        """The shape of the padded batch's `input_ids`: [windows, length] (span), [windows, options, length] (choice)."""
        shape = self.batch_shape(windows)
        return (shape[0], shape[2]) if self.table.task == "span" else shape

    def batch(self, windows: Sequence[int]) -> dict[str, torch.Tensor]:
        """The padded tensors of these windows: [batch, length] for span extraction, [batch, options,
        length] for multiple choice, with `attention_mask`, `passage_mask` (the null position and the
        passage tokens: where evidence and answer spans may point) and, for choice, `option_mask`."""
        t = self.table
        rows = [list(t.rows(w)) for w in windows]
        shape = self.batch_shape(windows)
        width, length = shape[1], shape[2]
        input_ids = np.full(shape, self.pad_id, dtype=np.int64)
        attention = np.zeros(shape, dtype=np.int64)
        types = np.zeros(shape, dtype=np.int64) if "token_type_ids" in t.arrays else None
        passage_mask = np.zeros((len(windows), length), dtype=np.int64)
        option_mask = np.zeros((len(windows), width), dtype=np.int64)
        for b, (window, group) in enumerate(zip(windows, rows)):
            for o, row in enumerate(group):
                a, z = int(t.row_ptr[row]), int(t.row_ptr[row + 1])
                input_ids[b, o, :z - a] = t.input_ids[a:z]
                attention[b, o, :z - a] = 1
                if types is not None:
                    types[b, o, :z - a] = t.token_type_ids[a:z]
            attention[b, len(group):, 0] = 1  # a padded option attends to one position, never to none
            option_mask[b, :len(group)] = 1
            first = int(t.passage_pos[window])
            count = int(t.passage_ptr[window + 1] - t.passage_ptr[window])
            passage_mask[b, first:first + count] = 1
            passage_mask[b, int(t.null_pos[window])] = 1
        batch = {"input_ids": input_ids, "attention_mask": attention, "passage_mask": passage_mask}
        if types is not None:
            batch["token_type_ids"] = types
        if t.task == "span":
            batch = {k: (v[:, 0] if v.ndim == 3 else v) for k, v in batch.items()}
        else:
            batch["option_mask"] = option_mask
        if self.with_labels:
            names = ("start_positions", "end_positions") if t.task == "span" else ("labels",)
            for name in (*names, "evidence_start", "evidence_end"):
                batch[name] = getattr(t, name)[list(windows)]
        return {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.int64)) for k, v in batch.items()}


def count_unknown(report: FeatureReport, ids: Sequence[int], unknown_id: int | None) -> None:
    """Add a row's tokens (specials excluded by the caller) to the report's unknown-token count."""
    report.tokens += len(ids)
    if unknown_id is not None:
        report.unknown_tokens += (ids.count(unknown_id) if isinstance(ids, list)
                                  else int(np.count_nonzero(np.asarray(ids) == unknown_id)))
