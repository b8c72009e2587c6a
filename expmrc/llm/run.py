"""One `expmrc llm` run: prompts for every question, replies (cache, backend or a Batch file), parsing,
grounding, scoring, and the run folder (predictions.json, grounded.json, responses.jsonl,
run_info.json, scores.json: the names of expmrc/data/runs.py), written in one rename so a kill never
leaves half of it. run_info.json is the run record training runs write too (`RunRecord`, kind `llm`)."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from expmrc.data.datasets import ChoiceQuestion, Dataset, Question
from expmrc.data.io import atomic_directory
from expmrc.data.runs import (LLM_GROUNDED, LLM_PREDICTIONS, LLM_RESPONSES, LLM_SCORES, RUN_INFO, Environment,
                              RunRecord)
from expmrc.errors import ExpmrcError
from expmrc.llm.backends import BACKENDS, Reply, public_url
from expmrc.llm.cache import ResponseCache, default_cache_path, request_key
from expmrc.llm.config import LLMConfig
from expmrc.llm.parsing import STATUSES, Parsed, parse_reply
from expmrc.llm.prompts import PromptTemplate, answer_schema, build_messages
from expmrc.llm.shots import Shot


@dataclass
class Sampling:
    """The sampling parameters sent with every request (and part of the cache key)."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int = 0


@dataclass
class Fetched:
    """Replies by question id, and which came from the cache (no request paid)."""

    replies: dict[str, Reply] = field(default_factory=dict)
    cached: set[str] = field(default_factory=set)


def build_requests(questions: list[Question], template: PromptTemplate, language: str, shots: list[Shot],
                   model: str, sampling: Sampling, structured: bool) -> dict[str, dict[str, Any]]:
    """The chat-completions body of every question, by id; template errors surface here, before any request."""
    requests = {}
    for question in questions:
        body: dict[str, Any] = {"model": model, "messages": build_messages(template, question, language, shots),
                                "temperature": sampling.temperature, "top_p": sampling.top_p,
                                "max_tokens": sampling.max_tokens, "seed": sampling.seed}
        if structured:
            n_options = len(question.options) if isinstance(question, ChoiceQuestion) else 0
            schema = answer_schema(template.task, n_options)
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "expmrc_reply", "schema": schema, "strict": True}}
        requests[question.qid] = body
    return requests


def fetch(requests: dict[str, dict[str, Any]], backend: Any, cache: ResponseCache | None, concurrency: int,
          progress: bool = True) -> Fetched:
    """Every reply: from the cache where present, else from the backend, `concurrency` calls at a time;
    each new reply is cached the moment it arrives, so a killed run resumes without paying twice."""
    fetched = Fetched()
    keys = {qid: request_key({"backend": backend.name, **body}) for qid, body in requests.items()}
    for qid, key in keys.items():
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            fetched.replies[qid] = Reply(**hit)
            fetched.cached.add(qid)
    missing = [qid for qid in requests if qid not in fetched.replies]
    chunks = [missing[i:i + backend.batch_size] for i in range(0, len(missing), backend.batch_size)]
    bar = tqdm(total=len(missing), desc="llm", unit="question", disable=not progress or not missing,
               dynamic_ncols=True)
    start, tokens = time.perf_counter(), 0
    pool = ThreadPoolExecutor(max_workers=concurrency if backend.parallel else 1)
    stop = threading.Event()  # set by the first failed call: no further request starts after it

    def call(chunk: list[str]) -> list[Reply]:
        if stop.is_set():
            return []
        try:
            return backend.complete([requests[qid] for qid in chunk])
        except BaseException:
            stop.set()
            raise

    try:
        pending: dict[Future, list[str]] = {pool.submit(call, chunk): chunk for chunk in chunks}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                chunk = pending.pop(future)
                for qid, reply in zip(chunk, future.result()):
                    fetched.replies[qid] = reply
                    if cache is not None:
                        cache.put(keys[qid], reply.to_json())
                    tokens += reply.completion_tokens
                bar.update(len(chunk))
                bar.set_postfix_str(f"{tokens / max(time.perf_counter() - start, 1e-9):.1f} tokens/s")
    finally:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        bar.close()
    return fetched


def parse_all(questions: list[Question], replies: dict[str, Reply]) -> dict[str, Parsed]:
    """Each question's parsed reply; a question without a reply (say, absent from a Batch file) fails."""
    parsed = {}
    for question in questions:
        reply = replies.get(question.qid)
        options = question.options if isinstance(question, ChoiceQuestion) else None
        parsed[question.qid] = parse_reply(reply.text, options) if reply else Parsed("", "", "failed", "no reply")
    return parsed


def parse_counts(parsed: dict[str, Parsed]) -> dict[str, int]:
    """How many replies parsed each way (see parsing.STATUSES)."""
    return {status: sum(p.status == status for p in parsed.values()) for status in STATUSES}


def submission_of(parsed: dict[str, Parsed]) -> dict[str, dict[str, str]]:
    """A complete submission: every question, an empty answer and evidence where parsing failed."""
    return {qid: {"answer": p.answer, "evidence": p.evidence} for qid, p in parsed.items()}


def token_totals(replies: dict[str, Reply], only: set[str] | None = None) -> dict[str, int]:
    """Prompt and completion tokens over the replies (or those whose ids are in `only`)."""
    chosen = [r for qid, r in replies.items() if only is None or qid in only]
    return {"prompt": sum(r.prompt_tokens for r in chosen), "completion": sum(r.completion_tokens for r in chosen)}


def cost(tokens: dict[str, int], price: tuple[float, float] | None) -> float | None:
    """US dollars for the tokens at (prompt, completion) prices per million tokens."""
    if price is None:
        return None
    return round((tokens["prompt"] * price[0] + tokens["completion"] * price[1]) / 1e6, 6)


def response_records(questions: list[Question], requests: dict[str, dict[str, Any]], fetched: Fetched,
                     parsed: dict[str, Parsed], grounding: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per question for responses.jsonl: messages, raw reply, parsed fields, grounding, tokens."""
    records = []
    for question in questions:
        qid = question.qid
        reply, p = fetched.replies.get(qid), parsed[qid]
        records.append({"id": qid, "messages": requests[qid]["messages"], "reply": reply.text if reply else None,
                        "parsed": {"answer": p.answer, "evidence": p.evidence, "status": p.status, "note": p.note},
                        "grounding": grounding.get(qid), "cached": qid in fetched.cached,
                        **({k: v for k, v in reply.to_json().items() if k != "text"} if reply else {})})
    return records


def write_run(path: str, overwrite: bool, files: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Write the run folder in one rename: each `files` entry as JSON, `records` as responses.jsonl."""
    with atomic_directory(path, overwrite=overwrite) as staging:
        for name, obj in files.items():
            text = json.dumps(obj, ensure_ascii=False, indent=1, allow_nan=False)
            Path(staging, name).write_text(text + "\n", encoding="utf-8")
        lines = [json.dumps(r, ensure_ascii=False, allow_nan=False) for r in records]
        Path(staging, LLM_RESPONSES).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def limited(dataset: Dataset, limit: int | None) -> Dataset:
    """The dataset cut to its first `limit` questions (scores are then over those only)."""
    if limit is None or limit >= len(dataset.questions):
        return dataset
    return Dataset(dataset.path, dataset.version, dataset.subset, dataset.questions[:limit], dataset.raw)


@dataclass
class Prepared:
    """Everything decided before the first request: questions, template, shots and request bodies."""

    dataset: Dataset
    template: PromptTemplate
    shots: list[Shot]
    dev_shots: bool
    sampling: Sampling
    structured: bool
    requests: dict[str, dict[str, Any]]


def prepare(args: LLMConfig) -> Prepared:
    """Check the flags and inputs and build every request; all bad input is refused here, before any cost."""
    from expmrc.data.datasets import load_dataset
    from expmrc.llm.prompts import choose_template, template_from_file
    from expmrc.llm.shots import draw_shots

    _check_output(args)
    if args.shots and not args.shots_file:
        raise ExpmrcError("--shots needs --shots-file, a labelled file to draw examples from "
                          "(e.g. `expmrc pseudo` output on the training set)")
    dataset = limited(load_dataset(args.subset), args.limit)
    template = choose_template(args.template, dataset.kind, dataset.language)
    if args.prompt:
        template = template_from_file(args.prompt, template)
    shots, dev_shots = draw_shots(args.shots_file or "", args.shots, args.seed, dataset, args.allow_dev_shots) \
        if args.shots else ([], False)
    sampling = Sampling(args.temperature, args.top_p, args.max_tokens, args.seed)
    structured = args.structured == "auto" and BACKENDS.lookup(args.backend, "--backend: ").remote
    requests = build_requests(dataset.questions, template, dataset.language, shots, args.model, sampling, structured)
    return Prepared(dataset, template, shots, dev_shots, sampling, structured, requests)


def _check_output(args: LLMConfig) -> None:
    from expmrc.data.io import check_output_path

    if args.export_batch:
        check_output_path(args.export_batch, "file")
        return
    if not args.output:
        raise ExpmrcError("--output RUN_DIR is required (unless --export-batch)")
    target = check_output_path(args.output, "dir")
    if target.is_dir() and any(target.iterdir()) and not args.overwrite:
        raise ExpmrcError(f"{args.output}: already exists and is not empty (pass --overwrite to replace it)")


def make_backend(args: LLMConfig) -> Any:
    """The backend the flags name (a registered one); the API key comes from the environment only."""
    return BACKENDS.lookup(args.backend, "--backend: ").make(args)


def replies(args: LLMConfig, prepared: Prepared) -> tuple[Fetched, Any]:
    """The replies of a run, from a Batch output file or from the cache and the backend; and the backend."""
    if args.import_batch:
        from expmrc.llm.batch import import_batch

        return Fetched(replies=import_batch(args.import_batch, set(prepared.requests))), None
    backend = make_backend(args)
    cache = None if args.no_cache else ResponseCache(args.cache or default_cache_path())
    try:
        fetched = fetch(prepared.requests, backend, cache, args.concurrency, progress=not args.quiet)
    finally:
        if cache is not None:
            cache.close()
    return fetched, backend


def ground(dataset: Dataset, submission: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The grounded submission, each question's grounding details by id, and the grounding summary."""
    from expmrc.text.grounding import ground_submission

    result = ground_submission(dataset, submission)
    details = {d["id"]: {k: v for k, v in d.items() if k != "id"} for d in result.details}
    return result.submission, details, {"counts": result.counts, "answer_counts": result.answer_counts,
                                        "unverified_evidence_rate": result.unverified_rate}


def scores(dataset: Dataset, submission: dict[str, Any], name: str) -> dict[str, Any]:
    """The scorer's summary of a submission, with the default extra metrics (LOCA or its lexical stand-in)."""
    from expmrc.metrics.registry import select
    from expmrc.scoring.scorer import score

    return score(dataset, submission, name, metrics=select(None, dataset)).summary()


def finish(args: LLMConfig, prepared: Prepared, fetched: Fetched, backend: Any, started: float) -> list[str]:
    """Parse, ground, score and write the run folder; return the lines to print."""
    dataset = prepared.dataset
    parsed = parse_all(dataset.questions, fetched.replies)
    submission = submission_of(parsed)
    grounded, details, grounding = ground(dataset, submission)
    raw_scores, grounded_scores = scores(dataset, submission, "predictions.json"), scores(dataset, grounded, "grounded.json")
    info = run_info(args, prepared, fetched, backend, parse_counts(parsed), started)
    record = RunRecord("llm", info, "finished", Environment.here(getattr(backend, "device", None)),
                       public_command(args.command))
    summary = {"raw": raw_scores, "grounded": grounded_scores, "grounding": grounding, "parse": info["parse"],
               "dev_shots": prepared.dev_shots, "questions": len(dataset.questions), "limit": args.limit}
    records = response_records(dataset.questions, prepared.requests, fetched, parsed, details)
    write_run(args.run_dir, args.overwrite, {LLM_PREDICTIONS: submission, LLM_GROUNDED: grounded,
                                             RUN_INFO: record.as_json(), LLM_SCORES: summary}, records)
    return summary_lines(args.run_dir, summary, info)


def run_info(args: LLMConfig, prepared: Prepared, fetched: Fetched, backend: Any, parsed: dict[str, int],
             started: float) -> dict[str, Any]:
    """The run's record: everything that shaped its replies, and what they cost; no secret."""
    remote = BACKENDS.lookup(args.backend).remote
    paid = set(fetched.replies) - fetched.cached
    tokens, paid_tokens = token_totals(fetched.replies), token_totals(fetched.replies, paid)
    template = prepared.template
    return {
        "model": args.model, "backend": args.backend,
        "base_url": public_url(args.base_url) if remote and not args.import_batch else None,
        "api_key_env": args.api_key_env if remote else None,
        "dataset": prepared.dataset.path, "subset": prepared.dataset.subset, "questions": len(prepared.requests),
        "limit": args.limit, "template": {"name": template.name, "version": template.version, "sha256": template.sha256},
        "shots": {"k": len(prepared.shots), "file": args.shots_file, "seed": args.seed,
                  "ids": [q.qid for q, _, _ in prepared.shots], "dev": prepared.dev_shots},
        "sampling": asdict(prepared.sampling),
        "structured_output": bool(prepared.structured and getattr(backend, "structured", False)),
        "replies": {"sent": len(paid), "cached": len(fetched.cached), "imported_from": args.import_batch},
        "parse": parsed, "tokens": tokens, "tokens_paid_this_run": paid_tokens,
        "price_per_million": list(args.price) if args.price else None,
        "cost_usd": cost(tokens, args.price), "cost_usd_this_run": cost(paid_tokens, args.price),
        "concurrency": args.concurrency, "seconds": round(time.time() - started, 3),
    }


def public_command(words: tuple[str, ...] | None) -> list[str] | None:
    """The command line as the record keeps it: a URL given to --base-url without its user info and query."""
    if words is None:
        return None
    kept = list(words)
    for i, word in enumerate(kept):
        if word.startswith("--base-url="):
            kept[i] = "--base-url=" + public_url(word.split("=", 1)[1])
        elif i and kept[i - 1] == "--base-url":
            kept[i] = public_url(word)
    return kept


def summary_lines(path: str, summary: dict[str, Any], info: dict[str, Any]) -> list[str]:
    """What the run prints: parse counts, grounding, raw and grounded scores, where it wrote."""
    parse = ", ".join(f"{k} {v}" for k, v in summary["parse"].items())
    counts = ", ".join(f"{k} {v}" for k, v in summary["grounding"]["counts"].items())
    rate = summary["grounding"]["unverified_evidence_rate"]
    lines = [(f"{summary['questions']} questions: {info['replies']['sent']} requests sent, "
             f"{info['replies']['cached']} from the cache"),
             f"parsed: {parse}", f"grounding: {counts}; unverified evidence {100 * rate:.1f}%"]
    for name in ("raw", "grounded"):
        s = summary[name]
        lines.append(f"{name:>8}: ALL_F1 {s['ALL_F1']:.3f}  ANS_F1 {s['ANS_F1']:.3f}  EVI_F1 {s['EVI_F1']:.3f}")
    if info["cost_usd"] is not None:
        lines.append(f"cost: ${info['cost_usd']:.4f} (this run ${info['cost_usd_this_run']:.4f})")
    if summary["dev_shots"]:
        lines.append("note: few-shot examples come from the dev set being scored; declare it with any result")
    lines.append(f"wrote {path}")
    return lines
