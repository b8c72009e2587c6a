"""Support judges, one registry (`JUDGES`): does a question's evidence support its answer? A local NLI model
(expmrc/llm/nli.py), or any chat model through the backends, response cache, retries and hostile-reply
handling of `expmrc llm`, asked by a versioned prompt in English or Chinese (`JUDGE_PROMPTS`).

`judge_submissions` judges one or more submissions of a dataset together with the check of the judge (the
pairs of expmrc/scoring/support.py, each distinct pair once) and returns their `Support`s; `judge_record`
is the run record (`RunRecord`, kind `judge`) kept beside the figures. The same judges split grounding's
reworded and altered evidence by entailment (`split_rewordings`, expmrc/scoring/rewording.py).

This is the one place a judging run is orchestrated: the commands parse their flags into a `JudgeConfig`
(`JudgeConfig.from_flags`) and call `judge_submission` (`expmrc judge`), `judge_each` (`evaluate --judge`,
`compare --judge`), `grounded_judge` (`llm --judge`: support and split) or `judge_rewordings` (`ground
--judge`); `stopped_line` is what a chat judge stopped by Ctrl-C or SIGTERM says.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

from expmrc.data.datasets import Dataset
from expmrc.data.runs import Environment, RunRecord
from expmrc.errors import ExpmrcError
from expmrc.llm.completion import Reply
from expmrc.llm.config import LLMConfig
from expmrc.registry import Registry
from expmrc.scoring.rewording import Split, rewordings, split_of, split_pairs, split_signature
from expmrc.scoring.stats import DEFAULT_SEED, Resampling
from expmrc.scoring.support import (CONTRADICTED, NOT_SUPPORTED, SUPPORTED, UNJUDGED, Check, Pair, Support, Verdict,
                                    check_cases, choose_statement, file_sha256, judged, pairs_of, support_signature,
                                    system_cases)

MAX_REPLY = 2000  # characters of a chat judge's reply kept in the details
SPLIT_SEED = DEFAULT_SEED  # draws the entailment check's other sentence (expmrc/scoring/rewording.py)


class Judge(Protocol):
    """What judging asks of a judge (`JUDGES` makes one from a `JudgeConfig`)."""

    name: str
    device: str | None  # where a local model runs (the record's environment); None for a server

    def identity(self, language: str) -> str: ...  # the signature's part for a dataset of that language

    def record(self) -> dict[str, Any]: ...  # what the run record keeps of the judge

    def judge(self, pairs: list[Pair], language: str) -> list[Verdict]: ...  # one verdict per pair, in order


@dataclass(frozen=True)
class JudgeConfig:
    """The judge a command was given (`--judge`, `--judge-model` and the connection flags); defaults as `expmrc llm`'s."""

    judge: str
    model: str
    statement: str | None = None  # a statement template name (default: the newest of the dataset's language)
    backend: str = LLMConfig.backend  # the chat judge's: an endpoint, or a local chat model
    base_url: str = LLMConfig.base_url
    api_key_env: str = LLMConfig.api_key_env
    device: str = LLMConfig.device
    batch_size: int = 32
    concurrency: int = LLMConfig.concurrency
    retries: int = LLMConfig.retries
    backoff: float = LLMConfig.backoff
    timeout: float = LLMConfig.timeout
    max_tokens: int = LLMConfig.max_tokens
    cache: str | None = None
    no_cache: bool = False
    quiet: bool = False

    @classmethod
    def from_flags(cls, values: dict[str, Any]) -> JudgeConfig | None:
        """The judge parsed flags name: `judge`, `judge_model` and each setting as `judge_NAME` (one a command does
        not offer keeps its default), and `quiet`; None without --judge. --judge without --judge-model is one line,
        and so is --judge-model, or a judge setting changed, without --judge (it would be ignored)."""
        if not values.get("judge"):
            stray = (["--judge-model"] if values.get("judge_model") else []) + [
                "--judge-" + f.name.replace("_", "-") for f in fields(cls)
                if f.name not in ("judge", "model") and values.get("judge_" + f.name, f.default) != f.default]
            if stray:
                raise ExpmrcError(f"{stray[0]} sets the support judge, and no --judge is given (nli or chat): without "
                                  "it nothing is judged")
            return None
        if not values.get("judge_model"):
            raise ExpmrcError(f"--judge {values.get('judge')} needs --judge-model (an NLI model's folder or Hub id, "
                              "or a chat model's name)")
        settings = {f.name: values["judge_" + f.name] for f in fields(cls)
                    if "judge_" + f.name in values and f.name not in ("judge", "model")}
        return cls(judge=values["judge"], model=values["judge_model"], quiet=values.get("quiet", False), **settings)

    def llm(self) -> LLMConfig:
        """The chat judge's settings as `expmrc llm`'s, for its backend and cache."""
        return LLMConfig(subset="", model=self.model, backend=self.backend, base_url=self.base_url,
                         api_key_env=self.api_key_env, device=self.device, batch_size=self.batch_size,
                         concurrency=self.concurrency, retries=self.retries, backoff=self.backoff, timeout=self.timeout,
                         max_tokens=self.max_tokens, cache=self.cache, no_cache=self.no_cache, quiet=self.quiet)


# ---------------------------------------------------------------- the chat judge


@dataclass(frozen=True)
class JudgePrompt:
    """The chat judge's question, in one language, versioned: `text` with {premise} and {hypothesis}."""

    name: str
    version: int
    language: str
    text: str

    @property
    def sha256(self) -> str:
        text = json.dumps([self.name, self.version, self.language, self.text], ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


JUDGE_PROMPTS: Registry[JudgePrompt] = Registry.of("judge prompt", {
    "judge-en-v1": JudgePrompt("judge-en-v1", 1, "en", (
        "Decide whether the evidence supports the statement, judging from the evidence alone (not from what you "
        "know).\n\nEvidence: {premise}\n\nStatement: {hypothesis}\n\nReply with one word: \"supported\" if the "
        "evidence shows the statement is true, \"contradicted\" if it shows the statement is false, \"unsupported\" "
        "if it does not say.")),
    "judge-zh-v1": JudgePrompt("judge-zh-v1", 1, "zh", (
        "请只根据证据（不要用你自己的知识）判断证据是否支持下面的陈述。\n\n证据：{premise}\n\n陈述：{hypothesis}\n\n"
        "只回答一个词：证据表明陈述为真，回答“支持”；证据表明陈述为假，回答“矛盾”；证据没有说明，回答“不支持”。")),
})

_VERDICT_WORDS = re.compile(r"\b(not[\s_-]*supported|unsupported|neutral|contradict(?:ed|s|ion|ory)?|supported)\b|"
                            r"(不支持|无法支持|未支持|不能支持|矛盾|支持)", re.IGNORECASE)


def verdict_label(text: str) -> str | None:
    """The verdict a reply gives: its last verdict word (a reply may reason before it), or None when it has none."""
    found = list(_VERDICT_WORDS.finditer(text))
    if not found:
        return None
    word = found[-1].group().lower()
    if word.startswith(("contradict", "矛盾")):
        return CONTRADICTED
    if word in ("supported", "支持"):
        return SUPPORTED
    return NOT_SUPPORTED


def read_verdict(reply: Reply | None) -> Verdict:
    """A chat judge's verdict from its reply; no reply, a failed one or one without a verdict is `unjudged`."""
    from expmrc.llm.parsing import strip_reasoning

    if reply is None:
        return Verdict(UNJUDGED, note="no reply")
    if reply.error:
        return Verdict(UNJUDGED, note=reply.error)
    text = strip_reasoning(reply.text)
    label = verdict_label(text)
    kept = text[:MAX_REPLY]
    return Verdict(UNJUDGED, reply=kept, note="no verdict in the reply") if label is None else Verdict(label, reply=kept)


class ChatJudge:
    """A chat model as the support judge (`--judge chat`), asked through `expmrc llm`'s backend, cache and fetch."""

    name = "chat"

    def __init__(self, config: JudgeConfig) -> None:
        from expmrc.llm.backends import make_backend
        from expmrc.llm.cache import cache_path

        self.settings = config.llm()
        self.backend = make_backend(self.settings)
        self.device = self.backend.device
        self.cache_path = cache_path(self.settings)
        self.replies = {"sent": 0, "cached": 0}
        self.prompts: set[str] = set()

    def prompt(self, language: str) -> JudgePrompt:
        return max((p for p in JUDGE_PROMPTS.values() if p.language == language), key=lambda p: p.version)

    def identity(self, language: str) -> str:
        """The signature's part: the model, where it answered, the prompt and its hash."""
        where = self.backend.identity()
        place = where.get("server") or ((where.get("weights") or {}).get("files") or "local")[:12]
        prompt = self.prompt(language)
        return (f"chat+model-{self.settings.model}+{where['backend']}-{place}+prompt-{prompt.name}"
                f"+sha-{prompt.sha256[:12]}+max-tokens-{self.settings.max_tokens}")

    def record(self) -> dict[str, Any]:
        from expmrc.llm.backends import BACKENDS, public_url

        remote = BACKENDS.lookup(self.settings.backend).remote
        return {"judge": self.name, "model": self.settings.model, "backend": self.settings.backend,
                "base_url": public_url(self.settings.base_url) if remote else None,
                "api_key_env": self.settings.api_key_env if remote else None,
                "prompts": {name: JUDGE_PROMPTS[name].sha256 for name in sorted(self.prompts)},
                "cache": self.cache_path, "replies": dict(self.replies), "max_tokens": self.settings.max_tokens}

    def requests(self, pairs: list[Pair], language: str) -> dict[str, dict[str, Any]]:
        """One chat-completions body per pair, by request id (greedy: a verdict is not sampled)."""
        prompt = self.prompt(language)
        self.prompts.add(prompt.name)
        return {f"pair-{i}": {"model": self.settings.model, "temperature": 0.0, "top_p": 1.0,
                              "max_tokens": self.settings.max_tokens, "seed": 0,
                              "messages": [{"role": "user", "content": prompt.text.format(
                                  premise=pair.premise, hypothesis=pair.hypothesis)}]}
                for i, pair in enumerate(pairs)}

    def judge(self, pairs: list[Pair], language: str) -> list[Verdict]:
        """A verdict per pair: replies from the cache where it holds them, else asked (and cached as they come);
        Ctrl-C or SIGTERM raise expmrc.llm.fetch.Interrupted with every reply received cached."""
        from expmrc.llm.cache import ResponseCache
        from expmrc.llm.fetch import fetch

        if not pairs:
            return []
        requests = self.requests(pairs, language)
        cache = ResponseCache(self.cache_path) if self.cache_path else None
        try:
            self.backend.check(next(iter(requests.values())))
            fetched = fetch(requests, self.backend, cache, self.settings.concurrency, progress=not self.settings.quiet,
                            wait=self.settings.timeout)
        finally:
            if cache is not None:
                cache.close()
        self.replies["sent"] += len(fetched.replies) - len(fetched.cached)
        self.replies["cached"] += len(fetched.cached)
        return [read_verdict(fetched.replies.get(rid)) for rid in requests]


# ---------------------------------------------------------------- the registry


@dataclass(frozen=True)
class JudgeKind:
    """A registered judge: how it is made from the flags, and one line for --help."""

    make: Callable[[JudgeConfig], Judge]
    summary: str


def _nli(config: JudgeConfig) -> Judge:
    from expmrc.llm.nli import NLIJudge

    return NLIJudge(config.model, config.batch_size, config.device, progress=not config.quiet)


JUDGES: Registry[JudgeKind] = Registry.of("judge", {
    "nli": JudgeKind(_nli, "a local NLI model (a folder or Hub id) whose config names an entailment label; "
                           "batched, on the GPU when there is one"),
    "chat": JudgeKind(ChatJudge, "any chat model through `expmrc llm`'s backends (an OpenAI-compatible endpoint, or "
                                 "--backend transformers), its response cache and retries; prompts in English and "
                                 "Chinese"),
})


def make_judge(config: JudgeConfig) -> Judge:
    """The judge the flags name, loaded (an NLI model) or connected (a chat model's backend), before any work."""
    return JUDGES.lookup(config.judge, "--judge: ").make(config)


# ---------------------------------------------------------------- judging submissions


def grounding_statuses(dataset: Dataset, submission: dict[str, Any], source: str) -> dict[str, str]:
    """Each question's evidence grounding status (expmrc.text.grounding; a question left out is `missing`); a
    submission for another subset is refused in one line naming `source`."""
    from expmrc.text.grounding import MISSING, ground_submission

    found = {d["id"]: d["evidence"]["status"] for d in ground_submission(dataset, submission, source=source).details}
    return {q.qid: found.get(q.qid, MISSING) for q in dataset.questions}


def judge_submissions(dataset: Dataset, submissions: Sequence[tuple[str, dict[str, Any], dict[str, str] | None]],
                      judge: Judge, statement: str | None, settings: Resampling) -> list[Support]:
    """Judge every (path, submission, grounding statuses or None) on `dataset`, with the check of the judge, each
    distinct pair once; statuses not given are found by grounding the submission."""
    template = choose_statement(statement, dataset.language)
    systems = []
    for path, submission, statuses in submissions:
        cases = system_cases(dataset, submission, template, path)
        statuses = statuses if statuses is not None else grounding_statuses(dataset, submission, path)
        for case in cases:
            case.grounding = statuses.get(case.qid)
        systems.append((path, cases))
    gold, other = check_cases(dataset, template, settings.seed)
    pairs = pairs_of(gold, other, *(cases for _, cases in systems))
    verdicts = dict(zip(pairs, judge.judge(pairs, dataset.language)))
    check = Check(judged(gold, verdicts), judged(other, verdicts))
    signature = support_signature(judge.identity(dataset.language), template, settings.seed, settings)
    return [Support(dataset.subset, dataset.path, path, judged(cases, verdicts), check, settings, signature, template)
            for path, cases in systems]


def judge_record(judge: Judge, supports: Sequence[Support], started: float,
                 command: Sequence[str] | None) -> RunRecord:
    """The run record of a judging run: the judge, the statement template, what was judged and how long it took."""
    first = supports[0]
    template = first.statement
    settings = {"judge": judge.record(),
                "statement": None if template is None else {"name": template.name, "sha256": template.sha256},
                "subset": first.subset, "dataset": first.dataset_path,
                "predictions": [s.predictions_path for s in supports], "questions": first.total,
                "rates": [None if (rate := s.rate()) is None else round(rate, 3) for s in supports],
                "check": first.check.summary(),
                "signature": first.signature, "seconds": round(time.time() - started, 3)}
    return RunRecord("judge", settings, "finished", Environment.here(judge.device), list(command) if command else None)


# ---------------------------------------------------------------- judging runs


def require_verdicts(supports: Sequence[Support]) -> None:
    """Refuse, in one line, a judging whose judge gave no verdict on any question of a submission (no rate)."""
    for support in supports:
        if support.no_verdict:
            raise ExpmrcError(support.no_verdict_line())


def judge_submission(config: JudgeConfig, dataset: Dataset, path: str, submission: dict[str, Any],
                     settings: Resampling, started: float, command: Sequence[str] | None) -> tuple[Support, RunRecord]:
    """`expmrc judge`: one submission judged by the judge `config` names, loaded here, and the run's record, the
    support carrying the submission file's sha256 (its details name what they judged). A submission holding no
    prediction for the dataset, and a judge giving no verdict, are one line; a chat judge stopped by Ctrl-C raises
    expmrc.llm.fetch.Interrupted."""
    if not any(q.qid in submission for q in dataset.questions):
        raise ExpmrcError(f"{path}: holds no predictions for the {len(dataset.questions)} questions of {dataset.path}")
    judge = make_judge(config)
    [support] = judge_submissions(dataset, [(path, submission, None)], judge, config.statement, settings)
    require_verdicts([support])
    support.predictions_sha256 = file_sha256(path)
    return support, judge_record(judge, [support], started, command)


def judge_each(config: JudgeConfig, settings: Resampling, items: Sequence[tuple[Dataset, str]]) -> list[Support]:
    """The `Support` of each (dataset, predictions path), judged by one judge loaded once, the submissions of one
    dataset object together (each distinct pair once, one check); a chat judge stopped by Ctrl-C raises
    expmrc.llm.fetch.Interrupted."""
    from expmrc.data.submissions import load_submission

    groups: dict[int, list[int]] = {}
    for k, (dataset, _) in enumerate(items):
        choose_statement(config.statement, dataset.language)
        groups.setdefault(id(dataset), []).append(k)
    judge = make_judge(config)
    found: dict[int, Support] = {}
    for ks in groups.values():
        dataset = items[ks[0]][0]
        given = [(items[k][1], load_submission(items[k][1]), None) for k in ks]
        found.update(zip(ks, judge_submissions(dataset, given, judge, config.statement, settings)))
    require_verdicts(list(found.values()))
    return [found[k] for k in range(len(items))]


def grounded_judge(config: JudgeConfig, path: str) -> Callable[[Dataset, dict[str, Any], dict[str, Any]],
                                                               tuple[Support, Split]]:
    """`llm --judge`: the judge loaded (or its backend made) before any request, and what judges the run's grounded
    submission (written at `path`) given each question's grounding details: its support (a judge giving no verdict
    leaves it without a rate, and the run says so) and the entailment split of its reworded and altered evidence,
    whose records the details gain."""
    from expmrc.text.grounding import MISSING

    judge = make_judge(config)

    def judged(dataset: Dataset, grounded: dict[str, Any], details: dict[str, Any]) -> tuple[Support, Split]:
        statuses = {q.qid: (details.get(q.qid) or {}).get("evidence", {}).get("status", MISSING)
                    for q in dataset.questions}
        support = judge_submissions(dataset, [(path, grounded, statuses)], judge, config.statement, Resampling())[0]
        texts = {qid: entry.get("evidence") for qid, entry in grounded.items() if isinstance(entry, dict)}
        split = split_rewordings(judge, dataset, details, texts)
        split.annotate(details)
        return support, split
    return judged


def split_rewordings(judge: Judge, dataset: Dataset, details: dict[str, dict[str, Any]], texts: dict[str, Any],
                     seed: int = SPLIT_SEED) -> Split:
    """The entailment split (expmrc/scoring/rewording.py) of the reworded and altered evidence among `details`
    (grounding records by question id), the model's words in `texts` (by question id), with its check; each
    distinct pair judged once."""
    quotes = rewordings(dataset, details, texts, seed)
    pairs = split_pairs(quotes, dataset.language)
    verdicts = dict(zip(pairs, judge.judge(pairs, dataset.language))) if pairs else {}
    return split_of(quotes, verdicts, dataset.language, split_signature(judge.identity(dataset.language), seed))


def judge_rewordings(config: JudgeConfig, dataset: Dataset, submission: dict[str, Any],
                     details: list[dict[str, Any]]) -> Split:
    """`ground --judge`: the judge `config` names, loaded here, splits the grounded submission's reworded and
    altered evidence (`details`: grounding's records, each split one given its `entailment`); a chat judge stopped
    by Ctrl-C raises expmrc.llm.fetch.Interrupted."""
    judge = make_judge(config)
    by_id = {record["id"]: record for record in details}
    texts = {qid: entry.get("evidence") for qid, entry in submission.items() if isinstance(entry, dict)}
    split = split_rewordings(judge, dataset, by_id, texts)
    split.annotate(by_id)
    return split


def stopped_line(status: int, cached: int, total: int, config: JudgeConfig) -> str:
    """The line of a chat judge stopped by Ctrl-C (status 130) or SIGTERM: how many replies are cached, and where."""
    from expmrc.llm.cache import cache_path

    word = "interrupted" if status == 130 else "terminated"
    where = cache_path(config.llm())
    kept = f"{cached} of {total} judge replies are cached in {where}" if where else "no reply was kept (no cache)"
    return f"{word}: {kept}; the same command resumes"
