// Rate page (a run directory, paper §4.5): for each rated turn the question, the golden answer and the
// model's answer; the rater answers every checklist question about the model's answer Yes or No. The page
// never receives the expected answers, the judge's verdicts or another rater's answers. What is answered is
// kept as a server-side draft; after a submit the focus goes back to the page for the one-key shortcuts.
"use strict";

(() => {
  const { api, el, itemPath, toast, toastAction, videoPanel, roundSection, segmentsInto, activeClock, draftKeeper,
    focusPage, requireSession, shortcut, helpOverlay, playRange, playPause, openFirst, openNext, queueDone, postDecision,
    undoLast } = MTV;
  const $ = (id) => document.getElementById(id);
  let me = null;
  let item = null;
  let seek = () => {};
  let clock = null;
  let drafts = null;
  let current = 0; // index into item.question_keys
  let loads = 0;
  let toggleHelp = () => {};

  function questionEl(key) { return document.querySelector('#rounds li.question[data-key="' + key + '"]'); }

  function marks() {
    const out = {};
    for (const key of item.question_keys) {
      const on = document.querySelector('#rounds input[name="' + key + '"]:checked');
      if (on) out[key] = on.value;
    }
    return out;
  }

  function paint() {
    const m = marks();
    for (const key of item.question_keys) {
      const li = questionEl(key);
      li.classList.toggle("answered-Yes", m[key] === "Yes");
      li.classList.toggle("answered-No", m[key] === "No");
    }
    const n = Object.keys(m).length;
    $("rate-count").textContent = n + " of " + item.question_keys.length + " questions answered" +
      (n === item.question_keys.length ? " · Ctrl+Enter submits" : "");
  }

  function setMarks(values) {
    for (const key of item.question_keys) {
      for (const v of ["Yes", "No"]) {
        document.querySelector('#rounds input[name="' + key + '"][value="' + v + '"]').checked = (values || {})[key] === v;
      }
    }
    paint();
  }

  function focusQuestion(i) {
    if (!item || !item.question_keys.length) return;
    current = Math.max(0, Math.min(item.question_keys.length - 1, i));
    for (const li of document.querySelectorAll("#rounds li.question.current")) li.classList.remove("current");
    const li = questionEl(item.question_keys[current]);
    li.classList.add("current");
    li.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  function answer(value) {
    if (!item || !item.question_keys.length) return;
    const key = item.question_keys[current];
    document.querySelector('#rounds input[name="' + key + '"][value="' + value + '"]').checked = true;
    paint();
    drafts.changed();
    const m = marks();
    const next = item.question_keys.findIndex((k, i) => i > current && !m[k]);
    const first = item.question_keys.findIndex((k) => !m[k]);
    focusQuestion(next >= 0 ? next : first >= 0 ? first : current);
  }

  function renderRated(r, sec) {
    const text = el("div", { class: "text" });
    segmentsInto(text, r.answer_segments, seek);
    sec.append(el("div", { class: "turn answer" }, el("div", { class: "who", text: "Model's answer (rate this)" }), text));
    const ol = el("ol", { class: "questions" });
    for (const q of r.questions) {
      const key = r.index + "." + q.key;
      const yn = el("span", { class: "yn" });
      for (const v of ["Yes", "No"]) {
        const id = "q-" + key.replace(".", "-") + "-" + v;
        yn.append(el("input", { type: "radio", name: key, value: v, id }), el("label", { for: id, class: v, text: v }));
      }
      ol.append(el("li", { class: "question", data: { key } }, el("span", { class: "key", text: q.key }),
        el("span", { class: "q text", text: q.question }), yn));
    }
    sec.append(el("div", { class: "who", text: "Checklist: does the model's answer…" }), ol);
  }

  function render() {
    const box = $("rounds");
    box.replaceChildren();
    for (const r of item.rounds) {
      const badge = r.rated ? el("span", { class: "badge scored", text: "rated" }) : el("span", { class: "badge", text: "history" });
      const { sec } = roundSection(r, seek, badge, r.rated);
      if (r.rated) renderRated(r, sec);
      box.append(sec);
    }
  }

  function renderMeta() {
    const mine = item.mine;
    const parts = [
      el("div", { class: "item-id", text: item.id }),
      el("div", {}, el("span", { class: "task-label", text: item.task_label })),
      el("div", { class: "muted", text: "video " + item.video + " · event " + item.event + " · " + item.turns +
        " rated turn(s), " + item.questions + " question(s)" }),
      mine ? el("div", { class: "mine", id: "my-decision", text: "You rated this dialogue (" + mine.at + "); you can change your answers below." }) : null];
    $("meta").replaceChildren(...parts.filter(Boolean));
  }

  async function load(id) {
    const mine = ++loads; // the latest load wins (an undo right after a submit, while the next one loads)
    if (drafts.dirty()) await drafts.flush();
    const fetched = await api("GET", "/api/items/" + itemPath(id));
    if (mine !== loads) return;
    item = fetched;
    const url = "/rate?id=" + encodeURIComponent(item.id);
    if (location.pathname + location.search !== url) history.replaceState(null, "", url);
    seek = videoPanel($("player"), $("chips"), item);
    render();
    const draft = item.drafts.rate;
    setMarks(draft ? draft.data.marks : item.mine && item.mine.marks);
    clock.reset(draft ? draft.data.active_seconds : 0);
    if (draft && draft.content_hash !== item.content_hash) {
      toast("This dialogue's answers changed since your draft: check the answers restored from it.", "warn");
    }
    drafts.open(item, draft);
    renderMeta();
    $("done").hidden = true;
    $("workspace").hidden = false;
    const m = marks();
    const first = item.question_keys.findIndex((k) => !m[k]);
    focusQuestion(first >= 0 ? first : 0);
    document.title = item.id + " · rate";
  }

  function next(after) {
    return openNext(after, () => loads, load, async () => {
      await queueDone(drafts, $("workspace"), $("done"), "/rate");
      item = null;
    });
  }

  async function submit() {
    if (!item) return;
    const m = marks();
    const left = item.question_keys.filter((k) => !m[k]);
    if (left.length) {
      toast("Answer every question Yes or No: " + left.length + " left (first " + left[0] + ").", "error");
      focusQuestion(item.question_keys.indexOf(left[0]));
      return;
    }
    const id = item.id;
    const r = await postDecision(drafts, "/api/items/" + itemPath(id) + "/rating",
      { rater: me.name, marks: m, content_hash: item.content_hash, active_seconds: clock.seconds() }, () => load(id));
    if (!r) return;
    document.body.dataset.lastSaved = id + ":rated";
    toast("Saved: rating of " + id, "ok", { label: "Undo (u)", run: () => undoRating(id, r.undo, m) });
    await next(id);
    focusPage($("workspace"));
  }

  // Take the rating back: the dialogue comes back with the answers just submitted (kept as a draft).
  function undoRating(id, seq, submitted) {
    const message = "Undone: your rating of " + id + " is taken back; change the answers and submit again.";
    return undoLast(id, seq, load, message, $("workspace"), (back) => {
      if (!back.mine) { setMarks(submitted); drafts.changed(); }
    });
  }

  function onKey(ev) {
    if (ev.key === "Escape") { $("help").hidden = true; return; }
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); submit(); return; }
    shortcut(ev, {
      y: () => answer("Yes"),
      n: () => answer("No"),
      j: () => focusQuestion(current + 1),
      k: () => focusQuestion(current - 1),
      u: () => toastAction(),
      s: () => next(item ? item.id : undefined),
      t: () => {
        const key = item.question_keys[current];
        playRange(seek, key && item.rounds.find((x) => String(x.index) === key.split(".")[0]), item);
      },
      p: () => playPause($("player")),
      "?": toggleHelp,
    }, item !== null);
  }

  async function main() {
    me = await requireSession();
    if (!me) { location.href = "/"; return; }
    if (me.job !== "rater") {
      $("workspace").hidden = true;
      $("done").hidden = false;
      $("done").replaceChildren(el("h2", { text: "Raters rate" }),
        el("p", {}, "You are signed in as " + me.job + "; see the ", el("a", { href: "/progress", text: "progress" }), "."));
      return;
    }
    clock = activeClock($("player"));
    drafts = draftKeeper("rate", () => ({ marks: marks(), active_seconds: clock.seconds() }), $("draft-state"),
      { apply: (d) => { setMarks(d.marks); paint(); }, reload: () => load(item.id) });
    $("rounds").addEventListener("change", (ev) => {
      if (ev.target.type !== "radio") return;
      current = item.question_keys.indexOf(ev.target.name);
      paint();
      drafts.changed();
    });
    $("submit").addEventListener("click", submit);
    $("skip").addEventListener("click", () => next(item ? item.id : undefined));
    toggleHelp = helpOverlay($("help"), $("help-button"));
    document.addEventListener("keydown", onKey);
    await openFirst(load, next);
  }

  main();
})();
