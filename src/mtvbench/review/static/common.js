// mtvbench review: helpers shared by every page. No framework, nothing fetched from elsewhere.
// Every piece of dialogue text goes into the page as text (textContent / text nodes / .value),
// never as HTML.
"use strict";

const MTV = (() => {
  const TOKEN = "mtvbench-review-token";
  const USER = "mtvbench-review-user";
  const ROLE = "mtvbench-review-role";

  // A login link carries the token in the URL fragment (#token=...), which the browser never
  // sends to the server; keep it in this browser and take it out of the address bar.
  function takeTokenFromUrl() {
    const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (m) {
      localStorage.setItem(TOKEN, decodeURIComponent(m[1]));
      localStorage.removeItem(USER);
      localStorage.removeItem(ROLE);
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
      h["X-Review-Role"] = localStorage.getItem(ROLE) || "annotator";
    }
    return h;
  }

  async function api(method, path, body) {
    const opts = { method, headers: authHeaders(body === undefined ? {} : { "Content-Type": "application/json" }) };
    if (body !== undefined) opts.body = JSON.stringify(body);
    const r = await fetch(path, opts);
    let data;
    try { data = await r.json(); } catch (e) { data = { error: "HTTP " + r.status }; }
    if (!r.ok) {
      const err = new Error((data && data.error) || "HTTP " + r.status);
      err.status = r.status;
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

  let toastTimer = null;
  function toast(message, kind) {
    const t = document.getElementById("toast");
    if (!t) return;
    t.textContent = message;
    t.className = "show " + (kind || "");
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.className = ""; }, kind === "error" ? 6000 : 2500);
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

  // The video player, its time-range chips and a seek(start, end) that plays the range.
  function videoPanel(video, chips, item) {
    let stopAt = null;
    video.ontimeupdate = () => {
      if (stopAt !== null && video.currentTime >= stopAt) { video.pause(); stopAt = null; }
    };
    if (item.video_url) {
      if (video.dataset.src !== item.video_url) { video.src = item.video_url; video.dataset.src = item.video_url; }
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

  // The dialogue, round by round. With editable=true every text has an editor (shown in edit
  // mode, see app.css): data-round/-field/-item/-original let collectEdits() find what changed.
  function renderRounds(container, item, seek, editable) {
    container.replaceChildren();
    for (const r of item.rounds) {
      const head = el("header", {},
        el("span", { class: "round-no", text: "Round " + r.index }),
        el("span", { class: "ability", text: r.ability || "no ability label" }),
        r.scored ? el("span", { class: "badge scored", text: "scored" })
          : el("span", { class: "badge", text: r.model_turn ? "model turn, no checklist" : "context" }));
      const sec = el("section", { class: "round" + (r.scored ? " scored" : ""), id: "round-" + r.index,
        data: { index: r.index } }, head);
      for (const fld of ["user", "assistant"]) {
        const text = el("div", { class: "text" });
        segmentsInto(text, r[fld + "_segments"], seek);
        const turn = el("div", { class: "turn " + fld }, el("div", { class: "who", text: FIELD_LABEL[fld] }), text);
        if (editable) {
          turn.append(el("textarea", { class: "editor", rows: Math.min(8, 2 + Math.ceil(r[fld].length / 70)),
            value: r[fld], "aria-label": "Round " + r.index + " " + FIELD_LABEL[fld],
            data: { round: r.index, field: fld, original: r[fld] } }));
        }
        sec.append(turn);
      }
      if (r.checklist.length) {
        const ol = el("ol", { class: "checklist" });
        for (const c of r.checklist) {
          const li = el("li", { data: { key: c.key } },
            el("span", { class: "key", text: c.key }),
            el("span", { class: "q text", text: c.question }),
            el("span", { class: "exp text " + c.expected.toLowerCase(), text: c.expected }));
          if (editable) {
            li.append(el("input", { class: "editor q-edit", type: "text", value: c.question,
              "aria-label": "Round " + r.index + " " + c.key + " question",
              data: { round: r.index, field: "question", item: c.key, original: c.question } }));
            const sel = el("select", { class: "editor exp-edit", "aria-label": "Round " + r.index + " " + c.key + " expected",
              data: { round: r.index, field: "expected", item: c.key, original: c.expected } },
            el("option", { value: "Yes", text: "Yes" }), el("option", { value: "No", text: "No" }));
            sel.value = c.expected;
            li.append(sel);
          }
          ol.append(li);
        }
        sec.append(el("div", { class: "who", text: "Checklist (expected answer)" }), ol);
      }
      container.append(sec);
    }
    if (editable) {
      container.addEventListener("input", (ev) => {
        const t = ev.target;
        if (t.classList && t.classList.contains("editor")) t.classList.toggle("changed", t.value !== t.dataset.original);
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

  // {name, role, mode, ...}; name is null when this browser is not signed in
  async function session() { return api("GET", "/api/session"); }

  function signIn(name, role) {
    localStorage.removeItem(TOKEN);
    localStorage.setItem(USER, name);
    localStorage.setItem(ROLE, role);
  }

  function signOut() {
    for (const k of [TOKEN, USER, ROLE]) localStorage.removeItem(k);
    location.href = "/";
  }

  // The top bar's "signed in as"; sends people without a session to the start page.
  async function requireSession() {
    takeTokenFromUrl();
    for (const a of document.querySelectorAll("header.top nav a")) a.classList.toggle("active", a.pathname === location.pathname);
    const me = await session();
    const slot = document.getElementById("me");
    if (!me.name) {
      if (slot) slot.replaceChildren(el("a", { href: "/", text: "sign in" }));
      document.body.dataset.mode = me.mode;
      return null;
    }
    if (slot) {
      slot.replaceChildren(el("span", { class: "who-am-i", text: me.name + " · " + me.role }),
        el("button", { type: "button", class: "link", text: "sign out", onclick: signOut }));
    }
    document.body.dataset.role = me.role;
    return me;
  }

  function isTyping(ev) {
    const t = ev.target;
    return t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
  }

  return { api, el, itemPath, hms, duration, toast, segmentsInto, videoPanel, renderRounds, collectEdits,
    session, signIn, signOut, requireSession, takeTokenFromUrl, isTyping, FIELD_LABEL };
})();
