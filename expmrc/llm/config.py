"""`expmrc llm`'s configuration: the command line parses once into an `LLMConfig` (expmrc/cli/llm.py), and the
run (expmrc/llm/run.py) and the backends read only this, never the argparse Namespace. The defaults are the
flags' defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from expmrc.errors import ExpmrcError


@dataclass(frozen=True)
class LLMConfig:
    """One `expmrc llm` run: what to ask, whom, how, and where the run folder goes."""

    subset: str  # a subset name (its dev set) or a dataset file
    model: str
    output: str | None = None
    overwrite: bool = False
    backend: str = "openai"
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"  # the environment variable holding the key (the key itself is never kept)
    template: str | None = None
    evidence_form: str | None = None  # a name of FORMS (expmrc/llm/forms.py); None: the --template's own, else quote
    prompt: str | None = None
    system_prompt: str | None = None  # the system message instead of the template's: a file's text, else this text
    no_system: bool = False  # no system turn: its text goes at the head of the first user turn
    structured: str = "auto"
    shots: int = 0
    shots_file: str | None = None
    allow_dev_shots: bool = False
    seed: int = 0
    temperature: float = 0.0
    samples: int = 1  # replies per question, voted by majority (self-consistency)
    top_p: float = 1.0
    max_tokens: int = 512
    concurrency: int = 8
    batch_size: int = 8
    device: str = "auto"
    retries: int = 5
    backoff: float = 1.0
    timeout: float = 600.0
    cache: str | None = None
    no_cache: bool = False
    cache_old_keys: bool = False  # also read replies cached before the key named the server
    limit: int | None = None
    price: tuple[float, float] | None = None
    export_batch: str | None = None
    import_batch: str | None = None
    quiet: bool = False
    command: tuple[str, ...] | None = None  # the command line, as the run record keeps it

    @property
    def run_dir(self) -> str:
        """--output, which every run but an export of requests needs."""
        if not self.output:
            raise ExpmrcError("--output RUN_DIR is required (unless --export-batch)")
        return self.output

    @classmethod
    def from_flags(cls, values: dict[str, Any]) -> LLMConfig:
        """The configuration parsed flags give (a name no field has is not a setting of the run)."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})
