// SPDX-License-Identifier: Apache-2.0
// The fleet page's data shaping: range from the URL, wasted cells, host grouping, the colour
// scale, hit testing, the time axis and the live tiles' merge.
import { describe, expect, it } from "vitest";
import { type HeatGpu, cellValue, colour, fmtTile, hit, mergeLive, parseMetric, parseRange, rowsByHost, wasted, xOf } from "./shape";

const gpu = (hostname: string, device: number, util: (number | null)[], sm: (number | null)[], held: (number | null)[]): HeatGpu =>
  ({ uuid: `GPU-${hostname}-${device}`, name: "H100", hostname, device, session_id: "s", gpu_util_pct: util, sm_active_pct: sm, held });

describe("range", () => {
  it("takes from and to, else a preset ending now, default 24h", () => {
    expect(parseRange(new URLSearchParams("from=10&to=20"), 1e12)).toEqual({ from_us: 10, to_us: 20, preset: null });
    expect(parseRange(new URLSearchParams("range=1h"), 1e12)).toEqual({ from_us: 1e12 - 3600e6, to_us: 1e12, preset: "1h" });
    expect(parseRange(new URLSearchParams("from=30&to=20"), 1e12).preset).toBe("24h");
    expect(parseRange(new URLSearchParams("range=bogus"), 1e12).preset).toBe("24h");
  });
  it("keeps a known metric only", () => {
    expect(parseMetric(new URLSearchParams("metric=sm"))).toBe("sm");
    expect(parseMetric(new URLSearchParams("metric=x"))).toBe("util");
  });
});

describe("wasted", () => {
  it("is all of a held idle GPU, the unbacked part of a busy one, nothing without data", () => {
    expect(wasted(0, 0, 1)).toBe(100);
    expect(wasted(null, null, 1)).toBe(100);
    expect(wasted(90, 30, 1)).toBe(60);
    expect(wasted(40, 50, 0)).toBe(0);
    expect(wasted(null, null, null)).toBeNull();
    expect(wasted(3, null, 0)).toBe(0);
  });
  it("picks the metric's value per cell", () => {
    const g = gpu("a", 0, [80, null], [20, null], [1, null]);
    expect(cellValue(g, 0, "util")).toBe(80);
    expect(cellValue(g, 0, "sm")).toBe(20);
    expect(cellValue(g, 0, "wasted")).toBe(60);
    expect(cellValue(g, 1, "util")).toBeNull();
  });
});

describe("rows", () => {
  it("groups GPUs by host, then device", () => {
    const { rows, hosts } = rowsByHost([gpu("b", 1, [], [], []), gpu("a", 1, [], [], []), gpu("b", 0, [], [], []), gpu("a", 0, [], [], [])]);
    expect(rows.map((g) => `${g.hostname}${g.device}`)).toEqual(["a0", "a1", "b0", "b1"]);
    expect(hosts).toEqual([{ hostname: "a", first: 0, count: 2 }, { hostname: "b", first: 2, count: 2 }]);
  });
});

describe("scale and geometry", () => {
  it("runs dark blue to red and clamps", () => {
    expect(colour(0)).toEqual([30, 40, 90]);
    expect(colour(100)).toEqual([220, 50, 40]);
    expect(colour(150)).toEqual(colour(100));
    const mid = colour(50);
    expect(mid[0]).toBeGreaterThan(30);
  });
  it("finds the cell under a point", () => {
    expect(hit(0, 0, 720, 64, 720, 64)).toEqual({ col: 0, row: 0 });
    expect(hit(719.9, 63.9, 720, 64, 720, 64)).toEqual({ col: 719, row: 63 });
    expect(hit(720, 10, 720, 64, 720, 64)).toBeNull();
    expect(hit(100, 10, 200, 20, 10, 2)).toEqual({ col: 5, row: 1 });
  });
  it("places times on the axis, clamped", () => {
    expect(xOf(150, 100, 200, 1000)).toBe(500);
    expect(xOf(50, 100, 200, 1000)).toBe(0);
    expect(xOf(250, 100, 200, 1000)).toBe(1000);
  });
});

describe("live tiles", () => {
  it("merges newer readings and never rolls back", () => {
    const st = new Map();
    expect(mergeLive(st, "s", [{ ts_ns: 2, device: 0, gpu_util_pct: 50 }])).toEqual(["s/0"]);
    expect(mergeLive(st, "s", [{ ts_ns: 1, device: 0, gpu_util_pct: 10 }])).toEqual([]);
    expect(st.get("s/0").gpu_util_pct).toBe(50);
    expect(fmtTile({ ts_ns: 0, device: 0, gpu_util_pct: 50, power_mw: 612000, temp_gpu_c: 71, mem_used_bytes: 2 ** 31, mem_total_bytes: 2 ** 32 }))
      .toEqual({ util: "50 %", mem: "2.0 / 4.0 GiB", power: "612 W", temp: "71 °C" });
  });
});
