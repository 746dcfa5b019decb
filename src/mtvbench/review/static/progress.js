// Progress page: per task and per annotator, agreement (Cohen's kappa), time per item.
"use strict";

(() => {
  const { api, el, toast, requireSession, duration } = MTV;
  const $ = (id) => document.getElementById(id);
  const pct = (x) => (x === null || x === undefined ? "n/a" : (100 * x).toFixed(0) + "%");
  const num = (x, d) => (x === null || x === undefined ? "n/a" : x.toFixed(d));

  function row(cells, cls) {
    return el("tr", { class: cls || "" }, ...cells.map((c) => (c instanceof Node ? el("td", {}, c) : el("td", { text: String(c) }))));
  }

  function taskRow(t, cls) {
    const c = t.counts;
    const bar = el("div", { class: "bar", title: "accepted / rejected / to adjudicate / one decision / none" },
      ...[["accepted", c.accepted], ["rejected", c.rejected], ["needs_adjudication", c.needs_adjudication],
        ["one", t.one_decision], ["none", c.pending - t.one_decision]].map(([k, n]) =>
        el("span", { class: "seg " + k, style: { flexGrow: String(n) } })));
    return row([t.label, t.items, c.pending - t.one_decision, t.one_decision, c.needs_adjudication,
      c.accepted + (t.revised ? " (" + t.revised + " revised)" : ""), c.rejected,
      num(t.agreement.kappa, 2), pct(t.agreement.agreement), t.agreement.items, bar], cls);
  }

  async function main() {
    const me = await requireSession();
    if (!me) { location.href = "/"; return; }
    let p;
    try { p = await api("GET", "/api/progress"); } catch (e) { toast(e.message, "error"); return; }
    const tb = $("tasks");
    tb.replaceChildren();
    for (const t of p.tasks) if (t.items) tb.append(taskRow(t));
    tb.append(taskRow(p.overall, "total"));
    const ab = $("annotators");
    ab.replaceChildren();
    const taskNames = p.tasks.filter((t) => t.items).map((t) => t.task);
    $("annotator-head").replaceChildren(...["name", "role", "done", "open", "accept / revise / reject", "adjudicated",
      "mean time", "median time"].map((h) => el("th", { text: h })),
    ...p.tasks.filter((t) => t.items).map((t) => el("th", { text: t.label, title: "done / open" })));
    for (const a of p.annotators) {
      const d = a.decisions;
      ab.append(row([a.name, a.role || "–", a.done, a.open, (d.accept || 0) + " / " + (d.revise || 0) + " / " + (d.reject || 0),
        a.adjudicated, duration(a.seconds_mean), duration(a.seconds_median),
        ...taskNames.map((t) => { const x = a.by_task[t]; return x ? x.done + " / " + x.open : "0 / 0"; })]));
    }
    if (!p.annotators.length) ab.append(row(["nobody has decided anything yet"]));
    $("summary").textContent = p.items + " dialogues · " + p.counts.accepted + " accepted · " + p.counts.rejected +
      " rejected · " + p.counts.needs_adjudication + " to adjudicate · " + p.counts.pending + " pending";
  }

  main();
})();
