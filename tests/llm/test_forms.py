"""Evidence forms sit in one registry (`FORMS`): each entry holds its evidence's reply schema, its reader and its
grounder, and the prompts, the run and the lm-eval tasks ask the registry, so a form registered there is asked for,
read and grounded by its own entry."""

from __future__ import annotations

from dataclasses import replace

from expmrc.data.datasets import Dataset, SpanQuestion
from expmrc.llm.completion import Reply
from expmrc.llm.forms import FORMS, EvidenceForm
from expmrc.llm.prompts import answer_schema
from expmrc.llm.replies import ground, read_reply

SENTENCE = "It reaches the North Sea near Rotterdam."
PASSAGE = f"The Rhine rises in the Alps. It flows north. {SENTENCE}"
QUESTION = SpanQuestion("q1", "Where does the Rhine reach the sea?", PASSAGE, ["near Rotterdam"], [None], [[SENTENCE]])
DATASET = Dataset("memory", "v1.0", "squad", [QUESTION])


def reply(evidence: str) -> Reply:
    return Reply(text='{"answer": "near Rotterdam", "evidence": ' + evidence + "}")


def test_each_form_reads_and_grounds_its_own_evidence():
    quoted, no_citation = read_reply(reply(f'"{SENTENCE}"'), QUESTION, "quote")
    cited, citation = read_reply(reply("[3]"), QUESTION, "ids")
    assert quoted.evidence == cited.evidence == SENTENCE and no_citation is None and citation.cited == (3,)
    records = {}
    for form, parsed, by_id in (("quote", quoted, None), ("ids", cited, {"q1": citation})):
        _, details, _ = ground(DATASET, {"q1": {"answer": parsed.answer, "evidence": parsed.evidence}}, form, by_id)
        records[form] = details["q1"]["evidence"]
    assert records["quote"]["status"] == records["ids"]["status"] == "exact"
    assert "cited" not in records["quote"] and records["ids"]["cited"] == [3]  # grounded by what it cites


def test_the_reply_schema_holds_a_copy_of_each_forms_evidence_schema():
    for name, form in FORMS.items():
        schema = answer_schema("span", form=name)
        assert schema["properties"]["evidence"] == form.schema
        schema["properties"]["evidence"]["type"] = "changed"
        assert form.schema["type"] != "changed"


def test_a_registered_form_is_asked_for_read_and_grounded_by_its_own_entry(monkeypatch):
    lower = EvidenceForm("the evidence in lower case", "lowered", {"type": "string", "pattern": "^[^A-Z]*$"},
                         numbered=False, example=lambda passage, evidence: evidence.lower(),
                         read=lambda parsed, text, question: (replace(parsed, evidence=parsed.evidence.upper()), None),
                         ground=FORMS["quote"].ground)
    monkeypatch.setitem(FORMS, "lower", lower)
    assert answer_schema("span", form="lower")["properties"]["evidence"]["pattern"] == "^[^A-Z]*$"
    parsed, citation = read_reply(reply('"it flows north."'), QUESTION, "lower")
    assert parsed.evidence == "IT FLOWS NORTH." and citation is None
    _, details, _ = ground(DATASET, {"q1": {"answer": parsed.answer, "evidence": parsed.evidence}}, "lower")
    assert details["q1"]["evidence"]["status"] == "normalized"  # the quote form's grounder: case is form
