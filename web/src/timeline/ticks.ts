// SPDX-License-Identifier: Apache-2.0
// The timeline's time axis: tick positions at 1-2-5 steps that keep labels apart, and the
// labels and durations in ns, µs, ms or s (the unit the step needs, so ticks read alike).

export interface Tick {
  ns: number; // on the session clock
  label: string;
}

const UNITS: [number, string][] = [
  [1e9, "s"],
  [1e6, "ms"],
  [1e3, "µs"],
  [1, "ns"],
];

/** The smallest 1-2-5 step of at least want ns. */
export function niceStep(want: number): number {
  if (!(want > 1)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(want)));
  for (const m of [1, 2, 5, 10]) if (m * p >= want) return m * p;
  return 10 * p;
}

function unitOf(ns: number): [number, string] {
  for (const u of UNITS) if (Math.abs(ns) >= u[0]) return u;
  return UNITS[UNITS.length - 1];
}

/** A duration in the largest unit it fills, with up to 3 significant decimals. */
export function formatDuration(ns: number): string {
  const [div, name] = unitOf(ns);
  const v = ns / div;
  return `${Number(v.toPrecision(v >= 100 ? 4 : 3))} ${name}`;
}

/** Ticks of [t0, t1) on widthPx pixels, at least minPx apart; labels are the time since
 * origin (the session's start) in the step's unit. */
export function ticks(t0: number, t1: number, widthPx: number, origin = 0, minPx = 90): Tick[] {
  if (!(t1 > t0) || widthPx <= 0) return [];
  const step = niceStep(((t1 - t0) * minPx) / widthPx);
  const [div, name] = unitOf(step); // the step is a whole number of its unit
  const out: Tick[] = [];
  const first = Math.ceil((t0 - origin) / step) * step;
  for (let rel = first; origin + rel < t1 && out.length < 1000; rel += step)
    out.push({ ns: origin + rel, label: `${Math.round(rel / div)} ${name}` });
  return out;
}
