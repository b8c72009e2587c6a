"""The local support judge: any sequence-classification model whose config names an entailment label (an NLI
model: MNLI, XNLI, ANLI-trained), reading (premise, hypothesis) pairs in batches, on the GPU when there is one.

A pair's verdict is the model's most probable label: `supported` for entailment, `contradicted` for
contradiction, `not-supported` for any other (neutral, not_entailment); with it, the entailment probability.
Pairs are sorted by length before batching, so a batch holds pairs of about one length, and put back in
order; a pair longer than the model reads is cut from its longer side (the evidence, as a rule).
"""

from __future__ import annotations

import math
import re
from typing import Any

from expmrc.errors import ExpmrcError
from expmrc.llm.backends import weights_fingerprint
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


def label_roles(id2label: dict[Any, Any], model: str) -> dict[int, str]:
    """Each output index's role; one line naming the model and its labels when none is entailment, or two are."""
    roles = {int(i): label_role(str(name)) or "other" for i, name in id2label.items()}
    entailment = [i for i, role in roles.items() if role == "entailment"]
    if len(entailment) != 1:
        names = ", ".join(f"{i}: {id2label[i]}" for i in sorted(id2label, key=int))
        why = "names no entailment label" if not entailment else "names entailment twice"
        raise ExpmrcError(f"{model}: its config's id2label ({names}) {why}; the judge needs an NLI model whose labels "
                          "say which output is entailment (and contradiction, neutral where it has them)")
    return roles


class NLIJudge:
    """A local NLI model as the support judge (`--judge nli`)."""

    name = "nli"

    def __init__(self, model: str, batch_size: int = 32, device: str = "auto", progress: bool = True) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from expmrc.logs import quiet_libraries

        quiet_libraries()
        self.torch, self.model_name, self.batch_size, self.progress = torch, model, batch_size, progress
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model)
            loaded: Any = AutoModelForSequenceClassification.from_pretrained(model)
        except (OSError, ValueError, KeyError) as exc:
            raise ExpmrcError(f"{model}: cannot load a sequence-classification (NLI) model: "
                              f"{' '.join(str(exc).split())[:300]}") from None
        self.roles = label_roles(dict(loaded.config.id2label), model)
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
