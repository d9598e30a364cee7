// SPDX-License-Identifier: Apache-2.0
// The source and SASS view's data shaping: a function's source lines hottest first, the stall
// reasons of a line or instruction as stacked bar segments, and which instructions belong to a
// line (GET /api/v1/sessions/{id}/functions and functions/sass, docs/server-api.md).

export interface SassMetrics {
  warp_inst: number | null;
  thread_inst: number | null;
  thread_efficiency_pct: number | null;
  idle_lanes: number | null;
  requests: number | null;
  sectors: number | null;
  sectors_ideal: number | null;
  sectors_per_request: number | null;
  ideal_sectors_per_request: number | null;
  coalescing_efficiency_pct: number | null;
  excess_sectors: number | null;
}

export interface FunctionEntry {
  name: string;
  mangled: string;
  instructions: number;
  samples: number;
  reasons: Record<string, number>;
  metrics: SassMetrics | null;
}

export interface FunctionsDoc {
  total: number;
  truncated: boolean;
  pc_sampling: boolean;
  sass_metrics: boolean;
  functions: FunctionEntry[];
}

export interface Instruction {
  cubin: string;
  pc: number;
  sass: string | null;
  file: string | null;
  line: number | null;
  samples: number;
  reasons: Record<string, number>;
  metrics: SassMetrics | null;
}

export interface SourceLine {
  file: string | null;
  line: number | null;
  pcs: number[];
  samples: number;
  reasons: Record<string, number>;
  metrics: SassMetrics | null;
}

export interface FunctionSass {
  name: string;
  mangled: string;
  truncated: boolean;
  pc_sampling: boolean;
  sass_metrics: boolean;
  samples: number;
  reasons: Record<string, number>;
  metrics: SassMetrics | null;
  instructions: Instruction[];
  lines: SourceLine[];
}

/** A line's key as the URL keeps it ("file:line"; "(no line info)" for instructions without). */
export function lineKey(l: { file: string | null; line: number | null }): string {
  return l.file === null || l.line === null ? "(no line info)" : `${l.file}:${l.line}`;
}

/** Lines hottest first: by PC samples, then by the lanes and sectors they waste, then by warp
 * instructions; ties in file and line order. */
export function hottestLines(lines: SourceLine[]): SourceLine[] {
  const waste = (l: SourceLine) => (l.metrics?.idle_lanes ?? 0) + (l.metrics?.excess_sectors ?? 0);
  return lines
    .map((l, at) => ({ l, at }))
    .sort((a, b) => b.l.samples - a.l.samples || waste(b.l) - waste(a.l) ||
      (b.l.metrics?.warp_inst ?? 0) - (a.l.metrics?.warp_inst ?? 0) || a.at - b.at)
    .map((x) => x.l);
}

export interface Segment {
  reason: string;
  samples: number;
  /** 0..1 of the bar's full width (the hottest row's samples). */
  width: number;
}

/** A row's stall reasons as segments of a bar scaled to `scale` samples: most frequent first,
 * "selected" (the warp issued) last so the stalls read first. */
export function reasonSegments(reasons: Record<string, number>, scale: number): Segment[] {
  return Object.entries(reasons)
    .filter(([, n]) => n > 0)
    .sort((a, b) => (a[0] === "selected" ? 1 : 0) - (b[0] === "selected" ? 1 : 0) ||
      b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([reason, samples]) => ({ reason, samples, width: scale > 0 ? samples / scale : 0 }));
}

/** The stall reasons of a function, most samples first: the legend's order and colours. */
export function reasonOrder(reasons: Record<string, number>): string[] {
  return reasonSegments(reasons, 1).map((s) => s.reason);
}

/** The pcs of the line a key names; the line of an instruction. */
export function pcsOfLine(sass: FunctionSass, key: string): Set<number> {
  const l = sass.lines.find((x) => lineKey(x) === key);
  return new Set(l?.pcs ?? []);
}

export function lineOfPc(sass: FunctionSass, pc: number): string | null {
  const i = sass.instructions.find((x) => x.pc === pc);
  return i ? lineKey(i) : null;
}
