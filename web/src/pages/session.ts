// SPDX-License-Identifier: Apache-2.0
// One session (/sessions/:id): a header of the report's key figures, export buttons, and views
// in tabs kept in the URL (overview, timeline, kernels, scopes, insights, source, metrics), each
// with its loading, empty, error and "not recorded" states. Data shaping is in ../session/.
import { ApiError } from "../api";
import { h, show } from "../dom";
import { formatLocation } from "../router";
import { sessionApi, sessionPath, resetSessionCache } from "../session/api";
import { metricPlots } from "../session/charts";
import { drawHistogram, drawPlot } from "../session/draw";
import {
  type HeaderFigures,
  type Insight,
  type KernelRow,
  type KernelSort,
  type SessionSummary,
  type View,
  VIEWS,
  evidenceLinks,
  formatCount,
  formatNs,
  formatPct,
  headerFigures,
  isRunning,
  kernelRows,
  missingReason,
  parseKernelSort,
  parseView,
  rankInsights,
  sessionUrl,
  sortKernels,
  timeAtStake,
} from "../session/model";
import { scopeRows, toggleFold } from "../session/scopes";
import {
  type FunctionSass,
  type SassMetrics,
  hottestLines,
  lineKey,
  lineOfPc,
  pcsOfLine,
  reasonOrder,
  reasonSegments,
} from "../session/source";
import { mountTimeline } from "../timeline/mount";

type Go = (url: string, replace?: boolean) => void;

interface Ctx {
  id: string;
  params: URLSearchParams;
  go: Go;
  summary: SessionSummary;
  /** Whether this render is still the one on screen (a newer URL replaces it). */
  live: () => boolean;
  /** The page's URL with some parameters changed. */
  url: (patch: Record<string, string | string[] | undefined>) => string;
}

const LABELS: Record<View, string> = {
  overview: "Overview", timeline: "Timeline", kernels: "Kernels", scopes: "Scopes",
  insights: "Insights", source: "Source & SASS", metrics: "Metrics",
};

let renderToken = 0;
let unmountTimeline: (() => void) | undefined;

function loading(what: string): HTMLElement {
  return h("div", { class: "state state-loading", role: "status", "data-testid": "view-loading" },
    h("span", { class: "spinner" }), `Loading ${what}…`);
}

function errorText(e: unknown): string {
  if (e instanceof ApiError && e.status === 0)
    return "The server cannot be reached: is gpufl-server running?";
  if (e instanceof ApiError) return `The server answered ${e.status}: ${e.message}`;
  return String(e);
}

function errorState(e: unknown, retry: () => void, what: string): HTMLElement {
  return h("div", { class: "state state-error", role: "alert", "data-testid": "view-error" },
    h("h2", {}, `The ${what} could not be loaded`), h("p", {}, errorText(e)),
    h("button", { type: "button", onclick: retry }, "Retry"));
}

/** An empty view: what is missing and, from the capability record, why the engine did not
 * record it. */
function emptyState(ctx: Ctx, view: View, what: string): HTMLElement {
  const why = missingReason(ctx.summary, view);
  const engine = ctx.summary.capabilities?.engine ?? ctx.summary.engine;
  return h("div", { class: "state state-empty", "data-testid": "view-empty" },
    h("h2", {}, what),
    why ? h("p", { "data-testid": "capability-reason" },
      `The engine${engine ? ` (${engine})` : ""} did not record it: ${why}.`)
      : h("p", { class: "muted" }, "The session's log has none."));
}

/** Runs a view's loads, painting the loading state first and the error state on failure; a
 * 401 goes to the login. */
function load<T>(ctx: Ctx, panel: HTMLElement, what: string, p: () => Promise<T>,
                 paint: (v: T) => void): void {
  show(panel, loading(what));
  p().then((v) => {
    if (ctx.live()) paint(v);
  }, (e) => {
    if (!ctx.live()) return;
    if (e instanceof ApiError && e.status === 401) {
      ctx.go(formatLocation("/login", { next: location.pathname + location.search }), true);
      return;
    }
    show(panel, errorState(e, () => load(ctx, panel, what, p, paint), what));
  });
}

// ---- the header ------------------------------------------------------------------------------

function figure(label: string, value: string, testid: string, note?: string): HTMLElement {
  return h("div", { class: "figure", "data-testid": testid },
    h("div", { class: "figure-label" }, label),
    h("div", { class: "figure-value" }, value),
    note ? h("div", { class: "figure-note muted" }, note) : null);
}

function figures(f: HeaderFigures, ctx: Ctx): HTMLElement {
  const top = f.topInsight;
  return h("div", { class: "figures", "data-testid": "session-figures" },
    figure("Wall time", formatNs(f.wallNs), "fig-wall"),
    figure("GPU busy", formatPct(f.busyPct), "fig-busy", f.busySource),
    figure("GPU idle", formatPct(f.idlePct), "fig-idle"),
    figure(f.kernelsTimed ? "Kernels" : "Kernel launches", formatCount(f.kernels), "fig-kernels",
      f.kernelNames !== null ? `${formatCount(f.kernelNames)} names` : undefined),
    h("div", { class: "figure figure-insight", "data-testid": "fig-insight" },
      h("div", { class: "figure-label" }, "Top insight"),
      top ? h("a", { href: ctx.url({ view: "insights" }), "data-link": true },
        h("span", { class: `sev sev-${top.severity}` }, top.severity), " ", top.title)
        : h("div", { class: "figure-value" }, "none")));
}

function exportLinks(id: string): HTMLElement {
  const base = sessionPath(id);
  const a = (label: string, href: string, file: string, testid: string) =>
    h("a", { class: "button", href, download: file, "data-testid": testid }, label);
  return h("div", { class: "exports" },
    h("a", {
      class: "button ghost", "data-link": true, "data-testid": "session-compare",
      href: formatLocation("/compare", { run: id }),
      title: "Compare this session with a baseline run of the same app",
    }, "Compare with…"),
    a("Perfetto", `${base}/export?format=perfetto`, `${id}.perfetto-trace`, "export-perfetto"),
    a("Chrome trace", `${base}/export?format=chrome`, `${id}.trace.json`, "export-chrome"),
    a("Report (HTML)", `${base}/report?format=html`, `${id}.report.html`, "export-html"));
}

function tabs(ctx: Ctx, current: View): HTMLElement {
  return h("nav", { class: "tabs", role: "tablist", "aria-label": "Session views" },
    ...VIEWS.map((v) => h("a", {
      role: "tab", href: ctx.url({ view: v }), "data-link": true, "data-view": v,
      "aria-selected": v === current ? "true" : "false",
      class: v === current ? "tab active" : "tab",
    }, LABELS[v])));
}

// ---- kernels ---------------------------------------------------------------------------------

const KERNEL_COLUMNS: [KernelSort, string][] = [
  ["name", "Kernel"], ["count", "Calls"], ["total", "Total"], ["share", "Share"],
  ["mean", "Mean"], ["p50", "p50"], ["p90", "p90"], ["p99", "p99"], ["max", "Max"],
  ["occupancy", "Occupancy"],
];

function occupancyText(r: KernelRow): string {
  if (!r.occupancy) return "—";
  const { min, max } = r.occupancy;
  return min === max ? formatPct(min) : `${formatPct(min)}–${formatPct(max)}`;
}

function kernelTable(ctx: Ctx, rows: KernelRow[], selected: string | null, limit?: number):
  HTMLElement {
  const { key, desc } = parseKernelSort(ctx.params);
  const sorted = sortKernels(rows, key, desc).slice(0, limit);
  const head = KERNEL_COLUMNS.map(([k, label]) => {
    const active = k === key;
    const next = active ? (desc ? "asc" : "desc") : k === "name" ? "asc" : "desc";
    return h("th", { scope: "col", "aria-sort": active ? (desc ? "descending" : "ascending")
      : undefined },
    h("button", { type: "button", class: "sort", "data-sort": k,
      onclick: () => ctx.go(ctx.url({ view: parseView(ctx.params) === "overview" ? "kernels"
        : undefined, sort: k, dir: next }), true) },
    label, active ? (desc ? " ▼" : " ▲") : ""));
  });
  head.push(h("th", { scope: "col" }, "Limiter"));
  const body = sorted.map((r) => h("tr", {
    "data-kernel": r.name, class: r.name === selected ? "selected" : undefined,
    tabindex: 0,
    onclick: () => ctx.go(ctx.url({ view: "kernels", kernel: r.name }), true),
    onkeydown: (e: Event) => {
      if ((e as KeyboardEvent).key === "Enter")
        ctx.go(ctx.url({ view: "kernels", kernel: r.name }), true);
    },
  },
  h("td", { class: "mono name", title: r.name }, r.name),
  h("td", { class: "num" }, formatCount(r.count)),
  h("td", { class: "num" }, formatNs(r.total_ns)),
  h("td", { class: "num" }, formatPct(r.sharePct)),
  h("td", { class: "num" }, formatNs(r.mean_ns)),
  h("td", { class: "num" }, formatNs(r.p50_ns)),
  h("td", { class: "num" }, formatNs(r.p90_ns)),
  h("td", { class: "num" }, formatNs(r.p99_ns)),
  h("td", { class: "num" }, formatNs(r.max_ns)),
  h("td", { class: "num" }, occupancyText(r)),
  h("td", {}, r.limiter ?? "—")));
  return h("table", { class: "data kernels", "data-testid": "kernel-table" },
    h("thead", {}, h("tr", {}, ...head)), h("tbody", {}, ...body));
}

function kernelsView(ctx: Ctx, panel: HTMLElement, overview: boolean): void {
  load(ctx, panel, "kernels",
    () => Promise.all([sessionApi.kernels(ctx.id), sessionApi.report(ctx.id)]),
    ([doc, report]) => {
      if (!doc.kernels.length) {
        show(panel, emptyState(ctx, "kernels", report.kernel_launches
          ? `No timed kernels: ${formatCount(report.kernel_launches.count)} launches recorded`
          : "No kernels in this session"));
        return;
      }
      const rows = kernelRows(doc, report);
      const picked = ctx.params.get("kernel");
      const selected = rows.find((r) => r.name === picked) ?? null;
      const table = kernelTable(ctx, rows, selected?.name ?? null, overview ? 10 : undefined);
      const note = h("p", { class: "muted count", "data-testid": "kernel-count" },
        `${formatCount(doc.count)} kernels, ${formatCount(doc.distinct_names)} names, ` +
        `${formatNs(doc.total_ns)} in all`,
        overview && rows.length > 10 ? " (the 10 longest; all in Kernels)" : "",
        doc.truncated ? " (the first names only)" : "");
      if (overview) {
        show(panel, note, table);
        return;
      }
      const shown = selected ?? sortKernels(rows, "total", true)[0];
      const hist = h("div", { class: "histogram", "data-testid": "histogram-panel" },
        h("h2", {}, "Durations of ", h("span", { class: "mono" }, shown.name)),
        shown.histogram?.length ? drawHistogram(shown.histogram)
          : h("p", { class: "muted" }, "This server stored the kernels without a histogram: "
            + "it appears once the session's report is built again."));
      show(panel, note, h("div", { class: "scroll" }, table), hist);
      if (selected) table.querySelector("tr.selected")?.scrollIntoView({ block: "nearest" });
    });
}

// ---- scopes ----------------------------------------------------------------------------------

function bar(share: number, cls: string): HTMLElement {
  const fill = h("span", { class: `bar-fill ${cls}` });
  fill.style.width = `${Math.max(0, Math.min(1, share)) * 100}%`;
  return h("span", { class: "bar" }, fill);
}

function scopesView(ctx: Ctx, panel: HTMLElement): void {
  load(ctx, panel, "scopes", () => sessionApi.scopes(ctx.id), (doc) => {
    if (!doc.tree.length) {
      show(panel, emptyState(ctx, "scopes", "No scopes in this session"));
      return;
    }
    const folded = new Set(ctx.params.getAll("fold"));
    const rows = scopeRows(doc.tree, folded).map((r) => {
      const n = r.node;
      const toggle = r.hasChildren
        ? h("button", { type: "button", class: "fold", "aria-expanded": r.folded ? "false" : "true",
          "aria-label": `${r.folded ? "Expand" : "Collapse"} ${n.path}`,
          onclick: () => ctx.go(ctx.url({ fold: toggleFold(folded, n.path) }), true) },
        r.folded ? "▸" : "▾")
        : h("span", { class: "fold-none" });
      const name = h("td", { class: "scope-name" }, toggle, " ", n.name);
      name.style.paddingLeft = `${8 + n.depth * 18}px`;
      return h("tr", { "data-path": n.path, "data-depth": n.depth },
        name,
        h("td", { class: "num" }, formatCount(n.calls)),
        h("td", { class: "num" }, formatNs(n.total_ns)),
        h("td", {}, bar(r.hostShare, "host")),
        h("td", { class: "num" }, n.gpu_ns !== undefined ? formatNs(n.gpu_ns) : "—"),
        h("td", {}, bar(r.gpuShare, "gpu")),
        h("td", { class: "num" }, n.kernels !== undefined ? formatCount(n.kernels) : "—"));
    });
    show(panel,
      h("p", { class: "muted count" }, `${formatCount(doc.paths_count)} scope paths`,
        doc.attributed ? "" : " (GPU work was not attributed to scopes)",
        doc.unattributed_ns ? `; ${formatNs(doc.unattributed_ns)} of GPU time outside any` : ""),
      h("table", { class: "data scopes", "data-testid": "scope-tree" },
        h("thead", {}, h("tr", {}, ...["Scope", "Calls", "Host time", "", "GPU time", "",
          "Kernels"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, ...rows)));
  });
}

// ---- insights --------------------------------------------------------------------------------

function insightCard(ctx: Ctx, i: Insight, rank: number): HTMLElement {
  const stake = timeAtStake(i);
  return h("article", { class: "insight", "data-rule": i.rule, "data-rank": rank },
    h("h3", {}, h("span", { class: `sev sev-${i.severity}` }, i.severity), " ", i.title),
    h("p", { class: "muted" }, `${i.category}${stake ? ` · ${formatNs(stake)} at stake` : ""}`),
    h("p", {}, i.message),
    h("p", { class: "advice" }, i.advice),
    h("div", { class: "evidence" }, ...evidenceLinks(ctx.id, i).map((l) =>
      h("a", { href: l.url, "data-link": true, "data-evidence": l.kind }, {
        source: "Source line ", kernel: "Kernel ", span: "Time span ",
      }[l.kind], h("span", { class: "mono" }, l.label)))));
}

function insightsView(ctx: Ctx, panel: HTMLElement, top?: number): void {
  load(ctx, panel, "insights", () => sessionApi.insights(ctx.id), (list) => {
    const ranked = rankInsights(list);
    if (!ranked.length) {
      show(panel, h("div", { class: "state state-empty", "data-testid": "view-empty" },
        h("h2", {}, "No insights"), h("p", { class: "muted" },
          "No rule found anything to point at in this session.")));
      return;
    }
    show(panel, h("div", { class: "insights", "data-testid": "insight-list" },
      ...ranked.slice(0, top).map((i, n) => insightCard(ctx, i, n + 1))));
  });
}

// ---- source and SASS -------------------------------------------------------------------------

const REASON_COLORS = 10;

function stackedBar(reasons: Record<string, number>, scale: number, order: string[]):
  HTMLElement | string {
  if (!Object.values(reasons).some((n) => n > 0)) return "—";
  const el = h("span", { class: "stack", title: Object.entries(reasons)
    .map(([r, n]) => `${r}: ${n}`).join(", ") });
  for (const s of reasonSegments(reasons, scale)) {
    const at = order.indexOf(s.reason);
    const seg = h("span", { class: `seg c${(at < 0 ? order.length : at) % REASON_COLORS}`,
      "data-reason": s.reason });
    seg.style.width = `${s.width * 100}%`;
    el.append(seg);
  }
  return el;
}

function metricCells(m: SassMetrics | null): HTMLElement[] {
  return [
    h("td", { class: "num" }, formatPct(m?.thread_efficiency_pct)),
    h("td", { class: "num" }, formatPct(m?.coalescing_efficiency_pct)),
    h("td", { class: "num" }, formatCount(m?.excess_sectors ?? null)),
  ];
}

function sassPanel(ctx: Ctx, sass: FunctionSass): HTMLElement {
  const order = reasonOrder(sass.reasons);
  const lineSel = ctx.params.get("line");
  const pcSel = ctx.params.get("pc");
  const pcLine = pcSel !== null ? lineOfPc(sass, Number(pcSel)) : null;
  const litLine = lineSel ?? pcLine;
  const litPcs = litLine ? pcsOfLine(sass, litLine) : new Set<number>();
  const lines = hottestLines(sass.lines);
  const scale = Math.max(1, ...sass.lines.map((l) => l.samples));
  const cols = ["Samples", "Stall reasons", "Thread eff.", "Coalescing", "Excess sectors"];
  const lineRows = lines.map((l) => {
    const key = lineKey(l);
    return h("tr", { "data-line": key, class: key === litLine ? "selected" : undefined,
      onclick: () => ctx.go(ctx.url({ line: key, pc: undefined }), true) },
    h("td", { class: "mono" }, key),
    h("td", { class: "num" }, formatCount(l.samples)),
    h("td", {}, stackedBar(l.reasons, scale, order)),
    ...metricCells(l.metrics));
  });
  const iscale = Math.max(1, ...sass.instructions.map((i) => i.samples));
  const insnRows = sass.instructions.map((i) => h("tr", {
    "data-pc": i.pc,
    class: litPcs.has(i.pc) || String(i.pc) === pcSel ? "selected" : undefined,
    onclick: () => ctx.go(ctx.url({ pc: String(i.pc), line: undefined }), true),
  },
  h("td", { class: "mono" }, `+0x${i.pc.toString(16)}`),
  h("td", { class: "mono sass" }, i.sass ?? "(no sass record)"),
  h("td", { class: "mono" }, lineKey(i)),
  h("td", { class: "num" }, formatCount(i.samples)),
  h("td", {}, stackedBar(i.reasons, iscale, order)),
  ...metricCells(i.metrics)));
  const legend = h("div", { class: "legend" }, ...order.map((r, n) =>
    h("span", {}, h("span", { class: `swatch c${n % REASON_COLORS}` }), r)));
  return h("div", { class: "sass-view" },
    h("h2", { class: "mono" }, sass.name),
    h("p", { class: "muted" }, `${formatCount(sass.samples)} PC samples`,
      sass.metrics ? ` · thread efficiency ${formatPct(sass.metrics.thread_efficiency_pct)} · `
        + `coalescing ${formatPct(sass.metrics.coalescing_efficiency_pct)}` : "",
      sass.truncated ? " · the first instructions only" : ""),
    order.length ? legend : null,
    h("h3", {}, "Source lines, hottest first"),
    h("table", { class: "data lines", "data-testid": "source-lines" },
      h("thead", {}, h("tr", {}, ...["Line", ...cols].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...lineRows)),
    h("h3", {}, "SASS"),
    h("div", { class: "scroll" }, h("table", { class: "data sass", "data-testid": "sass-listing" },
      h("thead", {}, h("tr", {}, ...["PC", "Instruction", "Line", ...cols].map((c) =>
        h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...insnRows))));
}

function sourceView(ctx: Ctx, panel: HTMLElement): void {
  load(ctx, panel, "functions", () => sessionApi.functions(ctx.id), (doc) => {
    if (!doc.functions.length) {
      show(panel, emptyState(ctx, "source", "No PC samples or SASS metrics in this session"));
      return;
    }
    const fn = ctx.params.get("fn");
    const picked = doc.functions.find((f) => f.name === fn || f.mangled === fn) ?? doc.functions[0];
    const list = h("table", { class: "data functions", "data-testid": "function-list" },
      h("thead", {}, h("tr", {}, ...["Function", "Samples", "Warp inst.", "Thread eff.",
        "Coalescing"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...doc.functions.map((f) => h("tr", {
        "data-function": f.name, class: f === picked ? "selected" : undefined,
        onclick: () => ctx.go(ctx.url({ fn: f.name, line: undefined, pc: undefined }), true),
      },
      h("td", { class: "mono name", title: f.mangled }, f.name),
      h("td", { class: "num" }, formatCount(f.samples)),
      h("td", { class: "num" }, formatCount(f.metrics?.warp_inst ?? null)),
      h("td", { class: "num" }, formatPct(f.metrics?.thread_efficiency_pct)),
      h("td", { class: "num" }, formatPct(f.metrics?.coalescing_efficiency_pct))))));
    const detail = h("div", { class: "function-detail" });
    show(panel, h("div", { class: "source-layout" }, h("div", {}, list), detail));
    load(ctx, detail, "the function's SASS", () => sessionApi.sass(ctx.id, picked.name), (s) => {
      show(detail, sassPanel(ctx, s));
      detail.querySelector("tr.selected")?.scrollIntoView({ block: "nearest" });
    });
  });
}

// ---- metrics ---------------------------------------------------------------------------------

function metricsView(ctx: Ctx, panel: HTMLElement): void {
  const from = ctx.params.get("mt0") ?? undefined;
  const to = ctx.params.get("mt1") ?? undefined;
  load(ctx, panel, "metrics", () => sessionApi.metrics(ctx.id, from, to), (doc) => {
    const plots = metricPlots(doc);
    if (!plots.length) {
      show(panel, emptyState(ctx, "metrics", "No device or host samples in this session"));
      return;
    }
    const zoomed = from !== undefined || to !== undefined;
    const boxes = plots.map((p) => h("div", { class: "plot", "data-testid": `plot-${p.key}` }));
    const onZoom = (a: number, b: number) => ctx.go(ctx.url({
      mt0: String(Math.floor(a * 1e9)), mt1: String(Math.ceil(b * 1e9)) }), true);
    show(panel,
      h("p", { class: "muted count", "data-testid": "metrics-range" },
        `${formatNs(doc.from_ns)} to ${formatNs(doc.to_ns)} in ${doc.points} buckets of `
        + `${formatNs(doc.bucket_ns)}; drag across a plot to zoom. `,
        zoomed ? h("a", { href: ctx.url({ mt0: undefined, mt1: undefined }), "data-link": true,
          "data-testid": "metrics-reset" }, "Whole session") : null),
      h("div", { class: "plots" }, ...boxes));
    plots.forEach((p, i) => drawPlot(boxes[i], p, onZoom));
  });
}

// ---- the page --------------------------------------------------------------------------------

function notFound(root: Element, id: string): void {
  show(root, h("section", { class: "state state-error", "data-testid": "session-not-found" },
    h("h1", {}, "Session not found"),
    h("p", {}, "This workspace has no session ", h("code", {}, id), "."),
    h("a", { href: "/sessions", "data-link": true }, "Go to the sessions list")));
}

function renderView(ctx: Ctx, view: View, panel: HTMLElement): void {
  switch (view) {
    case "overview": {
      const kernels = h("section", {}, h("h2", {}, "Kernels"), h("div", {}));
      const insights = h("section", {}, h("h2", {}, "Top insights"), h("div", {}));
      show(panel, kernels, insights);
      kernelsView(ctx, kernels.lastElementChild as HTMLElement, true);
      insightsView(ctx, insights.lastElementChild as HTMLElement, 3);
      return;
    }
    case "timeline": {
      const el = h("div", { class: "timeline-host", "data-testid": "timeline-host" });
      show(panel, el);
      unmountTimeline = mountTimeline(el, { sessionId: ctx.id, params: ctx.params, go: ctx.go });
      return;
    }
    case "kernels": return kernelsView(ctx, panel, false);
    case "scopes": return scopesView(ctx, panel);
    case "insights": return insightsView(ctx, panel);
    case "source": return sourceView(ctx, panel);
    case "metrics": return metricsView(ctx, panel);
  }
}

export function renderSession(root: Element, id: string, params: URLSearchParams, go: Go): void {
  const token = ++renderToken;
  unmountTimeline?.();
  unmountTimeline = undefined;
  const view = parseView(params);
  const live = () => token === renderToken;
  const rerender = () => renderSession(root, id, params, go);
  // The page's frame stays while its view changes: only a first visit shows the spinner.
  if (!root.querySelector(`[data-session-page="${CSS.escape(id)}"]`))
    show(root, h("div", { class: "state state-loading", role: "status",
      "data-testid": "session-loading" }, h("span", { class: "spinner" }), "Loading the session…"));
  Promise.all([sessionApi.summary(id), sessionApi.report(id), sessionApi.insights(id)]).then(
    ([summary, report, insights]) => {
      if (!live()) return;
      const ctx: Ctx = { id, params, go, summary, live,
        url: (patch) => sessionUrl(id, params, patch) };
      const f = headerFigures(report, rankInsights(insights));
      const refresh = () => {
        resetSessionCache(id);
        rerender();
      };
      const running = isRunning(summary) ? h("div", { class: "banner", role: "status",
        "data-testid": "session-running" },
      "This session is still being recorded: the figures are those of the lines that arrived "
        + "so far. ", h("button", { type: "button", onclick: refresh }, "Refresh")) : null;
      const panel = h("div", { class: "panel", role: "tabpanel", "data-testid": `panel-${view}` });
      show(root, h("section", { class: "session-page", "data-session-page": id },
        h("div", { class: "session-head" },
          h("div", {},
            h("h1", {}, summary.app_name ?? report.session.app ?? "(unnamed)"),
            h("p", { class: "muted mono" }, id,
              summary.hostname ? ` · ${summary.hostname}` : "",
              summary.capabilities?.engine ? ` · ${summary.capabilities.engine}` : "")),
          exportLinks(id)),
        running, figures(f, ctx), tabs(ctx, view), panel));
      document.title = `gpufl · ${summary.app_name ?? id} · ${LABELS[view]}`;
      renderView(ctx, view, panel);
    },
    (e) => {
      if (!live()) return;
      if (e instanceof ApiError && e.status === 404) {
        notFound(root, id);
      } else if (e instanceof ApiError && e.status === 401) {
        go(formatLocation("/login", { next: location.pathname + location.search }), true);
      } else {
        show(root, h("section", { class: "state state-error", role: "alert",
          "data-testid": "session-error" },
        h("h1", {}, "The session could not be loaded"), h("p", {}, errorText(e)),
        h("button", { type: "button", onclick: rerender }, "Retry")));
      }
    });
}

export { resetSessionCache };
