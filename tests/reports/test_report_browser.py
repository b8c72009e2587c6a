"""`expmrc report` pages in a real browser: headless Chromium loads the page, the test uses the page's own
controls (clicks, typing) and checks what is visible afterwards, the highlights as drawn, and a screenshot.

Skips only where no Chromium is installed (`.ci/run` installs Debian's `chromium` where it can).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.browser import Browser, find_browser
from helpers.common import CHOICE_DATA, ROOT, SPAN_DATA, dev_set, needs_punkt
from helpers.report_data import SPAN_PRED, SPAN_PRED_B

from expmrc.data.datasets import load_dataset
from expmrc.metrics.registry import select
from expmrc.reports.html import build_report, load_submissions, quadrant_counts, render_report, utf16_offsets
from expmrc.reports.pages import write_page

pytestmark = [needs_punkt, pytest.mark.skipif(find_browser() is None,
                                              reason="no Chromium installed (apt-get install chromium)")]

PWN = "<script>window.pwned = 1</script>"
VISIBLE_IDS = ("Array.from(document.querySelectorAll('#question-table tr.qrow'))"
               ".filter(r => !r.hidden).map(r => r.querySelector('button.open').textContent)")
DRAWN_RANGES = """(() => {
  const passage = document.querySelector('tr.detail[data-i="%d"] .passage');
  const ranges = {};
  let position = 0;
  for (const node of passage.childNodes) {
    const length = node.textContent.length;
    if (node.nodeType === 1) for (const name of node.classList) (ranges[name] = ranges[name] || []).push([position, position + length]);
    position += length;
  }
  return {ranges, text: passage.textContent, elements: passage.querySelectorAll('script, b').length};
})()"""


@pytest.fixture(scope="module")
def browser():
    with Browser(width=1280, height=900) as chromium:
        yield chromium


def merged(ranges: list[list[int]]) -> list[list[int]]:
    """Touching or overlapping ranges joined, sorted."""
    out: list[list[int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def shown(browser: Browser) -> str:
    return browser.evaluate("document.getElementById('shown').textContent")


def load(browser: Browser, path: str) -> None:
    browser.errors.clear()
    browser.requests.clear()
    browser.open(path)
    assert browser.wait_for("document.documentElement.dataset.ready === 'true'")
    assert browser.requests == [Path(path).resolve().as_uri()]  # nothing fetched besides the page itself


def test_filters_sorting_thresholds_and_highlights_through_the_page_controls(browser, write_json, tmp_path):
    data = json.loads(json.dumps(SPAN_DATA))
    para = data["data"][0]["paragraphs"][0]
    offset = len(PWN) + 1
    para["context"] = PWN + " " + para["context"]
    for qa in para["qas"]:
        qa["answers"] = [dict(a, answer_start=a["answer_start"] + offset) for a in qa["answers"]]
    dataset = load_dataset(write_json("dev.json", data))
    subs = load_submissions(dataset, [write_json("a.json", SPAN_PRED), write_json("b.json", SPAN_PRED_B)], [])
    html = render_report(dataset, subs)
    page = str(tmp_path / "report.html")
    write_page(page, html)
    load(browser, page)
    assert browser.evaluate(VISIBLE_IDS) == ["q1", "q2", "q3"] and shown(browser) == "showing 3 of 3 questions"

    browser.click('button.quadrant[data-sub="0"][data-quadrant="right-poor"]')  # A: right answer, poor evidence
    assert browser.evaluate(VISIBLE_IDS) == ["q2"] and shown(browser) == "showing 1 of 3 questions"
    browser.click('button.quadrant[data-sub="0"][data-quadrant="unanswered"]')
    assert browser.evaluate(VISIBLE_IDS) == ["q3"]
    browser.click("#clear")
    browser.type("#search", "SYDNEY IS")
    browser.wait_for("document.getElementById('shown').textContent === 'showing 1 of 3 questions'")
    assert browser.evaluate(VISIBLE_IDS) == ["q2"]
    browser.click("#clear")
    assert browser.evaluate(VISIBLE_IDS) == ["q1", "q2", "q3"]

    browser.click('button.sort[data-key="B-A:answer"]')  # ascending: q1 (−1), q2 (0), q3 (+1)
    assert browser.evaluate(VISIBLE_IDS) == ["q1", "q2", "q3"]
    browser.click('button.sort[data-key="B-A:answer"]')  # again: descending
    assert browser.evaluate(VISIBLE_IDS) == ["q3", "q2", "q1"]
    browser.click('button.sort[data-key="B-A:overall"]')  # q2 and q3 tie at +1 and keep their dataset order
    assert browser.evaluate(VISIBLE_IDS) == ["q1", "q2", "q3"]
    browser.click('button.sort[data-key="B-A:overall"]')
    assert browser.evaluate(VISIBLE_IDS) == ["q2", "q3", "q1"]

    browser.type("#evidence-threshold", "0")  # every answered question now has good evidence
    expected = [quadrant_counts(sub.report, 0.5, 0.0) for sub in subs]
    counts = browser.evaluate("Array.from(document.querySelectorAll('button.quadrant'))"
                              ".map(b => [Number(b.dataset.sub), b.dataset.quadrant, Number(b.textContent)])")
    assert counts and all(expected[s][name] == count for s, name, count in counts), counts
    assert expected[0]["right-good"] == 2

    browser.click("#q-0 button.open")  # q1, drawn on demand
    drawn = browser.evaluate(DRAWN_RANGES % 0)
    assert drawn["text"] == para["context"] and drawn["elements"] == 0
    assert browser.evaluate("typeof window.pwned") == "undefined"
    q1 = json.loads(browser.evaluate("document.getElementById('report-data').textContent"))["questions"][0]
    for kind in ("ge", "ga", "ae", "aa", "be", "ba"):
        expected_ranges = merged([m[:2] for m in q1["marks"] if m[2] == kind])
        assert merged(drawn["ranges"].get("m-" + kind, [])) == expected_ranges, kind
    start = para["context"].index("Melbourne is")
    assert merged(drawn["ranges"]["m-ge"]) == [[start, start + len("Melbourne is the sporting capital of Australia.")]]
    assert merged(drawn["ranges"]["m-ba"]) == [[para["context"].index("Australia"),
                                                 para["context"].index("Australia") + len("Australia")]]
    rows = browser.evaluate("Array.from(document.querySelectorAll('tr.detail .texts th')).map(th => th.textContent)")
    assert "A answer" in rows and "B evidence" in rows
    cells = browser.evaluate("Array.from(document.querySelectorAll('tr.detail .texts td')).map(td => td.textContent)")
    assert "Melbourne is the sporting capital of Australia. best match for A best match for B" in cells

    shot = tmp_path / "report.png"
    assert browser.screenshot(str(shot)) > 1000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert browser.errors == []


def test_multiple_choice_options_show_gold_and_chosen(browser, write_json, tmp_path):
    pred = {"m1-0": {"answer": "A", "evidence": "小明去北京。"}, "m1-1": {"answer": "C", "evidence": "他喜欢长城。"},
            "m2-0": {"answer": "B", "evidence": "天很蓝。"}}
    page = str(tmp_path / "c3.html")
    html, _ = build_report(write_json("c3.json", CHOICE_DATA), [write_json("p.json", pred)])
    write_page(page, html)
    load(browser, page)
    browser.type("#search", "长城")
    browser.wait_for("document.getElementById('shown').textContent === 'showing 1 of 3 questions'")
    browser.click("#q-1 button.open")
    options = browser.evaluate("Array.from(document.querySelectorAll('tr.detail .options li'))"
                               ".map(li => [li.className, li.textContent])")
    assert options == [["opt-gold", "A. 长城gold"], ["", "B. 故宫"], ["opt-a", "C. 天坛A"]]
    drawn = browser.evaluate(DRAWN_RANGES % 1)
    assert merged(drawn["ranges"]["m-ge"]) == [[6, 12]] and merged(drawn["ranges"]["m-ae"]) == [[6, 12]]
    assert browser.errors == []


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("subset", ["squad", "cmrc2018", "race", "c3"])
def test_each_sample_submission_works_in_the_browser(browser, tmp_path, subset):
    path = dev_set(subset)
    page = str(tmp_path / f"{subset}.html")
    html, subs = build_report(path, [str(ROOT / "sample_submission" / f"{subset}.json")])
    write_page(page, html)
    load(browser, page)
    total = subs[0].report.total
    assert shown(browser) == f"showing {total} of {total} questions"
    expected = quadrant_counts(subs[0].report, 0.5, 0.5)["right-poor"]
    browser.click('button.quadrant[data-sub="0"][data-quadrant="right-poor"]')
    assert shown(browser) == f"showing {expected} of {total} questions" and 0 < expected < total
    first = browser.evaluate("document.querySelector('#question-table tr.qrow:not([hidden])').dataset.i")
    browser.click(f"#q-{first} button.open")
    drawn = browser.evaluate(DRAWN_RANGES % int(first))
    question = load_dataset(path).questions[int(first)]
    passage = drawn["text"]  # UTF-16 offsets below, as the page counts them; a gold evidence is found verbatim
    units = utf16_offsets(passage) or list(range(len(passage) + 1))
    gold = [(passage.index(str(e)), passage.index(str(e)) + len(str(e))) for e in question.evidences]
    assert merged(drawn["ranges"]["m-ge"]) == merged([[units[s], units[e]] for s, e in gold])
    assert browser.screenshot(str(tmp_path / f"{subset}.png")) > 1000
    assert browser.errors == []


@pytest.mark.data
@pytest.mark.slow
def test_a_comparison_of_two_submissions_on_a_full_dev_set(browser, tmp_path):
    path = dev_set("squad")
    sample = json.loads((ROOT / "sample_submission" / "squad.json").read_text(encoding="utf-8"))
    dataset = load_dataset(path)
    other = {}
    for k, question in enumerate(dataset.questions):  # better evidence on every other question, no answer on some
        entry = dict(sample[question.qid])
        if k % 2 == 0:
            entry["evidence"] = question.evidences[0]
        if k % 7 == 0:
            entry["answer"] = "no idea"
        other[question.qid] = entry
    b_path = tmp_path / "b.json"
    b_path.write_text(json.dumps(other), encoding="utf-8")
    html, subs = build_report(path, [str(ROOT / "sample_submission" / "squad.json"), str(b_path)],
                              names=["sample", "changed"])
    page = str(tmp_path / "compare.html")
    write_page(page, html)
    load(browser, page)
    browser.click('button.sort[data-key="B-A:overall"]')
    browser.click('button.sort[data-key="B-A:overall"]')  # descending: the biggest gain first
    first = int(browser.evaluate("document.querySelector('#question-table tr.qrow').dataset.i"))
    diffs = [b.overall - a.overall for a, b in zip(subs[0].report.questions, subs[1].report.questions)]
    assert diffs[first] == max(diffs) > 0
    browser.click(f"#q-{first} button.open")
    drawn = browser.evaluate(DRAWN_RANGES % first)
    assert drawn["ranges"]["m-be"] and drawn["ranges"]["m-ae"]
    browser.click('button.quadrant[data-sub="1"][data-quadrant="wrong-good"]')  # B: wrong answer, good evidence
    expected = quadrant_counts(subs[1].report, 0.5, 0.5)["wrong-good"]
    assert shown(browser) == f"showing {expected} of {len(diffs)} questions" and expected > 0
    assert browser.screenshot(str(tmp_path / "compare.png")) > 1000
    assert browser.errors == []


def test_the_summary_and_paired_tables_fit_a_1280_pixel_window(browser, write_json, tmp_path):
    """Every figure of the subsets' metrics, long submission paths and names, two submissions: at 1280 px the
    tables fit and the page never scrolls sideways; the submissions line reads "A: …; B: …"."""
    folder = tmp_path / ("a-rather-long-folder-name-for-the-submissions-of-this-comparison-" * 2)
    folder.mkdir()
    dataset = load_dataset(write_json("dev.json", SPAN_DATA))
    paths = []
    for name, entries in (("first-submission-with-a-long-name.json", SPAN_PRED), ("second.json", SPAN_PRED_B)):
        paths.append(str(folder / name))
        Path(paths[-1]).write_text(json.dumps(entries), encoding="utf-8")
    subs = load_submissions(dataset, paths, select(None, dataset), ["the first system, long-named", "second"])
    assert len(subs[0].report.extra_figures()) >= 9  # the figures that made the SQuAD table 1,990 px wide
    page = str(tmp_path / "wide.html")
    write_page(page, render_report(dataset, subs))
    load(browser, page)
    sizes = browser.evaluate("JSON.stringify({page: document.documentElement.scrollWidth, window: window.innerWidth, "
                             "tables: ['summary-table', 'paired-table'].map(id => "
                             "document.getElementById(id).getBoundingClientRect().right)})")
    sizes = json.loads(sizes)
    assert sizes["window"] == 1280 and sizes["page"] <= 1280, sizes
    assert all(right <= 1280 for right in sizes["tables"]), sizes
    names = browser.evaluate("document.querySelector('header .meta').textContent.replace(/\\s+/g, ' ')")
    assert "long-named); B: " in names and " ;" not in names
    assert browser.errors == []


def long_dataset(count: int) -> tuple[dict, dict, dict]:
    """A SQuAD-like dev set of `count` questions with SQuAD's 24-hex-digit ids and long questions, and two
    submissions on it (so the table has its widest layout: two submissions' scores and B − A)."""
    paragraphs, a, b = [], {}, {}
    for k in range(0, count, 10):
        context = " ".join(f"Sentence {n} says that the river number {n} is {n * 7} kilometres long and it floods "
                           "every spring." for n in range(k, k + 10))
        qas = []
        for n in range(k, min(k + 10, count)):
            qid = f"{0x56be4db0acb8001400a50000 + n:024x}"
            answer = f"{n * 7} kilometres"
            qas.append({"id": qid, "question": f"According to the passage about the rivers of the region, how long in "
                                               f"kilometres is the river numbered {n} that floods every spring?",
                        "answers": [{"text": answer, "answer_start": context.index(answer)}],
                        "evidences": [f"Sentence {n} says that the river number {n} is {n * 7} kilometres long"]})
            a[qid] = {"answer": answer, "evidence": f"Sentence {n} says"}
            b[qid] = {"answer": f"{n}", "evidence": qas[-1]["evidences"][0]}
        paragraphs.append({"context": context, "qas": qas})
    return {"version": "expmrc-squad-dev", "data": [{"title": "Rivers", "paragraphs": paragraphs}]}, a, b


ROWS_SEEN = """(() => Array.from(document.querySelectorAll('#question-table tr.qrow')).filter(r => !r.hidden).map(r => {
  const id = r.querySelector('button.open'), q = r.querySelector('td.qtext');
  const whole = (e) => e.scrollWidth <= e.clientWidth + 1 && e.scrollHeight <= e.clientHeight + 1;
  return [id.textContent, whole(id), whole(q), q.getBoundingClientRect().right <= window.innerWidth];
}))()"""


def test_at_1280_pixels_ids_and_questions_are_whole_and_a_long_table_is_paged(browser, write_json, tmp_path):
    data, a, b = long_dataset(501)
    ids = [qa["id"] for p in data["data"][0]["paragraphs"] for qa in p["qas"]]
    html, _ = build_report(write_json("dev.json", data), [write_json("a.json", a), write_json("b.json", b)])
    page = str(tmp_path / "long.html")
    write_page(page, html)
    load(browser, page)
    assert browser.evaluate("document.documentElement.scrollWidth") <= 1280
    seen = browser.evaluate(ROWS_SEEN)
    assert [row[0] for row in seen] == ids[:50]  # one page, not 501 rows
    assert all(row[1:] == [True, True, True] for row in seen), [row for row in seen if row[1:] != [True] * 3][:3]
    assert shown(browser) == "showing 501 of 501 questions"
    info = "document.getElementById('page-info').textContent"
    assert browser.evaluate(info) == "rows 1–50 of 501, page 1 of 11"

    browser.click("#page-next")
    assert [row[0] for row in browser.evaluate(ROWS_SEEN)] == ids[50:100]
    browser.click("#page-prev")
    assert [row[0] for row in browser.evaluate(ROWS_SEEN)] == ids[:50]
    browser.type("#search", ids[480])  # a question of the tenth page, found from the first
    browser.wait_for("document.getElementById('shown').textContent === 'showing 1 of 501 questions'")
    assert [row[0] for row in browser.evaluate(ROWS_SEEN)] == [ids[480]]
    assert browser.evaluate(info) == "rows 1–1 of 1, page 1 of 1"
    browser.click("#clear")
    browser.evaluate("(() => { const s = document.getElementById('page-size'); s.value = '0';"
                     " s.dispatchEvent(new Event('change')); })()")
    assert len(browser.evaluate(ROWS_SEEN)) == 501
    assert browser.errors == []


# At phone width: the page never scrolls sideways; each table fits its box or scrolls inside it; ids stay on one line
PHONE_LAYOUT = """(() => {
  const box = (e) => e.getBoundingClientRect();
  const tables = Array.from(document.querySelectorAll('main table')).filter(t => t.offsetParent !== null);
  return JSON.stringify({
    page: document.documentElement.scrollWidth, window: window.innerWidth,
    loose: tables.filter(t => box(t).right > window.innerWidth + 1 && !t.parentElement.classList.contains('scroll'))
                 .map(t => t.id || t.className),
    boxes: Array.from(document.querySelectorAll('.scroll')).map(s => box(s).right <= window.innerWidth + 1),
    scrolled: ['summary-table', 'question-table'].map(id => {
      const s = document.getElementById(id).parentElement; return s.scrollWidth > s.clientWidth; }),
    ids: Array.from(document.querySelectorAll('table.deciding td.id code')).map(c => c.getClientRects().length),
    controls: Array.from(document.querySelectorAll('#filters > *, #filters .pager > *'))
                   .every(e => box(e).right <= window.innerWidth + 1),
  });
})()"""
LAST_COLUMN_IN_VIEW = """(() => {
  const table = document.querySelector('table.deciding'), scroll = table.parentElement;
  scroll.scrollLeft = scroll.scrollWidth;
  const cell = table.querySelector('thead th:last-child').getBoundingClientRect(), seen = scroll.getBoundingClientRect();
  return [table.querySelector('thead th:last-child').textContent, cell.left >= seen.left - 1 && cell.right <= seen.right + 1];
})()"""
DETAIL_IN_VIEW = """(() => {
  const scroll = document.getElementById('question-table').parentElement;
  scroll.scrollLeft = scroll.scrollWidth;
  const body = document.querySelector('tr.detail .detail-body').getBoundingClientRect();
  return body.left >= 0 && body.right <= window.innerWidth + 1 && body.width > 200;
})()"""


def test_at_390_pixels_the_page_never_scrolls_sideways_and_wide_tables_scroll_in_their_boxes(write_json, tmp_path):
    """A phone (390 × 844, laid out as a phone's browser does): two submissions, every metric of the subset, SQuAD's
    24-digit ids. The page is as wide as the screen; the wide tables scroll inside their own boxes; the ids of the
    gains and losses tables stay on one line and their B − A column is reached by scrolling its box; an opened
    question's passage fits the screen and stays in view while the question table is scrolled sideways."""
    data, a, b = long_dataset(60)
    html, subs = build_report(write_json("dev.json", data), [write_json("a.json", a), write_json("b.json", b)])
    assert len(subs[0].report.extra_figures()) >= 9
    page = str(tmp_path / "phone.html")
    write_page(page, html)
    with Browser(width=390, height=844, mobile=True) as phone:
        load(phone, page)
        layout = json.loads(phone.evaluate(PHONE_LAYOUT))
        assert layout["window"] == 390 and layout["page"] <= 390, layout  # a wider page would be zoomed out
        assert layout["loose"] == [] and all(layout["boxes"]) and layout["scrolled"] == [True, True], layout
        assert len(layout["ids"]) >= 10 and set(layout["ids"]) == {1}, layout["ids"]  # each id on one line
        assert layout["controls"]
        assert phone.evaluate(LAST_COLUMN_IN_VIEW) == ["B − A", True]
        phone.click("#q-0 button.open")
        assert phone.evaluate(DETAIL_IN_VIEW)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        assert phone.screenshot(str(tmp_path / "phone.png")) > 1000
        assert phone.errors == []
