// SPDX-License-Identifier: Apache-2.0
// The timeline's data shaping: axis ticks, zoom and pan, tiling and the tile cache, merging of
// tiles' answers, lanes, arrows and keyboard navigation.
import { describe, expect, it } from "vitest";
import { Lanes, type TileAnswer, arrows, eventId, merge, nextKernel } from "./model";
import { formatDuration, niceStep, ticks } from "./ticks";
import { TileCache, drawable, levelFor, tileKey, tileQuery, tilesFor } from "./tiles";
import { clamp, pan, rangeFromParams, withView, zoom } from "./view";

describe("ticks", () => {
  it("steps 1-2-5 and labels in the step's unit from the origin", () => {
    expect(niceStep(3)).toBe(5);
    expect(niceStep(1200)).toBe(2000);
    expect(ticks(1000, 1_000_000 + 1000, 900, 1000).map((t) => t.label)).toEqual(
      ["0 µs", "100 µs", "200 µs", "300 µs", "400 µs", "500 µs", "600 µs", "700 µs", "800 µs",
       "900 µs"]);
    const ms = ticks(0, 5_000_000, 400);
    expect(ms[1]).toEqual({ ns: 2_000_000, label: "2 ms" });
    expect(ticks(0, 30, 300).map((t) => t.label).slice(0, 3)).toEqual(["0 ns", "10 ns", "20 ns"]);
    expect(ticks(0, 3_000_000_000, 300)[1].label).toBe("1 s");
    expect(ticks(0, 100_000, 300)[1].label).toBe("50 µs");
  });
  it("formats durations", () => {
    expect(formatDuration(999)).toBe("999 ns");
    expect(formatDuration(1500)).toBe("1.5 µs");
    expect(formatDuration(28_000_000)).toBe("28 ms");
    expect(formatDuration(2_345_678_901)).toBe("2.35 s");
  });
});

describe("view", () => {
  const ext = { t0: 1000, t1: 1_001_000 };
  it("zooms around the anchor and stays in the extent", () => {
    expect(zoom(ext, 0.5, 0, ext)).toEqual({ t0: 1000, t1: 501_000 });
    expect(zoom({ t0: 1000, t1: 501_000 }, 4, 0.5, ext)).toEqual(ext);
    expect(zoom(ext, 1e-9, 0.5, ext)).toEqual({ t0: 500_950, t1: 501_050 });
  });
  it("pans by a share and stops at the ends", () => {
    expect(pan({ t0: 1000, t1: 11_000 }, 0.5, ext)).toEqual({ t0: 6000, t1: 16_000 });
    expect(pan({ t0: 1000, t1: 11_000 }, -3, ext)).toEqual({ t0: 1000, t1: 11_000 });
    expect(clamp({ t0: 995_000, t1: 1_005_000 }, ext)).toEqual({ t0: 991_000, t1: 1_001_000 });
  });
  it("reads and writes t0, t1 and sel in the URL", () => {
    expect(rangeFromParams(new URLSearchParams("t0=5&t1=9"))).toEqual({ t0: 5, t1: 9 });
    expect(rangeFromParams(new URLSearchParams("t0=9&t1=5"))).toBeUndefined();
    expect(rangeFromParams(new URLSearchParams("t0=x&t1=5"))).toBeUndefined();
    expect(withView("/sessions/a", new URLSearchParams("view=timeline&sel=old"), { t0: 1, t1: 2 }))
      .toBe("/sessions/a?view=timeline&t0=1&t1=2");
    expect(withView("/s", new URLSearchParams(), { t0: 1, t1: 2 }, "kernel:0:7:5"))
      .toBe("/s?t0=1&t1=2&sel=kernel%3A0%3A7%3A5");
  });
});

describe("tiles", () => {
  const ext = { t0: 1_000_000, t1: 2_000_000 };
  it("covers a view with two or three tiles of a power-of-two width", () => {
    const t = tilesFor(ext, ext);
    expect(t.length).toBeGreaterThanOrEqual(2);
    expect(t.length).toBeLessThanOrEqual(3);
    expect(t[0].from).toBe(ext.t0);
    expect(t[t.length - 1].to).toBeGreaterThanOrEqual(ext.t1);
    expect(t[1].from - t[0].from).toBe(2 ** levelFor(1_000_000));
    const z = tilesFor({ t0: 1_300_000, t1: 1_300_100 }, ext);
    expect(z.every((x) => x.to - x.from === 64)).toBe(true);
    expect(z[0].from).toBeLessThanOrEqual(1_300_000);
    expect(tileQuery(z[0])).toBe(`kinds=gpu,launches,scopes,counters&from=${z[0].from}` +
      `&to=${z[0].to}&max_events=2000&points=100`);
  });
  it("panning back finds the tiles in the cache; the cache has a cap", () => {
    const c = new TileCache<number>(3);
    const a = tilesFor({ t0: 1_000_000, t1: 1_100_000 }, ext);
    a.forEach((t, i) => c.set(tileKey(t), i));
    expect(drawable(a, c)).toEqual(a.map((_, i) => i));
    for (let i = 0; i < 5; i++) c.set(`x${i}`, 9);
    expect(c.size).toBe(3);
  });
  it("draws a coarser cached tile until the tile's own answer comes", () => {
    const c = new TileCache<string>();
    const coarse = tilesFor(ext, ext);
    c.set(tileKey(coarse[0]), "coarse");
    const fine = tilesFor({ t0: 1_000_000, t1: 1_010_000 }, ext);
    expect(drawable(fine, c)).toEqual(["coarse"]);
    c.set(tileKey(fine[0]), "fine");
    expect(drawable(fine, c)[0]).toBe("fine");
  });
});

const answer = (over: Partial<TileAnswer>): TileAnswer => ({ from_ns: 0, to_ns: 1000, ...over });
const k = (start: number, end: number, stream = 7, extra = {}) =>
  ({ kind: "kernel", name: "k", start_ns: start, end_ns: end, device: 0, stream, ...extra });

describe("merge", () => {
  it("keeps an event once, cuts to the view and counts what starts in it", () => {
    const a = answer({ total: 3, downsampled: false, events: [k(10, 20), k(500, 600), k(990, 1200)] });
    const coarse = answer({ events: [k(10, 20)] });
    const m = merge([a, coarse], { t0: 15, t1: 995 });
    expect(m.events.map((e) => e.start_ns)).toEqual([10, 500, 990]);
    expect(m.inView).toBe(2);
  });
  it("counts the events of downsampled buckets and marks where not all were sent", () => {
    const a = answer({ total: 50, downsampled: true, bucket_ns: 100, events: [k(10, 90)],
      buckets: [{ bucket: 0, from_ns: 0, count: 40, kept: 1 }, { bucket: 5, from_ns: 500,
        count: 10, kept: 10 }] });
    const m = merge([a], { t0: 0, t1: 1000 });
    expect(m.inView).toBe(50);
    expect(m.density).toEqual([{ from_ns: 0, to_ns: 100, count: 40, kept: 1 }]);
  });
  it("merges scopes across tiles and counter buckets into points", () => {
    const s = { tid: 1, name: "step", depth: 1, start_ns: 100, end_ns: 1500 };
    const a = answer({ scopes: { total: 1, downsampled: false, spans: [s] },
      counters: { points: 2, bucket_ns: 500, gpu: [{ device: 0, buckets: [
        { bucket: 1, count: 3, gpu_util_pct: { min: 1, mean: 2, max: 3 } }] }] } });
    const b = answer({ from_ns: 1000, to_ns: 2000,
      scopes: { total: 1, downsampled: false, spans: [s] } });
    const m = merge([a, b], { t0: 0, t1: 2000 });
    expect(m.spans).toHaveLength(1);
    expect(m.scopesInView).toBe(1);
    expect(m.counters.get("0/gpu_util_pct")).toEqual([{ t: 750, mean: 2, max: 3 }]);
  });
});

describe("lanes, arrows, navigation", () => {
  it("keeps lanes once seen, threads by depth, then streams, then counters", () => {
    const l = new Lanes();
    l.add(merge([answer({ events: [k(1, 2, 13), k(3, 4, 7, { tid: 42, launch_ns: 0 })],
      scopes: { total: 1, downsampled: false,
        spans: [{ tid: 9, name: "a", depth: 2, start_ns: 0, end_ns: 5 }] } })],
      { t0: 0, t1: 10 }));
    l.add(merge([], { t0: 0, t1: 10 }));
    expect(l.list().map((x) => x.key)).toEqual(
      ["t/9/1", "t/9/2", "t/42/1", "s/0/7", "s/0/13"]);
  });
  it("draws arrows for launches known, only the selected one's when selected", () => {
    const ev = [k(10, 20, 7, { tid: 1, launch_ns: 5 }), k(30, 40), k(50, 60, 7, { tid: 1,
      launch_ns: 45 })];
    expect(arrows(ev, undefined).map((a) => a.from_ns)).toEqual([5, 45]);
    expect(arrows(ev, eventId(ev[2])).map((a) => a.to.start_ns)).toEqual([50]);
  });
  it("walks kernels by start, skipping other kinds", () => {
    const ev = [k(10, 20), { kind: "copy", start_ns: 15, end_ns: 30 }, k(30, 40), k(50, 60)];
    expect(nextKernel(ev, undefined, 1, 12)?.start_ns).toBe(30);
    expect(nextKernel(ev, eventId(ev[2]), 1, 0)?.start_ns).toBe(50);
    expect(nextKernel(ev, eventId(ev[2]), -1, 0)?.start_ns).toBe(10);
    expect(nextKernel(ev, eventId(ev[3]), 1, 0)).toBeUndefined();
    expect(nextKernel(ev, undefined, -1, 35)?.start_ns).toBe(30);
  });
});
