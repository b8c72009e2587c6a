// expmrc report: filters, sorting, quadrants and passages drawn on demand. Data goes into the page
// only as text (textContent / text nodes), never as markup.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const questions = data.questions;
  const letters = data.letters;
  const $ = (id) => document.getElementById(id);
  const tbody = document.querySelector("#question-table tbody");
  const rows = Array.from(tbody.querySelectorAll("tr.qrow"));
  const columns = document.querySelectorAll("#question-table thead th").length;
  const details = new Map();  // question index -> its open detail row
  let haystacks = null;

  // ------------------------------------------------------------ small helpers
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) node.setAttribute(name, value);
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }
  function figure(value) {
    return typeof value === "number" ? value.toFixed(3) : (value === null || value === undefined ? "n/a" : String(value));
  }
  function threshold(input, fallback) {
    const value = input.valueAsNumber;
    const ok = Number.isFinite(value) && value >= 0 && value <= 1;
    input.setCustomValidity(ok ? "" : "a number from 0 to 1");
    return ok ? value : fallback;
  }

  // ------------------------------------------------------------ quadrants
  let answerThreshold = data.thresholds.answer;
  let evidenceThreshold = data.thresholds.evidence;

  function quadrantOf(q, s) {
    if (!q.subs[s].answered) return "unanswered";
    const letter = letters[s];
    return (q.values[letter + ":answer"] >= answerThreshold ? "right" : "wrong") + "-" +
      (q.values[letter + ":evidence"] >= evidenceThreshold ? "good" : "poor");
  }

  function recount() {
    answerThreshold = threshold($("answer-threshold"), answerThreshold);
    evidenceThreshold = threshold($("evidence-threshold"), evidenceThreshold);
    letters.forEach((letter, s) => {
      const counts = Object.fromEntries(data.quadrants.map((name) => [name, 0]));
      for (const q of questions) counts[quadrantOf(q, s)] += 1;
      document.querySelectorAll(`button.quadrant[data-sub="${s}"]`).forEach((button) => {
        button.textContent = String(counts[button.dataset.quadrant]);
      });
    });
    page = 0;
    update();
  }

  // ------------------------------------------------------------ filtering and sorting
  function haystack(q) {
    const parts = [q.id, q.question, ...(q.options || []), ...q.gold.answers.map((a) => a[0]),
      ...q.gold.evidences.map((e) => e[0])];
    for (const sub of q.subs) parts.push(sub.answer || "", sub.evidence || "");
    return parts.join("\n").toLowerCase();
  }

  function filter() {  // the page's filters, read once: a test of one question index
    const search = $("search").value.trim().toLowerCase();
    if (search && haystacks === null) haystacks = questions.map(haystack);
    const type = $("type").value;
    const quadrant = $("quadrant").value;
    const of = $("quadrant-of") ? Number($("quadrant-of").value) : 0;
    const key = $("range-key").value;
    const low = key ? $("range-min").valueAsNumber : NaN;
    const high = key ? $("range-max").valueAsNumber : NaN;
    return (i) => {
      const q = questions[i];
      if (search && !haystacks[i].includes(search)) return false;
      if (type && q.type !== type) return false;
      if (quadrant && quadrantOf(q, of) !== quadrant) return false;
      if (Number.isFinite(low) || Number.isFinite(high)) {
        const value = q.values[key];
        if (typeof value !== "number") return false;
        if (Number.isFinite(low) && value < low) return false;
        if (Number.isFinite(high) && value > high) return false;
      }
      return true;
    };
  }

  function compare(key, direction) {
    const sign = direction === "desc" ? -1 : 1;
    return (i, j) => {
      if (key === "id") return sign * (questions[i].id < questions[j].id ? -1 : questions[i].id > questions[j].id ? 1 : 0) || i - j;
      if (!key) return sign * (i - j);
      const a = questions[i].values[key];
      const b = questions[j].values[key];
      const aMissing = typeof a !== "number";
      const bMissing = typeof b !== "number";
      if (aMissing || bMissing) return (aMissing - bMissing) || i - j;  // missing values last either way
      return sign * (a - b) || i - j;
    };
  }

  let arranged = "|asc";  // the order the rows are in (dataset order at first); unchanged, they are not moved
  let order = questions.map((_, k) => k);  // question indices in the rows' order
  let page = 0;  // of the questions that match the filters, the page shown (--page-size rows each; 0: all)

  function paged(matching) {  // the questions of the current page, and the line saying where it is
    const size = Number($("page-size").value);
    const pages = size ? Math.max(1, Math.ceil(matching.length / size)) : 1;
    page = Math.min(Math.max(page, 0), pages - 1);
    const from = size ? page * size : 0;
    const shown = size ? matching.slice(from, from + size) : matching;
    $("page-prev").disabled = page === 0;
    $("page-next").disabled = page >= pages - 1;
    $("page-info").textContent = shown.length ?
      `rows ${from + 1}–${from + shown.length} of ${matching.length}, page ${page + 1} of ${pages}` : "no rows";
    return new Set(shown);
  }

  function update() {
    const key = $("sort-key").value;
    const direction = $("sort-dir").value;
    if (arranged !== key + "|" + direction) {
      order = questions.map((_, k) => k).sort(compare(key, direction));
      const fragment = document.createDocumentFragment();
      for (const i of order) {
        fragment.append(rows[i]);
        if (details.has(i)) fragment.append(details.get(i));
      }
      tbody.append(fragment);
      arranged = key + "|" + direction;
    }
    const matching = order.filter(filter());
    const onPage = paged(matching);
    order.forEach((i) => {
      const show = onPage.has(i);
      if (rows[i].hidden === show) rows[i].hidden = !show;
      if (details.has(i)) details.get(i).hidden = !show;
    });
    $("shown").textContent = `showing ${matching.length} of ${questions.length} questions`;
    document.querySelectorAll("button.sort").forEach((button) => {
      if (button.dataset.key === key) button.dataset.dir = direction; else delete button.dataset.dir;
    });
    const quadrant = $("quadrant").value;
    const of = $("quadrant-of") ? $("quadrant-of").value : "0";
    document.querySelectorAll("button.quadrant").forEach((button) => {
      button.classList.toggle("active", button.dataset.quadrant === quadrant && button.dataset.sub === of);
    });
  }

  // ------------------------------------------------------------ one question, drawn when opened
  function passageNode(text, marks) {
    const cuts = new Set([0, text.length]);
    for (const [start, end] of marks) { cuts.add(start); cuts.add(end); }
    const points = Array.from(cuts).sort((a, b) => a - b);
    const node = el("div", { class: "passage", lang: document.documentElement.lang });
    for (let k = 0; k + 1 < points.length; k++) {
      const start = points[k];
      const end = points[k + 1];
      const kinds = Array.from(new Set(marks.filter((m) => m[0] <= start && m[1] >= end).map((m) => m[2]))).sort();
      const piece = text.slice(start, end);
      node.append(kinds.length ? el("span", { class: kinds.map((kind) => "m-" + kind).join(" ") }, piece) : piece);
    }
    return node;
  }

  function optionsNode(q) {
    const list = el("ol", { class: "options" });
    q.options.forEach((option, k) => {
      const label = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[k];
      const item = el("li", { "data-label": label }, label + ". " + option);
      const classes = [];
      if (q.gold.label === label) { classes.push("opt-gold"); item.append(el("span", { class: "badge" }, "gold")); }
      q.subs.forEach((sub, s) => {
        if (sub.option === k) { classes.push("opt-" + letters[s].toLowerCase()); item.append(el("span", { class: "badge" }, letters[s])); }
      });
      if (classes.length) item.className = classes.join(" ");
      list.append(item);
    });
    return list;
  }

  function textCell(text, found, score, scoreName) {
    const cell = el("td", {}, text);
    if (found === false) cell.append(" ", el("span", { class: "missing" }, "(not found in the passage)"));
    if (score !== undefined) cell.append(" ", el("span", { class: "score" }, `— ${scoreName} ${figure(score)}`));
    return cell;
  }

  function detailRow(i) {
    const q = questions[i];
    // the question, passage and texts stay in view when a narrow window scrolls the table sideways
    const cell = el("div", { class: "detail-body" });
    cell.append(el("p", { class: "question-text" }, q.question));
    if (q.options) cell.append(optionsNode(q));
    cell.append(passageNode(data.passages[q.passage], q.marks));
    const texts = el("tbody");
    const row = (label, ...cells) => texts.append(el("tr", {}, el("th", { scope: "row" }, label), ...cells));
    const gold = (label, texts, kind) => texts.forEach(([text, found], k) => {  // each marked with who matched it best
      const cell = textCell(text, found);
      q.subs.forEach((sub, s) => { if (sub[kind] === k) cell.append(" ", el("span", { class: "badge" }, `best match for ${letters[s]}`)); });
      row(k ? "" : label, cell);
    });
    if (q.options) row("gold answer", el("td", {}, q.gold.label));
    else gold("gold answers", q.gold.answers, "bestAnswer");
    if (!q.gold.evidences.length) row("gold evidence", el("td", { class: "missing" }, "the dataset has none for this question"));
    gold("gold evidence", q.gold.evidences, "bestEvidence");
    q.subs.forEach((sub, s) => {
      const letter = letters[s];
      if (!sub.answered) { row(letter, el("td", { class: "missing" }, "unanswered (scored 0)")); return; }
      const answerName = data.kind === "span" ? "F1" : "accuracy";
      row(`${letter} answer`, textCell(sub.answer, sub.notFound.includes("answer") ? false : undefined,
        q.values[letter + ":answer"], answerName));
      row(`${letter} evidence`, textCell(sub.evidence, !sub.notFound.includes("evidence"), q.values[letter + ":evidence"], "F1"));
      if (sub.support) {  // the judge's label (expmrc judge --details), beside the evidence it judged
        const judged = sub.support;
        const said = judged.probability !== null && judged.probability !== undefined ? `P(entailment) ${figure(judged.probability)}`
          : judged.reply ? `reply: ${judged.reply}` : "";
        row(`${letter} support`, el("td", {}, el("span", { class: "badge support-" + judged.label }, judged.label),
          said ? " " + said : "", judged.note ? ` (${judged.note})` : ""));
      }
      row(`${letter} overall`, el("td", {}, figure(q.values[letter + ":overall"]) + (data.kind === "span" ? `; exact match ${figure(q.values[letter + ":exact"])}` : "")));
      for (const [metric, values] of Object.entries(sub.extra || {})) {
        const text = Object.entries(values || {}).map(([name, value]) => `${name} ${figure(value)}`).join(", ");
        row(`${letter} ${metric}`, el("td", {}, text || "n/a"));
      }
    });
    cell.append(el("table", { class: "texts" }, texts));
    return el("tr", { class: "detail", "data-i": String(i) }, el("td", { colspan: String(columns) }, cell));
  }

  function toggle(i) {
    const button = rows[i].querySelector("button.open");
    if (details.has(i)) {
      details.get(i).remove();
      details.delete(i);
      button.setAttribute("aria-expanded", "false");
      return;
    }
    const detail = detailRow(i);
    details.set(i, detail);
    rows[i].after(detail);
    button.setAttribute("aria-expanded", "true");
  }

  // ------------------------------------------------------------ wiring the page's controls
  tbody.addEventListener("click", (event) => {
    const button = event.target.closest("button.open");
    if (button) toggle(Number(button.closest("tr").dataset.i));
  });
  const refilter = () => { page = 0; update(); };  // a new filter or order starts at its first page
  document.querySelectorAll("button.sort").forEach((button) => button.addEventListener("click", () => {
    const same = $("sort-key").value === button.dataset.key;
    $("sort-key").value = button.dataset.key;
    $("sort-dir").value = same && $("sort-dir").value === "desc" ? "asc" : (same ? "desc" : "asc");
    refilter();
  }));
  document.querySelectorAll("button.quadrant").forEach((button) => button.addEventListener("click", () => {
    $("quadrant").value = button.dataset.quadrant;
    if ($("quadrant-of")) $("quadrant-of").value = button.dataset.sub;
    refilter();
    $("questions").scrollIntoView();
  }));
  let pending = null;
  $("search").addEventListener("input", () => { clearTimeout(pending); pending = setTimeout(refilter, 120); });
  for (const id of ["type", "quadrant", "quadrant-of", "range-key", "range-min", "range-max", "sort-key", "sort-dir",
    "page-size"]) {
    if ($(id)) $(id).addEventListener(id.startsWith("range-m") ? "input" : "change", refilter);
  }
  for (const id of ["answer-threshold", "evidence-threshold"]) $(id).addEventListener("input", recount);
  $("clear").addEventListener("click", () => {
    for (const id of ["search", "range-min", "range-max"]) $(id).value = "";
    for (const id of ["type", "quadrant", "range-key"]) $(id).value = "";
    refilter();
  });
  $("page-prev").addEventListener("click", () => { page -= 1; update(); });
  $("page-next").addEventListener("click", () => { page += 1; update(); });
  update();
  document.documentElement.dataset.ready = "true";
})();
