// SPDX-License-Identifier: Apache-2.0
// The session page's pictures: the duration histogram on a canvas (log-scaled buckets) and the
// metric plots with uPlot, both in the theme's colours (style.css variables).
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h } from "../dom";
import { type Plot, histogramBars, histogramRange, logTicks } from "./charts";
import { type HistogramBucket, formatCount, formatNs } from "./model";

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

/** A histogram of a kernel's durations: a bar per bucket, x on a log scale of ns. */
export function drawHistogram(buckets: HistogramBucket[], width = 640, height = 180): HTMLElement {
  const canvas = h("canvas", {
    "data-testid": "kernel-histogram", role: "img",
    "aria-label": `Duration histogram: ${buckets.map((b) =>
      `${formatCount(b.count)} from ${formatNs(b.from_ns)}`).join(", ")}`,
    "data-calls": buckets.reduce((a, b) => a + b.count, 0),
    "data-buckets": buckets.length,
  });
  const dpr = window.devicePixelRatio || 1;
  canvas.width = width * dpr;
  canvas.height = height * dpr;
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  if (!ctx) return canvas;
  ctx.scale(dpr, dpr);
  const pad = { l: 40, r: 10, t: 10, b: 24 };
  const w = width - pad.l - pad.r, hh = height - pad.t - pad.b;
  const bars = histogramBars(buckets);
  const [lo, hi] = histogramRange(buckets);
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillStyle = cssVar("--muted");
  ctx.strokeStyle = cssVar("--border");
  ctx.beginPath();
  ctx.moveTo(pad.l, pad.t + hh + 0.5);
  ctx.lineTo(pad.l + w, pad.t + hh + 0.5);
  ctx.stroke();
  const span = Math.log(hi) - Math.log(lo);
  const ticks = logTicks(lo, hi);
  for (const t of ticks.length ? ticks : [lo, hi]) {
    const x = pad.l + ((Math.log(t) - Math.log(lo)) / span) * w;
    ctx.fillText(formatNs(t), x - 14, height - 6);
  }
  const top = Math.max(...buckets.map((b) => b.count));
  ctx.fillText(formatCount(top), 4, pad.t + 10);
  ctx.fillText("0", 4, pad.t + hh);
  ctx.fillStyle = cssVar("--accent");
  for (const b of bars) {
    const x = pad.l + b.x0 * w;
    const bw = Math.max(1, (b.x1 - b.x0) * w - 1);
    const bh = Math.max(1, b.height * hh);
    ctx.fillRect(x, pad.t + hh - bh, bw, bh);
  }
  return canvas;
}

const SERIES_COLORS = ["--accent", "--live", "--error", "--muted"];

/** One metric plot into el (already on the page: the plot takes its width); dragging across it
 * selects a time range (s on the session clock). */
export function drawPlot(el: HTMLElement, plot: Plot, onZoom: (fromS: number, toS: number) => void):
  void {
  el.append(h("h3", {}, `${plot.title} (${plot.unit})`));
  const width = Math.max(200, el.clientWidth - 16);
  const axis = { stroke: cssVar("--muted"), grid: { stroke: cssVar("--border"), width: 1 },
    ticks: { stroke: cssVar("--border"), width: 1 } };
  const opts: uPlot.Options = {
    width,
    height: 160,
    legend: { show: true },
    cursor: { drag: { x: true, y: false, setScale: false } },
    scales: { x: { time: false } },
    axes: [{ ...axis, label: "s" }, { ...axis }],
    series: [{ label: "s" }, ...plot.series.map((s, i) => ({
      label: s.label, stroke: cssVar(SERIES_COLORS[i % SERIES_COLORS.length]), width: 1.5,
      spanGaps: false,
    }))],
    hooks: {
      setSelect: [(u: uPlot) => {
        if (u.select.width < 3) return;
        const a = u.posToVal(u.select.left, "x");
        const b = u.posToVal(u.select.left + u.select.width, "x");
        u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
        onZoom(a, b);
      }],
    },
  };
  const data: uPlot.AlignedData = [plot.x, ...plot.series.map((s) => s.values)];
  const host = h("div", {});
  el.append(host);
  new uPlot(opts, data, host);
}
