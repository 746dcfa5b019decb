"""``report.html``: opens from disk with no server and no network.

Tables are plain HTML, plots are embedded PNGs (base64 data URIs), and the per-dialogue
explorer is vanilla JavaScript. Its index (what the filters read: each dialogue's task, video,
questions, and each run's dialogue scores) is a JSON payload embedded in the page
(``<script type="application/json">``); what an opened dialogue shows (its rounds and checklists,
a run's answers and verdicts, the thumbnails) lies in files beside the page
(:data:`EXPLORER_FOLDER`, one per run, :func:`explorer_files`), each loaded by a ``<script>``
element the first time a dialogue needs it, so a page over 24 full runs stays small and opens at
once. Nothing is fetched from elsewhere: no fonts, scripts, or icons. A file of another report
(the folder of an older report left beside a new page) is refused, by the report's token.

Every text from runs and datasets is escaped for its place: :func:`esc` for element content
and attributes, :func:`mtvbench.util.escape.json_for_script` for the embedded payload and the
files beside the page (no ``<``, ``>`` or ``&`` in it, so no reply can end or comment out the
``<script>``, and no raw U+2028/2029), and the page's JavaScript puts data into the DOM with
``textContent`` only, never ``innerHTML``.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mtvbench.util.escape import html as esc
from mtvbench.util.escape import json_for_script

#: a cell that reads as a number (``62.96``, ``-1.5``, ``12,345``, ``80.1 (13)``, ``– (0)``, ``–``): aligned right
_NUMERIC = re.compile(r"^\s*(?:[-+]?[\d,]*\.?\d+(?:e[-+]?\d+)?%?|–|-)(?:\s*\(\d+\))?\s*$", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")


def text_columns(rows: Sequence[Sequence[str]], raw: bool = False) -> set[int]:
    """The columns holding text (a cell that is not a number): aligned left like their header."""
    out: set[int] = set()
    for r in rows:
        for j, c in enumerate(r):
            value = _TAG.sub("", c) if raw else c
            if value.strip() and not _NUMERIC.match(value):
                out.add(j)
    return out


def html_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, raw: bool = False, cls: str = "") -> str:
    """A table; cells are escaped unless ``raw`` (then they must already be safe HTML). Numbers align right,
    the columns that hold text align left (class ``t``)."""
    def cell(x: str) -> str:
        return x if raw else esc(x)

    text = text_columns(rows, raw)

    def attr(j: int) -> str:
        return ' class="t"' if j in text else ""

    head = "".join(f"<th{attr(j)}>{esc(h)}</th>" for j, h in enumerate(header))
    body = "".join("<tr>" + "".join(f"<td{attr(j)}>{cell(c)}</td>" for j, c in enumerate(r)) + "</tr>"
                   for r in rows)
    return f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def png_img(png: bytes, alt: str) -> str:
    b64 = base64.b64encode(png).decode("ascii")
    return f'<img class="plot" alt="{esc(alt)}" src="data:image/png;base64,{b64}">'


@dataclass
class Section:
    id: str
    title: str
    body: str  # safe HTML


#: the folder beside ``report.html`` that holds the explorer's files
EXPLORER_FOLDER = "explorer"


@dataclass
class Explorer:
    """The dialogue explorer's index, embedded in the page (``runs``: name, ``file``, ``scores`` in the order of
    ``dialogues``; ``dialogues``: what the filters read; ``thumbs``: the thumbnails' file or None). What an
    opened dialogue shows lies in the files beside the page (:func:`explorer_file`): ``dialogues`` (rounds by
    dialogue id), one per run (answers and verdicts by dialogue id and round), ``thumbs``."""

    page: dict[str, Any] = field(default_factory=dict)
    #: names this report's files: the page takes no file of another report
    token: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass
class HtmlReport:
    title: str
    sections: list[Section] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    explorer: Explorer | None = None


def explorer_file(explorer: Explorer, name: str, payload: str) -> str:
    """The text of the file ``NAME.js`` beside the page: a script that hands ``payload`` (JSON text made by
    :func:`json_for_script`) to the page."""
    return f"mtvbenchExplorer.loaded({json.dumps(explorer.token)}, {json.dumps(name)}, {payload});\n"


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;margin:0;color:#222;
background:#fafafa}
header{background:#233;color:#fff;padding:12px 24px}header h1{margin:0;font-size:20px}
nav{padding:6px 24px;background:#eef}nav a{margin-right:14px}
main{padding:8px 24px 40px}section{margin-bottom:28px}
table{border-collapse:collapse;margin:8px 0;font-size:13px;background:#fff}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right;vertical-align:top}
th:first-child,td:first-child,th.t,td.t{text-align:left}
img.plot{max-width:100%;border:1px solid #ddd;margin:6px 8px 6px 0;background:#fff}
.note{background:#fff6d8;border-left:4px solid #e0b000;padding:6px 10px;margin:6px 0}
.ci{color:#777;font-size:11px}
#filters{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin:8px 0;padding:8px;background:#fff;
border:1px solid #ddd}
#filters label{font-size:13px}
details.dlg{background:#fff;border:1px solid #ccc;margin:6px 0;padding:4px 8px}
details.dlg summary{cursor:pointer;font-size:14px}
.thumbs img{height:72px;margin:4px 4px 4px 0;border:1px solid #ccc}
.round{border-top:1px dashed #ddd;padding:4px 0;font-size:13px}
.round.model{background:#f4f8ff}
.lbl{font-weight:600;color:#345}
.answer{white-space:pre-wrap}
.ok{color:#176b17;font-weight:600}.bad{color:#b00020;font-weight:600}.na{color:#888}
table.ck td{text-align:left}
.score{font-weight:600}
.incomplete{color:#b00020;font-weight:600}
"""

JS = r"""
(function () {
  "use strict";
  var payload = JSON.parse(document.getElementById("explorer-data").textContent);
  var runSel = document.getElementById("f-run"), taskSel = document.getElementById("f-task");
  var minIn = document.getElementById("f-min"), maxIn = document.getElementById("f-max");
  var textIn = document.getElementById("f-text"), list = document.getElementById("dialogues");
  var countEl = document.getElementById("f-count");
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function fmt(x) { return (x === null || x === undefined) ? "\u2013" : Number(x).toFixed(2); }
  // the files beside the page: each a script that calls mtvbenchExplorer.loaded(token, name, data) once
  var files = {};
  window.mtvbenchExplorer = {
    loaded: function (token, name, data) {
      var f = files[name];
      if (!f) { return; }
      if (token !== payload.token) { f.error = "belongs to another report (made again since this page?)"; return; }
      f.data = data;
    }
  };
  function finish(name) {
    var f = files[name];
    f.done = true;
    if (f.data === undefined && !f.error) { f.error = "did not load"; }
    f.waiting.splice(0).forEach(function (cb) { cb(); });
  }
  function load(name, cb) {
    var f = files[name];
    if (f && f.done) { cb(); return; }
    if (f) { f.waiting.push(cb); return; }
    f = files[name] = {done: false, waiting: [cb]};
    var s = document.createElement("script");
    s.src = payload.folder + "/" + name + ".js";
    s.onload = function () { finish(name); };
    s.onerror = function () { f.error = "cannot be read"; finish(name); };
    document.head.appendChild(s);
  }
  function loadAll(names, cb) {
    var left = names.length;
    names.forEach(function (n) { load(n, function () { left -= 1; if (left === 0) { cb(); } }); });
  }
  payload.runs.forEach(function (r, i) {
    var o = el("option", null, r.name + (r.complete === false ? " (INCOMPLETE)" : "")); o.value = String(i);
    runSel.appendChild(o);
  });
  payload.tasks.forEach(function (t) {
    var o = el("option", null, t.label + " (" + t.abbr + ")"); o.value = t.value; taskSel.appendChild(o);
  });
  function openBody(d, run, box) {
    var names = ["dialogues", run.file].concat(payload.thumbs ? [payload.thumbs] : []);
    var wait = el("div", "na", "loading " + payload.folder + "/" + run.file + ".js \u2026");
    box.appendChild(wait);
    loadAll(names, function () {
      box.removeChild(wait);
      var bad = names.filter(function (n) { return files[n].error; });
      if (bad.length) {
        bad.forEach(function (n) {
          box.appendChild(el("div", "bad", payload.folder + "/" + n + ".js " + files[n].error +
            ": keep the folder " + payload.folder + " beside this page"));
        });
        box.dataset.failed = "1";
        return;
      }
      renderBody(d, run, box);
    });
  }
  function renderBody(d, run, box) {
    var thumbs = payload.thumbs ? (files[payload.thumbs].data[d.video] || []) : [];
    if (thumbs.length) {
      var tb = el("div", "thumbs");
      thumbs.forEach(function (b64, k) {
        var img = el("img"); img.alt = d.video + " frame " + (k + 1);
        img.src = "data:image/jpeg;base64," + b64; tb.appendChild(img);
      });
      box.appendChild(tb);
    }
    var meta = d.meta || {};
    box.appendChild(el("div", null, "video " + d.video + ", event " + d.event +
      (meta.duration_s ? ", " + (meta.duration_s / 60).toFixed(1) + " min" : "") +
      (meta.scenes ? ", " + meta.scenes + " scenes" : "") + (meta.category ? ", " + meta.category : "")));
    var res = files[run.file].data[d.id] || {};
    (files.dialogues.data[d.id] || []).forEach(function (r) {
      var div = el("div", "round" + (r.model_turn ? " model" : ""));
      var head = el("div", "lbl", "Round " + r.index + (r.ability ? " \u00b7 " + r.ability : "") +
        (r.scored ? " \u00b7 scored" : (r.model_turn ? " \u00b7 model turn" : " \u00b7 context")));
      div.appendChild(head);
      var q = el("div"); q.appendChild(el("span", "lbl", "User: ")); q.appendChild(el("span", "answer", r.user));
      div.appendChild(q);
      var g = el("div"); g.appendChild(el("span", "lbl", "Golden: ")); g.appendChild(el("span", "answer", r.golden));
      div.appendChild(g);
      var t = res[String(r.index)];
      if (r.model_turn) {
        var a = el("div");
        a.appendChild(el("span", "lbl", "Model: "));
        a.appendChild(el("span", "answer", t ? t.answer : "(no stored answer)"));
        if (t && t.outcome && t.outcome !== "ok") { a.appendChild(el("span", "bad", " [" + t.outcome + "]")); }
        div.appendChild(a);
      }
      if (r.checklist && r.checklist.length) {
        var runsN = t ? t.judge.length : 0;
        var tbl = el("table", "ck"), hr = el("tr");
        ["Item", "Question", "Expected"].forEach(function (h) { hr.appendChild(el("th", null, h)); });
        for (var j = 0; j < runsN; j++) {
          hr.appendChild(el("th", null, "Judge run " + t.judge[j].run + " (" + t.judge[j].status + ")"));
        }
        tbl.appendChild(hr);
        r.checklist.forEach(function (it) {
          var tr = el("tr");
          tr.appendChild(el("td", null, it.key)); tr.appendChild(el("td", null, it.question));
          tr.appendChild(el("td", null, it.expected));
          for (var j = 0; j < runsN; j++) {
            var v = t.judge[j].verdicts ? t.judge[j].verdicts["A" + it.key.slice(1)] : null;
            var cls = v ? (v === it.expected ? "ok" : "bad") : "na";
            tr.appendChild(el("td", cls, v || "\u2013"));
          }
          tbl.appendChild(tr);
        });
        div.appendChild(tbl);
        div.appendChild(el("div", "score", "Turn score: " + fmt(t ? t.score : null)));
      }
      box.appendChild(div);
    });
  }
  var lastKey = null;
  function apply() {
    var key = [runSel.value, taskSel.value, minIn.value, maxIn.value, textIn.value].join("\u0001");
    if (key === lastKey) { return; }
    lastKey = key;
    var run = payload.runs[Number(runSel.value || 0)];
    var task = taskSel.value, lo = parseFloat(minIn.value), hi = parseFloat(maxIn.value);
    var needle = textIn.value.trim().toLowerCase();
    if (isNaN(lo)) { lo = -Infinity; } if (isNaN(hi)) { hi = Infinity; }
    while (list.firstChild) { list.removeChild(list.firstChild); }
    var shown = 0, frag = document.createDocumentFragment();
    payload.dialogues.forEach(function (d, i) {
      if (task && d.task !== task) { return; }
      var s = run.scores[i];
      var hasScore = (s !== null && s !== undefined);
      if ((lo > -Infinity || hi < Infinity) && !hasScore) { return; }
      if (hasScore && (s < lo || s > hi)) { return; }
      if (needle && (d.id + " " + d.search).toLowerCase().indexOf(needle) < 0) { return; }
      shown += 1;
      var det = el("details", "dlg"); det.dataset.id = d.id; det.dataset.task = d.task;
      det.dataset.score = hasScore ? String(s) : "";
      var sum = el("summary");
      sum.appendChild(el("span", "score", fmt(s)));
      sum.appendChild(document.createTextNode("  " + d.task_abbr + " \u00b7 " + d.video + " / event " + d.event +
        " \u00b7 " + d.n_rounds + " rounds"));
      det.appendChild(sum);
      var body = el("div");
      det.appendChild(body);
      det.addEventListener("toggle", function () {
        if (det.open && !body.hasChildNodes()) { openBody(d, run, body); }
      });
      frag.appendChild(det);
    });
    list.appendChild(frag);
    countEl.textContent = shown + " of " + payload.dialogues.length + " dialogues shown";
    countEl.dataset.shown = String(shown);
  }
  [runSel, taskSel, minIn, maxIn, textIn].forEach(function (e) {
    e.addEventListener("input", apply); e.addEventListener("change", apply);
  });
  apply();
})();
"""


def render_html(rep: HtmlReport) -> str:
    nav = "".join(f'<a href="#{esc(s.id)}">{esc(s.title)}</a>' for s in rep.sections)
    if rep.explorer is not None:
        nav += '<a href="#explorer">Dialogue explorer</a>'
    notes = "".join(f'<div class="note{" incomplete" if "INCOMPLETE" in n or "NOT a real benchmark" in n else ""}">'
                    f'{esc(n)}</div>' for n in rep.notes)
    body = "".join(f'<section id="{esc(s.id)}"><h2>{esc(s.title)}</h2>{s.body}</section>' for s in rep.sections)
    explorer = ""
    if rep.explorer is not None:
        explorer = (
            '<section id="explorer"><h2>Dialogue explorer</h2>'
            '<div id="filters">'
            '<label>Run <select id="f-run"></select></label>'
            '<label>Task <select id="f-task"><option value="">all tasks</option></select></label>'
            '<label>Score from <input id="f-min" type="number" min="0" max="100" step="1" size="5"></label>'
            '<label>to <input id="f-max" type="number" min="0" max="100" step="1" size="5"></label>'
            '<label>Text <input id="f-text" type="search" size="18"></label>'
            '<span id="f-count"></span></div>'
            '<div id="dialogues"></div></section>'
            '<script id="explorer-data" type="application/json">'
            f'{json_for_script({**rep.explorer.page, "token": rep.explorer.token, "folder": EXPLORER_FOLDER})}'
            '</script>'
            f"<script>{JS}</script>")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<link rel=\"icon\" href=\"data:,\">"
            f"<title>{esc(rep.title)}</title><style>{CSS}</style></head><body>"
            f"<header><h1>{esc(rep.title)}</h1></header><nav>{nav}</nav><main>{notes}{body}{explorer}</main>"
            "</body></html>\n")
