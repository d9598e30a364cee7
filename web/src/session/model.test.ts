// SPDX-License-Identifier: Apache-2.0
// The session page's data shaping: header figures, view URLs, insights' ranking and links, the
// kernel table and the capability record's reasons.
import { describe, expect, it } from "vitest";
import {
  type Insight,
  type KernelsDoc,
  type Report,
  type SessionSummary,
  evidenceLinks,
  formatNs,
  headerFigures,
  isRunning,
  kernelRows,
  missingReason,
  parseKernelSort,
  parseView,
  rankInsights,
  sessionUrl,
  sortKernels,
  timeAtStake,
} from "./model";

function insight(over: Partial<Insight>): Insight {
  return { rule: "r", category: "C", severity: "LOW", title: "t", message: "", advice: "",
    evidence: [], ...over };
}

const report: Report = {
  session: { duration_ns: 5e9, ended: true, app: "trace_demo" },
  insights: { findings: [] },
  gpus: [],
  kernels: { count: 8, distinct_names: 3, total_ns: 1_110_000 },
  kernel_details: { kernels: [{ name: "gemm", configs: [
    { calls: 3, occupancy_pct: 50, limiter: "registers" },
    { calls: 1, occupancy_pct: 75, limiter: "warps" }] }] },
  kernel_launches: null,
};

const summary = (over: Partial<SessionSummary> = {}): SessionSummary => ({
  session_id: "s1", app_name: "a", hostname: "h", state: "ended", completed_at: null,
  engine: null, capabilities: null, devices: [], ...over });

describe("formatting", () => {
  it("keeps three significant digits in the fitting unit", () => {
    expect(formatNs(5e9)).toBe("5.00 s");
    expect(formatNs(1_110_000)).toBe("1.11 ms");
    expect(formatNs(250_000)).toBe("250 µs");
    expect(formatNs(12.4)).toBe("12 ns");
    expect(formatNs(null)).toBe("—");
  });
});

describe("view state in the URL", () => {
  it("parses the view, an unknown one being the overview", () => {
    expect(parseView(new URLSearchParams("view=kernels"))).toBe("kernels");
    expect(parseView(new URLSearchParams("view=nope"))).toBe("overview");
    expect(parseView(new URLSearchParams())).toBe("overview");
  });
  it("changes parameters and keeps the others; the overview has the plain URL", () => {
    const p = new URLSearchParams("view=kernels&sort=p99&kernel=a b");
    expect(sessionUrl("x/y", p, { kernel: "c", dir: "asc" }))
      .toBe("/sessions/x%2Fy?view=kernels&sort=p99&kernel=c&dir=asc");
    expect(sessionUrl("s", p, { view: "overview", sort: undefined, kernel: undefined }))
      .toBe("/sessions/s");
    expect(sessionUrl("s", new URLSearchParams(), { fold: ["b", "a/c"] }))
      .toBe("/sessions/s?fold=b&fold=a%2Fc");
  });
  it("sorts kernels by total time by default, names ascending", () => {
    expect(parseKernelSort(new URLSearchParams())).toEqual({ key: "total", desc: true });
    expect(parseKernelSort(new URLSearchParams("sort=name"))).toEqual({ key: "name", desc: false });
    expect(parseKernelSort(new URLSearchParams("sort=p99&dir=asc")))
      .toEqual({ key: "p99", desc: false });
    expect(parseKernelSort(new URLSearchParams("sort=bogus")).key).toBe("total");
  });
});

describe("insights", () => {
  const idle = insight({ rule: "gpu_idle", severity: "HIGH", evidence: [
    { name: "idle_pct", value: 60, unit: "%" }, { name: "idle_ns", value: 3e9, unit: "ns" },
    { name: "span_ns", value: 5e9, unit: "ns" }, { name: "gap1_start_ns", value: 1e9, unit: "ns" },
    { name: "gap1_ns", value: 2e9, unit: "ns" }] });
  const sync = insight({ rule: "sync", severity: "HIGH", file: "/src/t.cu", line: 90,
    evidence: [{ name: "blocked_ns", value: 4e9, unit: "ns" }] });
  const low = insight({ rule: "occ", severity: "LOW", kernel: "gemm",
    evidence: [{ name: "kernel_ns", value: 9e9, unit: "ns" }] });
  const med = insight({ rule: "stall", severity: "MEDIUM" });

  it("takes the largest duration as the time at stake, never a start or a span", () => {
    expect(timeAtStake(idle)).toBe(3e9);
    expect(timeAtStake(med)).toBe(0);
  });
  it("ranks by severity, then time at stake", () => {
    expect(rankInsights([low, med, idle, sync]).map((i) => i.rule))
      .toEqual(["sync", "gpu_idle", "stall", "occ"]);
  });
  it("links a line to the source view, a kernel to its row, a gap to the timeline", () => {
    expect(evidenceLinks("s", sync)).toEqual([{ kind: "source", label: "/src/t.cu:90",
      url: "/sessions/s?line=%2Fsrc%2Ft.cu%3A90&view=source" }]);
    const both = insight({ file: "/a.cu", line: 3, function: "f(int)", kernel: "f(int)" });
    expect(evidenceLinks("s", both).map((l) => l.url)).toEqual([
      "/sessions/s?fn=f%28int%29&line=%2Fa.cu%3A3&view=source",
      "/sessions/s?kernel=f%28int%29&view=kernels"]);
    expect(evidenceLinks("s", idle)).toEqual([{ kind: "span", label: "2.00 s at 1.00 s",
      url: "/sessions/s?t0=1000000000&t1=3000000000&view=timeline" }]);
  });
  it("puts the top insight in the header", () => {
    expect(headerFigures(report, rankInsights([low, sync])).topInsight?.rule).toBe("sync");
    expect(headerFigures(report, []).topInsight).toBeNull();
  });
});

describe("header figures", () => {
  it("takes busy and idle from the GPUs' samples where there are some", () => {
    const r: Report = { ...report, gpus: [
      { device: 0, metrics: { gpu_util_pct: { avg: 80 } }, idle_pct: 10 },
      { device: 1, metrics: { gpu_util_pct: { avg: 60 } }, idle_pct: 30 }] };
    const f = headerFigures(r, []);
    expect([f.wallNs, f.busyPct, f.idlePct, f.kernels, f.kernelNames])
      .toEqual([5e9, 70, 20, 8, 3]);
    expect(f.busySource).toBe("NVML utilization, 2 GPUs");
  });
  it("else from the gpu_idle insight, else kernel time over wall time", () => {
    const idle = insight({ rule: "gpu_idle", evidence: [{ name: "idle_pct", value: 62.5,
      unit: "%" }] });
    expect(headerFigures(report, [idle])).toMatchObject({ busyPct: 37.5, idlePct: 62.5 });
    const f = headerFigures(report, []);
    expect(f.busyPct).toBeCloseTo(100 * 1_110_000 / 5e9);
    expect(f.idlePct).toBeNull();
  });
  it("counts launches when the engine did not time kernels", () => {
    const f = headerFigures({ ...report, kernels: null,
      kernel_launches: { count: 12, kernel_names: 2 } }, []);
    expect([f.kernels, f.kernelNames, f.kernelsTimed]).toEqual([12, 2, false]);
  });
});

describe("kernel table", () => {
  const doc: KernelsDoc = { count: 5, distinct_names: 2, total_ns: 1000, truncated: false,
    kernels: [
      { name: "gemm", count: 4, total_ns: 900, mean_ns: 225, min_ns: 100, p50_ns: 200,
        p90_ns: 300, p99_ns: 300, max_ns: 300 },
      { name: "relu", count: 1, total_ns: 100, mean_ns: 100, min_ns: 100, p50_ns: 100,
        p90_ns: 100, p99_ns: 100, max_ns: 100 }] };
  it("adds the share and the configurations' occupancy and limiters", () => {
    const rows = kernelRows(doc, report);
    expect(rows[0]).toMatchObject({ sharePct: 90, occupancy: { min: 50, max: 75 },
      limiter: "registers, warps" });
    expect(rows[1]).toMatchObject({ sharePct: 10, occupancy: null, limiter: null });
  });
  it("sorts by any column, ties by name", () => {
    const rows = kernelRows(doc, report);
    expect(sortKernels(rows, "total", true).map((r) => r.name)).toEqual(["gemm", "relu"]);
    expect(sortKernels(rows, "max", false).map((r) => r.name)).toEqual(["relu", "gemm"]);
    expect(sortKernels(rows, "name", true).map((r) => r.name)).toEqual(["relu", "gemm"]);
    expect(sortKernels(rows, "occupancy", false).map((r) => r.name)).toEqual(["relu", "gemm"]);
  });
});

describe("session state and the capability record", () => {
  it("calls a session neither ended nor complete running", () => {
    expect(isRunning(summary({ state: "live" }))).toBe(true);
    expect(isRunning(summary({ state: "ended" }))).toBe(false);
    expect(isRunning(summary({ state: "live", completed_at: 5 }))).toBe(false);
  });
  it("gives the reasons of a view's features that were off", () => {
    const s = summary({ capabilities: { engine: "Monitor", features: {
      cupti_trace: { on: false, why: "engine Monitor runs no CUPTI" },
      nvml: { on: true }, host_metrics: { on: false, why: "no /proc" } } } });
    expect(missingReason(s, "kernels")).toBe("cupti_trace: engine Monitor runs no CUPTI");
    expect(missingReason(s, "metrics")).toBe("host_metrics: no /proc");
    expect(missingReason(s, "source")).toBe("");
    expect(missingReason(summary(), "kernels")).toBe("");
  });
});
