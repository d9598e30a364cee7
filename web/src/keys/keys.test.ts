// SPDX-License-Identifier: Apache-2.0
// The settings page's key list: which keys a view shows and in what order, their times as
// text, and the create form's checks.
import { describe, expect, it } from "vitest";
import { type ApiKey, createProblem, formatWhen, keyState, visibleKeys } from "./keys";

const key = (prefix: string, created: number, revoked: number | null = null): ApiKey => ({
  prefix, role: "read", label: null, created_at: created, last_used_at: null, revoked_at: revoked,
});

describe("visibleKeys", () => {
  const list = [key("aaa", 10), key("bbb", 30, 40), key("ccc", 20)];
  it("lists active keys first, newest first, and hides revoked ones unless asked", () => {
    expect(visibleKeys(list, "all").map((k) => k.prefix)).toEqual(["ccc", "aaa", "bbb"]);
    expect(visibleKeys(list, "active").map((k) => k.prefix)).toEqual(["ccc", "aaa"]);
    expect(keyState(list[1])).toBe("revoked");
  });
});

describe("formatWhen and createProblem", () => {
  it("formats unix seconds in UTC, or says never", () => {
    expect(formatWhen(1795435200)).toBe("2026-11-23 12:00 UTC");
    expect(formatWhen(null)).toBe("never");
    expect(formatWhen(null, "–")).toBe("–");
  });
  it("allows read and ingest keys with a short label only", () => {
    expect(createProblem("read", "")).toBeNull();
    expect(createProblem("ingest", "ci runner")).toBeNull();
    expect(createProblem("admin", "")).toMatch(/read or ingest/);
    expect(createProblem("read", "é".repeat(65))).toMatch(/128 bytes/);
  });
});
