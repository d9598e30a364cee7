// SPDX-License-Identifier: Apache-2.0
// Two runs compared: what got slower, faster, appeared or vanished between a baseline session
// and a run, for kernels (per name), scopes (per path) and insights (per rule and place), each
// with its change in time and in share of its session, sorted by the time at stake. Pure
// functions over the server's answers (kernels, scopes, insights), unit-tested beside.

export type Change = "slower" | "faster" | "appeared" | "vanished" | "same";

/** One item's time in one session: keyed by a stable identity (name, path, rule and place). */
export interface Measured {
  key: string;
  label: string;
  time_ns: number;
}

export interface DiffRow {
  key: string;
  label: string;
  change: Change;
  base_ns: number | null; // null: absent from the baseline
  run_ns: number | null; // null: absent from the run
  delta_ns: number; // run - base (an absent side counts as 0)
  base_share: number | null; // of the baseline's total, 0..1
  run_share: number | null;
  delta_share: number; // run_share - base_share, in share points (0..1 scale)
}

/** A time's share of a total: 0 for a total of 0 (nothing to divide, never NaN). */
export function share(time: number, total: number): number {
  return total > 0 ? time / total : 0;
}

/** Relative changes smaller than this (and under 1 µs) read as "same": noise, not a finding. */
export const SAME_REL = 0.01;
export const SAME_ABS_NS = 1000;

function classify(base: number | null, run: number | null): Change {
  if (base === null) return "appeared";
  if (run === null) return "vanished";
  const d = run - base;
  if (Math.abs(d) < SAME_ABS_NS || Math.abs(d) <= SAME_REL * Math.max(base, run)) return "same";
  return d > 0 ? "slower" : "faster";
}

/** The diff of two lists by key: one row per key of either, sorted by the time at stake
 * (|delta|) descending, then by the larger time, then by key (ties give a stable order).
 * baseTotal and runTotal are the sessions' totals the shares are of. A key present twice in
 * one list is summed (the same name in two modules is one kernel to the user). */
export function diff(
  base: Measured[],
  run: Measured[],
  baseTotal: number,
  runTotal: number,
): DiffRow[] {
  const sum = (list: Measured[]) => {
    const m = new Map<string, Measured>();
    for (const x of list) {
      const had = m.get(x.key);
      m.set(x.key, had ? { ...had, time_ns: had.time_ns + x.time_ns } : { ...x });
    }
    return m;
  };
  const b = sum(base);
  const r = sum(run);
  const keys = new Set([...b.keys(), ...r.keys()]);
  const rows: DiffRow[] = [];
  for (const key of keys) {
    const x = b.get(key);
    const y = r.get(key);
    const bn = x ? x.time_ns : null;
    const rn = y ? y.time_ns : null;
    const bs = bn === null ? null : share(bn, baseTotal);
    const rs = rn === null ? null : share(rn, runTotal);
    rows.push({
      key,
      label: (y ?? x)!.label,
      change: classify(bn, rn),
      base_ns: bn,
      run_ns: rn,
      delta_ns: (rn ?? 0) - (bn ?? 0),
      base_share: bs,
      run_share: rs,
      delta_share: (rs ?? 0) - (bs ?? 0),
    });
  }
  rows.sort(
    (p, q) =>
      Math.abs(q.delta_ns) - Math.abs(p.delta_ns) ||
      Math.max(q.base_ns ?? 0, q.run_ns ?? 0) - Math.max(p.base_ns ?? 0, p.run_ns ?? 0) ||
      (p.key < q.key ? -1 : p.key > q.key ? 1 : 0),
  );
  return rows;
}

/** Rows counted by change: the summary line above each table. */
export function countChanges(rows: DiffRow[]): Record<Change, number> {
  const out: Record<Change, number> = { slower: 0, faster: 0, appeared: 0, vanished: 0, same: 0 };
  for (const r of rows) out[r.change]++;
  return out;
}

// ---- the server's answers as Measured lists ----------------------------------------------

export interface KernelStat {
  name: string;
  count: number;
  total_ns: number;
}
export interface KernelsAnswer {
  total_ns: number;
  kernels: KernelStat[];
}

export function kernelsMeasured(k: KernelsAnswer): Measured[] {
  return k.kernels.map((x) => ({ key: x.name, label: x.name, time_ns: x.total_ns }));
}

export interface ScopeNode {
  path: string;
  total_ns: number;
  gpu_ns?: number;
  children?: ScopeNode[];
}

/** Every scope path of a tree with its host time (a parent's time includes its children's). */
export function scopesMeasured(tree: ScopeNode[]): Measured[] {
  const out: Measured[] = [];
  const walk = (nodes: ScopeNode[]) => {
    for (const n of nodes) {
      out.push({ key: n.path, label: n.path, time_ns: n.total_ns });
      if (n.children) walk(n.children);
    }
  };
  walk(tree);
  return out;
}

/** The scopes' total: the roots' time (children are inside their parents). */
export function scopesTotal(tree: ScopeNode[]): number {
  return tree.reduce((s, n) => s + n.total_ns, 0);
}

export interface Insight {
  rule: string;
  severity: string;
  title: string;
  kernel?: string;
  file?: string;
  line?: number;
  function?: string;
  evidence?: { name: string; value: number; unit: string }[];
}

/** An insight's identity across runs: its rule and what it is about (the kernel, or the source
 * place), never its title (which carries the run's figures). */
export function insightKey(i: Insight): string {
  const where = i.kernel ?? (i.file ? `${i.file}:${i.line ?? ""}` : "") + (i.function ? ` ${i.function}` : "");
  return `${i.rule}|${where}`;
}

/** The time an insight puts at stake: its largest evidence in ns (0 when it gives none). */
export function insightTime(i: Insight): number {
  let t = 0;
  for (const e of i.evidence ?? []) if (e.unit === "ns" && e.value > t) t = e.value;
  return t;
}

export function insightsMeasured(list: Insight[]): Measured[] {
  return list.map((i) => ({
    key: insightKey(i),
    label: `[${i.severity}] ${i.rule}${i.kernel ? ` · ${i.kernel}` : i.file ? ` · ${i.file.split("/").pop()}:${i.line ?? ""}` : ""}`,
    time_ns: insightTime(i),
  }));
}
