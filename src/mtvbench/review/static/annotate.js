// Annotator page: watch, check each round and checklist, decide accept / revise / reject.
"use strict";

(() => {
  const { api, el, itemPath, toast, videoPanel, renderRounds, collectEdits, requireSession, isTyping } = MTV;
  const $ = (id) => document.getElementById(id);
  let me = null;
  let item = null;
  let mode = "read"; // read | revise | reject
  let current = 0; // index into item.rounds
  let seek = () => {};

  function setMode(m) {
    mode = m;
    document.body.dataset.mode = m;
    $("rounds").classList.toggle("editing", m === "revise");
    $("reject-box").hidden = m !== "reject";
    $("submit").hidden = m === "read";
    $("cancel").hidden = m === "read";
    $("submit").textContent = m === "revise" ? "Submit revision (Ctrl+Enter)" : "Submit rejection (Ctrl+Enter)";
    for (const b of document.querySelectorAll(".decide .choice")) b.classList.toggle("active", b.dataset.decision === m);
    if (m === "revise") {
      const r = item && item.rounds[current];
      const first = document.querySelector("#round-" + (r ? r.index : 1) + " .editor") || document.querySelector("#rounds .editor");
      if (first) first.focus();
    }
    if (m === "reject") $("reason").focus();
  }

  function focusRound(i) {
    if (!item || !item.rounds.length) return;
    current = Math.max(0, Math.min(item.rounds.length - 1, i));
    for (const s of document.querySelectorAll("#rounds .round")) s.classList.remove("current");
    const sec = $("round-" + item.rounds[current].index);
    if (sec) {
      sec.classList.add("current");
      sec.scrollIntoView({ block: "nearest", behavior: "smooth" });
    }
  }

  function renderMeta() {
    const mine = item.mine;
    const parts = [
      el("div", { class: "item-id", text: item.id }),
      el("div", {}, el("span", { class: "task-label", text: item.task_label }),
        item.kind ? el("span", { class: "badge", text: item.kind === "cross" ? "cross-scene" : "single scene" }) : null,
        el("span", { class: "badge status-" + item.status, text: item.status.replace("_", " ") })),
      el("div", { class: "muted", text: "video " + item.video + (item.unit ? " · unit " + item.unit : "") + " · event " + item.event }),
      mine ? el("div", { class: "mine decision-" + mine.decision, id: "my-decision",
        text: "Your decision: " + mine.decision + (mine.comment ? " — " + mine.comment : "") + " (change it below)" }) : null,
      !mine && !item.claimed ? el("div", { class: "warn", text: "Two other annotators hold this dialogue; you can read it but your decision may be refused." }) : null];
    $("meta").replaceChildren(...parts.filter(Boolean));
  }

  async function load(id) {
    item = await api("GET", "/api/items/" + itemPath(id) + "?claim=1");
    const url = "/annotate?id=" + encodeURIComponent(item.id);
    if (location.pathname + location.search !== url) history.replaceState(null, "", url);
    seek = videoPanel($("player"), $("chips"), item);
    renderRounds($("rounds"), item, seek, true);
    renderMeta();
    $("comment").value = item.mine ? item.mine.comment : "";
    $("reason").value = "";
    $("done").hidden = true;
    $("workspace").hidden = false;
    setMode("read");
    current = 0;
    focusRound(0);
    document.title = item.id + " · annotate";
  }

  async function next(after) {
    const r = await api("GET", "/api/next" + (after ? "?after=" + encodeURIComponent(after) : ""));
    if (!r.id) {
      item = null;
      $("workspace").hidden = true;
      $("done").hidden = false;
      history.replaceState(null, "", "/annotate");
      return;
    }
    await load(r.id);
  }

  async function submit(decision) {
    if (!item) return;
    const body = { annotator: me.name, decision, edits: [], comment: $("comment").value.trim(),
      content_hash: item.content_hash };
    if (decision === "revise") {
      body.edits = collectEdits($("rounds"));
      if (!body.edits.length) { toast("Nothing was changed: edit a text or checklist item, or accept.", "error"); return; }
    }
    if (decision === "reject") {
      const reason = $("reason").value;
      if (!reason && !body.comment) { toast("Say why the dialogue is rejected.", "error"); $("reason").focus(); return; }
      body.comment = [reason, body.comment].filter(Boolean).join(": ");
    }
    try {
      const r = await api("POST", "/api/items/" + itemPath(item.id) + "/review", body);
      toast("Saved: " + decision + " — " + item.id, "ok");
      document.body.dataset.lastSaved = item.id + ":" + r.mine.decision;
      await next();
    } catch (e) {
      toast(e.message, "error");
    }
  }

  function onKey(ev) {
    if (ev.key === "Escape") {
      if (!$("help").hidden) { $("help").hidden = true; return; }
      if (mode !== "read") { setMode("read"); document.activeElement.blur(); }
      return;
    }
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && mode !== "read") {
      ev.preventDefault();
      submit(mode);
      return;
    }
    if (isTyping(ev) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const actions = {
      a: () => submit("accept"),
      r: () => setMode("revise"),
      x: () => setMode("reject"),
      j: () => focusRound(current + 1),
      k: () => focusRound(current - 1),
      n: () => next(item ? item.id : undefined),
      t: () => {
        const r = item && item.rounds[current];
        const rng = (r && r.ranges[0]) || (item && item.ranges[0] && [item.ranges[0].start, item.ranges[0].end]);
        if (rng) seek(rng[0], rng[1]);
      },
      p: () => { const v = $("player"); if (v.paused) v.play().catch(() => {}); else v.pause(); },
      "?": () => { $("help").hidden = !$("help").hidden; },
    };
    const act = actions[ev.key];
    if (act && (item !== null || ev.key === "?")) {
      ev.preventDefault();
      act();
    }
  }

  async function main() {
    me = await requireSession();
    if (!me) { location.href = "/"; return; }
    for (const b of document.querySelectorAll(".decide .choice")) {
      b.addEventListener("click", () => {
        const d = b.dataset.decision;
        if (d === "accept") submit("accept"); else setMode(d);
      });
    }
    $("submit").addEventListener("click", () => submit(mode));
    $("cancel").addEventListener("click", () => setMode("read"));
    $("skip").addEventListener("click", () => next(item ? item.id : undefined));
    $("help-button").addEventListener("click", () => { $("help").hidden = !$("help").hidden; });
    $("help").addEventListener("click", (ev) => { if (ev.target === $("help")) $("help").hidden = true; });
    document.addEventListener("keydown", onKey);
    const id = new URLSearchParams(location.search).get("id");
    try {
      if (id) await load(id); else await next();
    } catch (e) {
      toast(e.message, "error");
    }
  }

  main();
})();
