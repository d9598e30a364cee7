// SPDX-License-Identifier: Apache-2.0
// The run comparison's diff: appeared, vanished, slower, faster and unchanged items, shares
// with zero totals, ties in a stable order, and the server's answers turned into lists.
import { describe, expect, it } from "vitest";
import {
  type Insight,
  countChanges,
  diff,
  insightKey,
  insightTime,
  insightsMeasured,
  kernelsMeasured,
  scopesMeasured,
  scopesTotal,
  share,
} from "./diff";

const m = (key: string, time_ns: number) => ({ key, label: key, time_ns });

describe("diff", () => {
  it("classifies slower, faster, appeared, vanished and same", () => {
    const rows = diff(
      [m("gemm", 1_000_000), m("relu", 500_000), m("old", 200_000), m("copy", 100_000)],
      [m("gemm", 1_300_000), m("relu", 250_000), m("new", 50_000), m("copy", 100_500)],
      2_000_000,
      2_000_000,
    );
    const by = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(by.gemm.change).toBe("slower");
    expect(by.gemm.delta_ns).toBe(300_000);
    expect(by.gemm.base_share).toBeCloseTo(0.5);
    expect(by.gemm.run_share).toBeCloseTo(0.65);
    expect(by.gemm.delta_share).toBeCloseTo(0.15);
    expect(by.relu.change).toBe("faster");
    expect(by.relu.delta_ns).toBe(-250_000);
    expect(by.old).toMatchObject({ change: "vanished", run_ns: null, run_share: null, delta_ns: -200_000 });
    expect(by.new).toMatchObject({ change: "appeared", base_ns: null, base_share: null, delta_ns: 50_000 });
    expect(by.copy.change).toBe("same"); // 500 ns: below the noise floor
    expect(countChanges(rows)).toEqual({ slower: 1, faster: 1, appeared: 1, vanished: 1, same: 1 });
  });

  it("sorts by the time at stake, both directions alike", () => {
    const rows = diff([m("a", 100e3), m("b", 900e3), m("c", 10e6)], [m("a", 500e3), m("b", 100e3)], 1, 1);
    expect(rows.map((r) => r.key)).toEqual(["c", "b", "a"]);
  });

  it("breaks ties by the larger time, then by key, whatever the input order", () => {
    const base = [m("z", 1e6), m("y", 2e6), m("x", 1e6)];
    const run = [m("x", 2e6), m("y", 3e6), m("z", 2e6)];
    const one = diff(base, run, 1, 1).map((r) => r.key);
    const two = diff([...base].reverse(), [...run].reverse(), 1, 1).map((r) => r.key);
    expect(one).toEqual(["y", "x", "z"]);
    expect(two).toEqual(one);
  });

  it("gives shares of 0, not NaN, for zero totals", () => {
    const rows = diff([m("k", 0)], [m("k", 0)], 0, 0);
    expect(rows[0]).toMatchObject({ change: "same", base_share: 0, run_share: 0, delta_share: 0 });
    expect(share(5, 0)).toBe(0);
    const appeared = diff([], [m("k", 10e6)], 0, 20e6);
    expect(appeared[0].run_share).toBeCloseTo(0.5);
    expect(Number.isNaN(appeared[0].delta_share)).toBe(false);
  });

  it("matches by exact key only: a renamed kernel is one vanished and one appeared", () => {
    const rows = diff([m("gemm_v1", 1e6)], [m("gemm_v2", 1e6)], 1e6, 1e6);
    expect(rows.map((r) => [r.key, r.change])).toEqual([
      ["gemm_v1", "vanished"],
      ["gemm_v2", "appeared"],
    ].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  });

  it("sums a key listed twice in one session", () => {
    const rows = diff([m("k", 1e6), m("k", 1e6)], [m("k", 2e6)], 1, 1);
    expect(rows).toHaveLength(1);
    expect(rows[0].change).toBe("same");
  });

  it("is empty for two empty sessions", () => {
    expect(diff([], [], 0, 0)).toEqual([]);
  });
});

describe("the server's answers", () => {
  it("lists kernels by name and scopes by path with the roots as the total", () => {
    expect(kernelsMeasured({ total_ns: 3, kernels: [{ name: "k", count: 2, total_ns: 3 }] })).toEqual([
      m("k", 3),
    ]);
    const tree = [
      { path: "step", total_ns: 100, children: [{ path: "step/fwd", total_ns: 60 }] },
      { path: "io", total_ns: 20 },
    ];
    expect(scopesMeasured(tree).map((x) => [x.key, x.time_ns])).toEqual([
      ["step", 100],
      ["step/fwd", 60],
      ["io", 20],
    ]);
    expect(scopesTotal(tree)).toBe(120);
  });

  it("keys insights by rule and place, never by their figures", () => {
    const a: Insight = {
      rule: "sync_attribution", severity: "HIGH", title: "× 4 · 12.0ms", file: "/src/train.cu", line: 90,
      function: "train_step", evidence: [{ name: "calls", value: 4, unit: "count" },
        { name: "blocked_ns", value: 11.98e6, unit: "ns" }],
    };
    const b: Insight = { ...a, title: "× 5 · 15.0ms", severity: "MEDIUM" };
    expect(insightKey(a)).toBe(insightKey(b));
    expect(insightKey({ ...a, line: 91 })).not.toBe(insightKey(a));
    expect(insightKey({ rule: "low_occupancy", severity: "LOW", title: "t", kernel: "gemm" })).toBe(
      "low_occupancy|gemm",
    );
    expect(insightTime(a)).toBe(11.98e6);
    expect(insightTime({ rule: "r", severity: "LOW", title: "t" })).toBe(0);
    expect(insightsMeasured([a])[0].label).toBe("[HIGH] sync_attribution · train.cu:90");
  });
});
