// SPDX-License-Identifier: Apache-2.0
// Compare two runs: from the sessions list's "Compare with…" to the baseline picker (sessions of
// the run's app), then the kernel diff against the server's kernel figures of both sessions;
// the state in the URL; another workspace's session is not found; screenshot compare.png.
import { expect, test } from "@playwright/test";
import { apiGet, logInAt, shots, want, watchProblems } from "./helpers";

interface KernelsAnswer {
  total_ns: number;
  kernels: { name: string; total_ns: number }[];
}

test("pick a baseline of the same app and see what got slower", async ({ page }) => {
  const problems = watchProblems(page);
  await logInAt(page, "/sessions");
  const ranks = want.sessions.filter((s) => s.job_id === want.job.id)
    .sort((a, b) => (a.hostname ?? "").localeCompare(b.hostname ?? ""));
  const run = ranks[want.job.slow_rank].session_id;
  const base = ranks[0].session_id;
  await page.locator(`tr[data-session="${run}"]`).getByTestId("compare-with").click();
  await expect(page).toHaveURL(new RegExp(`/compare\\?run=${run}$`));
  await expect(page.getByTestId("compare-pick")).toContainText("Pick a baseline");
  // The picker lists the other sessions of the run's app, and only those.
  const options = await page.locator("#compare-base option").evaluateAll((os) =>
    os.map((o) => (o as HTMLOptionElement).value).filter(Boolean));
  expect(new Set(options)).toEqual(new Set(ranks.map((s) => s.session_id).filter((s) => s !== run)));
  await page.getByLabel("Baseline session").selectOption(base);
  await expect(page).toHaveURL(new RegExp(`/compare\\?base=${base}&run=${run}$`));

  const [kb, kr] = await Promise.all([
    apiGet<KernelsAnswer>(page, `/api/v1/sessions/${base}/kernels`),
    apiGet<KernelsAnswer>(page, `/api/v1/sessions/${run}/kernels`),
  ]);
  const t = (k: KernelsAnswer, n: string) => k.kernels.find((x) => x.name === n)!.total_ns;
  const gemm = page.locator(`[data-testid=compare-kernels] tr[data-key="${want.job.slow_kernel}"]`);
  await expect(gemm).toHaveAttribute("data-change", "slower");
  await expect(gemm.locator("[data-delta-ns]")).toHaveAttribute("data-delta-ns",
    String(t(kr, want.job.slow_kernel) - t(kb, want.job.slow_kernel)));
  // The GEMM is the only kernel that changed; it heads the table (most time at stake).
  await expect(page.getByTestId("compare-kernels-summary")).toHaveText(
    "1 slower, 0 faster, 0 appeared, 0 vanished, 2 unchanged");
  await expect(page.locator("[data-testid=compare-kernels] tbody tr").first()).toHaveAttribute(
    "data-key", want.job.slow_kernel);
  await expect(page.getByTestId("compare-headline")).toContainText("GPU kernel time");
  await page.screenshot({ path: `${shots}/compare.png`, fullPage: true });

  // Reloading the URL gives the same view; another workspace's session is not found.
  await page.reload();
  await expect(gemm).toHaveAttribute("data-change", "slower");
  await page.goto(`/compare?run=${want.other_workspace_session}`);
  await expect(page.getByTestId("compare-error")).toContainText("No such session in this workspace");
  expect(problems).toEqual([]);
});
