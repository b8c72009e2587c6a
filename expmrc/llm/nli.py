"""The local support judge: any sequence-classification model whose config names an entailment label (an NLI
model: MNLI, XNLI, ANLI-trained), reading (premise, hypothesis) pairs in batches, on the GPU when there is one.

A pair's verdict is the model's most probable label: `supported` for entailment, `contradicted` for
contradiction, `not-supported` for any other (neutral, not_entailment); with it, the entailment probability.
Pairs are sorted by length before batching, so a batch holds pairs of about one length, and put back in
order; a pair longer than the model reads is cut from its longer side (the evidence, as a rule).
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

from expmrc.errors import ExpmrcError
from expmrc.llm.backends import hub_source, weights_fingerprint
from expmrc.scoring.support import CONTRADICTED, NOT_SUPPORTED, SUPPORTED, UNJUDGED, Pair, Verdict

MAX_LENGTH = 512  # the most tokens a pair is given, whatever a model's config allows
ROLES = {"entailment": SUPPORTED, "contradiction": CONTRADICTED}


def label_role(name: str) -> str | None:
    """What a model's label means: `entailment`, `contradiction`, `neutral`, `not_entailment`, or None (LABEL_0)."""
    word = re.sub(r"[\s_-]+", "_", name.strip().lower())
    if re.fullmatch(r"(not|non|no)_?entail\w*", word):
        return "not_entailment"
    for role, stem in (("entailment", "entail"), ("contradiction", "contradict"), ("neutral", "neutral")):
        if word.startswith(stem):
            return role
    return None


def label_roles(id2label: dict[Any, Any], where: str) -> dict[int, str]:
    """Each output index's role; one line naming `where` (the model's config.json) when it names no labels (the
    library's LABEL_0, LABEL_1 ...), one label only, no entailment label, or two."""
    roles = {int(i): label_role(str(name)) or "other" for i, name in id2label.items()}
    names = ", ".join(f"{i}: {id2label[i]}" for i in sorted(id2label, key=int))
    need = ("the judge needs an NLI model whose config's id2label says which output is entailment (and "
            "contradiction, neutral where it has them)")
    if all(re.fullmatch(r"LABEL_\d+", str(name)) for name in id2label.values()):
        raise ExpmrcError(f"{where}: names no labels (id2label is {names or 'empty'}, the library's default); {need}")
    if len(roles) < 2:
        raise ExpmrcError(f"{where}: names one label only ({names}): every pair would get it, so a rate would say "
                          f"nothing; {need}")
    entailment = [i for i, role in roles.items() if role == "entailment"]
    if len(entailment) != 1:
        why = "names no entailment label" if not entailment else "names entailment twice"
        raise ExpmrcError(f"{where}: its id2label ({names}) {why}; {need}")
    return roles


TOKENIZER_FILES = "tokenizer.json, vocab.txt or a sentencepiece model"
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def check_folder(folder: str) -> None:
    """Refuse, in one line naming the file, a model folder that cannot hold an NLI model: empty, without
    config.json, without weights, or with a safetensors file whose header does not cover it (cut short)."""
    names = set(os.listdir(folder))
    if not names:
        raise ExpmrcError(f"{folder}: an empty folder; an NLI model's folder holds config.json, its weights "
                          "(model.safetensors) and its tokenizer files")
    if "config.json" not in names:
        raise ExpmrcError(f"{folder}: no config.json, so not a model's folder (it holds {_listed(names)})")
    if not names & set(WEIGHTS):
        raise ExpmrcError(f"{folder}: no weights ({' or '.join(WEIGHTS[::2])}) beside config.json (it holds "
                          f"{_listed(names)})")
    from safetensors import safe_open

    for name in sorted(n for n in names if n.endswith(".safetensors")):
        path = os.path.join(folder, name)
        try:
            with safe_open(path, "pt"):
                pass
        except Exception as exc:  # safetensors raises its own error type (and OSError) for a damaged file
            raise ExpmrcError(f"{path}: damaged weights (cut short, or not a safetensors file): "
                              f"{_said(exc)}") from None


def _listed(names: set[str]) -> str:
    shown = sorted(names)[:4]
    return ", ".join(shown) + (f" and {len(names) - len(shown)} more" if len(names) > len(shown) else "")


def _said(exc: BaseException) -> str:
    """An exception's message on one line, short."""
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def nli_source(model: str) -> bool:
    """Check where `model` comes from before anything heavy is imported, and whether it must load from the Hugging
    Face cache alone: a file or a damaged folder is one line (`check_folder`), a Hub id is asked of the cache or
    the Hub once (`hub_source`: a missing folder, or an unreachable Hub, is a line, not a minute of retries)."""
    if os.path.exists(model) and not os.path.isdir(model):
        raise ExpmrcError(f"{model}: a file, not a model's folder (config.json, the weights and the tokenizer)")
    cache_only = hub_source(model)
    if os.path.isdir(model):
        check_folder(model)
    return cache_only


def load_nli(model: str, cache_only: bool) -> tuple[Any, Any, dict[int, str]]:
    """The tokenizer, the sequence-classification model and its labels' roles of `model` (a folder or Hub id,
    checked by `nli_source`), each failure one line naming the file or the part that could not be loaded. The
    loaders are the library's, reading the user's files: any error they raise is bad input."""
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    local = os.path.isdir(model)
    where = os.path.join(model, "config.json") if local else f"{model} (its config.json)"
    try:
        config = AutoConfig.from_pretrained(model, local_files_only=cache_only)
    except Exception as exc:  # the library reading the user's files: see the docstring
        raise ExpmrcError(f"{where}: cannot be read as a model's config: {_said(exc)}") from None
    roles = label_roles(dict(getattr(config, "id2label", None) or {}), where)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=cache_only)
    except Exception as exc:
        raise ExpmrcError(f"{model}: cannot load its tokenizer ({TOKENIZER_FILES} beside config.json): "
                          f"{_said(exc)}") from None
    if len(tokenizer) <= len(set(tokenizer.all_special_tokens)):  # the library builds an empty one from no files
        raise ExpmrcError(f"{model}: its tokenizer knows only its special tokens ({len(tokenizer)}), so every word "
                          f"would be unknown: are the tokenizer's files ({TOKENIZER_FILES}) missing?")
    try:
        loaded = AutoModelForSequenceClassification.from_pretrained(model, config=config, local_files_only=cache_only)
    except Exception as exc:
        weights = next((os.path.join(model, n) for n in WEIGHTS if os.path.isfile(os.path.join(model, n))), model) \
            if local else model
        hint = ("they do not fit config.json (a layer's shape differs: does id2label name as many labels as the "
                "model has outputs?)" if "mismatched_sizes" in str(exc) else _said(exc))
        raise ExpmrcError(f"{weights}: cannot load the weights of a sequence-classification (NLI) model: {hint}") \
            from None
    return tokenizer, loaded, roles


class NLIJudge:
    """A local NLI model as the support judge (`--judge nli`)."""

    name = "nli"

    def __init__(self, model: str, batch_size: int = 32, device: str = "auto", progress: bool = True) -> None:
        cache_only = nli_source(model)  # before torch loads: a bad source is a line at once
        import torch

        from expmrc.logs import quiet_libraries

        quiet_libraries()
        self.torch, self.model_name, self.batch_size, self.progress = torch, model, batch_size, progress
        self.tokenizer, loaded, self.roles = load_nli(model, cache_only)
        self.entailment = next(i for i, role in self.roles.items() if role == "entailment")
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            self.model = loaded.to(device).eval()
        except (RuntimeError, AssertionError) as exc:
            raise ExpmrcError(f"--device {device}: cannot put the judge there: {' '.join(str(exc).split())[:200]}") \
                from None
        self.device: str | None = device
        limits = [MAX_LENGTH, getattr(loaded.config, "max_position_embeddings", None) or MAX_LENGTH,
                  getattr(self.tokenizer, "model_max_length", None) or MAX_LENGTH]
        self.max_length = int(min(n for n in limits if isinstance(n, int) and 0 < n < 10**6))
        self.fingerprint = weights_fingerprint(model)

    def identity(self, language: str) -> str:
        """The signature's part: the model, its files' digest, its labels and the pair length (any language)."""
        labels = ",".join(self.roles[i] for i in sorted(self.roles))
        files = (self.fingerprint["files"] or "")[:12]
        return f"nli+model-{self.model_name}+files-{files or 'hub'}+labels-{labels}+max-len-{self.max_length}"

    def record(self) -> dict[str, Any]:
        """What the run record keeps of the judge."""
        return {"judge": self.name, "model": self.model_name, "weights": self.fingerprint, "device": self.device,
                "labels": {str(i): role for i, role in sorted(self.roles.items())}, "max_length": self.max_length,
                "batch_size": self.batch_size}

    def judge(self, pairs: list[Pair], language: str) -> list[Verdict]:
        """A verdict per pair, in order."""
        from tqdm.auto import tqdm

        order = sorted(range(len(pairs)), key=lambda i: -len(pairs[i].premise) - len(pairs[i].hypothesis))
        verdicts: list[Verdict | None] = [None] * len(pairs)
        batches = [order[k:k + self.batch_size] for k in range(0, len(order), self.batch_size)]
        with tqdm(total=len(pairs), desc="judge", unit="pair", disable=not self.progress or not pairs,
                  dynamic_ncols=True) as bar:
            for batch in batches:
                for i, verdict in zip(batch, self._batch([pairs[i] for i in batch])):
                    verdicts[i] = verdict
                bar.update(len(batch))
        return [v for v in verdicts if v is not None]

    def _batch(self, pairs: list[Pair]) -> list[Verdict]:
        torch = self.torch
        encoded = self.tokenizer([p.premise for p in pairs], [p.hypothesis for p in pairs], truncation=True,
                                 max_length=self.max_length, padding=True, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            logits = self.model(**encoded).logits.float()
        probabilities = torch.softmax(logits, dim=-1).cpu().tolist()
        verdicts = []
        for row in probabilities:
            if not all(math.isfinite(p) for p in row):
                verdicts.append(Verdict(UNJUDGED, note="the model gave no finite probabilities"))
                continue
            best = max(range(len(row)), key=lambda i: row[i])
            verdicts.append(Verdict(ROLES.get(self.roles[best], NOT_SUPPORTED), round(row[self.entailment], 6)))
        return verdicts
