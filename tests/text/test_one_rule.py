"""Grounding's one rule: a located quote becomes passage text only when every difference is form. Any other
difference keeps the model's words, with the located offsets and the changes: `altered` when a changed token is a
fact (a number with its decimal point, unit and currency; a negation, also one an ellipsis stands for; a name,
Chinese ones included), else `reworded`. English and Chinese quotes of each kind; the grounded submission scores
what the model wrote; the summary's two rates."""

import pytest

from expmrc.data.datasets import load_dataset
from expmrc.scoring.scorer import score
from expmrc.text.grounding import ALTERED, NORMALIZED, REWORDED, VERBATIM, ground_submission, ground_text, trust_line

REPORT = ("The company's revenue grew 3.2% to $5 million in 2019, the largest rise in its history, and all of its "
          "factories were working. The new road is 12 km long and was not finished before the winter of 2020. "
          "The board may approve a further 1,000 jobs next year.")
WAR = ("The two kingdoms had not fought a war for a hundred years when the treaty was signed. Its first article "
       "increased the tax on salt, and every merchant paid it.")
ZH = ("长江全长约6300公里，是中国第一长河，流域面积约180万平方公里。2019年，沿江各省的生产总值增加了1.5万亿元，"
      "很多城市的人口都在上升。张小明是上海人，他说张小明比李华高，但是我还没见过李华。上海比北京大，也比北京热。")

# (passage, quote, its changes as (quote, passage, kind)): a changed token that is a fact: altered
ALTERED_CASES = [
    (REPORT, "The company's revenue grew 32% to $5 million in 2019", [("32", "3.2", "number")]),       # decimal
    (REPORT, "The company's revenue grew 3.2% to €5 million in 2019", [("€", "$", "number")]),      # currency
    (REPORT, "The company's revenue grew 3.2 points to $5 million in 2019", [("points", "%", "number")]),
    (REPORT, "The new road is 12 miles long and was not finished before the winter", [("miles", "km", "number")]),
    (WAR, "The two kingdoms had ... fought a war for a hundred years when the treaty was signed",       # elided not
     [("…", "not", "negation")]),
    (ZH, "长江全长约6300英里，是中国第一长河", [("英", "公", "number")]),                            # unit
    (ZH, "2019年，沿江各省的生产总值增加了15万亿元", [("15万亿", "1.5万亿", "number")]),                          # decimal
    (ZH, "2019年，沿江各省的生产总值增加了1.5万亿美元", [("美", "", "number")]),                # currency
    (ZH, "张小明是上海人，他说张小红比李华高", [("红", "明", "name")]),                                    # Chinese name
    (ZH, "张小明是上海人，他说张小明比李华高，但是我还……见过李华", [("…", "没", "negation")]),             # elided 没
]

# (passage, quote, its changes as (quote, passage)): other words changed: reworded
REWORDED_CASES = [
    (REPORT, "The company's revenue grew 3.2% to $5 million in 2019, the smallest rise in its history",  # antonym
     [("smallest", "largest")]),
    (REPORT, "the largest rise in its history, and some of its factories were working", [("some", "all")]),
    (REPORT, "The board will approve a further 1,000 jobs next year.", [("will", "may")]),             # modal
    (WAR, "Its first article decreased the tax on salt, and every merchant paid it.", [("decreased", "increased")]),
    (ZH, "2019年，沿江各省的生产总值减少了1.5万亿元", [("减少", "增加")]),                                 # antonym
    (ZH, "2019年，沿江各省的生产总值增加了1.5万亿元，很少城市的人口都在上升", [("少", "多")]),          # quantifier
    (ZH, "上海比北京大，也比北京冷", [("冷", "热")]),
    (ZH, "他说张小明比李华高，但是我还没见过李华。北京比上海大，也比北京热", [("北京", "上海"), ("上海", "北京")]),
]

# (passage, quote, the passage text it becomes): every difference is form: repaired
FORM_CASES = [
    (REPORT, "1. The company's revenue grew 3.2% to $5 million in 2019, the largest rise in its history, and all of "
             "its factories were working.\n2. The new road is 12 km long and was not finished before the winter of "
             "2020.", REPORT[:REPORT.index(" The board")]),                                         # numbered list
    (REPORT, "- The board may approve a further 1,000 jobs next year.\n- The new road is 12 km long and was not "
             "finished before the winter of 2020.", REPORT[REPORT.index("The new"):]),              # bullets
    (REPORT, "The board may approve a further 1000", "The board may approve a further 1,000"),     # grouping, at the end
    (REPORT, "**The new road** is 12 km long", "The new road is 12 km long"),                      # markdown
    (ZH, "一、长江全长约6300公里，是中国第一长河，流域面积约180万平方公里。\n二、上海比北京大，也比北京热。",
     ZH[:ZH.index("2019")].rstrip() + " " + ZH[ZH.index("上海比"):]),                              # 一、 二、
    (ZH, "（1）上海比北京大，也比北京热。", "上海比北京大，也比北京热。"),
    (ZH, "① 2019年，沿江各省的生产总值增加了1.5万亿元", "2019年，沿江各省的生产总值增加了1.5万亿元"),
]


@pytest.mark.parametrize("passage, quote, changes", ALTERED_CASES)
def test_a_changed_fact_is_altered_and_keeps_its_place(passage, quote, changes):
    found = ground_text(passage, quote)
    assert found.status == ALTERED, (quote, found)
    assert [(c.quote, c.passage, c.kind) for c in found.changes] == changes
    assert 0 <= found.start < found.end and all(passage[c.start:c.end] == c.passage for c in found.changes)


@pytest.mark.parametrize("passage, quote, changes", REWORDED_CASES)
def test_any_other_changed_word_is_reworded(passage, quote, changes):
    found = ground_text(passage, quote)
    assert found.status == REWORDED, (quote, found)
    assert [(c.quote, c.passage) for c in found.changes] == changes and {c.kind for c in found.changes} == {"word"}


@pytest.mark.parametrize("passage, quote, gold", FORM_CASES)
def test_list_markers_digit_grouping_and_markup_are_form(passage, quote, gold):
    found = ground_text(passage, quote)
    assert found.status in VERBATIM and not found.changes, (quote, found)
    assert found.placed(passage)[0] == gold


def test_an_ellipsis_is_form_unless_it_stands_for_a_negation():
    marked = ground_text(ZH, "长江全长约6300公里……流域面积约180万平方公里")
    assert marked.status in VERBATIM
    kept = ground_text(WAR, "The two kingdoms had not ... signed")
    assert kept.status in VERBATIM
    dropped = ground_text(WAR, "The two kingdoms ... fought a war for a hundred years")  # `had not` left out
    assert dropped.status == ALTERED and dropped.changes[0].passage == "not"
    engine = "It is a single-step engine (no compound) with superheated steam, and it works well."
    assert ground_text(engine, "It is a single-step engine (...) with superheated steam").status in VERBATIM


def test_a_quote_cut_inside_a_word_ending_in_nt_is_no_verbatim_match():
    passage = "How can you create? The simple answer is, “You can't.” Then he left the room."
    found = ground_text(passage, "How can you create? The simple answer is, “You ca.”")
    assert found.status == ALTERED and "negation" in {c.kind for c in found.changes}


def test_sentences_found_apart_do_not_excuse_a_fact_the_quote_changed():
    shows = ("Saturday: Jazz at the Blue Room. Admission: 60 pence. Sunday: The John Bennet Big Band plays at The Bull's "
             "Head, Barnes. Admission: 80 pence. 星期六：蓝屋爵士乐。门票：60便士。星期天：大乐队在公牛头酒吧。门票：80便士。")
    quote = "Sunday: The John Bennet Big Band plays at The Bull's Head, Barnes. Admission: 60 pence"  # 80 pence
    assert ground_text(shows, quote).status == ALTERED
    assert ground_text(shows, "星期天：大乐队在公牛头酒吧。门票：60便士。").status == ALTERED
    # two sentences apart, each verbatim, with nothing written in place of a passage fact: verbatim
    assert ground_text(shows, "Saturday: Jazz at the Blue Room. Admission: 80 pence.").status in VERBATIM


def squad(write_json):
    questions = [{"id": "q1", "question": "How fast did revenue grow?",
                  "answers": [{"text": "3.2%", "answer_start": REPORT.index("3.2%")}],
                  "evidences": ["The company's revenue grew 3.2% to $5 million in 2019"]},
                 {"id": "q2", "question": "How long is the road?",
                  "answers": [{"text": "12 km", "answer_start": REPORT.index("12 km")}],
                  "evidences": ["The new road is 12 km long"]},
                 {"id": "q3", "question": "How many jobs?",
                  "answers": [{"text": "1,000", "answer_start": REPORT.index("1,000")}],
                  "evidences": ["The board may approve a further 1,000 jobs next year."]}]
    return write_json("squad.json", {"version": "expmrc-squad-dev", "data": [
        {"title": "R", "paragraphs": [{"context": REPORT, "qas": questions}]}]})


def test_a_reworded_quote_is_scored_as_written_not_as_the_passage(write_json):
    dataset = load_dataset(squad(write_json))
    reworded = "The company's income grew 3.2% to $5 million in 2019"
    submission = {"q1": {"answer": "3.2%", "evidence": reworded},
                  "q2": {"answer": "12 km", "evidence": "1. The new road is 12 km long"},
                  "q3": {"answer": "1,000", "evidence": "The board may approve a further 1,000 jobs every year."}}
    result = ground_submission(dataset, submission)
    grounded = result.submission
    assert grounded["q1"]["evidence"] == reworded and "evidence_start" not in grounded["q1"]
    assert grounded["q2"]["evidence"] == "The new road is 12 km long"  # list markers are form: passage text
    record = result.details[0]["evidence"]
    assert record["status"] == REWORDED and REPORT[record["start"]:record["end"]] == dataset.questions[0].evidences[0]
    assert record["changes"] == [{"quote": "income", "passage": "revenue", "kind": "word",
                                  "start": REPORT.index("revenue"), "end": REPORT.index("revenue") + 7}]
    evidence = [q.evidence for q in score(dataset, grounded).questions]
    written = [q.evidence for q in score(dataset, submission).questions]
    assert evidence[0] == written[0] < 1.0  # the overlap the model's own words have, not the passage sentence's
    assert evidence[1] == 1.0 and evidence[2] == written[2] < 1.0


def test_the_summary_gives_every_status_and_the_two_rates(write_json):
    dataset = load_dataset(squad(write_json))
    submission = {"q1": {"answer": "3.2%", "evidence": "The company's revenue grew 32% to $5 million in 2019"},
                  "q2": {"answer": "12 km", "evidence": "THE NEW ROAD IS 12 KM LONG"},
                  "q3": {"answer": "1,000", "evidence": "The board may soon approve a further 1,000 jobs next year."}}
    summary = ground_submission(dataset, submission).summary()
    assert summary["counts"] == {"exact": 0, NORMALIZED: 1, REWORDED: 1, ALTERED: 1, "unverified": 0, "missing": 0}
    assert (summary[NORMALIZED], summary[REWORDED], summary[ALTERED]) == (1, 1, 1)
    assert summary["verbatim_evidence_rate"] == pytest.approx(1 / 3)
    assert summary["untrustworthy_evidence_rate"] == pytest.approx(2 / 3)  # altered + reworded
    from expmrc.metrics.registry import select

    figures = score(dataset, submission, metrics=select(None, dataset)).summary()  # what `expmrc evaluate` shows
    assert (figures["EVI_VERBATIM"], figures["EVI_REWORDED"], figures["EVI_ALTERED"]) == (33.333, 33.333, 33.333)
    assert figures["EVI_UNTRUSTWORTHY"] == 66.667 and figures["EVI_UNVERIFIED"] == 0.0  # rounded to 3 decimals
    assert trust_line(summary) == ("verbatim evidence: 33.3% (exact 0 + normalized 1); untrustworthy evidence: 66.7% "
                                   "(unverified 0 + altered 1 + reworded 1); of 3 questions with evidence; missing 0 "
                                   "of 3")
