// SPDX-License-Identifier: Apache-2.0
// The dashboard on sessions recorded on GPUs (tests/fixtures/gpu-runs), each page against
// `gpufl report` / `gpufl insights` of the same directory: the Trace session's page (header,
// every kernel row, the scope tree, the insights and their source lines), the Deep session's
// source view, the two-rank job and its straggler, the sessions list's durations; screenshots
// gpu-session.png, gpu-source.png and gpu-job.png.
import { expect, test } from "@playwright/test";
import { readFileSync } from "node:fs";
import { type Insight, formatCount, formatNs, formatPct, rankInsights } from "../src/session/model";
import { type Session, formatDuration } from "../src/sessions";
import { apiGet, logInAt, shots, watchProblems } from "./helpers";

interface Hotspot {
  name: string;
  calls: number;
  total_ns: number;
  p50_ns: number;
  p99_ns: number;
}
interface LineSamples {
  kernel: string;
  file: string;
  line: number;
  samples: number;
  reason: string;
  reason_samples: number;
}
interface LineMetrics {
  kernel: string;
  file: string;
  line: number;
  thread_efficiency_pct: number;
}
interface Run {
  session_id: string;
  report: {
    session: { duration_ns: number };
    kernels: { count: number; distinct_names: number; total_ns: number; hotspots: Hotspot[] } | null;
    scopes: { paths: { path: string; calls: number; total_ns: number }[] } | null;
    scope_gpu: { paths: { path: string; gpu_ns: number; kernels: number }[] } | null;
    pc_sampling: { kernels: { kernel: string; samples: number }[]; lines: LineSamples[] } | null;
    sass_metrics: { kernels: { kernel: string; thread_efficiency_pct: number }[];
      divergent_lines: LineMetrics[] } | null;
  };
  insights: Insight[];
}
const want = JSON.parse(readFileSync(process.env.GPUFL_WEB_EXPECTED!, "utf8")) as {
  gpu_runs: Record<string, Run>;
};
const run = (name: string) => want.gpu_runs[name];
const at = (name: string, query = "") => `/sessions/${encodeURIComponent(run(name).session_id)}${query}`;
const RUNS = ["deep", "job-rank0", "job-rank1", "monitor", "trace"];

test("the Trace session's page equals gpufl report and insights", async ({ page }) => {
  const problems = watchProblems(page);
  const r = run("trace");
  await logInAt(page, at("trace"));
  const figs = page.getByTestId("session-figures");
  await expect(figs.getByTestId("fig-wall")).toContainText(formatNs(r.report.session.duration_ns));
  await expect(figs.getByTestId("fig-kernels")).toContainText(formatCount(r.report.kernels!.count));
  await expect(figs.getByTestId("fig-insight")).toContainText(rankInsights(r.insights)[0].title);

  // Every kernel row: calls, total, p50 and p99 as the CLI's table, in its order (by total).
  await page.goto(at("trace", "?view=kernels"));
  const hot = r.report.kernels!.hotspots;
  expect(hot.length).toBe(r.report.kernels!.distinct_names);
  const rows = page.locator("[data-testid=kernel-table] tbody tr");
  await expect(rows).toHaveCount(hot.length);
  const cells = await rows.evaluateAll((trs) => trs.map((tr) => ({
    name: tr.getAttribute("data-kernel"),
    td: [...tr.querySelectorAll("td")].map((td) => td.textContent),
  })));
  expect(cells.map((c) => c.name)).toEqual(hot.map((k) => k.name));
  expect(cells.map((c) => [c.td[1], c.td[2], c.td[5], c.td[7]])).toEqual(hot.map((k) =>
    [formatCount(k.calls), formatNs(k.total_ns), formatNs(k.p50_ns), formatNs(k.p99_ns)]));
  await page.screenshot({ path: `${shots}/gpu-session.png`, fullPage: true });

  // The scope tree's `step`: its calls and host time, its GPU time and kernels.
  await page.goto(at("trace", "?view=scopes"));
  const step = r.report.scopes!.paths.find((p) => p.path === "step")!;
  const gpu = r.report.scope_gpu!.paths.find((p) => p.path === "step")!;
  const tds = page.locator('[data-testid=scope-tree] tr[data-path="step"] td');
  await expect(tds.nth(1)).toHaveText(formatCount(step.calls));
  await expect(tds.nth(2)).toHaveText(formatNs(step.total_ns));
  await expect(tds.nth(4)).toHaveText(formatNs(gpu.gpu_ns));
  await expect(tds.nth(6)).toHaveText(formatCount(gpu.kernels));

  // The insights: all of the CLI's, its severities in its order (the page ranks by time at
  // stake within one severity), each source line the CLI's file and line.
  await page.goto(at("trace", "?view=insights"));
  const cards = page.locator("[data-testid=insight-list] article");
  await expect(cards).toHaveCount(r.insights.length);
  const ranked = rankInsights(r.insights);
  const shown = await cards.evaluateAll((as) => as.map((a) => ({
    rule: a.getAttribute("data-rule"),
    title: a.querySelector("h3")!.textContent,
    source: a.querySelector("[data-evidence=source] .mono")?.textContent ?? null,
  })));
  expect(shown.map((c) => c.title)).toEqual(ranked.map((i) => `${i.severity} ${i.title}`));
  expect(shown.map((c) => c.title!.split(" ")[0])).toEqual(r.insights.map((i) => i.severity));
  expect(shown.map((c) => c.source)).toEqual(ranked.map((i) =>
    (i.file && i.line != null ? `${i.file}:${i.line}` : null)));
  const lines = ranked.filter((i) => i.file && i.line != null);
  expect(lines.length).toBeGreaterThanOrEqual(3); // the CPU stacks place the syncs
  const sync = lines.find((i) => i.rule === "in_loop_sync")!;
  await page.locator("[data-rule=in_loop_sync] [data-evidence=source]").click();
  await expect(page).toHaveURL(/view=source/);
  await expect(page).toHaveURL(new RegExp(`line=${encodeURIComponent(`${sync.file}:${sync.line}`)}`));
  expect(problems).toEqual([]);
});

test("the Deep session's source view equals gpufl report", async ({ page }) => {
  const problems = watchProblems(page);
  const rep = run("deep").report;
  const pcs = rep.pc_sampling!;
  const sm = rep.sass_metrics!;
  await logInAt(page, at("deep", "?view=source"));
  // The functions: the CLI's PC-sampled kernels, hottest first, with their samples and the
  // thread efficiency of the SASS metrics.
  const fns = page.locator("[data-testid=function-list] tbody tr");
  await expect(fns).toHaveCount(pcs.kernels.length);
  const byName = [...pcs.kernels].sort((a, b) => b.samples - a.samples);
  const listed = await fns.evaluateAll((trs) => trs.map((tr) => ({
    name: tr.getAttribute("data-function"),
    td: [...tr.querySelectorAll("td")].map((td) => td.textContent),
  })));
  expect(listed.map((f) => f.name)).toEqual(byName.map((k) => k.kernel));
  expect(listed.map((f) => [f.td[1], f.td[3]])).toEqual(byName.map((k) => [formatCount(k.samples),
    formatPct(sm.kernels.find((m) => m.kernel === k.kernel)!.thread_efficiency_pct)]));

  // The hottest function's hottest line: the CLI's line, its samples and its top stall reason.
  const hottest = pcs.lines.filter((l) => l.kernel === byName[0].kernel)
    .sort((a, b) => b.samples - a.samples)[0];
  const line = page.locator("[data-testid=source-lines] tbody tr").first();
  await expect(line).toHaveAttribute("data-line", `${hottest.file}:${hottest.line}`);
  await expect(line.locator("td").nth(1)).toHaveText(formatCount(hottest.samples));
  await expect(line.locator(`[data-reason=${hottest.reason}]`)).toHaveCount(1);
  await expect(line.locator(".stack")).toHaveAttribute("title",
    new RegExp(`(^|, )${hottest.reason}: ${hottest.reason_samples}(,|$)`));
  await page.screenshot({ path: `${shots}/gpu-source.png`, fullPage: true });

  // The divergent function's most divergent line: the CLI's thread efficiency.
  const div = sm.divergent_lines[0];
  await page.locator(`[data-testid=function-list] tr[data-function="${div.kernel}"]`).click();
  await expect(page).toHaveURL(new RegExp(`fn=${div.kernel}`));
  const row = page.locator(`[data-testid=source-lines] tr[data-line="${div.file}:${div.line}"]`);
  await expect(row.locator("td").nth(3)).toHaveText(formatPct(div.thread_efficiency_pct));
  expect(problems).toEqual([]);
});

interface KernelsAnswer {
  count: number;
  total_ns: number;
}

test("the two-rank job names the session of job-rank1 as its straggler", async ({ page }) => {
  const problems = watchProblems(page);
  const ids = ["job-rank0", "job-rank1"].map((n) => run(n).session_id);
  await logInAt(page, "/jobs/dash-job-1");
  await expect(page.getByTestId("ranks-count")).toHaveText("2 ranks");
  const rows = page.locator("[data-testid=ranks-table] tbody tr");
  await expect(rows).toHaveCount(2);
  const shown = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-session")));
  expect(new Set(shown)).toEqual(new Set(ids));
  // Each rank's GPU time and kernels: the API's for its session, and the CLI's report.
  for (let i = 0; i < 2; i++) {
    const sid = shown[i]!;
    const k = await apiGet<KernelsAnswer>(page, `/api/v1/sessions/${sid}/kernels`);
    const cli = Object.values(want.gpu_runs).find((x) => x.session_id === sid)!.report.kernels!;
    expect([k.count, k.total_ns]).toEqual([cli.count, cli.total_ns]);
    await expect(rows.nth(i).locator("[data-metric=gpu]")).toHaveAttribute("data-ns", String(k.total_ns));
    await expect(rows.nth(i).locator("[data-metric=kernels]")).toHaveText(String(k.count));
  }
  const straggler = page.locator("tr.straggler");
  await expect(straggler).toHaveAttribute("data-session", run("job-rank1").session_id);
  const rank = await straggler.getAttribute("data-rank");
  await expect(page.getByTestId("straggler")).toContainText(`rank ${rank}: `);
  await expect(page.getByTestId("straggler")).toContainText(" more ");
  await page.screenshot({ path: `${shots}/gpu-job.png`, fullPage: true });
  expect(problems).toEqual([]);
});

test("the sessions list shows the five runs with the CLI's wall time", async ({ page }) => {
  const problems = watchProblems(page);
  await logInAt(page, "/sessions");
  for (const name of RUNS) {
    const r = run(name);
    const row = page.locator(`[data-testid=sessions-table] tr[data-session="${r.session_id}"]`);
    await expect(row, name).toHaveCount(1);
    await expect(row.locator("td.duration"), name).toHaveText(
      formatDuration({ duration_ns: r.report.session.duration_ns } as Session));
  }
  expect(Object.keys(want.gpu_runs).sort()).toEqual(RUNS);
  expect(problems).toEqual([]);
});
