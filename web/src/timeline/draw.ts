// SPDX-License-Identifier: Apache-2.0
// The timeline drawn on one canvas: the time axis, a row per lane (scopes nested by depth,
// streams with kernels, copies and memsets, counters as areas), the downsampled buckets' counts
// where events were not all sent, launch → kernel arrows, and the focused and selected events.
import { type Lane, type Merged, arrows, eventId, hueOf, laneKeyOf } from "./model";
import { ticks } from "./ticks";
import type { Range } from "./view";

export const AXIS_PX = 24;
export const LANE_PX = 18;
export const COUNTER_PX = 34;
export const LABEL_PX = 150;
const DENSITY_PX = 6;

export interface Colors {
  bg: string;
  panel: string;
  border: string;
  text: string;
  muted: string;
  accent: string;
  error: string;
  light: boolean;
}

/** The theme's colours from style.css's variables on the element. */
export function readColors(el: Element): Colors {
  const cs = getComputedStyle(el);
  const v = (n: string, d: string) => cs.getPropertyValue(n).trim() || d;
  return {
    bg: v("--bg", "#111418"), panel: v("--panel", "#1a1f26"), border: v("--border", "#2c333d"),
    text: v("--text", "#e3e7ec"), muted: v("--muted", "#8d97a5"), accent: v("--accent", "#5b9bff"),
    error: v("--error", "#ff6b6b"),
    light: document.documentElement.getAttribute("data-theme") === "light",
  };
}

export function laneHeight(l: Lane): number {
  return l.kind === "counter" ? COUNTER_PX : LANE_PX + (l.kind === "stream" ? DENSITY_PX : 0);
}

/** Each lane's top, below the axis. */
export function layout(lanes: Lane[]): { tops: Map<string, number>; height: number } {
  const tops = new Map<string, number>();
  let y = AXIS_PX;
  for (const l of lanes) {
    tops.set(l.key, y);
    y += laneHeight(l);
  }
  return { tops, height: y + 4 };
}

export interface Hit {
  id: string;
  x0: number;
  x1: number;
  y0: number;
  y1: number;
}

export interface DrawInput {
  ctx: CanvasRenderingContext2D;
  width: number; // css px
  height: number;
  view: Range;
  origin: number; // the session's start: labels count from it
  merged: Merged;
  lanes: Lane[];
  colors: Colors;
  selected?: string;
  focused?: string;
}

export interface DrawStats {
  events: number;
  spans: number;
  buckets: number;
  arrows: number;
  hits: Hit[];
}

/** A kernel name's colour string, made once per name and theme (a frame draws thousands). */
const nameColors = new Map<string, string>();
const NAME_COLORS_MAX = 4096;

function kindColor(kind: string, name: string | null | undefined, c: Colors): string {
  if (kind === "kernel") {
    const key = `${c.light ? "l" : "d"}${name ?? ""}`;
    let v = nameColors.get(key);
    if (v === undefined) {
      if (nameColors.size >= NAME_COLORS_MAX) nameColors.clear();
      v = `hsl(${hueOf(name)} 55% ${c.light ? 52 : 58}%)`;
      nameColors.set(key, v);
    }
    return v;
  }
  if (kind === "copy") return c.light ? "#c77d00" : "#f0a830";
  if (kind === "memset") return c.light ? "#8a4fc7" : "#b388ff";
  return c.error; // sync
}

/** Draws a frame; returns what it drew and where (for hit tests). */
export function draw(d: DrawInput): DrawStats {
  const { ctx, width, height, view, merged, lanes, colors: c } = d;
  const plot = Math.max(1, width - LABEL_PX);
  const scale = plot / (d.view.t1 - d.view.t0);
  const x = (t: number) => LABEL_PX + (t - view.t0) * scale;
  const { tops } = layout(lanes);
  const stats: DrawStats = { events: 0, spans: 0, buckets: 0, arrows: 0, hits: [] };
  ctx.fillStyle = c.panel;
  ctx.fillRect(0, 0, width, height);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";

  // Lanes: a band each, labelled at the left.
  for (const l of lanes) {
    const y = tops.get(l.key)!;
    ctx.fillStyle = l.kind === "stream" ? c.bg : c.panel;
    ctx.fillRect(LABEL_PX, y, plot, laneHeight(l));
    ctx.strokeStyle = c.border;
    ctx.beginPath();
    ctx.moveTo(0, y + 0.5);
    ctx.lineTo(width, y + 0.5);
    ctx.stroke();
  }

  // The time axis and its grid.
  ctx.fillStyle = c.muted;
  ctx.strokeStyle = c.border;
  for (const t of ticks(view.t0, view.t1, plot, d.origin)) {
    const tx = Math.round(x(t.ns)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(tx, AXIS_PX - 6);
    ctx.lineTo(tx, height);
    ctx.stroke();
    ctx.fillText(t.label, tx + 3, AXIS_PX / 2);
  }

  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_PX, 0, plot, height);
  ctx.clip();

  // Scopes, nested by depth in their thread's lanes.
  for (const s of merged.spans) {
    const y = tops.get(`t/${s.tid}/${s.depth}`);
    if (y === undefined) continue;
    const x0 = Math.max(LABEL_PX, x(s.start_ns));
    const x1 = Math.min(width, x(s.end_ns ?? view.t1));
    const w = Math.max(1, x1 - x0);
    ctx.fillStyle = `hsl(${hueOf(s.name)} 30% ${c.light ? 78 : 32}%)`;
    ctx.fillRect(x0, y + 1, w, LANE_PX - 2);
    if (w > 30) {
      ctx.fillStyle = c.text;
      ctx.fillText(fit(ctx, s.name ?? "", w - 6), x0 + 3, y + LANE_PX / 2);
    }
    stats.spans++;
  }

  // GPU work per stream; where a bucket was downsampled, its count in a strip above.
  const streamTops = lanes.filter((l) => l.kind === "stream").map((l) => tops.get(l.key)!);
  for (const b of merged.density) {
    const x0 = x(b.from_ns), x1 = x(b.to_ns);
    if (x1 < LABEL_PX || x0 > width) continue;
    const a = Math.min(1, 0.25 + Math.log10(b.count) / 6);
    ctx.fillStyle = c.accent;
    ctx.globalAlpha = a;
    for (const y of streamTops) ctx.fillRect(x0, y + 1, Math.max(1, x1 - x0 - 0.5), DENSITY_PX - 2);
    ctx.globalAlpha = 1;
    stats.buckets++;
  }
  let lastLabel = -Infinity;
  for (const b of merged.density) {
    const x0 = x(b.from_ns);
    if (x0 < lastLabel || x0 < LABEL_PX || x0 > width || !streamTops.length) continue;
    ctx.fillStyle = c.muted;
    const text = `${b.count}`;
    if (x(b.to_ns) - x0 > ctx.measureText(text).width + 4) {
      ctx.fillText(text, x0 + 2, streamTops[0] + LANE_PX / 2 + DENSITY_PX);
      lastLabel = x0 + ctx.measureText(text).width + 4;
    }
  }
  for (const e of merged.events) {
    const y = tops.get(laneKeyOf(e));
    if (y === undefined) continue;
    const x0 = Math.max(LABEL_PX - 1, x(e.start_ns));
    const x1 = Math.min(width + 1, x(e.end_ns ?? e.start_ns));
    const w = Math.max(1, x1 - x0);
    const top = y + DENSITY_PX + 1;
    ctx.fillStyle = kindColor(e.kind, e.name, c);
    ctx.fillRect(x0, top, w, LANE_PX - 2);
    if (w > 40) {
      ctx.fillStyle = c.light ? "#fff" : "#0b1220";
      ctx.fillText(fit(ctx, e.name ?? e.kind, w - 6), x0 + 3, top + (LANE_PX - 2) / 2);
    }
    const id = eventId(e);
    if (id === d.selected || id === d.focused) {
      ctx.strokeStyle = id === d.selected ? c.text : c.accent;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 - 1, top - 1, w + 2, LANE_PX);
      ctx.lineWidth = 1;
    }
    stats.hits.push({ id, x0, x1: x0 + w, y0: top, y1: top + LANE_PX - 2 });
    stats.events++;
  }

  // Launch → kernel: from the call on its thread to the kernel's start.
  ctx.strokeStyle = c.text;
  ctx.globalAlpha = 0.6;
  for (const a of arrows(merged.events, d.selected)) {
    const y0 = tops.get(`t/${a.tid}/1`), y1 = tops.get(laneKeyOf(a.to));
    if (y0 === undefined || y1 === undefined) continue;
    const ax = x(a.from_ns), bx = x(a.to.start_ns), ay = y0 + LANE_PX - 2, by = y1 + DENSITY_PX;
    ctx.beginPath();
    ctx.moveTo(ax, ay);
    ctx.lineTo(bx, by);
    ctx.lineTo(bx - 3, by - 5);
    ctx.moveTo(bx, by);
    ctx.lineTo(bx + 3, by - 5);
    ctx.stroke();
    stats.arrows++;
  }
  ctx.globalAlpha = 1;

  // Counters: the mean as an area, scaled to the track's maximum in view.
  for (const l of lanes) {
    if (l.kind !== "counter") continue;
    const pts = merged.counters.get(`${l.device}/${l.column}`);
    const y = tops.get(l.key)!;
    if (!pts?.length) continue;
    const pct = l.column!.endsWith("_pct");
    const top = pct ? 100 : Math.max(...pts.map((p) => p.max)) || 1;
    ctx.fillStyle = c.accent;
    ctx.globalAlpha = 0.45;
    ctx.beginPath();
    ctx.moveTo(x(pts[0].t), y + COUNTER_PX);
    for (const p of pts) ctx.lineTo(x(p.t), y + COUNTER_PX - 2 - (p.mean / top) * (COUNTER_PX - 6));
    ctx.lineTo(x(pts[pts.length - 1].t), y + COUNTER_PX);
    ctx.fill();
    ctx.globalAlpha = 1;
  }
  ctx.restore();

  ctx.fillStyle = c.text;
  for (const l of lanes) {
    if (!l.label) continue;
    const y = tops.get(l.key)!;
    ctx.fillText(fit(ctx, l.label, LABEL_PX - 8), 4, y + laneHeight(l) / 2);
  }
  return stats;
}

/** Text cut to width px with an ellipsis. */
function fit(ctx: CanvasRenderingContext2D, s: string, width: number): string {
  if (width <= 8) return "";
  if (ctx.measureText(s).width <= width) return s;
  let n = Math.max(0, Math.floor((s.length * width) / ctx.measureText(s).width) - 1);
  while (n > 0 && ctx.measureText(s.slice(0, n) + "…").width > width) n--;
  return n > 0 ? s.slice(0, n) + "…" : "";
}
