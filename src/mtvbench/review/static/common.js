// mtvbench review: helpers shared by every page. No framework, nothing fetched from elsewhere.
// Every piece of dialogue text, comment or note goes into the page as text (textContent / text
// nodes / .value), never as HTML. The guidelines are the only HTML from outside the app, rendered
// (escaped) by the server into the page itself.
"use strict";

const MTV = (() => {
  const TOKEN = "mtvbench-review-token";
  const USER = "mtvbench-review-user";
  const JOB = "mtvbench-review-role";  // a stored key: it keeps its earlier name, so a signed-in browser stays in

  // A login link carries the token in the URL fragment (#token=...), which the browser never
  // sends to the server; keep it in this browser and take it out of the address bar.
  function takeTokenFromUrl() {
    const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (m) {
      localStorage.setItem(TOKEN, decodeURIComponent(m[1]));
      localStorage.removeItem(USER);
      localStorage.removeItem(JOB);
      history.replaceState(null, "", location.pathname + location.search);
    }
  }

  function authHeaders(extra) {
    const h = Object.assign({}, extra || {});
    const token = localStorage.getItem(TOKEN);
    const user = localStorage.getItem(USER);
    if (token) h["Authorization"] = "Bearer " + token;
    else if (user) {
      h["X-Review-User"] = encodeURIComponent(user);
      h["X-Review-Job"] = localStorage.getItem(JOB) || "annotator";
    }
    return h;
  }

  // The JSON API; a failed call throws an Error with .status and .data (the error body).
  async function api(method, path, body, opts) {
    const init = Object.assign({ method, headers: authHeaders(body === undefined ? {} : { "Content-Type": "application/json" }) }, opts || {});
    if (body !== undefined) init.body = JSON.stringify(body);
    const r = await fetch(path, init);
    let data;
    try { data = await r.json(); } catch (e) { data = { error: "HTTP " + r.status }; }
    if (!r.ok) {
      const err = new Error((data && data.error) || "HTTP " + r.status);
      err.status = r.status;
      err.data = data;
      throw err;
    }
    return data;
  }

  // el("div", {class: "x", text: "literal text", data: {round: 1}}, child, "text child", ...)
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k === "data") for (const [dk, dv] of Object.entries(v)) e.dataset[dk] = dv;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (k === "value") e.value = v;
      else if (k === "style") Object.assign(e.style, v); // CSSOM: allowed by the page's CSP
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      e.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  function itemPath(id) { return id.split("/").map(encodeURIComponent).join("/"); }

  function hms(s) {
    s = Math.max(0, Math.floor(s));
    const p = (n) => String(n).padStart(2, "0");
    return p(Math.floor(s / 3600)) + ":" + p(Math.floor((s % 3600) / 60)) + ":" + p(s % 60);
  }

  function duration(s) {
    if (s === null || s === undefined) return "–";
    if (s < 90) return s.toFixed(0) + " s";
    return (s / 60).toFixed(1) + " min";
  }

  // A message at the bottom; with an action ({label, run}) it shows a button and stays longer
  // (toastAction() runs it from the keyboard while it is shown).
  let toastTimer = null;
  let toastRun = null;
  function toast(message, kind, action) {
    const t = document.getElementById("toast");
    if (!t) return;
    toastRun = null;
    t.replaceChildren(el("span", { text: message }));
    if (action) {
      toastRun = () => { toastRun = null; t.className = ""; action.run(); };
      t.append(el("button", { type: "button", class: "toast-action", text: action.label, onclick: () => toastRun && toastRun() }));
    }
    t.className = "show " + (kind || "") + (action ? " with-action" : "");
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.className = ""; toastRun = null; }, action ? 10000 : kind === "error" || kind === "warn" ? 8000 : 2500);
  }
  function toastAction() {
    if (!toastRun) return false;
    toastRun();
    return true;
  }

  // Text with its time references as chips that seek the video.
  function segmentsInto(parent, segs, seek) {
    for (const s of segs) {
      if (s.start === null || s.start === undefined) { parent.append(document.createTextNode(s.text)); continue; }
      const label = s.end === null || s.end === undefined ? "jump to " + hms(s.start) : "play " + hms(s.start) + "–" + hms(s.end);
      parent.append(el("button", { class: "chip inline", type: "button", title: label, text: s.text,
        onclick: () => seek(s.start, s.end) }));
    }
  }

  // The video player, its time-range chips and a seek(start, end) that plays the range. The player
  // opens at item.start_at; when the video stops loading (a link signed before the user was revoked,
  // or expired), a fresh link is asked for once, and the player says so when that fails too.
  function videoPanel(video, chips, item) {
    let stopAt = null;
    let retried = false;
    let note = video.parentNode.querySelector(".video-error");
    if (!note) {
      note = el("p", { class: "video-error warn", role: "alert", hidden: true });
      video.after(note);
    }
    note.hidden = true;
    note.textContent = "";
    video.ontimeupdate = () => {
      if (stopAt !== null && video.currentTime >= stopAt) { video.pause(); stopAt = null; }
    };
    video.onloadedmetadata = () => {
      const at = Number(video.dataset.resumeAt || item.start_at || 0);
      delete video.dataset.resumeAt;
      if (at > 0 && Math.abs(video.currentTime - at) > 0.5) video.currentTime = at;
    };
    video.onerror = async () => {
      if (!item.video_url) return;
      if (retried) {
        note.textContent = "The video cannot be played (" + (video.error ? "error " + video.error.code : "no answer") +
          "). Reload the page; if it persists, tell the annotation lead.";
        note.hidden = false;
        return;
      }
      retried = true;
      try {
        const fresh = await api("GET", "/api/items/" + itemPath(item.id) + "/video");
        if (!fresh.video_url) throw new Error("the video file is gone");
        video.dataset.resumeAt = String(video.currentTime || item.start_at || 0);
        video.src = fresh.video_url;
        video.dataset.src = fresh.video_url;
        video.dataset.resigned = "1";
      } catch (e) {
        note.textContent = "The video cannot be played: " + e.message;
        note.hidden = false;
      }
    };
    if (item.video_url) {
      if (video.dataset.src !== item.video_url) { video.src = item.video_url; video.dataset.src = item.video_url; }
      else if (video.readyState >= 1) video.onloadedmetadata();
    } else {
      video.removeAttribute("src");
      video.dataset.src = "";
    }
    function seek(start, end) {
      video.currentTime = start;
      stopAt = end === null || end === undefined ? null : end;
      video.dataset.seekedTo = String(start);
      const p = video.play();
      if (p && p.catch) p.catch(() => {});
    }
    chips.replaceChildren();
    if (!item.video_url) chips.append(el("span", { class: "warn", text: "video file not found for " + item.video }));
    for (const r of item.ranges) {
      chips.append(el("button", { class: "chip", type: "button", text: r.label, title: "play this range",
        data: { start: r.start }, onclick: () => seek(r.start, r.end) }));
    }
    return seek;
  }

  const FIELD_LABEL = { user: "User", assistant: "Golden answer", question: "Checklist question", expected: "Expected" };

  function fieldKey(round, field, item) { return round + "." + field + (item ? "." + item : ""); }

  // The dialogue, round by round. With editable=true every text has an editor (shown in edit
  // mode, see app.css) and every checklist item a keep / revise mark: data-round/-field/-item/
  // -original let collectEdits() find what changed; an edited checklist item is marked revise.
  // One round as a section (id round-K): its header with a badge, and its User and golden-answer texts
  // (time references as chips); .turns.user / .turns.assistant are the two text blocks.
  function roundSection(r, seek, badge, highlight) {
    const head = el("header", {},
      el("span", { class: "round-no", text: "Round " + r.index }),
      el("span", { class: "ability", text: r.ability || "no ability label" }), badge);
    const sec = el("section", { class: "round" + (highlight ? " scored" : ""), id: "round-" + r.index,
      data: { index: r.index } }, head);
    const turns = {};
    for (const fld of ["user", "assistant"]) {
      const text = el("div", { class: "text" });
      segmentsInto(text, r[fld + "_segments"], seek);
      turns[fld] = el("div", { class: "turn " + fld }, el("div", { class: "who", text: FIELD_LABEL[fld] }), text);
      sec.append(turns[fld]);
    }
    return { sec, turns };
  }

  function renderRounds(container, item, seek, editable) {
    container.replaceChildren();
    for (const r of item.rounds) {
      const badge = r.scored ? el("span", { class: "badge scored", text: "scored" })
        : el("span", { class: "badge", text: r.model_turn ? "model turn, no checklist" : "context" });
      const { sec, turns } = roundSection(r, seek, badge, r.scored);
      for (const fld of ["user", "assistant"]) {
        if (editable) {
          turns[fld].append(el("textarea", { class: "editor", rows: Math.min(8, 2 + Math.ceil(r[fld].length / 70)),
            value: r[fld], "aria-label": "Round " + r.index + " " + FIELD_LABEL[fld],
            data: { round: r.index, field: fld, original: r[fld], key: fieldKey(r.index, fld) } }));
        }
      }
      if (r.checklist.length) {
        const ol = el("ol", { class: "checklist" });
        for (const c of r.checklist) {
          const key = r.index + "." + c.key;
          const li = el("li", { data: { key: c.key, mark: key } },
            el("span", { class: "key", text: c.key }),
            el("span", { class: "q text", text: c.question }),
            el("span", { class: "exp text " + c.expected.toLowerCase(), text: c.expected }));
          if (editable) {
            li.append(el("input", { class: "editor q-edit", type: "text", value: c.question,
              "aria-label": "Round " + r.index + " " + c.key + " question",
              data: { round: r.index, field: "question", item: c.key, original: c.question, key: fieldKey(r.index, "question", c.key) } }));
            const sel = el("select", { class: "editor exp-edit", "aria-label": "Round " + r.index + " " + c.key + " expected",
              data: { round: r.index, field: "expected", item: c.key, original: c.expected, key: fieldKey(r.index, "expected", c.key) } },
            el("option", { value: "Yes", text: "Yes" }), el("option", { value: "No", text: "No" }));
            sel.value = c.expected;
            li.append(sel);
            const mark = el("select", { class: "mark", "aria-label": "Round " + r.index + " " + c.key + ": keep or revise",
              title: "keep this checklist item, or mark it for revision", data: { mark: key } },
            el("option", { value: "keep", text: "keep" }), el("option", { value: "revise", text: "revise" }));
            li.append(mark);
          }
          ol.append(li);
        }
        sec.append(el("div", { class: "who", text: "Checklist (expected answer)" }), ol);
      }
      container.append(sec);
    }
    if (editable && !container.dataset.watching) {
      container.dataset.watching = "1";
      container.addEventListener("input", (ev) => {
        const t = ev.target;
        if (!t.classList || !t.classList.contains("editor")) return;
        t.classList.toggle("changed", t.value !== t.dataset.original);
        if (t.dataset.item) {
          const mark = container.querySelector('select.mark[data-mark="' + t.dataset.round + "." + t.dataset.item + '"]');
          if (mark && t.value !== t.dataset.original) mark.value = "revise";
        }
      });
    }
  }

  function collectEdits(container) {
    const edits = [];
    for (const e of container.querySelectorAll(".editor")) {
      if (e.value === e.dataset.original) continue;
      const edit = { round: Number(e.dataset.round), field: e.dataset.field, value: e.value };
      if (e.dataset.item) edit.item = e.dataset.item;
      edits.push(edit);
    }
    return edits;
  }

  // The editors' values as {fieldKey: value} (changed ones only), and back.
  function editorValues(container) {
    const out = {};
    for (const e of container.querySelectorAll(".editor")) if (e.value !== e.dataset.original) out[e.dataset.key] = e.value;
    return out;
  }
  function setEditorValues(container, values) {
    for (const e of container.querySelectorAll(".editor")) {
      e.value = values && Object.prototype.hasOwnProperty.call(values, e.dataset.key) ? values[e.dataset.key] : e.dataset.original;
      e.classList.toggle("changed", e.value !== e.dataset.original);
    }
  }
  function editsAsValues(edits) {
    const out = {};
    for (const e of edits || []) out[fieldKey(e.round, e.field, e.item)] = e.value;
    return out;
  }

  function collectMarks(container) {
    const out = {};
    for (const m of container.querySelectorAll("select.mark")) out[m.dataset.mark] = m.value;
    return out;
  }
  function setMarks(container, marks) {
    for (const m of container.querySelectorAll("select.mark")) m.value = (marks && marks[m.dataset.mark]) || "keep";
  }

  // The paper's three criteria as the checklist of the decision: met / not met and a note each.
  function criteriaPanel(box, defs, onChange) {
    box.replaceChildren(el("legend", { text: "Criteria (paper §3.2): each met or not met" }));
    const rows = {};
    let n = 0;
    for (const [key, label] of Object.entries(defs)) {
      n += 1;
      const name = box.id + "-" + key;
      const met = el("input", { type: "radio", name, value: "met", id: name + "-met" });
      const not = el("input", { type: "radio", name, value: "not", id: name + "-not" });
      const note = el("input", { type: "text", class: "criterion-note", maxlength: "20000", placeholder: "note (optional)",
        "aria-label": key + " note" });
      const row = el("div", { class: "criterion", data: { key } },
        el("div", { class: "criterion-label" }, el("kbd", { text: String(n) }), " ", el("span", { text: label })),
        el("div", { class: "criterion-choice" },
          met, el("label", { for: met.id, text: "met" }), not, el("label", { for: not.id, text: "not met" }), note));
      box.append(row);
      rows[key] = { met, not, note, row };
    }
    box.addEventListener("change", () => { paint(); if (onChange) onChange(); });
    box.addEventListener("input", () => { if (onChange) onChange(); });
    function paint() {
      for (const r of Object.values(rows)) {
        r.row.classList.toggle("is-met", r.met.checked);
        r.row.classList.toggle("is-not", r.not.checked);
      }
    }
    const keys = Object.keys(rows);
    return {
      // {key: {met, note}}, or null while some criterion is not marked
      get() {
        const out = {};
        for (const k of keys) {
          const r = rows[k];
          if (!r.met.checked && !r.not.checked) return null;
          out[k] = { met: r.met.checked, note: r.note.value.trim() };
        }
        return out;
      },
      // {key: {met: true|false|null, note}} as typed (for drafts)
      raw() {
        const out = {};
        for (const k of keys) out[k] = { met: rows[k].met.checked ? true : rows[k].not.checked ? false : null, note: rows[k].note.value };
        return out;
      },
      set(values) {
        for (const k of keys) {
          const v = (values || {})[k] || {};
          rows[k].met.checked = v.met === true;
          rows[k].not.checked = v.met === false;
          rows[k].note.value = v.note || "";
        }
        paint();
      },
      unmarked() { return keys.filter((k) => !rows[k].met.checked && !rows[k].not.checked); },
      unmet() { return keys.filter((k) => rows[k].not.checked); },
      markAllMet() { for (const k of keys) if (!rows[k].not.checked) rows[k].met.checked = true; paint(); },
      cycle(i) {
        const r = rows[keys[i]];
        if (!r) return;
        if (r.met.checked) r.not.checked = true; else r.met.checked = true;
        paint();
        if (onChange) onChange();
      },
      focusFirstUnmarked() { const k = this.unmarked()[0]; if (k) rows[k].met.focus(); },
    };
  }

  // Active time on a page: seconds while the page is visible and there was input (or the video
  // played) within the last minute.
  function activeClock(video) {
    let seconds = 0;
    let last = Date.now();
    const touch = () => { last = Date.now(); };
    for (const ev of ["keydown", "pointerdown", "pointermove", "wheel", "input", "scroll", "focus"]) {
      window.addEventListener(ev, touch, { passive: true, capture: true });
    }
    setInterval(() => {
      const playing = video && !video.paused && !video.ended;
      if (document.visibilityState === "visible" && (playing || Date.now() - last < 60000)) seconds += 1;
    }, 1000);
    return { seconds: () => seconds, reset: (s) => { seconds = Math.max(0, Number(s) || 0); touch(); } };
  }

  // A page's draft data as {path: value} (a path is the keys joined by \x1f; the active time is left out), for
  // what changed between two copies and for merging them.
  const SEP = "\x1f";
  function flatten(obj, prefix, out) {
    out = out || {};
    for (const [k, v] of Object.entries(obj || {})) {
      if (k === "active_seconds") continue;
      const path = prefix ? prefix + SEP + k : k;
      if (v !== null && typeof v === "object" && !Array.isArray(v)) flatten(v, path, out);
      else out[path] = v === undefined ? null : v;
    }
    return out;
  }
  function unflatten(flat) {
    const out = {};
    for (const [path, v] of Object.entries(flat)) {
      const keys = path.split(SEP);
      let o = out;
      for (const k of keys.slice(0, -1)) o = o[k] = o[k] && typeof o[k] === "object" ? o[k] : {};
      o[keys[keys.length - 1]] = v;
    }
    return out;
  }
  const same = (a, b) => (a === undefined ? null : a) === (b === undefined ? null : b) ||
    ((a === undefined || a === null || a === "") && (b === undefined || b === null || b === ""));
  // Three-way merge of draft data: a part only one side changed (against `base`, what both started from) takes that
  // side's value; a part both changed differently takes `theirs` and is listed in `both` (this tab's value kept there).
  function mergeCopies(base, mine, theirs) {
    const b = flatten(base), m = flatten(mine), t = flatten(theirs);
    const out = {}, both = [];
    for (const p of new Set([...Object.keys(m), ...Object.keys(t)])) {
      if (same(m[p], b[p]) || same(m[p], t[p])) out[p] = t[p] === undefined ? m[p] : t[p];
      else if (same(t[p], b[p])) out[p] = m[p];
      else { out[p] = t[p]; both.push({ path: p, mine: m[p], theirs: t[p] }); }
    }
    return { data: unflatten(out), both };
  }
  // The parts of two copies that differ: [{path, mine, theirs}].
  function differences(mine, theirs) {
    const m = flatten(mine), t = flatten(theirs);
    return [...new Set([...Object.keys(m), ...Object.keys(t)])].filter((p) => !same(m[p], t[p]))
      .map((p) => ({ path: p, mine: m[p], theirs: t[p] }));
  }
  function partLabel(path) {
    const [head, key, sub] = path.split(SEP);
    if (head === "fields" && key) {
      const [round, field, item] = key.split(".");
      return "Round " + round + " " + (item ? item + " " : "") + (FIELD_LABEL[field] || field).toLowerCase();
    }
    if (head === "marks" && key) return "Round " + key.replace(".", " ") + (sub ? " " + sub : "") + " mark";
    if (head === "criteria" && key) return key + (sub === "note" ? " note" : " criterion");
    return { comment: "comment", reason: "reason", mode: "mode", decision: "decision" }[head] || path.split(SEP).join(" ");
  }
  function partValue(path, v) {
    if (v === null || v === undefined || v === "") return path.startsWith("fields" + SEP) ? "(the original text)" : "(empty)";
    if (v === true) return path.endsWith(SEP + "met") ? "met" : "yes";
    if (v === false) return path.endsWith(SEP + "met") ? "not met" : "no";
    const text = String(v);
    return text.length > 160 ? text.slice(0, 157) + "…" : text;
  }
  // A decision as a page's draft data (what the other tab's decision looks like next to this tab's text).
  function decisionData(d) {
    if (!d) return {};
    if (d.marks) return { marks: d.marks };
    return { comment: d.comment, criteria: d.criteria, marks: d.checklist, fields: editsAsValues(d.edits) };
  }

  // The panel that says this tab's copy is older than the person's latest (another tab saved or decided): what
  // differs, and the two ways on (reload merged / keep this tab's text). `rows`: [{path, mine, theirs}].
  function conflictPanel(title, message, rows, actions) {
    const box = document.getElementById("conflict");
    if (!box) return;
    const table = rows.length ? el("table", { class: "grid conflict-parts" },
      el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "part" }), el("th", { scope: "col", text: "this tab" }),
        el("th", { scope: "col", text: "the other copy" }))),
      el("tbody", {}, ...rows.map((r) => el("tr", {}, el("th", { scope: "row", text: partLabel(r.path) }),
        el("td", { class: "text", text: partValue(r.path, r.mine) }), el("td", { class: "text", text: partValue(r.path, r.theirs) })))))
      : el("p", { class: "muted", text: "This tab's text is the same as the other copy's." });
    const buttons = el("div", { class: "actions" }, ...actions.map((a) => el("button", { type: "button", id: a.id,
      class: a.primary ? "primary" : "choice", text: a.label, onclick: a.run })));
    box.replaceChildren(el("h2", { id: "conflict-title", text: title }), el("p", { text: message }), table, buttons);
    box.hidden = false;
    const first = box.querySelector("button");
    if (first) first.focus();
  }
  function closeConflict() {
    const box = document.getElementById("conflict");
    if (box) { box.hidden = true; box.replaceChildren(); }
  }

  // What a person types on an item is kept on the server as they type (PUT .../draft, debounced, one save at a
  // time); leaving the page with edits not yet saved asks first, and a last save is sent as the page goes. Every
  // save carries the revision of the person's copy this tab holds: when another tab saved or decided since, the
  // server refuses it (409, conflict) and the conflict panel says what differs and offers `reload` (the page loads
  // the newer copy and what only this tab changed is put back on it) or keeping this tab's text. opts: {apply(data)
  // put draft data into the page, reload() load the item again}.
  function draftKeeper(scope, collect, stateEl, opts) {
    let item = null;
    let dirty = false;
    let timer = null;
    let saving = null;
    let revision = null;
    let base = {};
    let conflict = null;
    const say = (text, cls) => { if (stateEl) { stateEl.textContent = text; stateEl.className = "draft-state " + (cls || ""); } };
    const url = () => "/api/items/" + itemPath(item.id) + "/draft";
    async function save() {
      clearTimeout(timer);
      if (saving) await saving.catch(() => {});
      if (!item || !dirty || conflict) return saving;
      const it = item;
      const data = collect();
      dirty = false;
      say("saving draft…");
      saving = api("PUT", url(), { scope, content_hash: it.content_hash, data, revision })
        .then((r) => {
          if (it === item) {
            revision = r.draft.revision;
            base = data;
            say("draft saved " + new Date().toLocaleTimeString(), "ok");
            document.body.dataset.draftSaved = it.id;
          }
          return r;
        })
        .catch((e) => {
          if (it !== item) return;
          dirty = true;
          if (e.status === 409 && e.data && e.data.conflict) stale(e);
          else say("draft not saved: " + e.message, "error");
        })
        .finally(() => { saving = null; });
      return saving;
    }
    // The server refused a save from this tab's copy: say so and wait for the person's choice.
    function stale(e) {
      conflict = e.data.conflict;
      clearTimeout(timer);
      say("not saved: this tab's copy is older", "error");
      document.body.dataset.conflict = item ? item.id : "";
      const theirs = conflict.draft ? conflict.draft.data : decisionData(conflict.decision);
      const title = conflict.draft ? "A newer draft was saved in another tab" : conflict.decision
        ? "You decided this dialogue in another tab" : "This tab's copy is out of date";
      conflictPanel(title, e.message, differences(collect(), theirs), [
        { id: "conflict-reload", primary: true, label: "Reload (keep what only this tab changed)", run: reloadMerged },
        { id: "conflict-keep", label: "Keep this tab's text", run: keepMine }]);
    }
    async function reloadMerged() {
      const mine = collect();
      const was = base;
      await opts.reload();
      const theirs = collect();
      const merged = mergeCopies(was, mine, theirs);
      opts.apply(merged.data);
      if (differences(merged.data, theirs).length) keeper.changed();
      document.body.dataset.conflict = "";
      if (merged.both.length) {
        conflictPanel("Both copies changed these parts", "The other copy's text is shown in the page; this tab's is " +
          "here to copy from.", merged.both, [{ id: "conflict-close", primary: true, label: "Close", run: closeConflict }]);
      } else {
        toast("Reloaded: the newer copy, with what only this tab changed put back.", "ok");
      }
    }
    function keepMine() {
      if (!conflict) return;
      revision = conflict.revision;
      conflict = null;
      document.body.dataset.conflict = "";
      closeConflict();
      dirty = true;
      save();
    }
    window.addEventListener("beforeunload", (ev) => {
      if (dirty) { ev.preventDefault(); ev.returnValue = ""; }
    });
    window.addEventListener("pagehide", () => {
      if (dirty && item && !conflict) {
        fetch(url(), { method: "PUT", keepalive: true, headers: authHeaders({ "Content-Type": "application/json" }),
          body: JSON.stringify({ scope, content_hash: item.content_hash, data: collect(), revision }) }).catch(() => {});
      }
    });
    const keeper = {
      // a dialogue is shown (its draft, or the person's decision, already put into the page)
      open(it, draft) {
        item = it; dirty = false; clearTimeout(timer); conflict = null;
        revision = it ? ((it.revisions || {})[scope] || 0) : null;
        base = it ? collect() : {};
        closeConflict();
        delete document.body.dataset.draftSaved;
        say(draft ? "draft restored (saved " + draft.updated_at + ")" : "", draft ? "ok" : "");
      },
      changed() { if (!item) return; dirty = true; if (conflict) return; say("unsaved edits"); clearTimeout(timer); timer = setTimeout(save, 600); },
      flush: save,
      // the decision was recorded (the server dropped the draft): nothing is pending any more
      done() { dirty = false; clearTimeout(timer); say(""); },
      async discard() { dirty = false; clearTimeout(timer); if (item) await api("DELETE", url() + "?scope=" + scope).catch(() => {}); say(""); },
      dirty: () => dirty,
      revision: () => revision,
      conflicted: () => conflict !== null,
      stale,
    };
    return keeper;
  }

  // Focus back on the page (not a text box), so that one-key shortcuts work after a submit.
  function focusPage(main) {
    if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
    if (main) main.focus({ preventScroll: true });
  }

  // {name, job, mode, criteria, ...}; name is null when this browser is not signed in
  async function session() { return api("GET", "/api/session"); }

  function signIn(name, job) {
    localStorage.removeItem(TOKEN);
    localStorage.setItem(USER, name);
    localStorage.setItem(JOB, job);
  }

  function signOut() {
    for (const k of [TOKEN, USER, JOB]) localStorage.removeItem(k);
    location.href = "/";
  }

  // The top bar's "signed in as"; sends people without a session to the start page.
  async function requireSession() {
    takeTokenFromUrl();
    for (const a of document.querySelectorAll("header.top nav a")) a.classList.toggle("active", a.pathname === location.pathname);
    const me = await session();
    const slot = document.getElementById("me");
    document.body.dataset.work = me.work;
    document.body.dataset.jobs = (me.jobs || []).join(",");
    if (!me.name) {
      if (slot) slot.replaceChildren(el("a", { href: "/", text: "sign in" }));
      document.body.dataset.mode = me.mode;
      return null;
    }
    if (slot) {
      slot.replaceChildren(el("span", { class: "who-am-i", text: me.name + " · " + me.job }),
        el("button", { type: "button", class: "link", text: "sign out", onclick: signOut }));
    }
    document.body.dataset.job = me.job;
    return me;
  }

  // Whether a key goes into a text box (radio buttons and checkboxes leave the shortcuts working).
  function isTyping(ev) {
    const t = ev.target;
    if (!t) return false;
    if (t.tagName === "INPUT") return !["radio", "checkbox", "button", "submit"].includes(t.type);
    return t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable;
  }

  // The one-key shortcuts of a work page (annotate, rate): run actions[ev.key] unless the key goes into a text
  // box or comes with a modifier; while no dialogue is shown only "?" (help) and "u" (undo) act.
  function shortcut(ev, actions, shown) {
    if (isTyping(ev) || ev.ctrlKey || ev.metaKey || ev.altKey) return false;
    const act = actions[ev.key];
    if (!act || !(shown || ev.key === "?" || ev.key === "u")) return false;
    ev.preventDefault();
    act();
    return true;
  }

  // The keyboard help of a work page: its button toggles it, a click beside it closes it; returns the toggle.
  function helpOverlay(help, button) {
    const toggle = () => { help.hidden = !help.hidden; };
    button.addEventListener("click", toggle);
    help.addEventListener("click", (ev) => { if (ev.target === help) help.hidden = true; });
    return toggle;
  }

  // `t`: play the time range the round names first, else the dialogue's first.
  function playRange(seek, round, item) {
    const rng = (round && round.ranges[0]) || (item && item.ranges[0] && [item.ranges[0].start, item.ranges[0].end]);
    if (rng) seek(rng[0], rng[1]);
  }

  function playPause(video) {
    if (video.paused) video.play().catch(() => {}); else video.pause();
  }

  // The id of this person's next dialogue (after `after`), null when none is left.
  async function nextId(after) {
    return (await api("GET", "/api/next" + (after ? "?after=" + encodeURIComponent(after) : ""))).id;
  }

  // Open this person's next dialogue (after `after`) with load(id), or done() when none is left; nothing happens
  // when another dialogue was opened meanwhile (`opened()`: the loads started so far; the latest one wins).
  async function openNext(after, opened, load, done) {
    const ticket = opened();
    const id = await nextId(after);
    if (ticket !== opened()) return;
    if (id) await load(id); else await done();
  }

  // Nothing left for this person: what was typed is saved, the "done" panel replaces the work.
  async function queueDone(drafts, workspace, done, path) {
    if (drafts.dirty()) await drafts.flush();
    drafts.open(null, null);
    workspace.hidden = true;
    done.hidden = false;
    history.replaceState(null, "", path);
  }

  // Post a decision or a rating, what was typed saved first whatever happens; a refusal is said, and a dialogue
  // that changed meanwhile (409) is loaded again (the draft comes back). The answer, or null when refused.
  // A decision from a tab whose copy is older than the person's latest (another tab saved or decided since) is refused
  // and the conflict panel shows what differs.
  async function postDecision(drafts, url, body, reload) {
    await drafts.flush();
    if (drafts.conflicted()) { toast("Nothing was submitted: this tab's copy is older (see above).", "error"); return null; }
    try {
      const r = await api("POST", url, Object.assign({}, body, { revision: drafts.revision() }));
      drafts.done();
      return r;
    } catch (e) {
      if (e.status === 409 && e.data && e.data.conflict) { drafts.stale(e); return null; }
      toast(e.message, "error");
      if (e.status === 409) await reload().catch(() => {});
      return null;
    }
  }

  // Take back this person's decision or rating `seq` on dialogue `id` (the undo toast's action): the dialogue is
  // loaded again, then(answer) may put back what was submitted, and the focus returns to the page (`workspace`).
  async function undoLast(id, seq, load, message, workspace, then) {
    try {
      const back = await api("POST", "/api/items/" + itemPath(id) + "/undo", { seq });
      await load(id);
      if (then) then(back);
      document.body.dataset.lastSaved = id + ":undone";
      toast(message, "ok");
      focusPage(workspace);
    } catch (e) {
      toast(e.message, "error");
    }
  }

  // A work page's first dialogue: the dialogue named by ?id=, else the next one for this person.
  async function openFirst(load, next) {
    const id = new URLSearchParams(location.search).get("id");
    try {
      if (id) await load(id); else await next();
    } catch (e) {
      toast(e.message, "error");
    }
  }

  return { api, el, itemPath, hms, duration, toast, toastAction, segmentsInto, videoPanel, roundSection, renderRounds, collectEdits,
    shortcut, helpOverlay, playRange, playPause, openFirst, nextId, openNext, queueDone, postDecision, undoLast,
    editorValues, setEditorValues, editsAsValues, collectMarks, setMarks, criteriaPanel, activeClock, draftKeeper, mergeCopies, differences,
    focusPage, fieldKey, session, signIn, signOut, requireSession, takeTokenFromUrl, isTyping, FIELD_LABEL };
})();
