"""Grounding tells form from facts: a written corpus of quotes, English and Chinese, span and multiple-choice
passages, whose form changed (found and repaired) or one of whose facts changed (`altered`: never repaired).
tests/text/test_one_rule.py has the other differences (`reworded`) and the new kinds of fact."""

import json
import subprocess
import sys

import pytest

from helpers.common import ROOT, dev_set
from expmrc.data.datasets import load_dataset
from expmrc.text.grounding import ALTERED, MISSING, VERBATIM, UNVERIFIED, ground_submission, ground_text
from expmrc.text.locate import fold, normalized, tokens

# span passages (SQuAD-, CMRC-like) and multiple-choice passages (RACE-, C3-like), written for these tests
OPERA = ("Construction of the Sydney Opera House began in 1959 and was not completed until 1973, ten years later than "
         "planned. The Danish architect Jørn Utzon won the design competition in 1957, but he resigned in 1966 and "
         "never saw the building finished. The final cost was 102 million Australian dollars, paid largely by a state "
         "lottery. Queen Elizabeth II opened the building on 20 October 1973.")
MARY = ("Mary has lived in this small town for twenty years. She doesn't drive, so she walks to the market every "
        "morning. Her son, Peter, visits her twice a month and never forgets to bring flowers. Last winter she "
        "could not walk for three weeks because she had hurt her knee.")
PKU = ("京师大学堂创办于1898年，是中国近代第一所国立综合性大学，1912年改名为国立北京大学。抗日战争期间，北大与清华、南开南迁长沙，"
       "后又迁往昆明，组成国立西南联合大学。1952年院系调整后，北大从城内沙滩迁至西郊燕园。学校目前共有教职工两万余人，但并非全部在燕园工作。")
FILM = "女：你周末去看电影了吗？男：没去，票卖完了，我买了下周六的两张票。女：那我跟你一起去吧，我还没看过这部电影。"

# (passage, quote, the passage text it quotes): only the form changed, so it is found and repaired
FORM = [
    (OPERA, "CONSTRUCTION OF THE SYDNEY OPERA HOUSE BEGAN IN 1959 AND WAS NOT COMPLETED UNTIL 1973",
     "Construction of the Sydney Opera House began in 1959 and was not completed until 1973"),          # case
    (OPERA, "construction of the sydney opera house began in １９５９",                                      # width
     "Construction of the Sydney Opera House began in 1959"),
    (OPERA, "began in 1959 and wasn't completed until 1973", "began in 1959 and was not completed until 1973"),
    (OPERA, "the final cost was 102 million australian dollars，paid largely by a state lottery",
     "The final cost was 102 million Australian dollars, paid largely by a state lottery"),
    (OPERA, 'The passage says: "Queen Elizabeth II opened the building on 20 October 1973."',           # framing
     "Queen Elizabeth II opened the building on 20 October 1973."),
    (OPERA, "The Danish architect Jorn Utzon won the design competition in 1957 ... never saw the building finished",
     "The Danish architect Jørn Utzon won the design competition in 1957, but he resigned in 1966 and never saw the "
     "building finished"),                                          # an ellipsis leaves a number out: marked, form
    (OPERA, "“he resigned in 1966 and never saw the building finished”",
     "he resigned in 1966 and never saw the building finished"),
    (MARY, "She does not drive, so she walks to the market every morning.",
     "She doesn't drive, so she walks to the market every morning."),
    (MARY, "her son, PETER, visits her twice a month", "Her son, Peter, visits her twice a month"),   # a name's case
    (MARY, "Last winter she couldn't walk for three weeks", "Last winter she could not walk for three weeks"),
    (MARY, "Her son , Peter , visits her  twice a month", "Her son, Peter, visits her twice a month"),  # spacing
    (PKU, "京師大學堂創辦於1898年，是中國近代第一所國立綜合性大學", "京师大学堂创办于1898年，是中国近代第一所国立综合性大学"),  # script
    (PKU, "京师大学堂创办于１８９８年", "京师大学堂创办于1898年"),
    (PKU, "1952年院系调整后,北大从城内沙滩迁至西郊燕园.", "1952年院系调整后，北大从城内沙滩迁至西郊燕园。"),
    (PKU, "原文寫道：「抗日戰爭期間，北大與清華、南開南遷長沙」", "抗日战争期间，北大与清华、南开南迁长沙"),
    (PKU, "抗日战争期间……组成国立西南联合大学", "抗日战争期间，北大与清华、南开南迁长沙，后又迁往昆明，组成国立西南联合大学"),
    (PKU, "学校 目前 共有 教职工 两万余人", "学校目前共有教职工两万余人"),
    (FILM, "男：沒去，票賣完了，我買了下週六的兩張票。", "男：没去，票卖完了，我买了下周六的两张票。"),
    (FILM, "女:那我跟你一起去吧,我还没看过这部电影.", "女：那我跟你一起去吧，我还没看过这部电影。"),
]

# (passage, quote, its changes as (quote, passage, kind)): one fact changed, so it is `altered`
FACTS = [
    (OPERA, "Construction of the Sydney Opera House began in 1956 and was not completed until 1973",
     [("1956", "1959", "number")]),
    (OPERA, "Construction of the Sydney Opera House began in 1959 and was completed until 1973",
     [("", "not", "negation")]),
    (OPERA, "The Danish architect Jørn Utzon won the design competition in 1957, but he resigned in 1966 and saw the "
            "building finished", [("", "never", "negation")]),
    (OPERA, "The Swedish architect Jørn Utzon won the design competition in 1957, but he resigned in 1966",
     [("Swedish", "Danish", "name")]),
    (OPERA, "The final cost was 120 million Australian dollars, paid largely by a state lottery",
     [("120", "102", "number")]),
    (OPERA, "The final cost was 102 billion Australian dollars, paid largely by a state lottery",
     [("billion", "million", "number")]),
    (OPERA, "paid largely by a state lottery. Queen Victoria II opened the building on 20 October 1973",
     [("Victoria", "Elizabeth", "name")]),
    (OPERA, "PAID LARGELY BY A STATE LOTTERY. QUEEN VICTORIA II OPENED THE BUILDING ON 20 OCTOBER 1973",
     [("VICTORIA", "Elizabeth", "name")]),
    (MARY, "Mary has lived in this small town for thirty years. She doesn't drive", [("thirty", "twenty", "number")]),
    (MARY, "She does drive, so she walks to the market every morning.", [("does", "doesn't", "negation")]),
    (MARY, "Her son, Paul, visits her twice a month and never forgets to bring flowers",
     [("Paul", "Peter", "name")]),
    (MARY, "Her son, Peter, visits her once a month and never forgets to bring flowers",
     [("once", "twice", "number")]),
    (MARY, "Last winter she could walk for three weeks because she had hurt her knee", [("", "not", "negation")]),
    (PKU, "京师大学堂创办于1896年，是中国近代第一所国立综合性大学", [("1896", "1898", "number")]),
    (PKU, "京师大学堂创办于1898年，是中国近代第二所国立综合性大学", [("二", "一", "number")]),
    (PKU, "學校目前共有教職工三萬餘人，但並非全部在燕園工作", [("三萬", "两万", "number")]),
    (PKU, "学校目前共有教职工两万余人，但全部在燕园工作", [("", "并非", "negation")]),
    (PKU, "抗日战争期间，北大与清华、南开南迁长沙，后又没迁往昆明", [("没", "", "negation")]),
    (FILM, "男：没去，票卖完了，我买了下周六的三张票。", [("三", "两", "number")]),
    (FILM, "女：那我跟你一起去吧，我已经看过这部电影。", [("已经", "还没", "negation")]),
]


def located_text(passage, grounding):
    return passage[grounding.start:grounding.end]


@pytest.mark.parametrize("passage, quote, gold", FORM)
def test_a_quote_whose_form_changed_is_repaired_to_the_passage_text(passage, quote, gold):
    grounding = ground_text(passage, quote)
    assert grounding.status in VERBATIM and not grounding.changes, (quote, grounding)
    assert located_text(passage, grounding) == gold


@pytest.mark.parametrize("passage, quote, changes", FACTS)
def test_a_quote_with_one_changed_fact_is_altered_and_says_what_changed(passage, quote, changes):
    grounding = ground_text(passage, quote)
    assert grounding.status == ALTERED, (quote, grounding)
    assert [(c.quote, c.passage, c.kind) for c in grounding.changes] == changes
    assert grounding.start >= 0 and 85 <= grounding.score <= 100  # words left out cost no score, changed ones do
    for change in grounding.changes:  # each change says where its passage side lies
        assert passage[change.start:change.end] == change.passage


def test_form_folding_keeps_offsets_into_the_original_text():
    text = "He DIDN’T see 後來的１９５６年, Misérables"
    form, source = fold(text)
    assert form == "he did not see 后来的1956年, miserables"
    assert len(source) == len(form) and list(source) == sorted(source)
    assert normalized("can't")[0] == normalized("cannot")[0] == normalized("can not")[0] == "cannot"
    assert normalized("won't")[0] == normalized("will not")[0]
    words, spans = tokens(text)
    assert words[:4] == ("he", "did", "not", "see") and [text[a:b] for a, b in spans[1:3]] == ["DID", "N’T"]


def test_edge_cases_of_form():
    # digit grouping is form; a whole name left out says less (reworded), part of a number left out changes it
    assert ground_text("It cost 1,000 dollars in the first year of the war.",
                       "It cost 1000 dollars in the first year of the war").status in VERBATIM
    assert ground_text(OPERA, "The final cost was million Australian dollars, paid largely by a state lottery"
                       ).status == ALTERED
    dropped = ground_text(MARY, "Her son visits her twice a month and never forgets to bring flowers")
    assert dropped.status == "reworded" and [(c.quote, c.passage, c.kind) for c in dropped.changes] == [
        ("", "Peter", "word")]
    # a quote written in title case changes every word's case: form
    title = ground_text(OPERA, "Queen Elizabeth Ii Opened The Building On 20 October 1973")
    assert title.status == "normalized"


def test_edge_cases_of_fact():
    # a quote cut inside a number or before n't is no verbatim match: `195` is not `1959`, `did` is not `didn't`
    assert ground_text(OPERA, "Construction of the Sydney Opera House began in 195").status == ALTERED
    cut = ground_text(MARY, "Mary has lived in this small town for twenty years. She does")
    assert cut.status == ALTERED and [(c.quote, c.passage) for c in cut.changes] == [("does", "doesn't")]
    # part of a number left out changes it
    assert [(c.quote, c.passage) for c in ground_text(OPERA, "Construction of the Sydney Opera House began in 199 "
                                                             "and was not completed until 1973").changes] == [
        ("199", "1959")]
    # a "framing" (words like `according`, `中有` before a quote or a colon) that is the passage's own text, with a
    # changed date, is part of the quote
    news = 'In March 2019, according to the city council, "almost 40 percent" of the new flats were empty.'
    framed = ground_text(news, 'In March 2018, according to the city council, "almost 40 percent" of the new flats '
                               'were empty.')
    assert framed.status == ALTERED and [c.passage for c in framed.changes] == ["2019"]
    library = "这座图书馆中有三层阅览室：一层借书，二层自习，三层是电子阅览室。"
    assert ground_text(library, "这座图书馆中有四层阅览室：一层借书，二层自习，三层是电子阅览室。").status == ALTERED
    assert ground_text(library, "原文提到：一层借书，二层自习，三层是电子阅览室。").status == "exact"  # a real framing
    # a negation added at a sentence start is not matched to a neighbouring sentence's
    assert ground_text(PKU, "不从城内沙滩迁至西郊燕园，学校目前共有教职工两万余人").status not in VERBATIM
    assert ground_text(PKU, "学校目前共有教职工两万余人。北大不从城内沙滩迁至西郊燕园").status not in VERBATIM
    # a short quote with a changed fact may score under the threshold: unverified, caught all the same
    assert ground_text(OPERA, "Queen Victoria II opened the building on 20 October 1973").status == UNVERIFIED


def test_several_sentences_are_grounded_one_by_one_and_keep_the_weakest_status():
    first, second = "She doesn't drive, so she walks to the market every morning.", "Mary has lived in this small " \
                                                                                      "town for twenty years."
    reversed_order = ground_text(MARY, f"{first} {second}")
    assert reversed_order.status == "exact" and [p.status for p in reversed_order.parts] == ["exact", "exact"]
    assert [located_text(MARY, p) for p in reversed_order.parts] == [first, second]
    apart = ground_text(MARY, f"{second} Last winter she could not walk for three weeks because she had hurt her knee.")
    assert apart.status == "exact" and len(apart.parts) == 2
    one_altered = ground_text(MARY, f"Her son, Peter, visits her once a month and never forgets to bring flowers. "
                                    f"{second}")
    assert one_altered.status == ALTERED and [c.passage for c in one_altered.changes] == ["twice"]
    assert [p.status for p in one_altered.parts] == [ALTERED, "exact"]
    assert ground_text(PKU, "1952年院系调整后，北大从城内沙滩迁至西郊燕园。京师大学堂创办于1898年。").status == "exact"
    assert ground_text(MARY, "   ").status == MISSING


def squad(write_json, passage=OPERA):
    questions = [
        {"id": "q1", "question": "When did construction begin?", "answers": [{"text": "1959", "answer_start":
                                                                             passage.index("1959")}],
         "evidences": ["Construction of the Sydney Opera House began in 1959"]},
        {"id": "q2", "question": "Who opened it?", "answers": [{"text": "Queen Elizabeth II", "answer_start":
                                                                passage.index("Queen")}],
         "evidences": ["Queen Elizabeth II opened the building on 20 October 1973."]},
        {"id": "q3", "question": "What did it cost?", "answers": [{"text": "102 million Australian dollars",
                                                                   "answer_start": passage.index("102")}],
         "evidences": ["The final cost was 102 million Australian dollars"]},
        {"id": "q4", "question": "Who designed it?", "answers": [{"text": "Jørn Utzon", "answer_start":
                                                                  passage.index("Jørn")}],
         "evidences": ["The Danish architect Jørn Utzon won the design competition in 1957"]},
    ]
    data = {"version": "expmrc-squad-dev", "data": [{"title": "O", "paragraphs": [{"context": passage, "qas": questions}]}]}
    return write_json("squad.json", data)


SUBMISSION = {
    "q1": {"answer": "1956", "evidence": "Construction of the Sydney Opera House began in 1956 and was not completed"},
    "q2": {"answer": "Queen Elizabeth II", "evidence": ["Queen Elizabeth II opened the building on 20 October 1973.",
                                                        "The final cost was 102 million Australian dollars, paid "
                                                        "largely by a state lottery."]},
    "q3": {"answer": "102 million Australian dollars", "evidence": ""},
}


def test_an_altered_quote_is_kept_as_written_counted_and_dropped_on_request(write_json):
    dataset = load_dataset(squad(write_json))
    result = ground_submission(dataset, SUBMISSION)
    q1, q2, q3 = (result.submission[q] for q in ("q1", "q2", "q3"))
    assert q1 == {"answer": "1956", "evidence": SUBMISSION["q1"]["evidence"]}  # the model's own quote, no offset
    # two quotes out of passage order are each exact; together one passage text, from the first to the last
    assert q2["evidence"] == OPERA[OPERA.index("The final"):] and q2["evidence_start"] == OPERA.index("The final")
    assert q3["evidence"] == ""
    record = result.details[0]["evidence"]
    at = OPERA.index("1959")
    assert record["status"] == ALTERED and record["changes"] == [{"quote": "1956", "passage": "1959", "kind": "number",
                                                                  "start": at, "end": at + 4}]
    assert OPERA[record["start"]:record["end"]].startswith("Construction") and record["score"] < 100
    assert [p["status"] for p in result.details[1]["evidence"]["parts"]] == ["exact", "exact"]
    assert result.counts == {"exact": 1, "normalized": 0, "reworded": 0, "altered": 1, "unverified": 0, "missing": 2}
    summary = result.summary()
    assert (summary["missing"], summary["unverified"], summary["altered"], summary["evidence_given"]) == (2, 0, 1, 2)
    assert summary["untrustworthy_evidence_rate"] == summary["verbatim_evidence_rate"] == 0.5
    assert summary["questions"] == 4
    dropped = ground_submission(dataset, SUBMISSION, drop_unverified=True).submission
    assert dropped["q1"]["evidence"] == "" and dropped["q2"]["evidence"] == q2["evidence"]


def test_an_evidence_list_takes_its_weakest_element(write_json):
    dataset = load_dataset(squad(write_json))
    submission = {"q4": {"answer": "Jørn Utzon", "evidence": [
        "The Swedish architect Jørn Utzon won the design competition in 1957, but he resigned in 1966", "Jørn Utzon"]},
        "q2": {"answer": "Queen Elizabeth II", "evidence": ["", "  "]},
        "q1": {"answer": "1959", "evidence": ["Construction of the Sydney Opera House began in 1959", "Aliens built it"]}}
    result = ground_submission(dataset, submission)
    assert [d["evidence"]["status"] for d in result.details] == [UNVERIFIED, MISSING, ALTERED]
    assert result.submission["q4"]["evidence"] == "The Swedish architect Jørn Utzon won the design competition in " \
                                                  "1957, but he resigned in 1966 Jørn Utzon"  # as written, one text
    assert result.submission["q1"]["evidence"] == "Construction of the Sydney Opera House began in 1959 Aliens built it"


def test_the_command_reports_missing_unverified_altered_and_the_rate(write_json, tmp_path):
    data, out, details = squad(write_json), tmp_path / "g.json", tmp_path / "d.jsonl"
    result = subprocess.run([sys.executable, "-m", "expmrc.cli", "ground", data, write_json("s.json", SUBMISSION),
                             "--output", str(out), "--details", str(details)], capture_output=True, text=True,
                            cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr
    assert "evidence: exact 1, normalized 0, reworded 0, altered 1, unverified 0, missing 2" in result.stdout
    assert ("verbatim evidence: 50.0% (exact 1 + normalized 0); untrustworthy evidence: 50.0% (unverified 0 + "
            "altered 1 + reworded 0); of 2 questions with evidence; missing 2 of 4") in result.stdout
    first = json.loads(details.read_text(encoding="utf-8").splitlines()[0])
    assert [{k: c[k] for k in ("quote", "passage", "kind")} for c in first["evidence"]["changes"]] == [
        {"quote": "1956", "passage": "1959", "kind": "number"}]
    scored = subprocess.run([sys.executable, "eval_expmrc.py", data, str(out)], capture_output=True, text=True,
                            cwd=ROOT, check=False)
    assert scored.returncode == 0, scored.stderr


def test_evaluate_reports_the_grounding_figures(write_json):
    strings = {**SUBMISSION, "q2": {"answer": "Queen Elizabeth II", "evidence": "The building was opened by Queen "
                                                                                "Elizabeth II in 1973"}}
    result = subprocess.run([sys.executable, "-m", "expmrc.cli", "evaluate", squad(write_json),
                             write_json("s.json", strings), "--json"], capture_output=True, text=True, cwd=ROOT,
                            check=False)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)["results"][0]
    assert figures["EVI_MISSING"] == pytest.approx(50.0)  # q3 empty, q4 left out
    assert figures["EVI_UNTRUSTWORTHY"] == 100.0  # q1 altered, q2 (a paraphrase) unverified
    assert figures["EVI_ALTERED"] == figures["EVI_UNVERIFIED"] == 50.0 and figures["EVI_NOT_IN_PASSAGE"] == 100.0


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("subset", ["squad", "cmrc2018", "race", "c3"])
def test_no_change_of_meaning_is_repaired_and_honest_quotes_are_trusted_on_the_dev_sets(subset):
    """Issues 30 and 38's measure on the tuning seed: every kind of change of meaning is never accepted as verbatim
    (so never replaced by passage text); honest quotes are altered or unverified at most 1% of the time per kind;
    a swap of ordinary words is never altered."""
    from helpers.rule_quotes import FACT_KINDS, HONEST_KINDS, SWAPPED, TUNING_SEED, measure_rule

    rates = measure_rule(load_dataset(dev_set(subset)), TUNING_SEED)
    for kind in FACT_KINDS:
        assert rates[kind]["verbatim"] == 0, (kind, rates[kind]["misses"][:3])
    for kind in HONEST_KINDS:
        flagged = rates[kind]["altered"] + rates[kind]["unverified"]
        assert flagged <= 0.01 * rates[kind]["cases"], (kind, rates[kind]["misses"][:3])
    for kind in SWAPPED:
        assert rates[kind]["altered"] == rates[kind]["verbatim"] == 0, (kind, rates[kind]["misses"][:3])
