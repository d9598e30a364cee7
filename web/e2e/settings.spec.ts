// SPDX-License-Identifier: Apache-2.0
// Settings' API keys: create a read key in the UI (shown once), use it with the API to list
// sessions, see its last use, revoke it in the UI (with a confirmation) and see the API refuse
// it; screenshot settings.png.
import { expect, request, test } from "@playwright/test";
import { logInAt, shots, want, watchProblems } from "./helpers";

test("create a key, use it, revoke it", async ({ page, baseURL }) => {
  const problems = watchProblems(page);
  await logInAt(page, "/settings");
  await expect(page).toHaveURL(/\/settings$/);
  await expect(page.getByTestId("keys-table")).toBeVisible();
  await page.getByLabel("Role").selectOption("read");
  await page.getByLabel("Label").fill("e2e notebook");
  await page.getByRole("button", { name: "Create key" }).click();
  const key = (await page.getByTestId("new-key").textContent())!;
  expect(key).toMatch(/^gpfl_[a-z2-9]{10}_[A-Za-z0-9_-]{43}$/);
  const prefix = key.split("_")[1];
  const row = page.locator(`[data-testid=keys-table] tr[data-prefix="${prefix}"]`);
  await expect(row).toContainText("e2e notebook");
  await expect(row).toHaveAttribute("data-state", "active");
  await page.screenshot({ path: `${shots}/settings.png`, fullPage: true });

  // The key works with the API, without the browser's login.
  const api = await request.newContext({ baseURL });
  const ok = await api.get("/api/v1/sessions?limit=500", { headers: { Authorization: `Bearer ${key}` } });
  expect(ok.status()).toBe(200);
  // Every seeded session (other specs may have added live ones since).
  const listed = ((await ok.json()).sessions as { session_id: string }[]).map((s) => s.session_id);
  expect(listed).toEqual(expect.arrayContaining(want.sessions.map((s) => s.session_id)));

  // Shown once: after a reload only its prefix is left, now with its last use.
  await page.reload();
  await expect(page.getByTestId("new-key")).toHaveCount(0);
  await expect(page.locator("body")).not.toContainText(key);
  await expect(row.getByTestId("key-last-used")).not.toHaveText("never");

  await row.getByTestId("key-revoke").click();
  await row.getByTestId("key-revoke-confirm").click();
  await expect(page.locator(`tr[data-prefix="${prefix}"]`)).toHaveCount(0); // active keys only
  await page.getByLabel("Show revoked keys").check();
  await expect(page).toHaveURL(/show=all/);
  await expect(row).toHaveAttribute("data-state", "revoked");
  const refused = await api.get("/api/v1/sessions?limit=1", { headers: { Authorization: `Bearer ${key}` } });
  expect(refused.status()).toBe(401);
  await api.dispose();
  expect(problems).toEqual([]);
});
