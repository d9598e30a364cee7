// SPDX-License-Identifier: Apache-2.0
// The sessions list's duration and insight columns against the API's figures, and the duration
// and severity filters asked of the server through the URL; the Jobs and Settings links.
import { expect, test } from "@playwright/test";
import { type ExpectedSession, apiGet, logInAt, want, watchProblems } from "./helpers";

const LEVEL: Record<string, number> = { LOW: 1, MEDIUM: 2, HIGH: 3 };

test("duration and insights columns and their filters", async ({ page }) => {
  const problems = watchProblems(page);
  await logInAt(page, "/sessions");
  const { sessions } = await apiGet<{ sessions: ExpectedSession[] }>(page, "/api/v1/sessions?limit=500");
  await expect(page.getByTestId("sessions-count")).toHaveText(`${sessions.length} sessions`);
  for (const s of sessions) {
    const row = page.locator(`tr[data-session="${s.session_id}"]`);
    const ins = row.locator("td.insights");
    if (s.insights === null) await expect(ins).toHaveText("");
    else if (s.insights === 0) await expect(ins).toHaveText("none");
    else await expect(ins).toHaveText(`${s.top_severity} · ${s.insights}`);
    if (s.duration_ns === null) await expect(row.locator("td.duration")).toHaveText(/running|unknown/);
  }
  expect(sessions.some((s) => s.insights !== null && s.insights > 0)).toBe(true);
  const basic = sessions.find((s) => s.duration_ns === 4_000_000_000);
  if (basic) await expect(page.locator(`tr[data-session="${basic.session_id}"] td.duration`)).toHaveText("4.00 s");

  // Minimum severity, through the form: the URL and the rows follow the server.
  await page.getByLabel("Insights").selectOption("MEDIUM");
  await expect(page).toHaveURL(/severity=MEDIUM/);
  const medium = sessions.filter((s) => s.top_severity && LEVEL[s.top_severity] >= 2).map((s) => s.session_id);
  await expect(page.locator("[data-testid=sessions-table] tbody tr")).toHaveCount(medium.length);

  // A duration range in seconds, from the URL alone.
  await page.goto("/sessions?dmin=1&dmax=5");
  const inRange = sessions.filter((s) => s.duration_ns !== null && s.duration_ns >= 1e9 && s.duration_ns <= 5e9);
  await expect(page.getByLabel("Longer than (s)")).toHaveValue("1");
  if (inRange.length)
    await expect(page.locator("[data-testid=sessions-table] tbody tr")).toHaveCount(inRange.length);
  else await expect(page.getByTestId("sessions-empty")).toBeVisible();

  // The header's links.
  await page.getByRole("link", { name: "Jobs" }).click();
  await expect(page).toHaveURL(/\/jobs$/);
  await page.getByRole("link", { name: "Settings" }).click();
  await expect(page).toHaveURL(/\/settings$/);
  expect(problems).toEqual([]);
  // Every seeded session is listed (other specs may add sessions of their own, live ones).
  expect(sessions.map((s) => s.session_id)).toEqual(
    expect.arrayContaining(want.sessions.map((s) => s.session_id)));
});
