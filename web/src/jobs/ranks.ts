// SPDX-License-Identifier: Apache-2.0
// One job's sessions (ranks) side by side: per rank its wall time, GPU kernel time, kernels,
// its top kernels' time and its time in communication (NCCL kernels, by name); and the
// straggler: the rank whose figure differs most from the median rank's, with that metric and
// by how much. Pure functions over the server's sessions and kernels answers.

export interface RankSession {
  session_id: string;
  hostname: string | null;
  pid: number | null;
  duration_ns: number | null;
}

export interface KernelRow {
  name: string;
  count: number;
  total_ns: number;
}

export interface RankKernels {
  count: number;
  total_ns: number;
  kernels: KernelRow[];
}

export interface Rank {
  rank: number; // position in the job, by host, pid, session id
  session_id: string;
  host: string;
  pid: number | null;
  wall_ns: number | null; // null: the session has not ended (or died)
  gpu_ns: number; // summed kernel time
  kernels: number;
  comm_ns: number; // NCCL kernels' time
  compute_ns: number; // gpu_ns - comm_ns
  by_kernel: Map<string, number>; // total time per kernel name
}

/** Kernels that are communication: NCCL's (ncclKernel_AllReduce_..., ncclDevKernel_...). */
export function isComm(name: string): boolean {
  return /nccl/i.test(name);
}

/** The ranks of a job in a stable order (host, pid, session id), each with its figures. */
export function buildRanks(sessions: RankSession[], kernels: Map<string, RankKernels>): Rank[] {
  const sorted = [...sessions].sort(
    (a, b) =>
      (a.hostname ?? "").localeCompare(b.hostname ?? "") ||
      (a.pid ?? 0) - (b.pid ?? 0) ||
      a.session_id.localeCompare(b.session_id),
  );
  return sorted.map((s, i) => {
    const k = kernels.get(s.session_id);
    const by = new Map<string, number>();
    let comm = 0;
    for (const row of k?.kernels ?? []) {
      by.set(row.name, (by.get(row.name) ?? 0) + row.total_ns);
      if (isComm(row.name)) comm += row.total_ns;
    }
    const gpu = k?.total_ns ?? 0;
    return {
      rank: i,
      session_id: s.session_id,
      host: s.hostname ?? "",
      pid: s.pid,
      wall_ns: s.duration_ns,
      gpu_ns: gpu,
      kernels: k?.count ?? 0,
      comm_ns: comm,
      compute_ns: gpu - comm,
      by_kernel: by,
    };
  });
}

/** The median of numbers (the mean of the middle two for an even count); NaN for none. */
export function median(xs: number[]): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The kernel names that take the most time over all ranks (the columns of the table). */
export function topKernels(ranks: Rank[], n: number): string[] {
  const sum = new Map<string, number>();
  for (const r of ranks) for (const [k, t] of r.by_kernel) sum.set(k, (sum.get(k) ?? 0) + t);
  return [...sum.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, n)
    .map(([k]) => k);
}

export interface Straggler {
  rank: number;
  session_id: string;
  metric: string; // "wall time", "GPU time", "communication time", "GPU time in <kernel>"
  value_ns: number;
  median_ns: number;
  rel: number; // (value - median) / median: +0.18 is 18 % more
  text: string;
}

/** Deviations below this share of the median are noise: no straggler is named. */
export const STRAGGLER_MIN_REL = 0.05;

/** The metrics a straggler is judged on: the rank-level times and each top kernel's time. */
function metrics(ranks: Rank[], kernelNames: string[]): [string, (r: Rank) => number | null][] {
  const list: [string, (r: Rank) => number | null][] = [
    ["wall time", (r) => r.wall_ns],
    ["GPU time", (r) => r.gpu_ns],
    ["communication time", (r) => (ranks.some((x) => x.comm_ns > 0) ? r.comm_ns : null)],
  ];
  // A kernel some rank did not run is no measure of speed: ranks of one job may get different
  // library kernels (cuBLAS picks by shape), so only kernels every rank ran are compared.
  for (const k of kernelNames) list.push([`GPU time in ${k}`, (r) => r.by_kernel.get(k) ?? null]);
  return list;
}

/** Whether a deviation beats the best so far: farther from the median, or as far and above it
 * where the best is below (two ranks are always as far from their median: the slower one is
 * the straggler). Equal within rounding, as the two sides of a median of two are. */
function farther(rel: number, best: Straggler | null): boolean {
  if (!best) return true;
  const d = Math.abs(rel) - Math.abs(best.rel);
  if (Math.abs(d) <= 1e-9 * Math.abs(rel)) return rel > 0 && best.rel < 0;
  return d > 0;
}

/** The straggler of a job: over every metric, the rank whose value is farthest from the median
 * of the ranks (relative to it); null with fewer than 2 ranks or when no rank differs by
 * STRAGGLER_MIN_REL. Ties go to a rank above the median, then the first metric listed, then
 * the lower rank. */
export function findStraggler(ranks: Rank[], kernelNames: string[]): Straggler | null {
  if (ranks.length < 2) return null;
  let best: Straggler | null = null;
  for (const [metric, get] of metrics(ranks, kernelNames)) {
    const vals = ranks.map(get);
    if (vals.some((v) => v === null)) continue; // a rank without the figure: not comparable
    const med = median(vals as number[]);
    if (!(med > 0)) continue;
    ranks.forEach((r, i) => {
      const v = vals[i] as number;
      const rel = (v - med) / med;
      if (Math.abs(rel) < STRAGGLER_MIN_REL || !farther(rel, best)) return;
      best = { rank: r.rank, session_id: r.session_id, metric, value_ns: v, median_ns: med, rel, text: "" };
    });
  }
  if (!best) return null;
  const b = best as Straggler;
  const pct = Math.round(Math.abs(b.rel) * 100);
  b.text = `rank ${b.rank}: ${pct} % ${b.rel > 0 ? "more" : "less"} ${b.metric} than the median rank`;
  return b;
}

/** Nanoseconds for people: "812 ns", "3.40 µs", "12.5 ms", "4.20 s", "3 min 20 s". */
export function formatNs(ns: number | null): string {
  if (ns === null || !Number.isFinite(ns)) return "–";
  const a = Math.abs(ns);
  if (a < 1e3) return `${Math.round(ns)} ns`;
  const fix = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2));
  if (a < 1e6) return `${fix(ns / 1e3)} µs`;
  if (a < 1e9) return `${fix(ns / 1e6)} ms`;
  if (a < 60e9) return `${fix(ns / 1e9)} s`;
  const s = Math.round(ns / 1e9);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
