// SPDX-License-Identifier: Apache-2.0
// The router's URL parsing and formatting: the view's state round-trips through the URL.
import { describe, expect, it } from "vitest";
import { formatLocation, parseLocation, safeNext } from "./router";

describe("parseLocation", () => {
  it("maps / and trailing slashes to the sessions list", () => {
    expect(parseLocation("/", "").name).toBe("sessions");
    expect(parseLocation("/sessions/", "").name).toBe("sessions");
    expect(parseLocation("//", "").path).toBe("/sessions");
  });
  it("keeps the query as the view's state", () => {
    const r = parseLocation("/sessions", "?app=trainer&q=node%207");
    expect(r.params.get("app")).toBe("trainer");
    expect(r.params.get("q")).toBe("node 7");
  });
  it("names unknown paths not-found", () => {
    expect(parseLocation("/nope", "").name).toBe("not-found");
    expect(parseLocation("/sessions/x/y", "").name).toBe("not-found");
    expect(parseLocation("/sessions/%E0%A4%A", "").name).toBe("not-found");
  });
  it("decodes a path's named segments", () => {
    const r = parseLocation("/sessions/20261123T120000.000Z-7070-c3d4", "?t=1");
    expect(r.name).toBe("session");
    expect(r.args).toEqual({ id: "20261123T120000.000Z-7070-c3d4" });
    expect(parseLocation("/jobs/a%2Fb", "").args).toEqual({ id: "a/b" });
    expect(parseLocation("/fleet", "").name).toBe("fleet");
  });
});

describe("formatLocation", () => {
  it("drops empty values and sorts keys so equal states give equal URLs", () => {
    expect(formatLocation("/sessions", { q: "a b", app: "", host: "n1" })).toBe(
      "/sessions?host=n1&q=a+b",
    );
    expect(formatLocation("/sessions", { q: undefined })).toBe("/sessions");
  });
  it("round-trips through parseLocation", () => {
    const url = formatLocation("/sessions", { app: "llm_train", since: "7d" });
    const [p, s] = url.split("?");
    const r = parseLocation(p, "?" + s);
    expect(Object.fromEntries(r.params)).toEqual({ app: "llm_train", since: "7d" });
  });
});

describe("safeNext", () => {
  it("allows only this app's paths", () => {
    expect(safeNext("/sessions?app=x")).toBe("/sessions?app=x");
    expect(safeNext("//evil.example/")).toBe("/sessions");
    expect(safeNext("https://evil.example/")).toBe("/sessions");
    expect(safeNext("/login?next=/x")).toBe("/sessions");
    expect(safeNext(null)).toBe("/sessions");
  });
});
