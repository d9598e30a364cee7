// SPDX-License-Identifier: Apache-2.0
// The numbers behind the session page's charts: the duration histogram's bars on a log axis,
// and the metric plots' aligned series from GET /api/v1/sessions/{id}/metrics buckets.
import type { HistogramBucket } from "./model";

export interface Bar {
  /** 0..1 across the plot (log of the duration) and 0..1 of the tallest bar. */
  x0: number;
  x1: number;
  height: number;
  bucket: HistogramBucket;
}

/** The log-scaled axis of a histogram: its low and high ends in ns (a 0 ns bucket is drawn
 * from 0.5 ns). */
export function histogramRange(buckets: HistogramBucket[]): [number, number] {
  const lo = Math.max(0.5, Math.min(...buckets.map((b) => b.from_ns)));
  const hi = Math.max(...buckets.map((b) => b.to_ns));
  return [lo, Math.max(hi, lo * 2)];
}

export function histogramBars(buckets: HistogramBucket[]): Bar[] {
  if (!buckets.length) return [];
  const [lo, hi] = histogramRange(buckets);
  const span = Math.log(hi) - Math.log(lo);
  const pos = (ns: number) => (Math.log(Math.max(ns, 0.5)) - Math.log(lo)) / span;
  const top = Math.max(...buckets.map((b) => b.count));
  return buckets.map((b) => ({ x0: pos(b.from_ns), x1: pos(b.to_ns), height: b.count / top,
    bucket: b }));
}

/** Durations at each power of ten inside [lo, hi]: the axis ticks. */
export function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let t = Math.pow(10, Math.ceil(Math.log10(lo))); t <= hi; t *= 10) out.push(t);
  return out;
}

type Stats = { min: number; mean: number; max: number };
export interface MetricBucket {
  bucket: number;
  count: number;
  [column: string]: number | Stats;
}

export interface MetricsDoc {
  from_ns: number;
  to_ns: number;
  points: number;
  bucket_ns: number;
  gpu: { device: number; buckets: MetricBucket[] }[];
  host: { buckets: MetricBucket[] } | null;
}

export interface Plot {
  key: string;
  title: string;
  unit: string;
  /** Seconds on the session clock, one per bucket some series has. */
  x: number[];
  series: { label: string; values: (number | null)[] }[];
}

interface PlotSpec {
  key: string;
  title: string;
  unit: string;
  source: "gpu" | "host";
  columns: [string, string][]; // column, label
  scale: number;
}

const PLOTS: PlotSpec[] = [
  { key: "util", title: "GPU utilization", unit: "%", source: "gpu", scale: 1,
    columns: [["gpu_util_pct", "GPU"], ["mem_util_pct", "memory"], ["sm_active_pct", "SM active"]] },
  { key: "memory", title: "GPU memory used", unit: "GiB", source: "gpu", scale: 2 ** -30,
    columns: [["mem_used_bytes", "used"]] },
  { key: "power", title: "Power", unit: "W", source: "gpu", scale: 1e-3,
    columns: [["power_mw", "power"]] },
  { key: "clocks", title: "Clocks", unit: "MHz", source: "gpu", scale: 1,
    columns: [["clock_sm_mhz", "SM"], ["clock_mem_mhz", "memory"]] },
  { key: "temperature", title: "Temperature", unit: "°C", source: "gpu", scale: 1,
    columns: [["temp_gpu_c", "GPU"], ["temp_mem_c", "memory"]] },
  { key: "host_cpu", title: "Host CPU", unit: "%", source: "host", scale: 1,
    columns: [["cpu_pct", "host"], ["proc_cpu_pct", "process"]] },
  { key: "host_memory", title: "Host memory", unit: "GiB", source: "host", scale: 2 ** -30,
    columns: [["mem_used_bytes", "host used"], ["proc_rss_bytes", "process RSS"]] },
];

/** The plots that have data: each bucket's mean, at the bucket's middle, one series per
 * device and column; buckets a series lacks are gaps (null). */
export function metricPlots(doc: MetricsDoc): Plot[] {
  const plots: Plot[] = [];
  for (const spec of PLOTS) {
    const sources = spec.source === "gpu"
      ? doc.gpu.map((g) => ({ prefix: doc.gpu.length > 1 ? `GPU ${g.device} ` : "",
        buckets: g.buckets }))
      : doc.host ? [{ prefix: "", buckets: doc.host.buckets }] : [];
    const raw: { label: string; byBucket: Map<number, number> }[] = [];
    for (const src of sources)
      for (const [col, label] of spec.columns) {
        const m = new Map<number, number>();
        for (const b of src.buckets) {
          const v = b[col];
          if (v && typeof v === "object") m.set(b.bucket, v.mean * spec.scale);
        }
        if (m.size) raw.push({ label: src.prefix + label, byBucket: m });
      }
    if (!raw.length) continue;
    const idx = [...new Set(raw.flatMap((r) => [...r.byBucket.keys()]))].sort((a, b) => a - b);
    plots.push({
      key: spec.key,
      title: spec.title,
      unit: spec.unit,
      x: idx.map((i) => (doc.from_ns + (i + 0.5) * doc.bucket_ns) / 1e9),
      series: raw.map((r) => ({ label: r.label, values: idx.map((i) => r.byBucket.get(i) ?? null) })),
    });
  }
  return plots;
}
