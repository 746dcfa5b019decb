// Senior page: the dialogues the two annotators disagree on (or both revised), side by side,
// with a word diff of each edited field; the senior picks a side or merges, and that is final.
"use strict";

(() => {
  const { api, el, itemPath, toast, videoPanel, renderRounds, collectEdits, requireSession, duration, FIELD_LABEL } = MTV;
  const $ = (id) => document.getElementById(id);
  let me = null;
  let item = null;

  function diffInto(parent, pieces) {
    for (const p of pieces) {
      if (p.op === "equal") parent.append(document.createTextNode(p.text));
      else parent.append(el(p.op === "insert" ? "ins" : "del", { text: p.text }));
    }
  }

  function fieldLabel(d) {
    return "Round " + d.round + " · " + (d.item ? d.item + " " : "") + FIELD_LABEL[d.field].toLowerCase();
  }

  function reviewCard(r, side) {
    return el("div", { class: "card review-card decision-" + r.decision, data: { side } },
      el("div", { class: "card-head" }, el("span", { class: "side", text: side }),
        el("strong", { text: r.annotator }), el("span", { class: "badge decision", text: r.decision })),
      r.comment ? el("p", { class: "comment", text: r.comment }) : el("p", { class: "muted", text: "no comment" }),
      el("div", { class: "muted", text: r.edits.length + " edit(s) · " + r.at + (r.seconds !== null ? " · " + duration(r.seconds) : "") }));
  }

  function editorFor(d) {
    if (d.field === "expected") {
      const s = el("select", { class: "editor", data: { round: d.round, field: d.field, item: d.item, original: d.original } },
        el("option", { value: "Yes", text: "Yes" }), el("option", { value: "No", text: "No" }));
      return s;
    }
    return el("textarea", { class: "editor", rows: Math.min(8, 2 + Math.ceil(d.original.length / 60)),
      data: { round: d.round, field: d.field, item: d.item || "", original: d.original } });
  }

  function renderDiff(reviews, diff) {
    const box = $("diff");
    box.replaceChildren();
    if (!diff.length) {
      box.append(el("p", { class: "muted", text: "Neither annotator edited the text: choose a decision." }));
      return;
    }
    const [a, b] = reviews;
    for (const d of diff) {
      const row = el("div", { class: "diff-row" });
      const cols = el("div", { class: "diff-cols" });
      const orig = el("div", { class: "diff-cell original" }, el("div", { class: "who", text: "original" }),
        el("div", { class: "text", text: d.original }));
      const ca = el("div", { class: "diff-cell" + (d.a_changed ? " changed" : "") },
        el("div", { class: "who", text: "A · " + a.annotator + (d.a_changed ? "" : " (unchanged)") }));
      const ta = el("div", { class: "text" });
      diffInto(ta, d.diff_a);
      ca.append(ta);
      const cb = el("div", { class: "diff-cell" + (d.b_changed ? " changed" : "") },
        el("div", { class: "who", text: "B · " + b.annotator + (d.b_changed ? "" : " (unchanged)") }));
      const tb = el("div", { class: "text" });
      diffInto(tb, d.diff_b);
      cb.append(tb);
      cols.append(orig, ca, cb);
      const ed = editorFor(d);
      ed.value = d.a_changed ? d.a : d.b;
      ed.classList.toggle("changed", ed.value !== d.original);
      ed.addEventListener("input", () => ed.classList.toggle("changed", ed.value !== d.original));
      const use = (v) => () => { ed.value = v; ed.classList.toggle("changed", ed.value !== d.original); };
      const final = el("div", { class: "final" }, el("div", { class: "who", text: "final" }), ed,
        el("div", { class: "pick" },
          el("button", { type: "button", class: "link", text: "use original", onclick: use(d.original) }),
          el("button", { type: "button", class: "link", text: "use A", onclick: use(d.a) }),
          el("button", { type: "button", class: "link", text: "use B", onclick: use(d.b) })));
      row.append(el("h4", { text: fieldLabel(d) }), cols, final);
      box.append(row);
    }
  }

  async function decide(decision, edits, comment) {
    if (decision === "reject" && !comment) { toast("Say why the dialogue is rejected.", "error"); $("senior-comment").focus(); return; }
    try {
      const r = await api("POST", "/api/items/" + itemPath(item.id) + "/adjudicate",
        { senior: me.name, decision, edits, comment, content_hash: item.content_hash });
      toast("Final: " + r.status + " — " + item.id, "ok");
      document.body.dataset.lastSaved = item.id + ":" + r.adjudication.decision;
      await refreshList(true);
    } catch (e) {
      toast(e.message, "error");
    }
  }

  function take(r) {
    const comment = $("senior-comment").value.trim() || ("as decided by " + r.annotator + (r.comment ? ": " + r.comment : ""));
    const edits = r.decision === "revise" ? r.edits.map((e) => ({ round: e.round, field: e.field, item: e.item, value: e.value })) : [];
    return decide(r.decision, edits, comment);
  }

  async function open(id) {
    item = await api("GET", "/api/items/" + itemPath(id));
    $("empty").hidden = true;
    $("case").hidden = false;
    for (const li of document.querySelectorAll("#queue li")) li.classList.toggle("active", li.dataset.id === id);
    const seek = videoPanel($("player"), $("chips"), item);
    $("case-head").replaceChildren(el("div", { class: "item-id", text: item.id }),
      el("div", {}, el("span", { class: "task-label", text: item.task_label }),
        el("span", { class: "badge status-" + item.status, text: item.status.replace("_", " ") })));
    const reviews = item.reviews || [];
    $("reviews").replaceChildren(...reviews.slice(0, 2).map((r, i) => reviewCard(r, i ? "B" : "A")));
    renderDiff(reviews, item.diff || []);
    renderRounds($("context"), item, seek, false);
    $("senior-comment").value = item.adjudication ? item.adjudication.comment : "";
    $("adjudicated").textContent = item.adjudication
      ? "Decided: " + item.adjudication.decision + " by " + item.adjudication.annotator + " (" + item.adjudication.at + "); deciding again replaces it."
      : "";
    const canDecide = reviews.length >= 2;
    for (const b of document.querySelectorAll("#senior-actions button")) b.disabled = !canDecide;
    $("take-a").textContent = reviews[0] ? "Take A (" + reviews[0].decision + ")" : "Take A";
    $("take-b").textContent = reviews[1] ? "Take B (" + reviews[1].decision + ")" : "Take B";
    history.replaceState(null, "", "/senior?id=" + encodeURIComponent(id));
  }

  async function refreshList(openNext) {
    const todo = (await api("GET", "/api/items?status=needs_adjudication")).items;
    const all = (await api("GET", "/api/items")).items;
    const decided = all.filter((r) => r.status !== "needs_adjudication" && r.decisions >= 2);
    const list = $("queue");
    list.replaceChildren();
    const add = (r, cls) => list.append(el("li", { class: cls, data: { id: r.id } },
      el("button", { type: "button", class: "link", text: r.id, onclick: () => open(r.id).catch((e) => toast(e.message, "error")) }),
      el("span", { class: "badge status-" + r.status, text: r.status.replace("_", " ") })));
    list.append(el("li", { class: "group", text: todo.length + " to decide" }));
    todo.forEach((r) => add(r, "todo"));
    if (decided.length) list.append(el("li", { class: "group", text: "decided by two annotators or a senior" }));
    decided.forEach((r) => add(r, "done"));
    if (openNext) {
      if (todo.length) await open(todo[0].id);
      else { $("case").hidden = true; $("empty").hidden = false; }
    }
  }

  async function main() {
    me = await requireSession();
    if (!me) { location.href = "/"; return; }
    if (me.role !== "senior") {
      $("empty").hidden = false;
      $("empty").replaceChildren(el("h2", { text: "For senior annotators" }),
        el("p", { text: "You are signed in as an annotator (" + me.name + ")." }));
      return;
    }
    $("take-a").addEventListener("click", () => item && item.reviews && take(item.reviews[0]));
    $("take-b").addEventListener("click", () => item && item.reviews && take(item.reviews[1]));
    $("merge").addEventListener("click", () => {
      const edits = collectEdits($("diff"));
      decide(edits.length ? "revise" : "accept", edits, $("senior-comment").value.trim());
    });
    $("reject").addEventListener("click", () => decide("reject", [], $("senior-comment").value.trim()));
    const id = new URLSearchParams(location.search).get("id");
    try {
      await refreshList(!id);
      if (id) await open(id);
    } catch (e) {
      toast(e.message, "error");
    }
  }

  main();
})();
