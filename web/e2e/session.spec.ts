// SPDX-License-Identifier: Apache-2.0
// The session page in a real browser against a real gpufl-server: the header figures and the
// kernel table equal `gpufl report --format json` of the same fixture directories, the scope
// tree, the insights and their evidence links, the source and SASS view, the metric plots, an
// export download equal to `gpufl export`, the states (not recorded, running, error, another
// workspace's session), both themes, screenshots, and the time to interactive.
import { type Page, expect, test } from "@playwright/test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { type Insight, formatCount, formatNs, rankInsights } from "../src/session/model";

/** Timings are judged only against a release server: a sanitizer build's (GPUFL_WEB_SANITIZED)
 * is many times slower by design; its figures are still written. */
const judgeTimes = process.env.GPUFL_WEB_SANITIZED !== "1";

interface Fixture {
  session_id: string;
  report: {
    session: { duration_ns: number; ended: boolean };
    kernels: { count: number; distinct_names: number; total_ns: number;
      hotspots: { name: string; calls: number; total_ns: number; p50_ns: number;
        p99_ns: number; max_ns: number }[] } | null;
    kernel_launches: { count: number } | null;
    scopes: { paths_count: number; paths: { path: string; depth: number }[] } | null;
  };
  insights: Insight[];
  chrome_export: string;
}
const want = JSON.parse(readFileSync(process.env.GPUFL_WEB_EXPECTED!, "utf8")) as {
  workspace: string;
  user: string;
  password: string;
  sessions: { session_id: string; state: string }[];
  other_workspace_session: string;
  fixtures: Record<string, Fixture>;
  perf_session: string;
  perf_kernels: number;
};
const out = process.env.GPUFL_WEB_OUT || "test-results";
const shots = `${out}/screenshots`;
const fx = (name: string) => want.fixtures[name];
const page_ = (name: string, query = "") =>
  `/sessions/${encodeURIComponent(fx(name).session_id)}${query}`;

async function logIn(page: Page, next: string) {
  await page.goto(next);
  await page.getByLabel("Workspace").fill(want.workspace);
  await page.getByLabel("User").fill(want.user);
  await page.getByLabel("Password").fill(want.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await expect(page.getByTestId("who")).toBeVisible();
}

function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(e.message));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of (401|404)/.test(m.text())) problems.push(m.text());
  });
  return problems;
}

test("header figures and kernel table equal gpufl report", async ({ page }) => {
  const problems = watchProblems(page);
  await logIn(page, page_("trace"));
  for (const name of ["trace", "stacks", "scoped", "pcsampled", "sassmetrics", "gpu"]) {
    const f = fx(name);
    await page.goto(page_(name));
    const figs = page.getByTestId("session-figures");
    await expect(figs.getByTestId("fig-wall")).toContainText(formatNs(f.report.session.duration_ns));
    const kernels = f.report.kernels?.count ?? f.report.kernel_launches?.count;
    await expect(figs.getByTestId("fig-kernels")).toContainText(
      kernels === undefined ? "—" : formatCount(kernels));
    const top = rankInsights(f.insights)[0];
    await expect(figs.getByTestId("fig-insight")).toContainText(top ? top.title : "none");
    if (name === "trace") await page.screenshot({ path: `${shots}/session-overview.png`,
      fullPage: true });
    if (!f.report.kernels) continue;
    await page.goto(page_(name, "?view=kernels"));
    const rows = page.locator("[data-testid=kernel-table] tbody tr");
    await expect(rows).toHaveCount(f.report.kernels.distinct_names);
    const hot = f.report.kernels.hotspots;
    expect(await rows.evaluateAll((r) => r.map((x) => x.getAttribute("data-kernel"))))
      .toEqual(hot.map((k) => k.name));
    for (let i = 0; i < hot.length; i++) {
      const cells = rows.nth(i).locator("td");
      await expect(cells.nth(1)).toHaveText(formatCount(hot[i].calls));
      await expect(cells.nth(2)).toHaveText(formatNs(hot[i].total_ns));
      await expect(cells.nth(5)).toHaveText(formatNs(hot[i].p50_ns));
      await expect(cells.nth(7)).toHaveText(formatNs(hot[i].p99_ns));
      await expect(cells.nth(8)).toHaveText(formatNs(hot[i].max_ns));
    }
    // The histogram of the longest kernel holds all its calls.
    await expect(page.getByTestId("kernel-histogram")).toHaveAttribute("data-calls",
      String(hot[0].calls));
  }
  expect(problems).toEqual([]);
});

test("kernel table sorts and picks a kernel through the URL", async ({ page }) => {
  await logIn(page, page_("trace", "?view=kernels"));
  const hot = fx("trace").report.kernels!.hotspots;
  await page.getByRole("button", { name: /^Calls/ }).click();
  await expect(page).toHaveURL(/sort=count/);
  const byCalls = [...hot].sort((a, b) => b.calls - a.calls || a.name.localeCompare(b.name));
  const names = () => page.locator("[data-testid=kernel-table] tbody tr").evaluateAll((r) =>
    r.map((x) => x.getAttribute("data-kernel")));
  await expect.poll(names).toEqual(byCalls.map((k) => k.name));
  const last = hot[hot.length - 1];
  await page.locator(`tr[data-kernel="${last.name}"]`).click();
  await expect(page).toHaveURL(new RegExp(`kernel=${encodeURIComponent(last.name)}`));
  await expect(page.locator("tr.selected")).toHaveAttribute("data-kernel", last.name);
  await expect(page.getByTestId("kernel-histogram")).toHaveAttribute("data-calls",
    String(last.calls));
  await page.screenshot({ path: `${shots}/session-kernels.png`, fullPage: true });
});

test("scope tree folds and unfolds", async ({ page }) => {
  const f = fx("scoped");
  await logIn(page, page_("scoped", "?view=scopes"));
  const rows = page.locator("[data-testid=scope-tree] tbody tr");
  await expect(rows).toHaveCount(f.report.scopes!.paths_count);
  expect(await rows.evaluateAll((r) => r.map((x) => x.getAttribute("data-path"))))
    .toEqual(expect.arrayContaining(f.report.scopes!.paths.map((p) => p.path)));
  await page.screenshot({ path: `${shots}/session-scopes.png`, fullPage: true });
  const parent = page.locator("[data-testid=scope-tree] button.fold").first();
  const path = await parent.evaluate((b) => b.closest("tr")!.getAttribute("data-path")!);
  const below = f.report.scopes!.paths.filter((p) => p.path.startsWith(path + "/")).length;
  await parent.click();
  await expect(page).toHaveURL(new RegExp(`fold=${encodeURIComponent(path)}`));
  await expect(rows).toHaveCount(f.report.scopes!.paths_count - below);
  await page.locator("[data-testid=scope-tree] button.fold").first().click();
  await expect(rows).toHaveCount(f.report.scopes!.paths_count);
});

test("insights are ranked and link to their evidence", async ({ page }) => {
  await logIn(page, page_("scoped", "?view=insights"));
  const ranked = rankInsights(fx("scoped").insights);
  const cards = page.locator("[data-testid=insight-list] article");
  await expect(cards).toHaveCount(ranked.length);
  expect(await cards.evaluateAll((c) => c.map((x) => x.getAttribute("data-rule"))))
    .toEqual(ranked.map((i) => i.rule));
  await page.screenshot({ path: `${shots}/session-insights.png`, fullPage: true });
  // A kernel: its row in the kernel table, selected.
  const spill = ranked.find((i) => i.rule === "register_spill")!;
  await cards.locator("[data-evidence=kernel]").first().click();
  await expect(page).toHaveURL(/view=kernels/);
  await expect(page.locator("tr.selected")).toHaveAttribute("data-kernel",
    ranked.find((i) => i.kernel)!.kernel!);
  expect(spill.kernel).toBeTruthy();
  // A time span: the timeline from the gap's start to its end.
  await page.goto(page_("trace", "?view=insights"));
  const idle = fx("trace").insights.find((i) => i.rule === "gpu_idle")!;
  const ev = (n: string) => idle.evidence.find((e) => e.name === n)!.value;
  await page.locator("[data-rule=gpu_idle] [data-evidence=span]").click();
  await expect(page).toHaveURL(new RegExp(
    `t0=${ev("gap1_start_ns")}&t1=${ev("gap1_start_ns") + ev("gap1_ns")}&view=timeline`));
  await expect(page.getByTestId("timeline")).toBeVisible();
  // A source line: the source view at that line, its instructions highlighted.
  await page.goto(page_("sassmetrics", "?view=insights"));
  const div = fx("sassmetrics").insights.find((i) => i.rule === "warp_divergence")!;
  await page.locator("[data-rule=warp_divergence] [data-evidence=source]").click();
  await expect(page).toHaveURL(/view=source/);
  await expect(page.locator("[data-testid=source-lines] tr.selected"))
    .toHaveAttribute("data-line", `${div.file}:${div.line}`);
  await expect(page.locator("[data-testid=sass-listing] tr.selected").first()).toBeVisible();
});

test("source and SASS view of the PC sampling and SASS metrics sessions", async ({ page }) => {
  await logIn(page, page_("pcsampled", "?view=source"));
  const fns = page.locator("[data-testid=function-list] tbody tr");
  await expect(fns.first()).toBeVisible();
  const first = await fns.first().getAttribute("data-function");
  // Hottest function first; its hottest line first, with a stacked bar of its stall reasons.
  const stall = fx("pcsampled").insights.find((i) => i.rule === "dominant_stall" && i.line)!;
  expect(first).toBe(stall.function);
  const line = page.locator("[data-testid=source-lines] tbody tr").first();
  await expect(line).toHaveAttribute("data-line", `${stall.file}:${stall.line}`);
  const lineSamples = stall.evidence.find((e) => e.name === "line_reason_samples")!.value;
  await expect(line.locator("[data-reason=long_scoreboard]")).toHaveCount(1);
  expect(Number((await line.locator("td").nth(1).textContent())!.replace(/,/g, "")))
    .toBeGreaterThanOrEqual(lineSamples);
  // Line ↔ instruction: a line lights its instructions, an instruction its line.
  await line.click();
  await expect(page).toHaveURL(/line=/);
  await expect(page.locator("[data-testid=sass-listing] tr.selected").first()).toBeVisible();
  await page.locator("[data-testid=sass-listing] tbody tr").first().click();
  await expect(page).toHaveURL(/pc=/);
  await expect(page.locator("[data-testid=source-lines] tr.selected")).toHaveCount(1);
  await page.screenshot({ path: `${shots}/session-source-pc.png`, fullPage: true });

  await page.goto(page_("sassmetrics", "?view=source"));
  const strided = fx("sassmetrics").insights.find((i) => i.rule === "uncoalesced_global")!;
  await page.locator(`[data-testid=function-list] tr[data-function="${strided.function}"]`)
    .click();
  const row = page.locator(`[data-testid=source-lines] tr[data-line="${strided.file}:${strided.line}"]`);
  const eff = strided.evidence.find((e) => e.name === "coalescing_efficiency_pct")!.value;
  await expect(row.locator("td").nth(4)).toHaveText(`${eff.toFixed(1)}%`);
  await page.screenshot({ path: `${shots}/session-source.png`, fullPage: true });
});

test("metric plots and their zoom", async ({ page }) => {
  await logIn(page, page_("gpu", "?view=metrics"));
  await expect(page.getByTestId("plot-util")).toBeVisible();
  await expect(page.getByTestId("plot-power")).toBeVisible();
  const whole = await page.getByTestId("metrics-range").textContent();
  await page.screenshot({ path: `${shots}/session-metrics.png`, fullPage: true });
  const canvas = page.locator("[data-testid=plot-util] .u-over");
  const box = (await canvas.boundingBox())!;
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  await expect(page).toHaveURL(/mt0=\d+&mt1=\d+/);
  await expect(page.getByTestId("metrics-range")).not.toHaveText(whole!);
  await page.getByTestId("metrics-reset").click();
  await expect(page).not.toHaveURL(/mt0=/);
});

test("export downloads what gpufl export writes", async ({ page }) => {
  await logIn(page, page_("trace"));
  const [download] = await Promise.all([page.waitForEvent("download"),
    page.getByTestId("export-chrome").click()]);
  expect(download.suggestedFilename()).toBe(`${fx("trace").session_id}.trace.json`);
  const got = readFileSync((await download.path())!);
  expect(got.equals(readFileSync(fx("trace").chrome_export))).toBe(true);
  await expect(page.getByTestId("export-perfetto")).toHaveAttribute("href",
    /\/export\?format=perfetto$/);
  await expect(page.getByTestId("export-html")).toHaveAttribute("href", /report\?format=html$/);
  // Compare with a baseline: the compare page with this session as the run.
  await page.getByTestId("session-compare").click();
  await expect(page).toHaveURL(new RegExp(`/compare\\?run=${fx("trace").session_id}`));
});

test("states: not recorded, running, unreachable, another workspace, unknown", async ({ page }) => {
  await logIn(page, page_("basic", "?view=kernels"));
  // An engine that did not record kernels: the capability record's reason.
  await expect(page.getByTestId("view-empty")).toBeVisible();
  await expect(page.getByTestId("capability-reason")).toContainText("cupti_trace");
  // A session still being recorded says so and offers a refresh.
  const running = want.sessions.find((s) => s.state !== "ended" && s.state !== "complete");
  expect(running, "a fixture session without its end (killed)").toBeTruthy();
  await page.goto(`/sessions/${encodeURIComponent(running!.session_id)}`);
  await expect(page.getByTestId("session-running")).toContainText("still being recorded");
  await page.getByTestId("session-running").getByRole("button", { name: "Refresh" }).click();
  await expect(page.getByTestId("session-figures")).toBeVisible();
  await expect(page.getByTestId("session-running")).toBeVisible();
  // The server unreachable for one view: an error with a retry.
  await page.route("**/scopes", (r) => r.abort());
  await page.goto(page_("scoped", "?view=scopes"));
  await expect(page.getByTestId("view-error")).toContainText("cannot be reached");
  await page.unroute("**/scopes");
  await page.getByTestId("view-error").getByRole("button", { name: "Retry" }).click();
  await expect(page.getByTestId("scope-tree")).toBeVisible();
  // Another workspace's session and an unknown one: not found, nothing of theirs.
  for (const id of [want.other_workspace_session, "no-such-session"]) {
    await page.goto(`/sessions/${id}`);
    await expect(page.getByTestId("session-not-found")).toContainText("Session not found");
    await expect(page.getByTestId("session-figures")).toHaveCount(0);
  }
  await page.screenshot({ path: `${shots}/session-not-found.png` });
  // The light theme.
  await page.goto(page_("trace"));
  await page.getByTestId("theme-toggle").click();
  await expect(page.getByTestId("session-figures")).toBeVisible();
  await page.screenshot({ path: `${shots}/session-theme.png`, fullPage: true });
});

test("time to interactive of the largest session", async ({ page }) => {
  await logIn(page, page_("trace"));
  const name = Object.keys(want.fixtures).reduce((a, b) =>
    (fx(b).report.kernels?.count ?? 0) > (fx(a).report.kernels?.count ?? 0) ? b : a);
  await page.goto(page_(name));
  await expect(page.getByTestId("kernel-table")).toBeVisible();
  await expect(page.getByTestId("fig-kernels")).toBeVisible();
  const ms = await page.evaluate(() => performance.now());
  const file = `${out}/timings.json`;
  const timings = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : {};
  Object.assign(timings, { session_interactive_ms: Math.round(ms), session_interactive_of: name,
    session_interactive_kernels: fx(name).report.kernels?.count ?? 0 });
  writeFileSync(file, JSON.stringify(timings, null, 1));
  if (judgeTimes) expect(ms).toBeLessThan(2000);
});

test("a session of 1 M kernels is interactive in 2 s", async ({ page }) => {
  test.setTimeout(240_000);
  const sid = want.perf_session;
  await logIn(page, page_("trace"));
  // A finished session's report is built once and stored (docs/server-api.md): asked for once
  // here, as the server's builder would have, so the page reads what it keeps.
  const built = await page.request.get(`/api/v1/sessions/${encodeURIComponent(sid)}/report?format=json`,
    { timeout: 200_000 });
  expect(built.ok()).toBe(true);
  await page.goto(`/sessions/${encodeURIComponent(sid)}`);
  await expect(page.getByTestId("kernel-table")).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId("fig-kernels")).toBeVisible();
  const ms = await page.evaluate(() => performance.now()); // since this navigation began
  await expect(page.getByTestId("fig-kernels")).toContainText(formatCount(want.perf_kernels));
  const file = `${out}/timings.json`;
  const timings = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : {};
  Object.assign(timings, { session_1m_interactive_ms: Math.round(ms),
    session_1m_kernels: want.perf_kernels });
  writeFileSync(file, JSON.stringify(timings, null, 1));
  await page.screenshot({ path: `${shots}/session-1m.png`, fullPage: true });
  if (judgeTimes) expect(ms).toBeLessThan(2000);
});

