// SPDX-License-Identifier: Apache-2.0
// Compare two runs (/compare?base=<sid>&run=<sid>): a baseline picked among the sessions of the
// run's app, then the kernels, scopes and insights that got slower, faster, appeared or
// vanished, with the change in time and in share (compare/diff.ts), by time at stake.
import { ApiError, call } from "../api";
import {
  type DiffRow,
  type Insight,
  type KernelsAnswer,
  type ScopeNode,
  countChanges,
  diff,
  insightsMeasured,
  kernelsMeasured,
  scopesMeasured,
  scopesTotal,
} from "../compare/diff";
import { h, show } from "../dom";
import { formatNs } from "../jobs/ranks";
import { formatLocation } from "../router";
import { type Session, formatStart } from "../sessions";
import { emptyState, errorState, loadingState } from "../states";

/** Rows a table shows at most (the rest are counted). */
export const ROWS_SHOWN = 200;

interface Side {
  session: Session;
  kernels: KernelsAnswer;
  scopes: ScopeNode[];
  insights: Insight[];
}

const enc = encodeURIComponent;

async function loadSide(sid: string): Promise<Side> {
  const base = `/api/v1/sessions/${enc(sid)}`;
  const [session, kernels, scopes, insights] = await Promise.all([
    call<Session>("GET", base),
    call<KernelsAnswer>("GET", `${base}/kernels?limit=10000`),
    call<{ tree: ScopeNode[] }>("GET", `${base}/scopes`),
    call<{ insights: Insight[] }>("GET", `${base}/insights`),
  ]);
  return { session, kernels, scopes: scopes.tree ?? [], insights: insights.insights ?? [] };
}

function pct(x: number | null, total: number): string {
  return x === null ? "–" : total > 0 ? `${(100 * x).toFixed(1)} %` : "–";
}

function signed(ns: number): string {
  return (ns > 0 ? "+" : ns < 0 ? "−" : "±") + formatNs(Math.abs(ns));
}

function diffTable(id: string, title: string, what: string, rows: DiffRow[], baseTotal: number,
                   runTotal: number, why: string | null): HTMLElement {
  const c = countChanges(rows);
  const changed = rows.filter((r) => r.change !== "same");
  const shown = changed.slice(0, ROWS_SHOWN);
  return h("section", { "data-testid": `compare-${id}` },
    h("h2", {}, title),
    h("p", { class: "count", "data-testid": `compare-${id}-summary` },
      `${c.slower} slower, ${c.faster} faster, ${c.appeared} appeared, ${c.vanished} vanished, ${c.same} unchanged`),
    why ? h("p", { class: "muted" }, why) : null,
    !changed.length ? (rows.length || !why ? h("p", { class: "muted" },
      rows.length ? `No ${what} changed.` : `No ${what} in either session.`) : null) :
      h("table", { class: "sessions" },
        h("thead", {}, h("tr", {}, ...["Change", what[0].toUpperCase() + what.slice(1, -1), "Baseline", "Run",
          "Δ time", "Baseline share", "Run share", "Δ share"].map((t, i) =>
          h("th", { scope: "col", class: i >= 2 ? "num" : undefined }, t)))),
        h("tbody", {}, ...shown.map((r) => h("tr", { "data-key": r.key, "data-change": r.change },
          h("td", { class: r.change === "slower" || r.change === "appeared" ? "worse" : "better" }, r.change),
          h("td", { class: "mono", title: r.key }, r.label.length > 80 ? r.label.slice(0, 78) + "…" : r.label),
          h("td", { class: "num" }, r.base_ns === null ? "–" : formatNs(r.base_ns)),
          h("td", { class: "num" }, r.run_ns === null ? "–" : formatNs(r.run_ns)),
          h("td", { class: "num " + (r.delta_ns > 0 ? "worse" : "better"), "data-delta-ns": String(r.delta_ns) },
            signed(r.delta_ns)),
          h("td", { class: "num" }, pct(r.base_share, baseTotal)),
          h("td", { class: "num" }, pct(r.run_share, runTotal)),
          h("td", { class: "num" }, baseTotal > 0 && runTotal > 0
            ? `${r.delta_share >= 0 ? "+" : "−"}${Math.abs(100 * r.delta_share).toFixed(1)} pt` : "–"))))),
    changed.length > shown.length ? h("p", { class: "muted" },
      `${changed.length - shown.length} more changes of smaller time not shown.`) : null);
}

function picker(run: Session, candidates: Session[], base: string,
                go: (url: string, replace?: boolean) => void): HTMLElement {
  const others = candidates.filter((s) => s.session_id !== run.session_id);
  const sel = h("select", { id: "compare-base", "aria-label": "Baseline session",
    onchange: () => go(formatLocation("/compare", { base: sel.value, run: run.session_id })) },
  h("option", { value: "" }, others.length ? "pick a baseline…" : "no other session of this app"),
  ...others.map((s) => h("option", { value: s.session_id, selected: s.session_id === base },
    `${formatStart(s.start_unix_us)} · ${s.hostname ?? ""} · ${s.session_id}`)));
  return h("div", { class: "panel row" },
    h("div", { class: "field" }, h("label", {}, "Run"),
      h("span", { class: "mono", "data-testid": "compare-run" }, run.session_id)),
    h("div", { class: "field" }, h("label", { for: "compare-base" }, `Baseline (sessions of ${run.app_name ?? "this app"})`), sel));
}

export function renderCompare(root: Element, params: URLSearchParams,
                              go: (url: string, replace?: boolean) => void) {
  const run = params.get("run") ?? "";
  const base = params.get("base") ?? "";
  const body = h("div", {});
  show(root, h("section", { class: "compare-page" }, h("h1", {}, "Compare two runs"), body));
  if (!run) {
    show(body, emptyState("compare-empty", "Pick the run to compare",
      h("p", {}, "Open the sessions list and press “Compare with…” on a session."),
      h("a", { href: "/sessions", "data-link": true }, "Sessions")));
    return;
  }
  show(body, loadingState("compare-loading", "Loading the sessions…"));
  const retry = () => renderCompare(root, params, go);
  const fail = (e: unknown) => {
    if (e instanceof ApiError && e.status === 404) {
      show(body, emptyState("compare-error", "No such session in this workspace",
        h("p", { class: "mono" }, e.message), h("a", { href: "/sessions", "data-link": true }, "Sessions")));
      return;
    }
    const el = errorState("compare-error", "The comparison could not be loaded", e, retry, go);
    if (el) show(body, el);
  };
  call<Session>("GET", `/api/v1/sessions/${enc(run)}`).then(async (runSession) => {
    const q = new URLSearchParams({ limit: "500" });
    if (runSession.app_name) q.set("app", runSession.app_name);
    const same = await call<{ sessions: Session[] }>("GET", `/api/v1/sessions?${q}`);
    const pick = picker(runSession, same.sessions, base, go);
    if (!base) {
      show(body, pick, emptyState("compare-pick", "Pick a baseline",
        h("p", {}, "The baseline is the run this one is compared against: an earlier run of the same app.")));
      return;
    }
    show(body, pick, loadingState("compare-loading", "Comparing…"));
    const [b, r] = await Promise.all([loadSide(base), loadSide(run)]);
    const kb = b.kernels.total_ns, kr = r.kernels.total_ns;
    const sb = scopesTotal(b.scopes), sr = scopesTotal(r.scopes);
    const wb = b.session.end_ns ?? 0, wr = r.session.end_ns ?? 0;
    const noKernels = !b.kernels.kernels.length && !r.kernels.kernels.length;
    show(body, pick,
      h("p", { class: "callout", "data-testid": "compare-headline" },
        `Wall time ${formatNs(wb || null)} → ${formatNs(wr || null)}; GPU kernel time ${formatNs(kb)} → ${formatNs(kr)}`,
        kb > 0 ? ` (${signed(kr - kb)}, ${((100 * (kr - kb)) / kb).toFixed(1)} %)` : ""),
      b.session.app_name !== r.session.app_name ? h("p", { class: "callout" },
        `These sessions are of different apps (${b.session.app_name} and ${r.session.app_name}): the diff is by name only.`) : null,
      diffTable("kernels", "Kernels", "kernels", diff(kernelsMeasured(b.kernels), kernelsMeasured(r.kernels), kb, kr), kb, kr,
        noKernels ? "Neither session recorded kernel times (their engines record none, e.g. Monitor)." : null),
      diffTable("scopes", "Scopes", "scopes", diff(scopesMeasured(b.scopes), scopesMeasured(r.scopes), sb, sr), sb, sr,
        !b.scopes.length && !r.scopes.length ? "Neither session recorded scopes." : null),
      diffTable("insights", "Insights", "insights", diff(insightsMeasured(b.insights), insightsMeasured(r.insights), wb, wr),
        wb, wr, "An insight's time is the largest time its evidence puts at stake; its share is of the session's wall time."));
  }).catch(fail);
}
