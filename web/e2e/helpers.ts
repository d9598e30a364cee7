// SPDX-License-Identifier: Apache-2.0
// What the browser tests share: the seeded server's expectations (GPUFL_WEB_EXPECTED, written by
// tests/web/run_browser_tests.py), the screenshots' folder, logging in, and a check that the
// page logged no error.
import { type Page, expect } from "@playwright/test";
import { readFileSync } from "node:fs";

export interface ExpectedSession {
  session_id: string;
  app_name: string | null;
  hostname: string | null;
  job_id: string | null;
  duration_ns: number | null;
  top_severity: string | null;
  insights: number | null;
}

export const want = JSON.parse(readFileSync(process.env.GPUFL_WEB_EXPECTED!, "utf8")) as {
  workspace: string;
  user: string;
  password: string;
  sessions: ExpectedSession[];
  other_workspace_session: string;
  job: { id: string; app: string; ranks: number; slow_rank: number; slow_kernel: string; slow_pct: number };
};

export const shots = `${process.env.GPUFL_WEB_OUT || "test-results"}/screenshots`;

/** Logs in through the form, starting at path (the login sends the browser back there). */
export async function logInAt(page: Page, path: string) {
  await page.goto(path);
  await expect(page).toHaveURL(/\/login\?next=/);
  await page.getByLabel("Workspace").fill(want.workspace);
  await page.getByLabel("User").fill(want.user);
  await page.getByLabel("Password").fill(want.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await expect(page).not.toHaveURL(/\/login/);
}

/** Collects the page's script errors and console errors (the 401s of a login check aside). */
export function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(e.message));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 40[134]/.test(m.text())) problems.push(m.text());
  });
  return problems;
}

/** GET of the API with the page's login cookie: the numbers the page must show. */
export async function apiGet<T>(page: Page, path: string): Promise<T> {
  const r = await page.request.get(path);
  expect(r.status(), path).toBe(200);
  return (await r.json()) as T;
}
