// Progress page. Seniors: per task, agreement per annotator pair (Cohen's kappa) and Krippendorff's
// alpha, per annotator with active time. Annotators: their own work only.
"use strict";

(() => {
  const { api, el, toast, requireSession, duration } = MTV;
  const $ = (id) => document.getElementById(id);
  const pct = (x) => (x === null || x === undefined ? "n/a" : (100 * x).toFixed(0) + "%");
  const num = (x, d) => (x === null || x === undefined ? "n/a" : x.toFixed(d));
  const ASPECTS = ["decision", "capability", "grounded", "coherent", "checklist"];

  function row(cells, cls) {
    return el("tr", { class: cls || "" }, ...cells.map((c) => (c instanceof Node ? el("td", {}, c) : el("td", { text: String(c) }))));
  }

  function taskRow(t, cls) {
    const c = t.counts;
    const a = t.agreement;
    const bar = el("div", { class: "bar", title: "accepted / rejected / to adjudicate / one decision / none" },
      ...[["accepted", c.accepted], ["rejected", c.rejected], ["needs_adjudication", c.needs_adjudication],
        ["one", t.one_decision], ["none", c.pending - t.one_decision]].map(([k, n]) =>
        el("span", { class: "seg " + k, style: { flexGrow: String(n) } })));
    const kappa = a.pairs.length > 1 ? "per pair" : num(a.kappa, 2);
    return row([t.label, t.items, c.pending - t.one_decision, t.one_decision,
      c.needs_adjudication + (t.referred ? " (" + t.referred + " handed over)" : ""),
      c.accepted + (t.revised ? " (" + t.revised + " revised)" : ""), c.rejected, kappa,
      a.alpha ? num(a.alpha.decision, 2) : "n/a", a.items, bar], cls);
  }

  function showSenior(p) {
    $("senior-view").hidden = false;
    const tb = $("tasks");
    tb.replaceChildren();
    const withItems = p.tasks.filter((t) => t.items);
    for (const t of withItems) tb.append(taskRow(t));
    tb.append(taskRow(p.overall, "total"));
    const pairs = $("pairs");
    pairs.replaceChildren();
    const alphas = $("alphas");
    alphas.replaceChildren();
    for (const t of [...withItems, p.overall]) {
      for (const x of t.agreement.pairs) {
        pairs.append(row([t.label, x.a + " – " + x.b, x.items, pct(x.same),
          ...ASPECTS.map((k) => num(x.kappa[k], 2) + (k === "checklist" ? " (" + x.units.checklist + " items)" : ""))],
        t === p.overall ? "total" : ""));
      }
      if (t.agreement.alpha) {
        $("alpha-box").hidden = false;
        alphas.append(row([t.label, t.agreement.people, ...ASPECTS.map((k) => num(t.agreement.alpha[k], 2))],
          t === p.overall ? "total" : ""));
      }
    }
    if (!pairs.children.length) pairs.append(row(["no dialogue has two decisions yet"]));
    const ab = $("annotators");
    ab.replaceChildren();
    $("annotator-head").replaceChildren(...["name", "job", "done", "open", "accept / revise / reject", "handed to senior",
      "adjudicated", "mean active time", "median active time"].map((h) => el("th", { text: h })),
    ...withItems.map((t) => el("th", { text: t.label, title: "done / open" })));
    for (const a of p.annotators) {
      const d = a.decisions;
      ab.append(row([a.name, a.job || "–", a.done, a.open, (d.accept || 0) + " / " + (d.revise || 0) + " / " + (d.reject || 0),
        a.referred, a.adjudicated, duration(a.seconds_mean), duration(a.seconds_median),
        ...withItems.map((t) => { const x = a.by_task[t.task]; return x ? x.done + " / " + x.open : "0 / 0"; })]));
    }
    if (!p.annotators.length) ab.append(row(["nobody has decided anything yet"]));
    $("summary").textContent = p.items + " dialogues · " + p.counts.accepted + " accepted · " + p.counts.rejected +
      " rejected · " + p.counts.needs_adjudication + " to adjudicate · " + p.counts.pending + " pending";
  }

  function showOwn(p) {
    $("own-view").hidden = false;
    const tb = $("own");
    tb.replaceChildren();
    for (const t of p.tasks) if (t.items) tb.append(row([t.label, t.items, t.done, t.open]));
    tb.append(row(["All tasks", p.items, p.me.done, p.me.open], "total"));
    $("summary").textContent = p.items + " dialogues · you decided " + p.me.done + " · " + p.me.open + " open to you" +
      (p.me.referred ? " · " + p.me.referred + " handed to the senior" : "") +
      (p.me.seconds_median !== null ? " · median active time " + duration(p.me.seconds_median) : "");
  }

  // A run directory's raters (seniors): rated per rater and task, active time, alpha among the raters.
  function showRating(p) {
    $("rating-view").hidden = false;
    $("rater-head").replaceChildren(...["rater", "rated", "mean active time", "median active time"].map((h) => el("th", { text: h })),
      ...p.tasks.map((t) => el("th", { text: t.label, title: "rated / sampled" })));
    const tb = $("raters");
    tb.replaceChildren();
    for (const r of p.raters) {
      tb.append(row([r.name, r.done + " / " + p.items, duration(r.seconds_mean), duration(r.seconds_median),
        ...p.tasks.map((t) => (r.by_task[t.task] || 0) + " / " + t.items)]));
    }
    if (!p.raters.length) tb.append(row(["nobody has rated anything yet"]));
    $("rating-agreement").textContent = "Krippendorff's alpha among the raters: " + num(p.alpha, 3) +
      " (" + p.alpha_units + " questions answered by two or more) · " + p.rated_by_all + " of " + p.items +
      " dialogues rated by every rater";
    $("summary").textContent = p.items + " sampled dialogues (up to " + p.per_task + " per task, seed " + p.seed + ") · " +
      p.questions + " checklist questions · " + p.raters.length + " rater(s)";
  }

  function showOwnRating(p) {
    $("own-view").hidden = false;
    const tb = $("own");
    tb.replaceChildren();
    for (const t of p.tasks) tb.append(row([t.label, t.items, t.done, t.items - t.done]));
    tb.append(row(["All tasks", p.items, p.me.done, p.items - p.me.done], "total"));
    $("summary").textContent = p.items + " sampled dialogues · you rated " + p.me.done +
      (p.me.seconds_median !== null ? " · median active time " + duration(p.me.seconds_median) : "");
  }

  async function main() {
    const me = await requireSession();
    if (!me) { location.href = "/"; return; }
    let p;
    try { p = await api("GET", "/api/progress"); } catch (e) { toast(e.message, "error"); return; }
    const show = { all: showSenior, own: showOwn, rating: showRating, "rating-own": showOwnRating }[p.scope];
    show(p);
  }

  main();
})();
