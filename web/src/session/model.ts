// SPDX-License-Identifier: Apache-2.0
// One session's data shaping, free of the DOM so that it is unit-tested: the header's figures
// from the report JSON (docs/report-json.md), the view state in the URL, the kernel table, the
// insights ranked with their evidence links, the scope tree's visible rows and the capability
// record's reason for data an engine did not record.
import { formatLocation } from "../router";

export const VIEWS = ["overview", "timeline", "kernels", "scopes", "insights", "source",
  "metrics"] as const;
export type View = (typeof VIEWS)[number];

export interface Feature {
  on: boolean;
  why?: string;
}

/** GET /api/v1/sessions/{id} (docs/server-api.md). */
export interface SessionSummary {
  session_id: string;
  app_name: string | null;
  hostname: string | null;
  state: string;
  completed_at: number | null;
  engine: string | null;
  capabilities: {
    engine?: string;
    engine_requested?: string;
    features?: Record<string, Feature>;
  } | null;
  devices: { device: number; name?: string }[];
}

export interface Insight {
  rule: string;
  category: string;
  severity: string;
  title: string;
  message: string;
  advice: string;
  file?: string;
  line?: number;
  function?: string;
  kernel?: string;
  evidence: { name: string; value: number; unit: string }[];
}

interface Stat {
  avg: number | null;
}

/** The parts of the report JSON the page reads. */
export interface Report {
  session: { duration_ns: number | null; ended: boolean; app: string | null };
  insights: { findings: { severity: string; title: string }[] };
  gpus: { device: number; metrics: Record<string, Stat | undefined>; idle_pct: number | null }[];
  kernels: { count: number; distinct_names: number; total_ns: number } | null;
  kernel_details: {
    kernels: { name: string; configs: { calls: number; occupancy_pct: number | null;
      limiter: string | null }[] }[];
  } | null;
  kernel_launches: { count: number; kernel_names: number } | null;
}

export interface HistogramBucket {
  from_ns: number;
  to_ns: number;
  count: number;
}

/** A row of GET /api/v1/sessions/{id}/kernels. */
export interface KernelStat {
  name: string;
  count: number;
  total_ns: number;
  mean_ns: number;
  min_ns: number;
  p50_ns: number;
  p90_ns: number;
  p99_ns: number;
  max_ns: number;
  histogram?: HistogramBucket[];
}

export interface KernelsDoc {
  count: number;
  distinct_names: number;
  total_ns: number;
  truncated: boolean;
  kernels: KernelStat[];
}

// ---- formatting ------------------------------------------------------------------------------

/** A duration in ns, in the unit that keeps 3 significant digits: "1.23 ms". */
export function formatNs(ns: number | null | undefined): string {
  if (ns === null || ns === undefined || !Number.isFinite(ns)) return "—";
  const a = Math.abs(ns);
  const units: [number, string][] = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"]];
  for (const [scale, unit] of units) if (a >= scale) return `${fmt3(ns / scale)} ${unit}`;
  return `${Math.round(ns)} ns`;
}

function fmt3(v: number): string {
  const a = Math.abs(v);
  return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
}

export function formatPct(p: number | null | undefined): string {
  if (p === null || p === undefined || !Number.isFinite(p)) return "—";
  return `${p.toFixed(1)}%`;
}

export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  return n.toLocaleString("en-US");
}

// ---- the view in the URL ---------------------------------------------------------------------

export function parseView(params: URLSearchParams): View {
  const v = params.get("view") ?? "";
  return (VIEWS as readonly string[]).includes(v) ? (v as View) : "overview";
}

/** The session page's URL with some parameters changed (undefined or "" removes one; a list
 * sets it once per value). Parameters the patch does not name are kept. */
export function sessionUrl(id: string, params: URLSearchParams,
                           patch: Record<string, string | string[] | undefined>): string {
  const q = new URLSearchParams(params);
  for (const [k, v] of Object.entries(patch)) {
    q.delete(k);
    if (Array.isArray(v)) for (const x of v) q.append(k, x);
    else if (v !== undefined && v !== "") q.set(k, v);
  }
  if (q.get("view") === "overview") q.delete("view");
  const s = q.toString();
  return `/sessions/${encodeURIComponent(id)}${s ? "?" + s : ""}`;
}

/** Whether the session is still being recorded (neither ended nor completed). */
export function isRunning(s: SessionSummary): boolean {
  return s.state !== "ended" && s.state !== "complete" && s.completed_at === null;
}

// ---- the header ------------------------------------------------------------------------------

export interface HeaderFigures {
  wallNs: number | null;
  busyPct: number | null;
  idlePct: number | null;
  /** Where busy and idle come from, said beside them. */
  busySource: string;
  kernels: number | null;
  kernelNames: number | null;
  kernelsTimed: boolean;
  topInsight: Insight | null;
}

function evidence(i: Insight, name: string): number | undefined {
  return i.evidence.find((e) => e.name === name)?.value;
}

function mean(values: number[]): number | null {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
}

/** The header's figures, each one the report's: the wall time, the GPUs' busy and idle share
 * (NVML's utilization and the report's idle_pct where devices were sampled, else the gpu_idle
 * insight's idle share of the kernels' span), the kernels and the top insight. */
export function headerFigures(report: Report, ranked: Insight[]): HeaderFigures {
  const sampled = report.gpus.filter((g) => g.metrics?.gpu_util_pct?.avg != null);
  let busyPct: number | null = null;
  let idlePct: number | null = null;
  let busySource = "no GPU samples or kernels";
  if (sampled.length) {
    busyPct = mean(sampled.map((g) => g.metrics.gpu_util_pct!.avg!));
    idlePct = mean(sampled.filter((g) => g.idle_pct != null).map((g) => g.idle_pct!));
    busySource = `NVML utilization, ${sampled.length} GPU${sampled.length === 1 ? "" : "s"}`;
  } else {
    const idle = ranked.find((i) => i.rule === "gpu_idle");
    const pct = idle ? evidence(idle, "idle_pct") : undefined;
    if (pct !== undefined) {
      idlePct = pct;
      busyPct = 100 - pct;
      busySource = "kernels over their span (gpu_idle)";
    } else if (report.kernels && report.session.duration_ns) {
      busyPct = (100 * report.kernels.total_ns) / report.session.duration_ns;
      busySource = "kernel time ÷ wall time";
    }
  }
  // Launches stand in for kernels only where the engine records launches, not kernels.
  const timed = report.kernels !== null || report.kernel_launches === null;
  return {
    wallNs: report.session.duration_ns,
    busyPct,
    idlePct,
    busySource,
    kernels: report.kernels?.count ?? report.kernel_launches?.count ?? null,
    kernelNames: report.kernels?.distinct_names ?? report.kernel_launches?.kernel_names ?? null,
    kernelsTimed: timed,
    topInsight: ranked[0] ?? null,
  };
}

// ---- insights --------------------------------------------------------------------------------

const SEVERITY: Record<string, number> = { HIGH: 0, MEDIUM: 1, LOW: 2 };

/** The time an insight puts at stake: its largest duration evidence (idle, blocked, kernel or
 * copy time), never a start time or a span. 0 when it names none. */
export function timeAtStake(i: Insight): number {
  let best = 0;
  for (const e of i.evidence)
    if (e.unit === "ns" && !/(start_ns|span_ns)$/.test(e.name) && e.value > best) best = e.value;
  return best;
}

/** Insights by severity, then by time at stake (most first); ties keep the engine's order. */
export function rankInsights(list: Insight[]): Insight[] {
  return list
    .map((i, at) => ({ i, at }))
    .sort((a, b) =>
      (SEVERITY[a.i.severity] ?? 3) - (SEVERITY[b.i.severity] ?? 3) ||
      timeAtStake(b.i) - timeAtStake(a.i) || a.at - b.at)
    .map((x) => x.i);
}

export interface EvidenceLink {
  kind: "source" | "kernel" | "span";
  label: string;
  url: string;
}

/** Where an insight's evidence is on the page: its source line (the source view at that line),
 * its kernel (the kernel table's row) and its time span (the timeline from t0 to t1: the first
 * gap an idle insight names). */
export function evidenceLinks(id: string, i: Insight): EvidenceLink[] {
  const out: EvidenceLink[] = [];
  const base = `/sessions/${encodeURIComponent(id)}`;
  if (i.file && i.line != null) {
    const fn = i.function ?? i.kernel;
    out.push({
      kind: "source",
      label: `${i.file}:${i.line}`,
      url: formatLocation(base, { view: "source", fn, line: `${i.file}:${i.line}` }),
    });
  }
  if (i.kernel)
    out.push({ kind: "kernel", label: i.kernel,
      url: formatLocation(base, { view: "kernels", kernel: i.kernel }) });
  const start = evidence(i, "gap1_start_ns");
  const len = evidence(i, "gap1_ns");
  if (start !== undefined && len !== undefined)
    out.push({ kind: "span", label: `${formatNs(len)} at ${formatNs(start)}`,
      url: formatLocation(base, { view: "timeline", t0: String(start),
        t1: String(start + len) }) });
  return out;
}

// ---- kernels ---------------------------------------------------------------------------------

export interface KernelRow extends KernelStat {
  sharePct: number;
  /** Occupancy of its launch configurations (min and max; equal with one), null unknown. */
  occupancy: { min: number; max: number } | null;
  limiter: string | null;
}

export const KERNEL_SORTS = ["name", "count", "total", "share", "mean", "p50", "p90", "p99",
  "max", "occupancy"] as const;
export type KernelSort = (typeof KERNEL_SORTS)[number];

/** The kernel table: the kernels route's rows with their share of all kernel time, and the
 * occupancy and limiter of their configurations from the report's kernel_details. */
export function kernelRows(doc: KernelsDoc, report: Report | null): KernelRow[] {
  const details = new Map((report?.kernel_details?.kernels ?? []).map((k) => [k.name, k]));
  return doc.kernels.map((k) => {
    const configs = details.get(k.name)?.configs ?? [];
    const occ = configs.map((c) => c.occupancy_pct).filter((v): v is number => v != null);
    const limiters = [...new Set(configs.map((c) => c.limiter).filter((v): v is string => !!v))];
    return {
      ...k,
      sharePct: doc.total_ns ? (100 * k.total_ns) / doc.total_ns : 0,
      occupancy: occ.length ? { min: Math.min(...occ), max: Math.max(...occ) } : null,
      limiter: limiters.length ? limiters.join(", ") : null,
    };
  });
}

function sortValue(r: KernelRow, key: KernelSort): number | string {
  switch (key) {
    case "name": return r.name;
    case "count": return r.count;
    case "total": case "share": return r.total_ns;
    case "mean": return r.mean_ns;
    case "p50": return r.p50_ns;
    case "p90": return r.p90_ns;
    case "p99": return r.p99_ns;
    case "max": return r.max_ns;
    case "occupancy": return r.occupancy ? r.occupancy.min : -1;
  }
}

export function parseKernelSort(params: URLSearchParams): { key: KernelSort; desc: boolean } {
  const k = params.get("sort") ?? "";
  const key = (KERNEL_SORTS as readonly string[]).includes(k) ? (k as KernelSort) : "total";
  const dir = params.get("dir");
  return { key, desc: dir ? dir !== "asc" : key !== "name" };
}

/** Rows sorted by a column; ties by name so the order is stable. */
export function sortKernels(rows: KernelRow[], key: KernelSort, desc: boolean): KernelRow[] {
  return [...rows].sort((a, b) => {
    const x = sortValue(a, key), y = sortValue(b, key);
    const c = typeof x === "string" ? x.localeCompare(y as string) : (x as number) - (y as number);
    return (desc ? -c : c) || a.name.localeCompare(b.name);
  });
}

// ---- the capability record -------------------------------------------------------------------

/** The features that record each view's data (the capability record's names). */
const VIEW_FEATURES: Partial<Record<View, string[]>> = {
  timeline: ["cupti_trace"],
  kernels: ["cupti_trace"],
  source: ["pc_sampling", "sass_metrics"],
  metrics: ["nvml", "host_metrics"],
};

/** Why a view has no data, from the capability record: the reasons of its features that were
 * off ("" when the record names none or has none). */
export function missingReason(s: SessionSummary, view: View): string {
  const features = s.capabilities?.features ?? {};
  const reasons: string[] = [];
  for (const name of VIEW_FEATURES[view] ?? []) {
    const f = features[name];
    if (f && !f.on) reasons.push(`${name}: ${f.why ?? "off"}`);
  }
  return reasons.join("; ");
}
