// SPDX-License-Identifier: Apache-2.0
// The dashboard's build: static files with content-hashed names under assets/ (gpufl-server
// caches those for good and revalidates index.html), nothing loaded from another origin.
import { defineConfig } from "vitest/config";

export default defineConfig({
  base: "/",
  build: {
    outDir: process.env.GPUFL_WEB_OUT || "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    // Every asset is a file of its own: index.html's policy allows no inline script or data.
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  server: {
    // `npm run dev` forwards the API to a gpufl-server on loopback.
    proxy: { "/api": process.env.GPUFL_SERVER_URL || "http://127.0.0.1:8080" },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
