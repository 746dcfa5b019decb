// Annotator page: watch, check the three criteria, each round and checklist item, decide accept /
// revise / reject. What is typed is kept as a server-side draft as it is typed; after a decision the
// focus goes back to the page, so that the one-key shortcuts work on the next dialogue.
"use strict";

(() => {
  const { api, el, itemPath, toast, toastAction, videoPanel, renderRounds, collectEdits, editorValues, setEditorValues,
    editsAsValues, collectMarks, setMarks, criteriaPanel, activeClock, draftKeeper, focusPage, requireSession,
    shortcut, isTyping, helpOverlay, playRange, playPause, openFirst, openNext, queueDone, postDecision, undoLast } = MTV;
  const $ = (id) => document.getElementById(id);
  let me = null;
  let item = null;
  let loads = 0; // loads started (a load that is not the latest one started draws nothing)
  let mode = "read"; // read | revise | reject
  let current = 0; // index into item.rounds
  let seek = () => {};
  let crit = null;
  let clock = null;
  let drafts = null;
  let toggleHelp = () => {};

  function setMode(m, quiet) {
    mode = m;
    document.body.dataset.mode = m;
    $("rounds").classList.toggle("editing", m === "revise");
    $("rounds").classList.toggle("marking", m !== "read");
    $("reject-box").hidden = m !== "reject";
    $("submit").hidden = m === "read";
    $("cancel").hidden = m === "read";
    $("submit").textContent = m === "revise" ? "Submit revision (Ctrl+Enter)" : "Submit rejection (Ctrl+Enter)";
    for (const b of document.querySelectorAll(".decide .choice")) b.classList.toggle("active", b.dataset.decision === m);
    if (!quiet) {
      if (m === "revise") {
        const r = item && item.rounds[current];
        const first = document.querySelector("#round-" + (r ? r.index : 1) + " .editor") || document.querySelector("#rounds .editor");
        if (first) first.focus();
      }
      if (m === "reject") $("reason").focus();
      if (drafts) drafts.changed();
    }
  }

  // The current round (j / k); `still`: mark it without scrolling (a dialogue just drawn opens at the top, on a phone too).
  function focusRound(i, still) {
    if (!item || !item.rounds.length) return;
    current = Math.max(0, Math.min(item.rounds.length - 1, i));
    for (const s of document.querySelectorAll("#rounds .round")) s.classList.remove("current");
    const sec = $("round-" + item.rounds[current].index);
    if (sec) {
      sec.classList.add("current");
      if (!still) sec.scrollIntoView({ block: "nearest", behavior: "smooth" });
    }
  }

  // What this person may know about the item: their own decision and whether it is still open to them.
  function standing() {
    const mine = item.mine;
    if (item.yours === "referred" && item.my_referral) {
      return el("div", { class: "mine", id: "my-decision", text: "Your decision (" + item.my_referral.decision + ") went to the senior annotator." });
    }
    if (item.yours === "taken") {
      return el("div", { class: "warn", id: "my-decision", text: "Two other annotators decided this dialogue: a decision from you goes to the senior annotator, with everything you typed." });
    }
    if (!mine) {
      return item.claimed ? null : el("div", { class: "warn", text: "Two other annotators have this dialogue open; if both decide first, yours goes to the senior annotator." });
    }
    const after = item.yours === "closed"
      ? " Both annotators have decided: a change goes to the senior annotator as a new disagreement."
      : " (you can change it below)";
    return el("div", { class: "mine decision-" + mine.decision, id: "my-decision",
      text: "Your decision: " + mine.decision + (mine.comment ? " — " + mine.comment : "") + "." + after });
  }

  function renderMeta() {
    const parts = [
      el("div", { class: "item-id", text: item.id }),
      el("div", {}, el("span", { class: "task-label", text: item.task_label }),
        item.kind ? el("span", { class: "badge", text: item.kind === "cross" ? "cross-scene" : "single scene" }) : null),
      el("div", { class: "muted", text: "video " + item.video + (item.unit ? " · unit " + item.unit : "") + " · event " + item.event }),
      standing()];
    $("meta").replaceChildren(...parts.filter(Boolean));
  }

  function draftData() {
    return { mode, comment: $("comment").value, reason: $("reason").value, criteria: crit.raw(),
      marks: collectMarks($("rounds")), fields: editorValues($("rounds")), active_seconds: clock.seconds() };
  }

  function restore(d) {
    setEditorValues($("rounds"), d.fields || {});
    setMarks($("rounds"), d.marks);
    crit.set(d.criteria);
    $("comment").value = d.comment || "";
    $("reason").value = d.reason || "";
    clock.reset(d.active_seconds || 0);
    setMode(["revise", "reject"].includes(d.mode) ? d.mode : "read", true);
  }

  async function load(id) {
    const ticket = ++loads; // the latest load wins (an undo right after a submit, while the next one loads)
    if (drafts.dirty()) await drafts.flush();
    const fetched = await api("GET", "/api/items/" + itemPath(id) + "?claim=1");
    if (ticket !== loads) return;
    item = fetched;
    const url = "/annotate?id=" + encodeURIComponent(item.id);
    if (location.pathname + location.search !== url) history.replaceState(null, "", url);
    seek = videoPanel($("player"), $("chips"), item);
    renderRounds($("rounds"), item, seek, true);
    const mine = item.mine || item.my_referral;
    const draft = item.drafts.review;
    restore(draft ? draft.data : { mode: "read", comment: mine ? mine.comment : "", criteria: mine && mine.criteria,
      marks: mine && mine.checklist, fields: mine ? editsAsValues(mine.edits) : {} });
    if (draft && draft.content_hash !== item.content_hash) {
      toast("This dialogue changed since your draft: check the edits restored from it.", "warn");
    }
    drafts.open(item, draft);
    renderMeta();
    $("done").hidden = true;
    $("workspace").hidden = false;
    current = 0;
    focusRound(0, true);
    document.title = item.id + " · annotate";
  }

  function next(after) {
    return openNext(after, () => loads, load, async () => {
      await queueDone(drafts, $("workspace"), $("done"), "/annotate");
      item = null;
    });
  }

  // The body of a decision, or null (with a message) when something is missing.
  function decisionBody(decision) {
    const marks = collectMarks($("rounds"));
    if (decision === "accept") {
      if (crit.unmet().length) { toast("Accept needs every criterion met (" + crit.unmet().join(", ") + " is not): revise or reject.", "error"); return null; }
      if (Object.values(marks).includes("revise")) { toast("Accept keeps every checklist item: set the marks back to keep, or revise.", "error"); return null; }
      crit.markAllMet();
    }
    const criteria = crit.get();
    if (!criteria) {
      toast("Mark each criterion met or not met (keys 1, 2, 3): " + crit.unmarked().join(", ") + ".", "error");
      crit.focusFirstUnmarked();
      return null;
    }
    const body = { annotator: me.name, decision, edits: [], comment: $("comment").value.trim(), criteria,
      checklist: marks, content_hash: item.content_hash, active_seconds: clock.seconds() };
    if (decision === "revise") {
      body.edits = collectEdits($("rounds"));
      if (!body.edits.length && !Object.values(marks).includes("revise")) {
        toast("Nothing was changed: edit a text or checklist item, or accept.", "error");
        return null;
      }
      if (!body.edits.length) { toast("A revision changes a text: edit the checklist items you marked revise.", "error"); return null; }
    }
    if (decision === "reject") {
      const reason = $("reason").value;
      if (!reason && !body.comment) { toast("Say why the dialogue is rejected.", "error"); $("reason").focus(); return null; }
      body.comment = [reason, body.comment].filter(Boolean).join(": ");
    }
    return body;
  }

  async function submit(decision) {
    if (!item) return;
    const body = decisionBody(decision);
    if (!body) return;
    const id = item.id;
    const r = await postDecision(drafts, "/api/items/" + itemPath(id) + "/review", body, () => load(id));
    if (!r) return;
    const saved = r.mine || r.my_referral;
    document.body.dataset.lastSaved = id + ":" + saved.decision;
    const undo = decision === "accept" && r.undo ? { label: "Undo (u)", run: () => undoDecision(id, r.undo) } : null;
    toast(r.notice ? r.notice : "Saved: " + decision + " — " + id, r.notice ? "warn" : "ok", undo);
    await next();
    focusPage($("workspace"));
  }

  function undoDecision(id, seq) {
    return undoLast(id, seq, load, "Undone: " + id + " is back as it was.", $("workspace"));
  }

  function onKey(ev) {
    if (ev.key === "Escape") {
      if (!$("help").hidden) { $("help").hidden = true; return; }
      // one keyboard path: Esc leaves the text box (the mode stays; 1 2 3, j/k and Ctrl+Enter act on the page),
      // Esc again leaves revise / reject
      if (isTyping(ev)) { ev.preventDefault(); focusPage($("workspace")); return; }
      if (mode !== "read") { setMode("read"); focusPage($("workspace")); }
      return;
    }
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && mode !== "read") {
      ev.preventDefault();
      submit(mode);
      return;
    }
    shortcut(ev, {
      a: () => submit("accept"),
      r: () => setMode("revise"),
      x: () => setMode("reject"),
      u: () => toastAction(),
      1: () => crit.cycle(0),
      2: () => crit.cycle(1),
      3: () => crit.cycle(2),
      j: () => focusRound(current + 1),
      k: () => focusRound(current - 1),
      n: () => next(item ? item.id : undefined),
      t: () => playRange(seek, item && item.rounds[current], item),
      p: () => playPause($("player")),
      "?": toggleHelp,
    }, item !== null);
  }

  async function main() {
    me = await requireSession();
    if (!me) { location.href = "/"; return; }
    const s = await api("GET", "/api/session");
    clock = activeClock($("player"));
    drafts = draftKeeper("review", draftData, $("draft-state"),
      { apply: (d) => restore(Object.assign({}, d, { active_seconds: clock.seconds() })), reload: () => load(item.id) });
    crit = criteriaPanel($("criteria"), s.criteria, () => drafts.changed());
    for (const b of document.querySelectorAll(".decide .choice")) {
      b.addEventListener("click", () => {
        const d = b.dataset.decision;
        if (d === "accept") submit("accept"); else setMode(d);
      });
    }
    $("rounds").addEventListener("input", () => drafts.changed());
    $("rounds").addEventListener("change", () => drafts.changed());
    $("comment").addEventListener("input", () => drafts.changed());
    $("reason").addEventListener("change", () => drafts.changed());
    $("submit").addEventListener("click", () => submit(mode));
    $("cancel").addEventListener("click", () => { setMode("read"); focusPage($("workspace")); });
    $("skip").addEventListener("click", () => next(item ? item.id : undefined));
    toggleHelp = helpOverlay($("help"), $("help-button"));
    document.addEventListener("keydown", onKey);
    await openFirst(load, next);
  }

  main();
})();
