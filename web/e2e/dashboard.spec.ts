// SPDX-License-Identifier: Apache-2.0
// The dashboard in a real browser against a real gpufl-server: log in, the sessions list with
// the server's sessions, filters and search (in the URL), a wrong URL, another workspace's
// session absent, both themes, log out; a screenshot of each page.
import { type Page, expect, test } from "@playwright/test";
import { readFileSync } from "node:fs";

interface ExpectedSession {
  session_id: string;
  app_name: string | null;
  hostname: string | null;
}
const want = JSON.parse(readFileSync(process.env.GPUFL_WEB_EXPECTED!, "utf8")) as {
  workspace: string;
  user: string;
  password: string;
  sessions: ExpectedSession[];
  other_workspace_session: string;
};
const shots = `${process.env.GPUFL_WEB_OUT || "test-results"}/screenshots`;

async function logIn(page: Page, password = want.password) {
  await page.goto("/");
  await expect(page).toHaveURL(/\/login\?next=%2Fsessions$/);
  await page.getByLabel("Workspace").fill(want.workspace);
  await page.getByLabel("User").fill(want.user);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Log in" }).click();
}

async function rowIds(page: Page): Promise<string[]> {
  return page.locator("[data-testid=sessions-table] tbody tr").evaluateAll((rows) =>
    rows.map((r) => r.getAttribute("data-session") || ""),
  );
}

test("the fixtures are there to be shown", () => {
  expect(want.sessions.length).toBeGreaterThanOrEqual(10);
});

test("a wrong password is refused and says so", async ({ page }) => {
  await logIn(page, "not the password");
  await expect(page.getByTestId("login-error")).toHaveText("Unknown user or wrong password.");
  await expect(page).toHaveURL(/\/login/);
  await page.screenshot({ path: `${shots}/login-error.png` });
});

test("log in, list, filter, search, wrong URL, themes, log out", async ({ page }) => {
  // Anything the page policy blocks, or a script error, shows on the console: there must be none
  // (the 401s of the login check are answers the app expects, not errors of the page).
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(e.message));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 401/.test(m.text())) problems.push(m.text());
  });
  await page.goto("/login");
  await page.screenshot({ path: `${shots}/login.png` });
  await logIn(page);

  // The list: every session of the workspace, newest first, and none of another workspace.
  await expect(page).toHaveURL(/\/sessions$/);
  await expect(page.getByTestId("who")).toHaveText(`${want.user} @ ${want.workspace}`);
  const n = want.sessions.length;
  await expect(page.getByTestId("sessions-count")).toHaveText(`${n} sessions`);
  expect(await rowIds(page)).toEqual(want.sessions.map((s) => s.session_id));
  const apps = await page.locator("tbody td.app").allTextContents();
  expect(apps).toEqual(want.sessions.map((s) => s.app_name ?? "(unnamed)"));
  await expect(page.getByText(want.other_workspace_session)).toHaveCount(0);
  await page.screenshot({ path: `${shots}/sessions.png`, fullPage: true });

  // A host filter: asked of the server, kept in the URL.
  const host = want.sessions[0].hostname!;
  const onHost = want.sessions.filter((s) => s.hostname === host);
  await page.getByLabel("Host").selectOption(host);
  await expect(page).toHaveURL(new RegExp(`/sessions\\?host=${host}$`));
  await expect(page.getByTestId("sessions-count")).toHaveText(
    `${onHost.length} session${onHost.length === 1 ? "" : "s"}`,
  );
  expect(await rowIds(page)).toEqual(onHost.map((s) => s.session_id));

  // The URL alone gives the same view (shareable), and search narrows it in the browser.
  const app = want.sessions.find((s) => s.app_name)!.app_name!;
  await page.goto(`/sessions?q=${encodeURIComponent(app)}`);
  const matching = want.sessions.filter((s) =>
    [s.session_id, s.app_name, s.hostname].join(" ").toLowerCase().includes(app.toLowerCase()),
  );
  await expect(page.getByTestId("sessions-count")).toHaveText(
    new RegExp(`^${matching.length} sessions? of ${n}$`),
  );
  expect(await rowIds(page)).toEqual(matching.map((s) => s.session_id));
  await expect(page.getByLabel("Search sessions")).toHaveValue(app);

  // Typing in the search updates the URL and the list.
  await page.getByLabel("Search sessions").fill("no-such-session-anywhere");
  await expect(page).toHaveURL(/q=no-such-session-anywhere/);
  await expect(page.getByTestId("sessions-empty")).toContainText("No sessions match");
  await page.screenshot({ path: `${shots}/sessions-empty.png` });
  await page.getByRole("link", { name: "Clear the filters" }).click();
  await expect(page).toHaveURL(/\/sessions$/);
  await expect(page.getByTestId("sessions-count")).toHaveText(`${n} sessions`);

  // Light and dark themes.
  const before = await page.evaluate(() => document.documentElement.dataset.theme);
  await page.getByTestId("theme-toggle").click();
  const after = await page.evaluate(() => document.documentElement.dataset.theme);
  expect(new Set([before, after])).toEqual(new Set(["dark", "light"]));
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const bgAfter = await bg();
  await page.screenshot({ path: `${shots}/sessions-${after}.png` });
  await page.getByTestId("theme-toggle").click();
  expect(await bg()).not.toEqual(bgAfter);

  // A wrong URL: the app's own not-found page, still logged in.
  const wrong = await page.goto("/no/such/page");
  expect(wrong?.status()).toBe(200); // the server hands app paths to the app
  await expect(page.getByTestId("not-found")).toContainText("Page not found");
  await expect(page.getByTestId("not-found")).toContainText("/no/such/page");
  await page.screenshot({ path: `${shots}/not-found.png` });

  // Log out: back at the login, and the list needs a login again.
  await page.goto("/sessions");
  await page.getByTestId("logout").click();
  await expect(page).toHaveURL(/\/login$/);
  await page.goto("/sessions");
  await expect(page).toHaveURL(/\/login\?next=%2Fsessions$/);
  const me = await page.request.get("/api/v1/auth/me");
  expect(me.status()).toBe(401);
  expect(problems).toEqual([]);
});

test("the server down shows an error state, not a blank page", async ({ page }) => {
  await logIn(page);
  await expect(page.getByTestId("sessions-count")).toBeVisible();
  await page.route("**/api/v1/sessions?**", (route) => route.abort("connectionrefused"));
  await page.goto("/sessions?host=anything-not-cached");
  await expect(page.getByTestId("sessions-error")).toContainText("cannot be reached");
  await page.screenshot({ path: `${shots}/sessions-error.png` });
});
