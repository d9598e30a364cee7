// SPDX-License-Identifier: Apache-2.0
// A job's ranks: their figures from the server's answers, NCCL time by name, the median, the
// top kernels and the straggler named with its metric and how far from the median.
import { describe, expect, it } from "vitest";
import { type RankKernels, buildRanks, findStraggler, formatNs, isComm, median, topKernels } from "./ranks";

const sess = (id: string, host: string, pid: number, dur: number | null = 10e9) => ({
  session_id: id, hostname: host, pid, duration_ns: dur,
});
const kern = (rows: [string, number][]): RankKernels => ({
  count: rows.length * 10,
  total_ns: rows.reduce((s, [, t]) => s + t, 0),
  kernels: rows.map(([name, total_ns]) => ({ name, count: 10, total_ns })),
});

describe("buildRanks", () => {
  it("orders ranks by host and pid and splits NCCL time out", () => {
    const ranks = buildRanks(
      [sess("s2", "node2", 5), sess("s1", "node1", 9), sess("s0", "node1", 7)],
      new Map([
        ["s0", kern([["gemm", 100], ["ncclDevKernel_AllReduce_Sum_f32", 40]])],
        ["s1", kern([["gemm", 110]])],
      ]),
    );
    expect(ranks.map((r) => r.session_id)).toEqual(["s0", "s1", "s2"]);
    expect(ranks[0]).toMatchObject({ rank: 0, gpu_ns: 140, comm_ns: 40, compute_ns: 100, kernels: 20 });
    expect(ranks[2]).toMatchObject({ gpu_ns: 0, kernels: 0, comm_ns: 0 }); // no kernels answer
    expect(isComm("ncclKernel_AllGather_RING_LL")).toBe(true);
    expect(isComm("gemm_nccl_free")).toBe(true);
    expect(isComm("sgemm")).toBe(false);
  });
});

describe("median and top kernels", () => {
  it("takes the middle, or the mean of the middle two", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(Number.isNaN(median([]))).toBe(true);
  });
  it("ranks kernel names by their time over all ranks", () => {
    const ranks = buildRanks([sess("a", "h", 1), sess("b", "h", 2)], new Map([
      ["a", kern([["x", 5], ["y", 10]])],
      ["b", kern([["x", 6], ["z", 1]])],
    ]));
    expect(topKernels(ranks, 2)).toEqual(["x", "y"]);
  });
});

describe("findStraggler", () => {
  const job = (gemm: number[], wall: (number | null)[] = gemm.map(() => 10e9)) =>
    buildRanks(
      gemm.map((_, i) => sess("s" + i, "node" + i, 1, wall[i])),
      new Map(gemm.map((g, i) => [
        "s" + i,
        kern([["gemm", g], ["relu", 50e6], ["ncclDevKernel_AllReduce", 100e6]]),
      ])),
    );

  it("names the rank and the kernel that makes it slow, with how far from the median", () => {
    const ranks = job([1e9, 1e9, 1e9, 1.18e9]);
    const s = findStraggler(ranks, topKernels(ranks, 5))!;
    expect(s.rank).toBe(3);
    expect(s.metric).toBe("GPU time in gemm");
    expect(s.rel).toBeCloseTo(0.18);
    expect(s.text).toBe("rank 3: 18 % more GPU time in gemm than the median rank");
  });

  it("says less for a rank below the median", () => {
    const ranks = job([1e9, 1e9, 0.7e9]);
    const s = findStraggler(ranks, ["gemm"])!;
    expect(s.text).toBe("rank 2: 30 % less GPU time in gemm than the median rank");
  });

  it("finds a rank slow in wall time alone", () => {
    const ranks = job([1e9, 1e9, 1e9], [10e9, 10e9, 15e9]);
    expect(findStraggler(ranks, ["gemm"])?.metric).toBe("wall time");
  });

  it("skips a metric some rank lacks (a session still running)", () => {
    const ranks = job([1e9, 1e9, 1.5e9], [10e9, null, 30e9]);
    expect(findStraggler(ranks, [])?.metric).toBe("GPU time");
  });

  it("compares a kernel only where every rank ran it", () => {
    // Two ranks whose libraries picked different GEMM kernels (as cuBLAS does for another
    // shape): a kernel one rank lacks says nothing about which is slow; rank 1's conv is.
    const ranks = buildRanks([sess("a", "h", 1), sess("b", "h", 2)], new Map([
      ["a", kern([["conv", 100e6], ["gemm_nn", 50e6]])],
      ["b", kern([["conv", 130e6], ["sgemm_simt", 20e6]])],
    ]));
    const s = findStraggler(ranks, topKernels(ranks, 10))!;
    expect(s.metric).toBe("GPU time in conv");
    expect(s.text).toBe("rank 1: 13 % more GPU time in conv than the median rank");
  });

  it("names the slower of two ranks, not the first (both are as far from their mean)", () => {
    const s = findStraggler(job([1.2e9, 1e9]), ["gemm"])!;
    expect([s.rank, s.rel > 0]).toEqual([0, true]);
    const t = findStraggler(job([1e9, 1.2e9]), ["gemm"])!;
    expect([t.rank, t.rel > 0]).toEqual([1, true]);
  });

  it("names none for equal ranks, small differences or a single rank", () => {
    expect(findStraggler(job([1e9, 1e9, 1e9]), ["gemm"])).toBeNull();
    expect(findStraggler(job([1e9, 1.01e9, 0.99e9]), ["gemm"])).toBeNull();
    expect(findStraggler(job([1e9]), ["gemm"])).toBeNull();
  });
});

describe("formatNs", () => {
  it("picks a unit", () => {
    expect(formatNs(812)).toBe("812 ns");
    expect(formatNs(3400)).toBe("3.40 µs");
    expect(formatNs(12.5e6)).toBe("12.5 ms");
    expect(formatNs(4.2e9)).toBe("4.20 s");
    expect(formatNs(200e9)).toBe("3 min 20 s");
    expect(formatNs(null)).toBe("–");
  });
});
