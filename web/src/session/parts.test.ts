// SPDX-License-Identifier: Apache-2.0
// The scope tree's rows, the source view's ordering and bars, the histogram's geometry and the
// metric plots' series.
import { describe, expect, it } from "vitest";
import { histogramBars, logTicks, metricPlots } from "./charts";
import { type ScopeNode, scopeRows, toggleFold } from "./scopes";
import { type FunctionSass, type SourceLine, hottestLines, lineKey, lineOfPc, pcsOfLine,
  reasonSegments } from "./source";

const node = (path: string, total: number, gpu: number | undefined, children: ScopeNode[] = []):
  ScopeNode => ({ path, name: path.split("/").pop()!, depth: path.split("/").length - 1,
  calls: 1, total_ns: total, gpu_ns: gpu, children });

describe("scope tree", () => {
  const tree = [node("a", 100, 40, [node("a/b", 60, 30, [node("a/b/c", 10, undefined)]),
    node("a/d", 20, 10)]), node("e", 50, 80)];
  it("shows every row depth first, with shares of the largest root", () => {
    const rows = scopeRows(tree, new Set());
    expect(rows.map((r) => r.node.path)).toEqual(["a", "a/b", "a/b/c", "a/d", "e"]);
    expect(rows.map((r) => r.hostShare)).toEqual([1, 0.6, 0.1, 0.2, 0.5]);
    expect(rows.map((r) => r.gpuShare)).toEqual([0.5, 0.375, 0, 0.125, 1]);
  });
  it("hides a folded path's children", () => {
    const rows = scopeRows(tree, new Set(["a/b"]));
    expect(rows.map((r) => r.node.path)).toEqual(["a", "a/b", "a/d", "e"]);
    expect(rows[1]).toMatchObject({ folded: true, hasChildren: true });
    expect(scopeRows(tree, new Set(["a"])).map((r) => r.node.path)).toEqual(["a", "e"]);
  });
  it("toggles a fold into a sorted list", () => {
    expect(toggleFold(new Set(["z"]), "a")).toEqual(["a", "z"]);
    expect(toggleFold(new Set(["a", "z"]), "a")).toEqual(["z"]);
  });
});

describe("source view", () => {
  const line = (l: number | null, samples: number, idle = 0): SourceLine => ({
    file: l === null ? null : "/s.cu", line: l, pcs: [], samples, reasons: {},
    metrics: idle ? { idle_lanes: idle } as SourceLine["metrics"] : null });
  it("orders lines hottest first: samples, then wasted lanes and sectors", () => {
    const lines = [line(1, 5), line(2, 50), line(3, 0, 900), line(null, 0), line(4, 5, 1)];
    expect(hottestLines(lines).map(lineKey))
      .toEqual(["/s.cu:2", "/s.cu:4", "/s.cu:1", "/s.cu:3", "(no line info)"]);
  });
  it("stacks stall reasons most first, the issued samples last", () => {
    expect(reasonSegments({ selected: 30, wait: 10, long_scoreboard: 60 }, 200)).toEqual([
      { reason: "long_scoreboard", samples: 60, width: 0.3 },
      { reason: "wait", samples: 10, width: 0.05 },
      { reason: "selected", samples: 30, width: 0.15 }]);
    expect(reasonSegments({ a: 0 }, 10)).toEqual([]);
  });
  it("maps a line to its instructions and an instruction to its line", () => {
    const sass = { lines: [{ file: "/s.cu", line: 7, pcs: [16, 32] }],
      instructions: [{ pc: 16, file: "/s.cu", line: 7 }, { pc: 48, file: null, line: null }],
    } as unknown as FunctionSass;
    expect([...pcsOfLine(sass, "/s.cu:7")]).toEqual([16, 32]);
    expect(lineOfPc(sass, 16)).toBe("/s.cu:7");
    expect(lineOfPc(sass, 48)).toBe("(no line info)");
    expect(lineOfPc(sass, 99)).toBeNull();
  });
});

describe("charts", () => {
  it("places histogram bars on a log axis", () => {
    const bars = histogramBars([{ from_ns: 100, to_ns: 1000, count: 2 },
      { from_ns: 1000, to_ns: 10000, count: 4 }]);
    const want = [[0, 0.5, 0.5], [0.5, 1, 1]];
    bars.forEach((b, i) => [b.x0, b.x1, b.height].forEach((v, j) =>
      expect(v).toBeCloseTo(want[i][j], 9)));
    expect(histogramBars([])).toEqual([]);
  });
  it("ticks each power of ten", () => {
    expect(logTicks(50, 20000)).toEqual([100, 1000, 10000]);
  });
  it("aligns metric buckets across devices, gaps as null", () => {
    const plots = metricPlots({ from_ns: 0, to_ns: 4e9, points: 4, bucket_ns: 1e9, gpu: [
      { device: 0, buckets: [{ bucket: 0, count: 1, gpu_util_pct: { min: 1, mean: 10, max: 20 },
        power_mw: { min: 1, mean: 100000, max: 1 } }] },
      { device: 1, buckets: [{ bucket: 2, count: 1, gpu_util_pct: { min: 1, mean: 30, max: 1 } }] }],
    host: { buckets: [{ bucket: 1, count: 2, cpu_pct: { min: 1, mean: 55, max: 1 } }] } });
    expect(plots.map((p) => p.key)).toEqual(["util", "power", "host_cpu"]);
    expect(plots[0].x).toEqual([0.5, 2.5]);
    expect(plots[0].series).toEqual([{ label: "GPU 0 GPU", values: [10, null] },
      { label: "GPU 1 GPU", values: [null, 30] }]);
    expect(plots[1].series[0].values).toEqual([100]);
    expect(plots[2]).toMatchObject({ x: [1.5], series: [{ label: "host", values: [55] }] });
  });
});
