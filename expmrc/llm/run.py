"""One `expmrc llm` run: prompts for every question, replies (cache, backend or a Batch file), parsing,
self-consistency voting (--samples), grounding, scoring, and the run folder (predictions.json,
grounded.json, responses.jsonl, run_info.json, scores.json, and dataset.json with --limit), written in one
rename so a kill never leaves half of it (the file names of expmrc/data/runs.py). run_info.json is the run
record training runs write too (`RunRecord`, kind `llm`)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from expmrc.data.datasets import Dataset, dataset_document
from expmrc.data.io import atomic_directory
from expmrc.data.runs import (LLM_DATASET, LLM_FILES, LLM_GROUNDED, LLM_PREDICTIONS, LLM_RESPONSES, LLM_SCORES,
                              RUN_INFO, Environment, RunRecord)
from expmrc.errors import ExpmrcError
from expmrc.llm.backends import BACKENDS, Backend, make_backend, public_url
from expmrc.llm.cache import cache_path
from expmrc.llm.chat import Sampling, SystemPrompt, build_requests, read_system_prompt
from expmrc.llm.citations import Citation, citation_summary, evidence_record
from expmrc.llm.completion import Reply
from expmrc.llm.config import LLMConfig
from expmrc.llm.fetch import Fetched
from expmrc.llm.parsing import Parsed
from expmrc.llm.prompts import PromptTemplate
from expmrc.llm.replies import LONE_SURROGATE, ground, parse_counts, parse_requests, submission_of
from expmrc.llm.samples import Choice, agreement_summary, choose, request_ids, sample_grounding
from expmrc.llm.shots import Shot
from expmrc.scoring.rewording import Split
from expmrc.scoring.support import Support

# (dataset, grounded, grounding details) -> the support, and the entailment split (which the details gain)
Judged = Callable[[Dataset, dict[str, Any], dict[str, Any]], tuple[Support, Split]]

_NAMED = 5  # question ids named in a summary line


def limited(dataset: Dataset, limit: int | None) -> Dataset:
    """The dataset cut to its first `limit` questions (scores are then over those only)."""
    if limit is None or limit >= len(dataset.questions):
        return dataset
    return Dataset(dataset.path, dataset.version, dataset.subset, dataset.questions[:limit], dataset.raw)


@dataclass
class Prepared:
    """Everything decided before the first request: questions, template, shots, system prompt and request bodies."""

    dataset: Dataset
    template: PromptTemplate
    shots: list[Shot]
    dev_shots: bool
    sampling: Sampling
    structured: bool
    requests: dict[str, dict[str, Any]]
    system: SystemPrompt

    @property
    def asked(self) -> dict[str, list[str]]:
        """Each question's request ids, in dataset order."""
        return {q.qid: request_ids(q.qid, self.sampling.samples) for q in self.dataset.questions}


def check_flags(args: LLMConfig) -> None:
    """Refuse flag combinations that cannot mean what the user wants, before anything is read."""
    if args.import_batch and args.export_batch:
        raise ExpmrcError("--import-batch and --export-batch together: export the requests first, then import the "
                          "provider's output file in a second run")
    if args.samples > 1 and args.temperature == 0:
        raise ExpmrcError(f"--samples {args.samples} at --temperature 0 would repeat the same reply {args.samples} "
                          "times; sample with a --temperature above 0 (e.g. 0.7)")
    if args.cache_old_keys and (unread := next((flag for flag, given in (
            ("--no-cache", args.no_cache), ("--import-batch", args.import_batch), ("--export-batch", args.export_batch))
            if given), None)):
        raise ExpmrcError(f"--cache-old-keys reads old replies from the response cache, which a run with {unread} "
                          "does not read; drop one of them")
    if args.shots and not args.shots_file:
        raise ExpmrcError("--shots needs --shots-file, a labelled file to draw examples from "
                          "(e.g. `expmrc pseudo` output on the training set)")


def prepare(args: LLMConfig) -> Prepared:
    """Check the flags and inputs and build every request; all bad input is refused here, before any cost."""
    from expmrc.data.datasets import load_dataset
    from expmrc.llm.prompts import choose_template, template_from_file
    from expmrc.llm.shots import draw_shots

    check_flags(args)
    dataset = limited(load_dataset(args.subset), args.limit)
    system = read_system_prompt(args.system_prompt, args.no_system)
    check_outputs(args, inputs_of(args, dataset))
    template = choose_template(args.template, dataset.kind, dataset.language, args.evidence_form)
    if args.prompt:
        template = template_from_file(args.prompt, template)
    shots, dev_shots = draw_shots(args.shots_file or "", args.shots, args.seed, dataset, args.allow_dev_shots) \
        if args.shots else ([], False)
    sampling = Sampling(args.temperature, args.top_p, args.max_tokens, args.seed, args.samples)
    structured = args.structured == "auto" and BACKENDS.lookup(args.backend, "--backend: ").remote
    requests = build_requests(dataset.questions, template, dataset.language, shots, args.model, sampling, structured,
                              system)
    return Prepared(dataset, template, shots, dev_shots, sampling, structured, requests, system)


def inputs_of(args: LLMConfig, dataset: Dataset) -> list[str]:
    """Every file the run reads: no output may replace or delete one."""
    system_file = args.system_prompt if args.system_prompt and os.path.isfile(args.system_prompt) else None
    return [p for p in (dataset.path, args.prompt, args.shots_file, args.import_batch, system_file, cache_path(args))
            if p]


def check_outputs(args: LLMConfig, inputs: list[str]) -> None:
    """Refuse, before any request, an output that could overwrite or delete an input or a user's files."""
    from expmrc.data.io import check_output_folder, check_output_path

    if args.export_batch:
        check_output_path(args.export_batch, "file", inputs)
        return
    target = check_output_folder(args.run_dir, inputs, args.overwrite)  # run_dir: --output, required here
    if not target.is_dir() or not any(target.iterdir()):
        return
    names = sorted(p.name for p in target.iterdir())
    foreign = [n for n in names if n not in LLM_FILES]
    if foreign or RUN_INFO not in names:
        what = f"{foreign[0]!r}" + (f" and {len(foreign) - 1} more" if len(foreign) > 1 else "") if foreign else \
            "no run_info.json"
        raise ExpmrcError(f"{args.output}: holds {what}, so it is no earlier `expmrc llm` run folder; --overwrite "
                          "replaces only such a folder, never files a run did not write")


def replies(args: LLMConfig, prepared: Prepared) -> tuple[Fetched, Backend | None]:
    """The replies of a run, from a Batch output file or from the cache and the backend; and the backend.
    Ctrl-C or SIGTERM while asking raise fetch.Interrupted, every reply received being cached."""
    from expmrc.llm.cache import ResponseCache
    from expmrc.llm.fetch import fetch

    if args.import_batch:
        from expmrc.llm.batch import import_batch

        imported = import_batch(args.import_batch, set(prepared.requests))
        return Fetched(replies=imported, structured={rid for rid in imported
                                                     if "response_format" in prepared.requests[rid]}), None
    path = cache_path(args)
    cache = ResponseCache(path) if path else None  # a damaged or foreign cache is refused before the model loads
    try:
        backend = make_backend(args)
        backend.check(next(iter(prepared.requests.values())))
        fetched = fetch(prepared.requests, backend, cache, args.concurrency, progress=not args.quiet,
                        wait=args.timeout, old_keys=args.cache_old_keys)
    finally:
        if cache is not None:
            cache.close()
    return fetched, backend


def token_totals(replies: dict[str, Reply], only: set[str] | None = None) -> dict[str, int]:
    """Prompt and completion tokens over the replies (or those whose ids are in `only`)."""
    chosen = [r for rid, r in replies.items() if only is None or rid in only]
    return {"prompt": sum(r.prompt_tokens for r in chosen), "completion": sum(r.completion_tokens for r in chosen)}


def cost(replies: dict[str, Reply], only: set[str] | None, price: tuple[float, float] | None) -> float | None:
    """US dollars for the replies' tokens at (prompt, completion) prices per million tokens; None without a price
    or when a reply's token counts were not trusted (never a cost from a count the server got wrong)."""
    chosen = {rid: r for rid, r in replies.items() if only is None or rid in only}
    if price is None or any(r.usage_note for r in chosen.values() if r.error is None):
        return None
    tokens = token_totals(chosen)
    return round((tokens["prompt"] * price[0] + tokens["completion"] * price[1]) / 1e6, 6)


def reply_problems(prepared: Prepared, fetched: Fetched) -> dict[str, dict[str, Any]]:
    """Replies cut by --max-tokens (`truncated`), that were no usable reply (`unusable`) and whose token counts were
    not trusted (`usage_untrusted`): each a count and the first question ids with, where there is one, the reason."""
    owner = {rid: qid for qid, rids in prepared.asked.items() for rid in rids}
    found: dict[str, list[tuple[str, str]]] = {"truncated": [], "unusable": [], "usage_untrusted": []}
    for rid in owner:
        reply = fetched.replies.get(rid)
        if reply is None:
            continue
        if reply.finish_reason == "length":
            found["truncated"].append((owner[rid], ""))
        if reply.error:
            found["unusable"].append((owner[rid], reply.error))
        elif reply.usage_note:
            found["usage_untrusted"].append((owner[rid], reply.usage_note))
    return {name: {"count": len(items), "ids": list(dict.fromkeys(q for q, _ in items))[:20],
                   "first_reason": items[0][1] if items and items[0][1] else None} for name, items in found.items()}


def reply_fields(reply: Reply | None, rid: str, fetched: Fetched) -> dict[str, Any]:
    """What responses.jsonl keeps of one reply: text, reasoning, tokens, latency, finish reason, server id, cache."""
    if reply is None:
        return {"reply": None, "cached": False}
    fields = {("reply" if k == "text" else k): v for k, v in reply.to_json().items()}
    fields["cached"] = rid in fetched.cached
    if rid in fetched.old_key:
        fields["cached_by_old_key"] = True
    return fields


def _parsed_json(p: Parsed) -> dict[str, Any]:
    return {"answer": p.answer, "evidence": p.evidence, "status": p.status, "note": p.note}


def response_records(prepared: Prepared, fetched: Fetched, parsed: dict[str, Parsed], grounding: dict[str, Any],
                     choices: dict[str, Choice] | None, sample_details: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per question for responses.jsonl: messages, raw reply (and reasoning), parsed fields,
    grounding, tokens, whether it came from the cache; with --samples, every sample and the vote."""
    records = []
    for qid, rids in prepared.asked.items():
        rid = choices[qid].rid if choices else qid
        record = {"id": qid, "messages": prepared.requests[rid]["messages"], **reply_fields(fetched.replies.get(rid), rid,
                                                                                            fetched),
                  "parsed": _parsed_json(parsed[rid]), "grounding": grounding.get(qid)}
        if choices:
            record.update(chosen_sample=rids.index(rid), agreement=choices[qid].agreement, votes=choices[qid].votes,
                          samples=[{**reply_fields(fetched.replies.get(r), r, fetched), "parsed": _parsed_json(parsed[r]),
                                    "evidence_grounding": (sample_details.get(r) or {}).get("evidence")} for r in rids])
        records.append(record)
    return records


def json_text(obj: Any, indent: int | None = None) -> str:
    """JSON with non-ASCII text as is, except lone surrogates (no character, not encodable), written as escapes."""
    text = json.dumps(obj, ensure_ascii=False, indent=indent, allow_nan=False)
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def write_run(path: str, overwrite: bool, files: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Write the run folder in one rename: each `files` entry as JSON, `records` as responses.jsonl."""
    with atomic_directory(path, overwrite=overwrite) as staging:
        for name, obj in files.items():
            Path(staging, name).write_text(json_text(obj, indent=1) + "\n", encoding="utf-8")
        Path(staging, LLM_RESPONSES).write_text("".join(json_text(r) + "\n" for r in records), encoding="utf-8")


def scores(dataset: Dataset, submission: dict[str, Any], name: str) -> dict[str, Any]:
    """The scorer's summary of a submission, with the default extra metrics (LOCA or its lexical stand-in)."""
    from expmrc.metrics.registry import select
    from expmrc.scoring.scorer import score

    return score(dataset, submission, name, metrics=select(None, dataset)).summary()


def vote(prepared: Prepared, parsed: dict[str, Parsed], cited: dict[str, Citation]
         ) -> tuple[dict[str, Choice] | None, dict[str, Any]]:
    """With --samples N > 1, each question's chosen reply and every sample's grounding (the ids form's evidence
    by its citation); else (None, {})."""
    if prepared.sampling.samples == 1:
        return None, {}
    details = sample_grounding(prepared.dataset, prepared.asked, parsed, prepared.sampling.samples)
    if cited:
        questions = {q.qid: q for q in prepared.dataset.questions}
        for qid, rids in prepared.asked.items():
            for rid in rids:
                details[rid]["evidence"] = evidence_record(questions[qid], cited[rid])
    return choose(prepared.asked, parsed, details, prepared.dataset.kind), details


def finish(args: LLMConfig, prepared: Prepared, fetched: Fetched, backend: Backend | None, started: float,
           judged: Judged | None = None) -> list[str]:
    """Parse, vote, ground, score, judge the grounded evidence's support (`judged`, with --judge) and write the run
    folder; return the lines to print."""
    dataset = prepared.dataset
    parsed, cited = parse_requests(dataset.questions, prepared.sampling.samples, prepared.template.evidence_form,
                                   fetched.replies)
    choices, sample_details = vote(prepared, parsed, cited)
    chosen = {qid: choices[qid].rid if choices else qid for qid in prepared.asked}
    final = {qid: parsed[rid] for qid, rid in chosen.items()}
    final_cited = {qid: cited[rid] for qid, rid in chosen.items()} if cited else None
    submission = submission_of(final)
    grounded, details, grounding = ground(dataset, submission, prepared.template.evidence_form, final_cited)
    support, split = judged(dataset, grounded, details) if judged is not None else (None, None)
    raw_scores, grounded_scores = scores(dataset, submission, "predictions.json"), scores(dataset, grounded, "grounded.json")
    problems = reply_problems(prepared, fetched)
    info = run_info(args, prepared, fetched, backend, parse_counts(final), started, problems, choices)
    if support is not None:
        info["support_signature"] = support.signature
    if split is not None:
        info["entailment"] = split.summary()
    record = RunRecord("llm", info, "finished", Environment.here(backend.device if backend else None),
                       public_command(args.command))
    summary = {"raw": raw_scores, "grounded": grounded_scores, "grounding": grounding, "parse": info["parse"],
               "dev_shots": prepared.dev_shots, "questions": len(dataset.questions), "limit": args.limit,
               "samples": info["samples"], "evidence_form": prepared.template.evidence_form, **problems}
    if final_cited is not None:
        summary["citations"] = citation_summary(final_cited)
    if split is not None:
        summary["entailment"] = split.summary()
    records = response_records(prepared, fetched, parsed, details, choices, sample_details)
    if support is not None:
        summary["support"] = support.summary()
        for entry, label in zip(records, support.details()):
            entry["support"] = {k: v for k, v in label.items() if k not in ("id", "type")}
    files = {LLM_PREDICTIONS: submission, LLM_GROUNDED: grounded, RUN_INFO: record.as_json(), LLM_SCORES: summary}
    if args.limit is not None:
        files[LLM_DATASET] = dataset_document(dataset)
    write_run(args.run_dir, args.overwrite, files, records)
    lines = summary_lines(args.run_dir, summary, info, split.lines() if split is not None else [])
    if support is not None and split is not None:
        warnings = [f"warning: {w}" for w in (support.check.warning(), split.warning()) if w]
        lines[-1:-1] = support.lines() + warnings
    return lines


def run_info(args: LLMConfig, prepared: Prepared, fetched: Fetched, backend: Backend | None, parsed: dict[str, int], started: float,
             problems: dict[str, dict[str, Any]], choices: dict[str, Choice] | None) -> dict[str, Any]:
    """The run's record: everything that shaped its replies, what the server said of itself, and what they cost;
    no secret (the record adds the environment and the command line)."""
    remote = BACKENDS.lookup(args.backend).remote
    replies = fetched.replies
    paid = set(replies) - fetched.cached
    template, system = prepared.template, prepared.system
    system_text = system.text if system.text is not None else template.system
    return {
        "model": args.model, "backend": args.backend,
        "base_url": public_url(args.base_url) if remote and not args.import_batch else None,
        "api_key_env": args.api_key_env if remote else None,
        "server": {"model_ids": sorted({r.model for r in replies.values() if r.model}),
                   "system_fingerprints": sorted({r.system_fingerprint for r in replies.values() if r.system_fingerprint})},
        "dataset": prepared.dataset.path, "subset": prepared.dataset.subset, "questions": len(prepared.dataset.questions),
        "limit": args.limit, "template": {"name": template.name, "version": template.version, "sha256": template.sha256},
        "evidence_form": template.evidence_form,
        "system_prompt": {"source": system.source, "merged_into_user_turn": system.merge,
                          "sha256": _sha256(system_text)},
        "shots": {"k": len(prepared.shots), "file": args.shots_file, "seed": args.seed,
                  "ids": [q.qid for q, _, _ in prepared.shots], "dev": prepared.dev_shots},
        "sampling": asdict(prepared.sampling),
        "samples": agreement_summary(choices, prepared.sampling.samples) if choices else {"n": 1},
        "structured_output": bool(replies) and fetched.structured >= set(replies),
        "replies_with_schema": len(fetched.structured),
        "replies": {"sent": len(paid), "cached": len(fetched.cached), "cached_by_old_key": len(fetched.old_key),
                    "unusable": problems["unusable"]["count"], "truncated": problems["truncated"]["count"],
                    "imported_from": args.import_batch},
        "cache": {"path": cache_path(args), "old_keys": bool(args.cache_old_keys)},
        "parse": parsed, "tokens": token_totals(replies), "tokens_paid_this_run": token_totals(replies, paid),
        "usage_untrusted": problems["usage_untrusted"]["count"],
        "price_per_million": list(args.price) if args.price else None,
        "cost_usd": cost(replies, None, args.price), "cost_usd_this_run": cost(replies, paid, args.price),
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


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _named(entry: dict[str, Any]) -> str:
    ids = entry["ids"][:_NAMED]
    return ", ".join(ids) + (", ..." if entry["count"] > len(ids) else "")


def problem_lines(summary: dict[str, Any], info: dict[str, Any]) -> list[str]:
    """Lines naming replies cut at --max-tokens, replies that were not usable, and token counts not trusted."""
    lines = []
    if (cut := summary["truncated"])["count"]:
        lines.append(f"cut at --max-tokens {info['sampling']['max_tokens']} (finish_reason: length): {cut['count']} "
                     f"replies ({_named(cut)}); raise --max-tokens")
    if (bad := summary["unusable"])["count"]:
        lines.append(f"not usable: {bad['count']} replies ({_named(bad)}; first: {bad['first_reason']}); not cached, "
                     "a rerun asks them again")
    if info["price_per_million"] and (untrusted := summary["usage_untrusted"])["count"]:
        lines.append(f"cost unknown: {untrusted['count']} replies gave no usable token counts ({_named(untrusted)}; "
                     f"first: {untrusted['first_reason']})")
    return lines


def summary_lines(path: str, summary: dict[str, Any], info: dict[str, Any], split: list[str]) -> list[str]:
    """What the run prints: requests, parse counts, grounding (with the entailment split's lines, `split`, beside
    its rates), raw and grounded scores, problems, where it wrote."""
    from expmrc.text.grounding import trust_line

    parse = ", ".join(f"{k} {v}" for k, v in summary["parse"].items())
    counts = ", ".join(f"{k} {v}" for k, v in summary["grounding"]["counts"].items())
    replies = info["replies"]
    old = f" ({replies['cached_by_old_key']} under old keys)" if replies["cached_by_old_key"] else ""
    lines = [(f"{summary['questions']} questions: {replies['sent']} requests sent, {replies['cached']} from the "
              f"cache{old}"), f"parsed: {parse}", f"grounding: {counts}",
             trust_line(summary["grounding"]), *split]
    if (cited := summary.get("citations")) is not None:
        lines.append(f"citations: {cited['cited']} questions cite passage sentences, {cited['out_of_range']} cite a "
                     f"number that is no sentence (unverified), {cited['none']} cite none (missing)")
    if (samples := summary["samples"])["n"] > 1:
        lines.append(f"samples: {samples['n']} per question, mean agreement {100 * samples['mean_agreement']:.1f}% "
                     f"({samples['unanimous']} questions unanimous)")
    for name in ("raw", "grounded"):
        s = summary[name]
        lines.append(f"{name:>8}: ALL_F1 {s['ALL_F1']:.3f}  ANS_F1 {s['ANS_F1']:.3f}  EVI_F1 {s['EVI_F1']:.3f}")
    lines += problem_lines(summary, info)
    if info["cost_usd"] is not None:
        lines.append(f"cost: ${info['cost_usd']:.4f} (this run ${info['cost_usd_this_run']:.4f})")
    if summary["dev_shots"]:
        lines.append("note: few-shot examples come from the dev set being scored; declare it with any result")
    lines.append(f"wrote {path}")
    return lines
