// SPDX-License-Identifier: Apache-2.0
// The fleet page's data shaping, free of the DOM: the time range in the URL, the heatmap's rows
// (GPUs grouped by host), its metrics (utilization, SM activity, "wasted"), the colour scale,
// hit testing, health events on the time axis, usage units and the live tiles' state.

export interface HeatGpu {
  uuid: string | null;
  name: string | null;
  hostname: string | null;
  device: number;
  session_id: string;
  gpu_util_pct: (number | null)[];
  sm_active_pct: (number | null)[];
  held: (number | null)[];
}

export interface Heatmap {
  from_unix_us: number;
  to_unix_us: number;
  points: number;
  bucket_us: number;
  gpus: HeatGpu[];
  truncated: boolean;
}

export interface HealthEvent {
  unix_us: number;
  end_unix_us?: number;
  uuid: string | null;
  hostname: string | null;
  device: number;
  session_id: string;
  kind: "xid" | "ecc_sbe" | "ecc_dbe" | "throttle" | "gpu_lost";
  detail: string;
}

export interface UsageRow {
  hostname?: string;
  pid?: number;
  comm?: string | null;
  user?: string | null;
  job_id?: string | null;
  gpus: number;
  gpu_seconds: number;
  gpu_hours: number;
  energy_j: number;
  energy_kwh: number;
}

export type Metric = "util" | "sm" | "wasted";
export const METRICS: Metric[] = ["util", "sm", "wasted"];
export const PRESETS: Record<string, number> = { "1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400 };

export interface Range {
  from_us: number;
  to_us: number;
  preset: string | null;
}

/** The range a URL's parameters name: from/to (unix µs), else a preset (default 24h) ending
 * now. Bad values fall back to the default rather than failing the page. */
export function parseRange(p: URLSearchParams, nowUs: number): Range {
  const from = Number(p.get("from"));
  const to = Number(p.get("to"));
  if (p.get("from") && p.get("to") && Number.isFinite(from) && Number.isFinite(to) && from < to)
    return { from_us: Math.floor(from), to_us: Math.floor(to), preset: null };
  const preset = p.get("range") && PRESETS[p.get("range")!] ? p.get("range")! : "24h";
  return { from_us: nowUs - PRESETS[preset] * 1e6, to_us: nowUs, preset };
}

export function parseMetric(p: URLSearchParams): Metric {
  const m = p.get("metric") as Metric;
  return METRICS.includes(m) ? m : "util";
}

/** "Wasted" per cell, 0..100: a GPU allocated to a process but idle (held, utilization under
 * 5 %) is wholly wasted; a busy one is wasted by the part of its utilization the SMs did not
 * back (utilization says a kernel ran, SM activity how much of the GPU worked). null: no data. */
export function wasted(util: number | null, sm: number | null, held: number | null): number | null {
  if (util === null) return held ? 100 : null;
  if (held && util < 5) return 100;
  if (sm === null) return 0;
  return Math.max(0, Math.round((util - sm) * 10) / 10);
}

export function cellValue(g: HeatGpu, b: number, metric: Metric): number | null {
  if (metric === "util") return g.gpu_util_pct[b] ?? null;
  if (metric === "sm") return g.sm_active_pct[b] ?? null;
  return wasted(g.gpu_util_pct[b] ?? null, g.sm_active_pct[b] ?? null, g.held[b] ?? null);
}

/** GPUs in host order, then device: the rows of the heatmap, with where each host begins. */
export function rowsByHost(gpus: HeatGpu[]): { rows: HeatGpu[]; hosts: { hostname: string; first: number; count: number }[] } {
  const rows = [...gpus].sort((a, b) =>
    (a.hostname ?? "").localeCompare(b.hostname ?? "") || a.device - b.device ||
    (a.uuid ?? "").localeCompare(b.uuid ?? ""));
  const hosts: { hostname: string; first: number; count: number }[] = [];
  rows.forEach((g, i) => {
    const name = g.hostname ?? "(unknown host)";
    if (hosts.length && hosts[hosts.length - 1].hostname === name) hosts[hosts.length - 1].count++;
    else hosts.push({ hostname: name, first: i, count: 1 });
  });
  return { rows, hosts };
}

/** A 0..100 value as an RGB colour: dark blue (0) through teal and yellow to red (100); wasted
 * runs the same ramp, so red always means "look here". */
export function colour(v: number): [number, number, number] {
  const stops: [number, number, number, number][] = [
    [0, 30, 40, 90], [40, 30, 150, 150], [75, 240, 200, 40], [100, 220, 50, 40]];
  const x = Math.max(0, Math.min(100, v));
  for (let i = 1; i < stops.length; i++) {
    const [x1, r1, g1, b1] = stops[i];
    const [x0, r0, g0, b0] = stops[i - 1];
    if (x <= x1) {
      const t = (x - x0) / (x1 - x0);
      return [Math.round(r0 + t * (r1 - r0)), Math.round(g0 + t * (g1 - g0)), Math.round(b0 + t * (b1 - b0))];
    }
  }
  return [220, 50, 40];
}

/** The cell under a point of a grid of cols x rows drawn in width x height; null outside. */
export function hit(x: number, y: number, width: number, height: number, cols: number, rows: number): { col: number; row: number } | null {
  if (x < 0 || y < 0 || x >= width || y >= height || !cols || !rows) return null;
  return { col: Math.floor((x / width) * cols), row: Math.floor((y / height) * rows) };
}

/** Where a wall-clock time falls on an axis of width px for the range; clamped. */
export function xOf(unixUs: number, fromUs: number, toUs: number, width: number): number {
  return Math.max(0, Math.min(width, ((unixUs - fromUs) / (toUs - fromUs)) * width));
}

export function fmtHours(h: number): string {
  return h >= 100 ? h.toFixed(0) : h >= 1 ? h.toFixed(2) : h.toFixed(4);
}

export function fmtKwh(k: number): string {
  return k >= 100 ? k.toFixed(0) : k >= 1 ? k.toFixed(2) : k.toFixed(5);
}

/** A live `sample` event's devices merged into the tiles' state, keyed session/device. */
export interface LiveReading {
  ts_ns: number;
  device: number;
  gpu_util_pct?: number | null;
  mem_used_bytes?: number | null;
  mem_total_bytes?: number | null;
  power_mw?: number | null;
  temp_gpu_c?: number | null;
}

export function tileKey(sessionId: string, device: number): string {
  return `${sessionId}/${device}`;
}

export function mergeLive(state: Map<string, LiveReading>, sessionId: string, devices: LiveReading[]): string[] {
  const changed: string[] = [];
  for (const d of devices) {
    const k = tileKey(sessionId, d.device);
    const old = state.get(k);
    if (old && old.ts_ns > d.ts_ns) continue; // a late window never rolls a tile back
    state.set(k, d);
    changed.push(k);
  }
  return changed;
}

export function fmtTile(r: LiveReading): { util: string; mem: string; power: string; temp: string } {
  const gib = (b: number) => (b / 2 ** 30).toFixed(1);
  return {
    util: r.gpu_util_pct == null ? "–" : `${r.gpu_util_pct} %`,
    mem: r.mem_used_bytes == null ? "–" : r.mem_total_bytes ? `${gib(r.mem_used_bytes)} / ${gib(r.mem_total_bytes)} GiB` : `${gib(r.mem_used_bytes)} GiB`,
    power: r.power_mw == null ? "–" : `${(r.power_mw / 1000).toFixed(0)} W`,
    temp: r.temp_gpu_c == null ? "–" : `${r.temp_gpu_c} °C`,
  };
}
