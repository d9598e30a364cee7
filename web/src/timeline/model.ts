// SPDX-License-Identifier: Apache-2.0
// The timeline's data: the server's tile answers merged into what one view draws (events and
// scopes once each, the downsampled buckets' counts, counter points), the lanes they go in (a
// lane per host thread and scope depth, per device and stream), launch → kernel arrows, and
// the order keyboard navigation walks.
import type { Range } from "./view";

export interface GpuEvent {
  kind: string; // kernel, copy, memset, sync
  name?: string | null;
  start_ns: number;
  end_ns?: number | null;
  device?: number | null;
  stream?: number | null;
  correlation?: number;
  tid?: number;
  launch_ns?: number;
}

export interface Span {
  tid: number;
  name?: string | null;
  depth: number;
  start_ns: number;
  end_ns: number | null;
}

export interface Bucket {
  bucket: number;
  from_ns: number;
  count: number;
  kept: number;
}

export interface Stat {
  min: number;
  mean: number;
  max: number;
}

export interface CounterSeries {
  device: number;
  buckets: ({ bucket: number; count: number } & Record<string, Stat | number>)[];
}

/** One answer of GET /api/v1/sessions/{id}/timeline with kinds (docs/server-api.md). */
export interface TileAnswer {
  from_ns: number;
  to_ns: number;
  total?: number;
  downsampled?: boolean;
  bucket_ns?: number;
  buckets?: Bucket[];
  events?: GpuEvent[];
  scopes?: {
    total: number;
    downsampled: boolean;
    bucket_ns?: number;
    buckets?: Bucket[];
    spans: Span[];
  };
  counters?: { points: number; bucket_ns: number; gpu: CounterSeries[] };
}

/** A range of time whose events were not all sent: count of them, kept of those drawn. */
export interface Density {
  from_ns: number;
  to_ns: number;
  count: number;
  kept: number;
}

export interface CounterPoint {
  t: number; // the bucket's middle
  mean: number;
  max: number;
}

export interface Merged {
  events: GpuEvent[]; // by start
  spans: Span[];
  density: Density[]; // GPU events downsampled
  scopeDensity: Density[];
  /** "device/column" → points by time */
  counters: Map<string, CounterPoint[]>;
  /** events that start in the view: exact where no tile was downsampled */
  inView: number;
  scopesInView: number;
}

export function eventId(e: GpuEvent): string {
  return `${e.kind}:${e.device ?? ""}:${e.stream ?? ""}:${e.start_ns}`;
}

function spanId(s: Span): string {
  return `${s.tid}:${s.depth}:${s.start_ns}`;
}

function densities(a: TileAnswer, buckets: Bucket[] | undefined, width: number | undefined,
                   out: Density[]): void {
  if (!buckets || !width) return;
  for (const b of buckets)
    if (b.count > b.kept)
      out.push({ from_ns: b.from_ns, to_ns: Math.min(b.from_ns + width, a.to_ns), count: b.count,
                 kept: b.kept });
}

/** The answers of one view's tiles, merged and cut to view. An event or span that several
 * answers hold (a coarser tile drawn in place of a finer one) is kept once. */
export function merge(answers: TileAnswer[], view: Range): Merged {
  const events: GpuEvent[] = [], spans: Span[] = [];
  const density: Density[] = [], scopeDensity: Density[] = [];
  const counters = new Map<string, CounterPoint[]>();
  const seenE = new Set<string>(), seenS = new Set<string>();
  let inView = 0, scopesInView = 0;
  for (const a of answers) {
    for (const e of a.events ?? []) {
      const end = e.end_ns ?? e.start_ns;
      if (end < view.t0 || e.start_ns >= view.t1) continue;
      const id = eventId(e);
      if (seenE.has(id)) continue;
      seenE.add(id);
      events.push(e);
    }
    for (const s of a.scopes?.spans ?? []) {
      if ((s.end_ns !== null && s.end_ns < view.t0) || s.start_ns >= view.t1) continue;
      const id = spanId(s);
      if (seenS.has(id)) continue;
      seenS.add(id);
      spans.push(s);
    }
    densities(a, a.buckets, a.bucket_ns, density);
    densities(a, a.scopes?.buckets, a.scopes?.bucket_ns, scopeDensity);
    // What starts in the view: a downsampled answer's buckets count what it did not send.
    if (a.downsampled && a.buckets && a.bucket_ns) {
      for (const b of a.buckets)
        if (b.from_ns + a.bucket_ns > view.t0 && b.from_ns < view.t1) inView += b.count;
    } else {
      for (const e of a.events ?? []) if (e.start_ns >= view.t0 && e.start_ns < view.t1) inView++;
    }
    if (a.scopes?.downsampled && a.scopes.buckets && a.scopes.bucket_ns) {
      for (const b of a.scopes.buckets)
        if (b.from_ns + a.scopes.bucket_ns > view.t0 && b.from_ns < view.t1) scopesInView += b.count;
    }
    const c = a.counters;
    for (const series of c?.gpu ?? []) {
      for (const b of series.buckets) {
        const t = a.from_ns + (b.bucket + 0.5) * c!.bucket_ns;
        for (const [col, v] of Object.entries(b)) {
          if (typeof v !== "object") continue;
          const key = `${series.device}/${col}`;
          let list = counters.get(key);
          if (!list) counters.set(key, (list = []));
          list.push({ t, mean: v.mean, max: v.max });
        }
      }
    }
  }
  events.sort((x, y) => x.start_ns - y.start_ns);
  spans.sort((x, y) => x.start_ns - y.start_ns);
  for (const list of counters.values()) list.sort((x, y) => x.t - y.t);
  if (!answers.some((a) => a.scopes?.downsampled)) scopesInView = spans.length;
  return { events, spans, density, scopeDensity, counters, inView, scopesInView };
}

/** A row of the timeline: a host thread's scopes at one depth, a stream's GPU work, or a
 * device's counter. */
export interface Lane {
  key: string;
  kind: "scope" | "stream" | "counter";
  label: string;
  tid?: number;
  depth?: number;
  device?: number;
  stream?: number;
  column?: string;
}

/** What lanes a session has: known lanes stay (so rows do not jump as tiles arrive), new ones
 * join in order: threads by tid with their depths, streams by device and stream, counters. */
export class Lanes {
  private threads = new Map<number, number>(); // tid → deepest depth
  private streams = new Set<string>();
  private counters = new Set<string>();
  private cache?: Lane[];

  add(m: Merged): void {
    for (const s of m.spans) this.thread(s.tid, s.depth);
    for (const e of m.events) {
      this.stream(e.device ?? 0, e.stream ?? 0);
      if (e.launch_ns !== undefined && e.tid !== undefined) this.thread(e.tid, 1);
    }
    for (const key of m.counters.keys())
      if (!this.counters.has(key)) this.counters.add(key), (this.cache = undefined);
  }

  private thread(tid: number, depth: number): void {
    if ((this.threads.get(tid) ?? 0) < depth) {
      this.threads.set(tid, depth);
      this.cache = undefined;
    }
  }

  private stream(device: number, stream: number): void {
    const key = `${device}/${stream}`;
    if (!this.streams.has(key)) {
      this.streams.add(key);
      this.cache = undefined;
    }
  }

  list(): Lane[] {
    if (this.cache) return this.cache;
    const out: Lane[] = [];
    for (const tid of [...this.threads.keys()].sort((a, b) => a - b))
      for (let d = 1; d <= this.threads.get(tid)!; d++)
        out.push({ key: `t/${tid}/${d}`, kind: "scope", tid, depth: d,
                   label: d === 1 ? `thread ${tid}` : "" });
    const pairs = [...this.streams].map((k) => k.split("/").map(Number))
      .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const [device, stream] of pairs)
      out.push({ key: `s/${device}/${stream}`, kind: "stream", device, stream,
                 label: `GPU ${device} · stream ${stream}` });
    for (const key of [...this.counters].sort()) {
      const [device, column] = key.split("/");
      out.push({ key: `c/${key}`, kind: "counter", device: Number(device), column,
                 label: `GPU ${device} · ${column}` });
    }
    return (this.cache = out);
  }
}

/** The lane an event is drawn in. */
export function laneKeyOf(e: GpuEvent): string {
  return `s/${e.device ?? 0}/${e.stream ?? 0}`;
}

export interface Arrow {
  tid: number;
  from_ns: number; // the launch call
  to: GpuEvent; // the kernel
}

/** Launch → kernel arrows: for the selected event alone when there is one, else for every
 * kernel drawn whose launch is known, up to cap (past it, arrows would hide the kernels). */
export function arrows(events: GpuEvent[], selected: string | undefined, cap = 200): Arrow[] {
  const out: Arrow[] = [];
  for (const e of events) {
    if (e.launch_ns === undefined || e.tid === undefined) continue;
    if (selected !== undefined && eventId(e) !== selected) continue;
    out.push({ tid: e.tid, from_ns: e.launch_ns, to: e });
    if (out.length >= cap) break;
  }
  return out;
}

/** Keyboard navigation: the kernel after (step 1) or before (-1) the one with id from, by
 * start; with no from, the first kernel at or after t (step 1) or the last before it. */
export function nextKernel(events: GpuEvent[], from: string | undefined, step: 1 | -1,
                           t: number): GpuEvent | undefined {
  const kernels = events.filter((e) => e.kind === "kernel");
  if (!kernels.length) return undefined;
  let i = from === undefined ? -1 : kernels.findIndex((e) => eventId(e) === from);
  if (i < 0) {
    i = kernels.findIndex((e) => e.start_ns >= t);
    if (step === 1) return i < 0 ? undefined : kernels[i];
    return i < 0 ? kernels[kernels.length - 1] : i > 0 ? kernels[i - 1] : undefined;
  }
  return kernels[i + step];
}

/** A stable colour index of a name (kernels of one name look alike everywhere). */
export function hueOf(name: string | null | undefined): number {
  let h = 2166136261;
  for (const c of name ?? "") h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  return (h >>> 0) % 360;
}
