// SPDX-License-Identifier: Apache-2.0
// The jobs pages against the seeded multi-rank job: the job listed with its ranks, the ranks
// side by side with the server's kernel figures, and the slow rank named as the straggler with
// the kernel that makes it so; a job of no session; screenshots jobs.png and job.png.
import { expect, test } from "@playwright/test";
import { apiGet, logInAt, shots, want, watchProblems } from "./helpers";

interface KernelsAnswer {
  count: number;
  total_ns: number;
  kernels: { name: string; total_ns: number }[];
}

test("the jobs list and one job's ranks with its straggler", async ({ page }) => {
  const problems = watchProblems(page);
  await logInAt(page, "/jobs");
  await expect(page).toHaveURL(/\/jobs$/);
  const jobs = await apiGet<{ jobs: { job_id: string; sessions: number }[] }>(page, "/api/v1/fleet/jobs");
  await expect(page.getByTestId("jobs-count")).toHaveText(`${jobs.jobs.length} job${jobs.jobs.length === 1 ? "" : "s"}`);
  const row = page.locator(`[data-testid=jobs-table] tr[data-job="${want.job.id}"]`);
  await expect(row.locator("td").nth(1)).toHaveText(String(want.job.ranks));
  await page.screenshot({ path: `${shots}/jobs.png`, fullPage: true });

  await row.getByRole("link", { name: want.job.id }).click();
  await expect(page).toHaveURL(new RegExp(`/jobs/${want.job.id}$`));
  await expect(page.getByTestId("ranks-count")).toHaveText(`${want.job.ranks} ranks`);
  await expect(page.getByTestId("straggler")).toContainText(
    `rank ${want.job.slow_rank}: ${want.job.slow_pct} % more GPU time in ${want.job.slow_kernel} than the median rank`,
  );
  // Every rank's GPU time is the server's kernel total for its session.
  const rows = page.locator("[data-testid=ranks-table] tbody tr");
  await expect(rows).toHaveCount(want.job.ranks);
  for (let i = 0; i < want.job.ranks; i++) {
    const sid = (await rows.nth(i).getAttribute("data-session"))!;
    const k = await apiGet<KernelsAnswer>(page, `/api/v1/sessions/${sid}/kernels`);
    await expect(rows.nth(i).locator("[data-metric=gpu]")).toHaveAttribute("data-ns", String(k.total_ns));
    await expect(rows.nth(i).locator("[data-metric=kernels]")).toHaveText(String(k.count));
  }
  await expect(page.locator("tr.straggler")).toHaveAttribute("data-rank", String(want.job.slow_rank));
  await page.screenshot({ path: `${shots}/job.png`, fullPage: true });

  // The number of kernel columns is in the URL.
  await page.getByLabel("Kernel columns").selectOption("1");
  await expect(page).toHaveURL(/top=1/);
  await expect(page.locator("[data-testid=ranks-table] tbody tr").first().locator("[data-kernel]")).toHaveCount(1);

  // A job id no session has: an empty state, not an error.
  await page.goto("/jobs/no-such-job");
  await expect(page.getByTestId("job-empty")).toContainText("No sessions of this job");
  expect(problems).toEqual([]);
});
