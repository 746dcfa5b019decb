// Start page: sign in (login link, or a name in open mode) and the list of dialogues.
"use strict";

(() => {
  const { api, el, toast, requireSession, signIn } = MTV;
  const $ = (id) => document.getElementById(id);

  // A run directory's list: whether you rated each sampled dialogue (a senior: how many raters did).
  function rateRows(me, items) {
    $("start").textContent = "Start rating";
    $("start").href = "/rate";
    $("items-head").replaceChildren(...["dialogue", "task", "video", "rated turns", "questions", "raters", "yours"].map(
      (h) => el("th", { class: h === "raters" ? "senior-only" : null, text: h })));
    return items.map((r) => el("tr", {},
      el("td", {}, el("a", { href: "/rate?id=" + encodeURIComponent(r.id), text: r.id })),
      el("td", { text: r.task_label }), el("td", { text: r.video }), el("td", { text: String(r.turns) }),
      el("td", { text: String(r.questions) }), el("td", { class: "senior-only", text: r.raters === null ? "–" : String(r.raters) }),
      el("td", { class: r.mine ? "decision-accept" : "muted", text: r.mine || "–" })));
  }

  async function showList(me) {
    $("signin").hidden = true;
    $("home").hidden = false;
    const sample = me.sample ? " · raters' sample: up to " + me.sample.per_task + " per task, seed " + me.sample.seed : "";
    $("hello").textContent = "Signed in as " + me.name + " (" + me.job + ") · " + me.items + " dialogues from " +
      me.source.kind + " " + me.source.name + sample + (me.mode === "open" ? " · open mode (loopback, no tokens)" : "") +
      (me.source.not_a_benchmark ? " · " + me.source.not_a_benchmark : "");
    if (me.source_error) toast("The source could not be reloaded: " + me.source_error, "error");
    const task = $("f-task").value;
    const status = $("f-status").value;
    const q = new URLSearchParams();
    if (task) q.set("task", task);
    if (status) q.set("status", status);
    const { items } = await api("GET", "/api/items" + (q.toString() ? "?" + q : ""));
    const tb = $("items");
    tb.replaceChildren();
    if (me.work === "rate") {
      tb.append(...rateRows(me, items));
      $("count").textContent = items.length + " shown";
      return;
    }
    // an annotator's rows carry no status and no count of decisions (the blind rule); a senior's do
    for (const r of items) {
      const href = (me.job === "senior" && r.status === "needs_adjudication" ? "/senior?id=" : "/annotate?id=") + encodeURIComponent(r.id);
      const status = r.status === null ? "–" : r.status.replace("_", " ") + (r.referred ? " · " + r.referred + " handed over" : "");
      tb.append(el("tr", {},
        el("td", {}, el("a", { href, text: r.id })),
        el("td", { text: r.task_label }),
        el("td", { text: r.video }),
        el("td", { class: "senior-only" }, el("span", { class: "badge status-" + r.status, text: status })),
        el("td", { class: "senior-only", text: r.decisions === null ? "–" : r.decisions + "/2" }),
        el("td", { class: r.mine ? "decision-" + r.mine : "muted", text: r.mine || "–" }),
        el("td", { class: "yours-" + r.yours, text: r.yours })));
    }
    $("count").textContent = items.length + " shown";
  }

  async function main() {
    const me = await requireSession();
    if (!me) {
      $("signin").hidden = false;
      $("home").hidden = true;
      const jobs = (document.body.dataset.jobs || "annotator,senior").split(",");
      $("job").replaceChildren(...jobs.map((j) => el("option", { value: j, text: j === "senior" ? "senior annotator" : j })));
      if (document.body.dataset.mode === "token") {
        $("signin-form").hidden = true;
        $("signin-help").textContent = "This server gives every annotator a login link (`mtvbench review add-user`); open yours.";
        return;
      }
      $("signin-form").addEventListener("submit", async (ev) => {
        ev.preventDefault();
        signIn($("name").value.trim(), $("job").value);
        const again = await requireSession().catch((e) => { toast(e.message, "error"); return null; });
        if (again) showList(again); else toast("The server refused this name: letters, digits, spaces and . _ - @ only.", "error");
      });
      return;
    }
    for (const id of ["f-task", "f-status"]) $(id).addEventListener("change", () => showList(me).catch((e) => toast(e.message, "error")));
    await showList(me);
  }

  main().catch((e) => toast(e.message, "error"));
})();
