// SPDX-License-Identifier: Apache-2.0
// The timeline's view: the visible range [t0, t1) and the selected event, read from and written
// to the session page's URL (t0, t1, sel), and the zoom and pan arithmetic kept in the session.

export interface Range {
  t0: number;
  t1: number;
}

/** The narrowest view: a few ns per pixel is past what any record resolves. */
export const MIN_SPAN_NS = 100;

/** A view inside extent, at least MIN_SPAN_NS wide (narrower than that: centred). */
export function clamp(v: Range, extent: Range): Range {
  const full = extent.t1 - extent.t0;
  let span = Math.min(Math.max(v.t1 - v.t0, Math.min(MIN_SPAN_NS, full)), full);
  if (!(span > 0)) span = full > 0 ? full : 1;
  let t0 = v.t0;
  if (v.t1 - v.t0 < span) t0 = (v.t0 + v.t1) / 2 - span / 2;
  t0 = Math.min(Math.max(t0, extent.t0), extent.t1 - span);
  t0 = Math.round(t0);
  return { t0, t1: t0 + Math.round(span) };
}

/** Zooms by factor (< 1 in, > 1 out) around the time at anchor (0..1 of the width). */
export function zoom(v: Range, factor: number, anchor: number, extent: Range): Range {
  const at = v.t0 + (v.t1 - v.t0) * anchor;
  const span = (v.t1 - v.t0) * factor;
  return clamp({ t0: at - span * anchor, t1: at - span * anchor + span }, extent);
}

/** Pans by a share of the width (negative: back in time). */
export function pan(v: Range, share: number, extent: Range): Range {
  const d = (v.t1 - v.t0) * share;
  return clamp({ t0: v.t0 + d, t1: v.t1 + d }, extent);
}

/** t0 and t1 from the URL, if both are integers that make a range. */
export function rangeFromParams(params: URLSearchParams): Range | undefined {
  const a = params.get("t0"), b = params.get("t1");
  if (a === null || b === null || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return undefined;
  const t0 = Number(a), t1 = Number(b);
  return t1 > t0 ? { t0, t1 } : undefined;
}

/** The page's URL with the view's parameters set (others kept). */
export function withView(path: string, params: URLSearchParams, v: Range, sel?: string): string {
  const q = new URLSearchParams(params);
  q.set("t0", String(Math.round(v.t0)));
  q.set("t1", String(Math.round(v.t1)));
  if (sel) q.set("sel", sel);
  else q.delete("sel");
  return `${path}?${q.toString()}`;
}
