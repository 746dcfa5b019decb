// Senior page: the dialogues the annotators disagree on (or both revised, or a decision was handed to
// the senior), every side with a word diff of each edited field; the senior edits any field of the
// dialogue, records the three criteria and decides, and that is final. Overwriting a final decision
// someone else made asks for a confirmation.
"use strict";

(() => {
  const { api, el, itemPath, toast, videoPanel, renderRounds, collectEdits, editorValues, setEditorValues,
    editsAsValues, collectMarks, setMarks, criteriaPanel, draftKeeper, focusPage, requireSession, duration,
    FIELD_LABEL } = MTV;
  const $ = (id) => document.getElementById(id);
  const LETTERS = "ABCDEFGH";
  let me = null;
  let item = null;
  let crit = null;
  let drafts = null;
  let pending = null; // a decision waiting for the overwrite confirmation

  function diffInto(parent, pieces) {
    for (const p of pieces) {
      if (p.op === "equal") parent.append(document.createTextNode(p.text));
      else parent.append(el(p.op === "insert" ? "ins" : "del", { text: p.text }));
    }
  }

  function fieldLabel(d) {
    return "Round " + d.round + " · " + (d.item ? d.item + " " : "") + FIELD_LABEL[d.field].toLowerCase();
  }

  function sideCard(r, side) {
    const unmet = r.criteria ? Object.entries(r.criteria).filter(([, v]) => !v.met) : null;
    const crits = r.criteria === null || r.criteria === undefined ? "criteria not recorded"
      : unmet.length ? "not met: " + unmet.map(([k, v]) => k + (v.note ? " (" + v.note + ")" : "")).join("; ") : "all criteria met";
    const revised = r.checklist ? Object.entries(r.checklist).filter(([, v]) => v === "revise").map(([k]) => k) : [];
    return el("div", { class: "card review-card decision-" + r.decision, data: { side } },
      el("div", { class: "card-head" }, el("span", { class: "side", text: side }),
        el("strong", { text: r.annotator }), el("span", { class: "badge decision", text: r.decision }),
        r.reason ? el("span", { class: "badge", text: "handed to you" }) : null),
      r.comment ? el("p", { class: "comment", text: r.comment }) : el("p", { class: "muted", text: "no comment" }),
      el("p", { class: "criteria-line", text: crits }),
      revised.length ? el("p", { class: "muted", text: "checklist items to revise: " + revised.join(", ") }) : null,
      el("div", { class: "muted", text: r.edits.length + " edit(s) · " + r.at + (r.seconds !== null && r.seconds !== undefined ? " · " + duration(r.seconds) + " active" : "") }));
  }

  // The final value of a field is the dialogue's editor for it; "use …" writes into it.
  function editorOf(d) {
    return $("context").querySelector('.editor[data-key="' + MTV.fieldKey(d.round, d.field, d.item) + '"]');
  }

  function renderDiff(sides, diff) {
    const box = $("diff");
    box.replaceChildren();
    if (!diff.length) {
      box.append(el("p", { class: "muted", text: "Nobody edited the text: choose a decision (or edit any field below)." }));
      return;
    }
    for (const d of diff) {
      const cols = el("div", { class: "diff-cols", style: { gridTemplateColumns: "repeat(" + (sides.length + 1) + ", 1fr)" } },
        el("div", { class: "diff-cell original" }, el("div", { class: "who", text: "original" }), el("div", { class: "text", text: d.original })));
      const pick = el("div", { class: "pick" });
      const use = (v) => () => {
        const ed = editorOf(d);
        if (!ed) return;
        ed.value = v;
        ed.dispatchEvent(new Event("input", { bubbles: true }));
      };
      pick.append(el("button", { type: "button", class: "link", text: "use original", onclick: use(d.original) }));
      sides.forEach((s, i) => {
        const cell = el("div", { class: "diff-cell" + (d.changed[i] ? " changed" : "") },
          el("div", { class: "who", text: LETTERS[i] + " · " + s.annotator + (d.changed[i] ? "" : " (unchanged)") }));
        const t = el("div", { class: "text" });
        diffInto(t, d.diffs[i]);
        cell.append(t);
        cols.append(cell);
        pick.append(el("button", { type: "button", class: "link", text: "use " + LETTERS[i], onclick: use(d.values[i]) }));
      });
      box.append(el("div", { class: "diff-row" }, el("h4", { text: fieldLabel(d) }), cols, pick));
    }
  }

  function draftData() {
    return { comment: $("senior-comment").value, criteria: crit.raw(), marks: collectMarks($("context")),
      fields: editorValues($("context")) };
  }

  function restore(d) {
    setEditorValues($("context"), d.fields || {});
    setMarks($("context"), d.marks);
    crit.set(d.criteria);
    $("senior-comment").value = d.comment || "";
  }

  function fill(side) {
    setEditorValues($("context"), editsAsValues(side.edits));
    setMarks($("context"), side.checklist);
    if (side.criteria) crit.set(side.criteria);
    $("senior-comment").value = $("senior-comment").value.trim() || ("as decided by " + side.annotator + (side.comment ? ": " + side.comment : ""));
    drafts.changed();
  }

  async function decide(decision, confirm) {
    const comment = $("senior-comment").value.trim();
    if (decision === "reject" && !comment) { toast("Say why the dialogue is rejected.", "error"); $("senior-comment").focus(); return; }
    const marks = collectMarks($("context"));
    if (decision === "accept") {
      if (crit.unmet().length) { toast("Accept needs every criterion met (" + crit.unmet().join(", ") + " is not).", "error"); return; }
      crit.markAllMet();
      for (const k of Object.keys(marks)) marks[k] = "keep";
    }
    const criteria = crit.get();
    if (!criteria) { toast("Mark each criterion met or not met: " + crit.unmarked().join(", ") + ".", "error"); return; }
    const edits = decision === "revise" ? collectEdits($("context")) : [];
    const body = { senior: me.name, decision, edits, comment, criteria, checklist: marks, content_hash: item.content_hash, confirm: !!confirm };
    await drafts.flush();
    if (drafts.conflicted()) { toast("Nothing was decided: this tab's copy is older (see above).", "error"); return; }
    body.revision = drafts.revision();
    try {
      const r = await api("POST", "/api/items/" + itemPath(item.id) + "/adjudicate", body);
      drafts.done();
      $("confirm-bar").hidden = true;
      pending = null;
      toast("Final: " + r.status + " — " + item.id, "ok");
      document.body.dataset.lastSaved = item.id + ":" + r.adjudication.decision;
      await refreshList(true);
      focusPage($("senior-main"));
    } catch (e) {
      if (e.status === 409 && e.data && e.data.conflict) { drafts.stale(e); return; }
      if (e.status === 409 && e.data && e.data.confirm) {
        pending = decision;
        $("confirm-text").textContent = e.message;
        $("confirm-bar").hidden = false;
        $("confirm-yes").focus();
        return;
      }
      toast(e.message, "error");
    }
  }

  // The senior's decision from the boxes as they are: revise when any field differs, else accept.
  function decideAsEdited() {
    const edits = collectEdits($("context"));
    return decide(edits.length ? "revise" : "accept");
  }

  function take(side) {
    fill(side);
    if (side.decision === "revise" && !collectEdits($("context")).length) { toast("Nothing to take: the side's edits match the text.", "error"); return; }
    return decide(side.decision);
  }

  async function open(id) {
    if (drafts.dirty()) await drafts.flush();
    item = await api("GET", "/api/items/" + itemPath(id));
    $("empty").hidden = true;
    $("case").hidden = false;
    $("confirm-bar").hidden = true;
    for (const li of document.querySelectorAll("#queue li")) li.classList.toggle("active", li.dataset.id === id);
    const seek = videoPanel($("player"), $("chips"), item);
    $("case-head").replaceChildren(el("div", { class: "item-id", text: item.id }),
      el("div", {}, el("span", { class: "task-label", text: item.task_label }),
        item.status ? el("span", { class: "badge status-" + item.status, text: item.status.replace("_", " ") }) : null));
    if (item.reviews === null) {
      $("reviews").replaceChildren(el("p", { class: "warn", text: "You annotated this dialogue: another senior decides it." }));
      $("diff").replaceChildren();
      $("notices").replaceChildren();
      renderRounds($("context"), item, seek, true);
      for (const b of document.querySelectorAll("#senior-actions button")) b.disabled = true;
      return;
    }
    const sides = item.sides || [];
    $("notices").replaceChildren(...(item.notices || []).map((n) => el("li", { class: "notice", text: n })));
    $("reviews").replaceChildren(...sides.map((r, i) => sideCard(r, LETTERS[i])));
    renderRounds($("context"), item, seek, true);
    renderDiff(sides, item.diff || []);
    const adj = item.adjudication;
    const draft = item.drafts.adjudicate;
    restore(draft ? draft.data : { comment: adj ? adj.comment : "", criteria: adj && adj.criteria, marks: adj && adj.checklist,
      fields: adj ? editsAsValues(adj.edits) : {} });
    drafts.open(item, draft);
    $("adjudicated").textContent = adj
      ? "Decided: " + adj.decision + " by " + adj.annotator + " (" + adj.at + "); deciding again replaces it" + (adj.annotator === me.name ? "." : " (after a confirmation).")
      : "";
    const actions = $("senior-actions");
    actions.replaceChildren(...sides.map((s, i) => el("button", { type: "button", class: "choice", id: "take-" + LETTERS[i].toLowerCase(),
      text: "Take " + LETTERS[i] + " (" + s.decision + ")", onclick: () => take(s) })),
    el("button", { type: "button", id: "merge", class: "choice accept", title: "the final text is what the boxes below hold", text: "Decide as edited", onclick: decideAsEdited }),
    el("button", { type: "button", id: "reject", class: "choice reject", text: "Reject", onclick: () => decide("reject") }));
    const canDecide = (item.decisions || 0) >= 2 || (item.referred || 0) > 0 || !!adj;
    for (const b of actions.querySelectorAll("button")) b.disabled = !canDecide;
    history.replaceState(null, "", "/senior?id=" + encodeURIComponent(id));
  }

  async function refreshList(openNext) {
    // dialogues this senior annotated carry no status for them (another senior decides those)
    const all = (await api("GET", "/api/items")).items.filter((r) => r.status !== null);
    const todo = all.filter((r) => r.status === "needs_adjudication");
    const decided = all.filter((r) => r.status !== "needs_adjudication" && (r.decisions >= 2 || r.status !== "pending"));
    const list = $("queue");
    list.replaceChildren();
    const add = (r, cls) => list.append(el("li", { class: cls, data: { id: r.id } },
      el("button", { type: "button", class: "link", text: r.id, onclick: () => open(r.id).catch((e) => toast(e.message, "error")) }),
      el("span", { class: "badge status-" + r.status, text: r.status.replace("_", " ") + (r.referred ? " · " + r.referred + " handed to you" : "") })));
    list.append(el("li", { class: "group", text: todo.length + " to decide" }));
    todo.forEach((r) => add(r, "todo"));
    if (decided.length) list.append(el("li", { class: "group", text: "decided by two annotators or a senior" }));
    decided.forEach((r) => add(r, "done"));
    if (openNext) {
      if (todo.length) await open(todo[0].id);
      else { $("case").hidden = true; $("empty").hidden = false; item = null; drafts.open(null, null); }
    }
  }

  async function main() {
    me = await requireSession();
    if (!me) { location.href = "/"; return; }
    if (me.job !== "senior") {
      $("empty").hidden = false;
      $("empty").replaceChildren(el("h2", { text: "For senior annotators" }),
        el("p", { text: "You are signed in as an annotator (" + me.name + ")." }));
      return;
    }
    const s = await api("GET", "/api/session");
    drafts = draftKeeper("adjudicate", draftData, $("senior-draft-state"), { apply: restore, reload: () => open(item.id) });
    crit = criteriaPanel($("senior-criteria"), s.criteria, () => drafts.changed());
    $("context").addEventListener("input", () => drafts.changed());
    $("context").addEventListener("change", () => drafts.changed());
    $("senior-comment").addEventListener("input", () => drafts.changed());
    $("confirm-yes").addEventListener("click", () => pending && decide(pending, true));
    $("confirm-no").addEventListener("click", () => { pending = null; $("confirm-bar").hidden = true; });
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
