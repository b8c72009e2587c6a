"""Self-consistency (`--samples N`): N replies per question, sampled with seeds `--seed` to `--seed + N - 1`;
the answer most replies give wins (span answers compared as the scorer compares them, after its
normalisation), and its evidence is that of the best-grounded reply giving it. The agreement rate (the
winning answer's votes over N) goes in the record.

Ties between answers go to the one whose best reply is better grounded, then to the earliest sample. A
reply that yields no answer casts no vote; a question none of whose replies yields one keeps sample 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from expmrc.data.datasets import Dataset
from expmrc.llm.parsing import Parsed
from expmrc.metrics.leaderboard import score_tokens
from expmrc.text.grounding import STATUSES, ground_submission

# evidence ranks by its grounding status, best first (grounding's own order); any other status after these
STATUS_RANK = {status: rank for rank, status in enumerate(STATUSES)}


def request_ids(qid: str, samples: int) -> list[str]:
    """The ids of a question's requests: the question id itself, or `ID#0` ... `ID#N-1` with several samples."""
    return [qid] if samples == 1 else [f"{qid}#{i}" for i in range(samples)]


@dataclass
class Choice:
    """The reply chosen for a question, the votes each answer got, and the winning answer's share of N."""

    rid: str
    votes: dict[str, int]
    agreement: float


def answer_key(answer: str, kind: str) -> str:
    """What makes two answers the same vote: the letter, or a span's normalised scoring tokens."""
    return answer if kind == "choice" else " ".join(score_tokens(answer))


def evidence_rank(detail: dict[str, Any] | None) -> tuple[int, float]:
    """Lower is better grounded: the status's rank, then the higher score."""
    record = (detail or {}).get("evidence") or {}
    return STATUS_RANK.get(record.get("status", "missing"), len(STATUS_RANK)), -float(record.get("score") or 0.0)


def sample_grounding(dataset: Dataset, asked: dict[str, list[str]], parsed: dict[str, Parsed],
                     samples: int) -> dict[str, dict[str, Any]]:
    """Each request's grounding details, grounding each sample's replies as one submission."""
    details: dict[str, dict[str, Any]] = {}
    for i in range(samples):
        submission = {qid: {"answer": parsed[rids[i]].answer, "evidence": parsed[rids[i]].evidence}
                      for qid, rids in asked.items()}
        for record in ground_submission(dataset, submission).details:
            details[asked[record["id"]][i]] = record
    return details


def choose(asked: dict[str, list[str]], parsed: dict[str, Parsed], details: dict[str, dict[str, Any]],
           kind: str) -> dict[str, Choice]:
    """The chosen reply of every question (see the module's docstring)."""
    chosen = {}
    for qid, rids in asked.items():
        groups: dict[str, list[str]] = {}
        for rid in rids:
            if parsed[rid].status != "failed" and parsed[rid].answer:
                groups.setdefault(answer_key(parsed[rid].answer, kind), []).append(rid)
        if not groups:
            chosen[qid] = Choice(rids[0], {}, 0.0)
            continue
        best = {key: min(members, key=lambda r: (evidence_rank(details.get(r)), rids.index(r)))
                for key, members in groups.items()}
        winner = min(groups, key=lambda k: (-len(groups[k]), evidence_rank(details.get(best[k])),
                                            rids.index(best[k])))
        votes = {parsed[members[0]].answer: len(members) for members in groups.values()}
        chosen[qid] = Choice(best[winner], votes, len(groups[winner]) / len(rids))
    return chosen


def agreement_summary(chosen: dict[str, Choice], samples: int) -> dict[str, Any]:
    """N, the mean agreement rate over questions, and how many questions were unanimous."""
    rates = [c.agreement for c in chosen.values()]
    return {"n": samples, "mean_agreement": round(sum(rates) / len(rates), 6) if rates else None,
            "unanimous": sum(rate == 1.0 for rate in rates)}
