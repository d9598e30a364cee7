// SPDX-License-Identifier: Apache-2.0
// The browser tests (e2e/): Debian's Chromium headless, never a downloaded browser, against the
// gpufl-server that tests/web/run_browser_tests.py started and seeded (its URL and the expected
// sessions in GPUFL_WEB_EXPECTED). Screenshots and traces go under GPUFL_WEB_OUT.
import { defineConfig } from "@playwright/test";
import { readFileSync } from "node:fs";

const expected = process.env.GPUFL_WEB_EXPECTED;
if (!expected)
  throw new Error("GPUFL_WEB_EXPECTED is not set: run the browser tests through tests/web/run.sh");
const baseURL = JSON.parse(readFileSync(expected, "utf8")).base_url as string;
const out = process.env.GPUFL_WEB_OUT || "test-results";

export default defineConfig({
  testDir: "e2e",
  outputDir: `${out}/playwright`,
  workers: 1,
  retries: 0,
  timeout: 30_000,
  reporter: [["list"]],
  use: {
    baseURL,
    headless: true,
    launchOptions: {
      executablePath: process.env.GPUFL_CHROMIUM || "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    },
    viewport: { width: 1280, height: 800 },
    trace: "retain-on-failure",
  },
});
